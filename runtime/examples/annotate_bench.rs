//! Times the output stage's work on one NV12 frame, single-threaded: conversion to RGB, eight
//! labelled boxes and the overlay drawn, JPEG encoding at the default quality. Writes the last
//! JPEG so a peer (benches/peer_opencv_annotate.py, which draws the same boxes) can be looked at.
//!
//!     cargo run --release --example annotate_bench -- WIDTH HEIGHT FRAME.nv12 OUT.jpg [ITERATIONS]

use std::time::Instant;

use edgert::annotate::canvas::Canvas;
use edgert::annotate::{annotate, rgb, Overlay};
use edgert::frame::{Frame, PixelFormat};
use edgert::output::{encode, DEFAULT_QUALITY};
use edgert::postprocess::{Detection, Prediction};

/// The boxes, as fractions of the frame: the peer draws the same ones.
pub const BOXES: [[f32; 4]; 8] = [
    [0.05, 0.30, 0.25, 0.80],
    [0.20, 0.35, 0.40, 0.85],
    [0.45, 0.20, 0.95, 0.70],
    [0.60, 0.50, 0.75, 0.95],
    [0.10, 0.10, 0.30, 0.25],
    [0.70, 0.05, 0.90, 0.30],
    [0.35, 0.60, 0.55, 0.98],
    [0.80, 0.55, 0.98, 0.90],
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: annotate_bench WIDTH HEIGHT FRAME.nv12 OUT.jpg [ITERATIONS]");
        std::process::exit(2);
    }
    let (width, height): (usize, usize) = (args[1].parse().expect("WIDTH"), args[2].parse().expect("HEIGHT"));
    let iterations: usize = args.get(5).map_or(200, |n| n.parse().expect("ITERATIONS"));
    let data = std::fs::read(&args[3]).unwrap_or_else(|e| {
        eprintln!("annotate_bench: {}: {e}", args[3]);
        std::process::exit(2)
    });
    let frame = Frame::new(PixelFormat::Nv12, width, height, width, &data).unwrap_or_else(|e| {
        eprintln!("annotate_bench: {}: {e}", args[3]);
        std::process::exit(2)
    });
    let boxes = BOXES
        .iter()
        .enumerate()
        .map(|(i, b)| Detection {
            class_id: i % 3,
            label: ["person", "bus", "car"][i % 3].into(),
            score: 0.5 + i as f32 * 0.05,
            bbox: [b[0] * width as f32, b[1] * height as f32, b[2] * width as f32, b[3] * height as f32],
        })
        .collect();
    let prediction = Prediction::Boxes(boxes);
    let overlay = Overlay {
        frame: 1234,
        fps: 29.9,
        glass_to_glass_p50_ms: Some(31.2),
        glass_to_glass_p99_ms: Some(45.6),
        inference_p99_ms: Some(12.3),
        power_w: None,
    };
    let (mut canvas, mut jpeg) = (Canvas::default(), Vec::new());
    let mut once = || {
        rgb::frame_into(&mut canvas, &frame);
        annotate(&mut canvas, &prediction, &overlay);
        encode::jpeg(&canvas, DEFAULT_QUALITY, &mut jpeg).expect("encodes");
    };
    for _ in 0..10 {
        once();
    }
    let mut times: Vec<f64> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            once();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    std::fs::write(&args[4], &jpeg).expect("writes the JPEG");
    println!(
        "{{\"p50_ms\": {}, \"p99_ms\": {}, \"bytes\": {}}}",
        times[times.len() / 2],
        times[(times.len() * 99).div_ceil(100) - 1],
        jpeg.len()
    );
}
