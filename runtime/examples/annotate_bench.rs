//! Times the output stage's work on one NV12 frame, single-threaded: conversion to RGB, eight
//! labelled boxes and the overlay drawn, JPEG encoding at the default quality. With `tasks`,
//! twenty boxes instead, each with a mask (the ellipse inside it) and 17 keypoints joined as a
//! skeleton. Writes the last JPEG so a peer (benches/peer_opencv_annotate.py, which draws the
//! same) can be looked at.
//!
//!     cargo run --release --example annotate_bench -- WIDTH HEIGHT FRAME.nv12 OUT.jpg [ITERATIONS] [tasks]

use std::time::Instant;

use edgert::annotate::canvas::Canvas;
use edgert::annotate::{annotate, rgb, Overlay};
use edgert::frame::{Frame, PixelFormat};
use edgert::output::{encode, DEFAULT_QUALITY};
use edgert::postprocess::keypoints::Keypoints;
use edgert::postprocess::mask::Rle;
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
    let boxes = if args.get(6).map(String::as_str) == Some("tasks") {
        instances(width, height)
    } else {
        labelled(width, height)
    };
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
    // Each step's time too: conversion, drawing, encoding.
    let mut steps = [Vec::new(), Vec::new(), Vec::new()];
    let mut once = |steps: &mut [Vec<f64>; 3]| {
        let t = Instant::now();
        rgb::frame_into(&mut canvas, &frame, &mut Vec::new()).expect("converts");
        let converted = Instant::now();
        annotate(&mut canvas, &prediction, &overlay);
        let drawn = Instant::now();
        encode::jpeg(&canvas, DEFAULT_QUALITY, &mut jpeg).expect("encodes");
        let encoded = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        for (step, time) in steps.iter_mut().zip([ms(t, converted), ms(converted, drawn), ms(drawn, encoded)])
        {
            step.push(time);
        }
        ms(t, encoded)
    };
    for _ in 0..10 {
        once(&mut steps);
    }
    steps = Default::default();
    let mut times: Vec<f64> = (0..iterations).map(|_| once(&mut steps)).collect();
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    std::fs::write(&args[4], &jpeg).expect("writes the JPEG");
    let p50s: Vec<f64> = steps.iter_mut().map(p50).collect();
    times.sort_by(f64::total_cmp);
    let p99 = times[(times.len() * 99).div_ceil(100) - 1];
    println!(
        "{{\"p50_ms\": {}, \"p99_ms\": {}, \"bytes\": {}, \"convert_p50_ms\": {}, \"draw_p50_ms\": {}, \"encode_p50_ms\": {}}}",
        times[times.len() / 2],
        p99,
        jpeg.len(),
        p50s[0],
        p50s[1],
        p50s[2]
    );
}

/// The eight labelled boxes of `BOXES`.
fn labelled(width: usize, height: usize) -> Vec<Detection> {
    BOXES
        .iter()
        .enumerate()
        .map(|(i, b)| Detection {
            class_id: i % 3,
            label: ["person", "bus", "car"][i % 3].into(),
            score: 0.5 + i as f32 * 0.05,
            bbox: [b[0] * width as f32, b[1] * height as f32, b[2] * width as f32, b[3] * height as f32],
            ..Detection::default()
        })
        .collect()
}

/// Twenty people: box i from x 0.02 + 0.047 i, y 0.1 + 0.03 (i mod 5), 0.15 × 0.5 of the frame;
/// its mask the pixels whose centres lie in the ellipse inside it; 17 keypoints on a circle of
/// 0.3 its size around its centre, each sure (0.9). The peer makes the same.
fn instances(width: usize, height: usize) -> Vec<Detection> {
    let (fw, fh) = (width as f32, height as f32);
    (0..20)
        .map(|i| {
            let (x0, y0) = ((0.02 + 0.047 * i as f32) * fw, (0.1 + 0.03 * (i % 5) as f32) * fh);
            let (w, h) = (0.15 * fw, 0.5 * fh);
            let (cx, cy) = (x0 + w / 2.0, y0 + h / 2.0);
            let inside = |x: usize, y: usize| {
                let (dx, dy) = ((x as f32 + 0.5 - cx) / (w / 2.0), (y as f32 + 0.5 - cy) / (h / 2.0));
                dx * dx + dy * dy <= 1.0
            };
            let mut counts = vec![0u32];
            let mut set = false;
            for x in 0..width {
                for y in 0..height {
                    if inside(x, y) != set {
                        counts.push(0);
                        set = !set;
                    }
                    *counts.last_mut().unwrap() += 1;
                }
            }
            let flat = (0..17)
                .flat_map(|k| {
                    let a = std::f32::consts::TAU * k as f32 / 17.0;
                    [cx + 0.3 * w * a.cos(), cy + 0.3 * h * a.sin(), 0.9]
                })
                .collect();
            Detection {
                class_id: i % 3,
                label: "person".into(),
                score: 0.9,
                bbox: [x0, y0, x0 + w, y0 + h],
                mask: Some(Rle { size: [height, width], counts }),
                keypoints: Some(Keypoints { values: 3, flat }),
                ..Detection::default()
            }
        })
        .collect()
}
