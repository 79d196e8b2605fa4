//! Times the fused preprocessing pass on one raw frame, single-threaded, and writes its output so a
//! peer (benches/peer_opencv_preprocess.py) can compare values. Stretch to W×H, ImageNet mean/std,
//! RGB, NCHW, f32. For `mjpeg` the frame file is a JPEG and each iteration decodes it first.
//!
//!     cargo run --release --example preprocess_bench -- yuyv|nv12|mjpeg WIDTH HEIGHT FRAME OUT.f32 [ITERATIONS]

use std::time::Instant;

use edgert::capture::mjpeg::MjpegDecoder;
use edgert::frame::{Frame, PixelFormat};
use edgert::model::manifest::{Layout, PreprocessSpec};
use edgert::preprocess::fused::FusedPreprocess;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: preprocess_bench yuyv|nv12|mjpeg WIDTH HEIGHT FRAME OUT.f32 [ITERATIONS]");
        std::process::exit(2);
    }
    let format = match args[1].as_str() {
        "yuyv" => PixelFormat::Yuyv,
        "nv12" => PixelFormat::Nv12,
        "mjpeg" => PixelFormat::Rgb24,
        other => {
            eprintln!("preprocess_bench: unknown format {other}");
            std::process::exit(2)
        }
    };
    let (width, height): (usize, usize) = (args[2].parse().expect("WIDTH"), args[3].parse().expect("HEIGHT"));
    let iterations: usize = args.get(6).map_or(300, |n| n.parse().expect("ITERATIONS"));
    let data = std::fs::read(&args[4]).unwrap_or_else(|e| {
        eprintln!("preprocess_bench: {}: {e}", args[4]);
        std::process::exit(2)
    });
    let mjpeg = args[1] == "mjpeg";
    let mut decoder = MjpegDecoder::default();
    let raw = if mjpeg { Vec::new() } else { data.clone() };
    if !mjpeg {
        Frame::new(format, width, height, format.min_stride(width), &raw).unwrap_or_else(|e| {
            eprintln!("preprocess_bench: {}: {e}", args[4]);
            std::process::exit(2)
        });
    }
    let spec = PreprocessSpec::imagenet();
    let pass = FusedPreprocess::new(&spec, 224, 224, Layout::Nchw, width, height).expect("a plan");
    let mut out = vec![0.0f32; pass.item_len()];
    let mut once = |out: &mut [f32]| {
        if mjpeg {
            let frame = decoder.decode(&data).expect("the JPEG decodes");
            pass.run(&frame, out).expect("runs");
        } else {
            let frame = Frame::new(format, width, height, format.min_stride(width), &raw).expect("checked");
            pass.run(&frame, out).expect("runs");
        }
    };
    for _ in 0..20 {
        once(&mut out);
    }
    let mut times: Vec<f64> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            once(&mut out);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let bytes: Vec<u8> = out.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&args[5], bytes).expect("writes the output");
    println!(
        "{{\"p50_ms\": {}, \"p99_ms\": {}}}",
        times[times.len() / 2],
        times[(times.len() * 99).div_ceil(100) - 1]
    );
}
