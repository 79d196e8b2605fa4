//! The fused pass into the element type a model's input takes, against what edgert did before:
//! the pass in f32, then the whole tensor converted to f16 or u8 (as a backend converts a batch
//! made in f32). One raw frame of random bytes (the pass has no data-dependent branch), stretched
//! to 1×3×224×224 with ImageNet mean/std, single-threaded, the variants taking turns each round.
//!
//!     cargo run --release --example preprocess_dtype_bench -- [yuyv|nv12] [WIDTH HEIGHT] [ROUNDS]

use std::time::Instant;

use edgert::capture::pattern::noise;
use edgert::frame::{Frame, PixelFormat};
use edgert::model::manifest::{Layout, PreprocessSpec};
use edgert::preprocess::fused::FusedPreprocess;
use edgert::tensor::BatchView;
use half::f16;

/// One way of filling the model's input from the frame.
type Variant<'a> = Box<dyn FnMut() + 'a>;

/// Iterations per variant and round.
const ITERATIONS: usize = 100;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let format = match args.first().map_or("yuyv", String::as_str) {
        "yuyv" => PixelFormat::Yuyv,
        "nv12" => PixelFormat::Nv12,
        other => {
            eprintln!("preprocess_dtype_bench: format {other}: yuyv or nv12");
            std::process::exit(2)
        }
    };
    let number = |i: usize, default: usize| args.get(i).map_or(Ok(default), |v| v.parse::<usize>());
    let (Ok(width), Ok(height), Ok(rounds)) = (number(1, 1280), number(2, 720), number(3, 5)) else {
        eprintln!("usage: preprocess_dtype_bench [yuyv|nv12] [WIDTH HEIGHT] [ROUNDS]");
        std::process::exit(2)
    };
    let stride = format.min_stride(width);
    let data = noise(format.frame_bytes(stride, height), 1);
    let frame = Frame::new(format, width, height, stride, &data).unwrap_or_else(|e| {
        eprintln!("preprocess_dtype_bench: {width}x{height}: {e}");
        std::process::exit(2)
    });
    let spec = PreprocessSpec::imagenet();
    let pass = FusedPreprocess::new(&spec, 224, 224, Layout::Nchw, width, height).expect("a plan");
    let len = pass.item_len();
    // Before: the pass into a pooled f32 tensor, then converted into a new one, as the backends
    // did with a batch made in f32.
    let (mut f32s, mut staged) = (vec![0.0f32; len], vec![0.0f32; len]);
    let (mut halves, mut bytes) = (vec![f16::ZERO; len], vec![0u8; len]);
    let mut staged_too = staged.clone();
    let mut variants: Vec<(&str, Variant)> = vec![
        (
            "f32",
            Box::new(|| {
                pass.run(&frame, &mut f32s).expect("runs");
            }),
        ),
        (
            "f32, then converted to f16",
            Box::new(|| {
                pass.run(&frame, &mut staged).expect("runs");
                std::hint::black_box(BatchView::F32(&staged).to::<f16>());
            }),
        ),
        (
            "f16 in the pass",
            Box::new(|| {
                pass.run(&frame, &mut halves).expect("runs");
            }),
        ),
        (
            "f32, then converted to u8",
            Box::new(|| {
                pass.run(&frame, &mut staged_too).expect("runs");
                std::hint::black_box(BatchView::F32(&staged_too).to::<u8>());
            }),
        ),
        (
            "u8 in the pass",
            Box::new(|| {
                pass.run(&frame, &mut bytes).expect("runs");
            }),
        ),
    ];
    for (_, once) in &mut variants {
        for _ in 0..20 {
            once();
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for ((_, once), times) in variants.iter_mut().zip(&mut times) {
            for _ in 0..ITERATIONS {
                let t = Instant::now();
                once();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    println!("{format:?} {width}x{height} -> 1x3x224x224, {rounds} rounds of {ITERATIONS}, one thread");
    println!("| variant | p50 | p99 |");
    println!("|---|---|---|");
    for ((name, _), times) in variants.iter().zip(&mut times) {
        times.sort_by(f64::total_cmp);
        let p99 = times[(times.len() * 99).div_ceil(100) - 1];
        println!("| {name} | {:.3} ms | {p99:.3} ms |", times[times.len() / 2]);
    }
}
