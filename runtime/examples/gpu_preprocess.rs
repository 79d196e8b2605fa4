//! Times the fused preprocessing pass on an NVIDIA GPU against the CPU pass on the same frame:
//! 1280×720 YUYV and NV12 frames (pseudo-random bytes) into a 1×3×224×224 f32 tensor (stretch,
//! ImageNet mean/std, NCHW), and compares the GPU's throughput in GB/s (frame read + tensor written)
//! with the device's own copy bandwidth (a 256 MiB device-to-device copy). Prints the largest
//! difference from the CPU pass. Needs feature `cuda` (one CUDA version) and a GPU.
//!
//!     cargo run --release --features cuda-12060 --example gpu_preprocess [ITERATIONS]

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use edgert::cuda::device;
use edgert::frame::{Frame, PixelFormat};
use edgert::model::manifest::{Layout, PreprocessSpec};
use edgert::preprocess::fused::FusedPreprocess;
use edgert::preprocess::gpu::GpuPreprocess;

fn fail(what: &str, error: impl std::fmt::Display) -> ! {
    eprintln!("gpu_preprocess: {what}: {error}");
    std::process::exit(1)
}

fn main() {
    let iterations: usize = std::env::args().nth(1).map_or(500, |n| n.parse().expect("ITERATIONS"));
    let context = device::open(0, Default::default()).unwrap_or_else(|e| fail("GPU", e));
    let stream = context.default_stream();
    let name = context.name().unwrap_or_default();
    let (major, minor) =
        context.compute_capability().unwrap_or_else(|e| fail("compute capability", format!("{e:?}")));
    println!("GPU {name} (sm {major}.{minor}), {iterations} iterations per row");

    // The device's copy bandwidth: read and write, as the preprocessing pass does.
    let bytes = 256usize << 20;
    let source = stream.alloc_zeros::<u8>(bytes).unwrap_or_else(|e| fail("cudaMalloc", format!("{e:?}")));
    let mut target = stream.alloc_zeros::<u8>(bytes).unwrap_or_else(|e| fail("cudaMalloc", format!("{e:?}")));
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = stream.record_event(timing).unwrap();
    for _ in 0..10 {
        stream.memcpy_dtod(&source, &mut target).unwrap();
    }
    let end = stream.record_event(timing).unwrap();
    end.synchronize().unwrap();
    let copy_gbs = (2 * bytes * 10) as f64 / (start.elapsed_ms(&end).unwrap() as f64 * 1e-3) / 1e9;
    println!("device copy: {copy_gbs:.1} GB/s (read + write)");

    let spec = PreprocessSpec::imagenet();
    println!("| frame | GPU ms (copy in + kernel, waited for) | GPU GB/s (back to back) | of copy bandwidth | CPU fused ms | CPU/GPU | max abs diff |");
    println!("|---|---|---|---|---|---|---|");
    for format in [PixelFormat::Yuyv, PixelFormat::Nv12] {
        let (w, h) = (1280, 720);
        let stride = format.min_stride(w);
        let data = edgert::capture::pattern::noise(format.frame_bytes(stride, h), 0x9e37_79b9_7f4a_7c15);
        let frame = Frame::new(format, w, h, stride, &data).unwrap();
        let plan = FusedPreprocess::new(&spec, 224, 224, Layout::Nchw, w, h).unwrap();
        let mut cpu_out = vec![0.0f32; plan.item_len()];
        let mut gpu = GpuPreprocess::new(&context, plan.clone()).unwrap_or_else(|e| fail("kernels", e));
        let mut out = stream.alloc_zeros::<f32>(gpu.item_len()).unwrap();
        for _ in 0..20 {
            gpu.run(&frame, &mut out.as_view_mut()).unwrap();
        }
        stream.synchronize().unwrap();
        let started = Instant::now();
        for _ in 0..iterations {
            gpu.run(&frame, &mut out.as_view_mut()).unwrap();
            stream.synchronize().unwrap();
        }
        let gpu_ms = started.elapsed().as_secs_f64() * 1e3 / iterations as f64;
        // Back to back, timed by events: each iteration's frame copy and kernel, no host waits.
        let start = stream.record_event(timing).unwrap();
        for _ in 0..iterations {
            gpu.run(&frame, &mut out.as_view_mut()).unwrap();
        }
        let end = stream.record_event(timing).unwrap();
        end.synchronize().unwrap();
        let back_to_back_ms = start.elapsed_ms(&end).unwrap() as f64 / iterations as f64;
        let moved = (data.len() + gpu.item_len() * 4) as f64;
        let gbs = moved / (back_to_back_ms * 1e-3) / 1e9;
        let started = Instant::now();
        for _ in 0..iterations {
            plan.run(&frame, &mut cpu_out).unwrap();
        }
        let cpu_ms = started.elapsed().as_secs_f64() * 1e3 / iterations as f64;
        let got = stream.clone_dtoh(&out).unwrap();
        let diff = got.iter().zip(&cpu_out).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        println!(
            "| {} 1280x720 → 1x3x224x224 f32 | {gpu_ms:.3} | {gbs:.1} | {:.0} % | {cpu_ms:.3} | {:.1}× | {diff:.2e} |",
            format.name(),
            100.0 * gbs / copy_gbs,
            cpu_ms / gpu_ms
        );
    }
}
