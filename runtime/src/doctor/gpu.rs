//! The GPU through CUDA's driver API (features `cuda-*`): libcuda loads, the device and its
//! compute capability, a device allocation and a host↔device copy that round-trips, pinned memory,
//! and on an integrated GPU a mapped buffer the GPU writes and the CPU reads. Then NVRTC: the fused
//! preprocessing kernel compiles for this GPU and matches the CPU pass on YUYV and NV12 frames.

use super::{Area, Check};

/// The checks: area, name, budget on an Orin Nano, and the check of that area to pass first.
const CHECKS: [(Area, &str, u64, Option<&str>); 8] = [
    (Area::Gpu, "libcuda", 500, None),
    (Area::Gpu, "device", 1_000, Some("libcuda")),
    (Area::Gpu, "memory", 500, Some("device")),
    (Area::Gpu, "pinned memory", 500, Some("device")),
    (Area::Gpu, "zero-copy", 500, Some("device")),
    // NVRTC's compile needs the GPU's (another area): it says so itself when there is none.
    (Area::Nvrtc, "compile", 5_000, None),
    (Area::Nvrtc, "yuyv vs cpu", 500, Some("compile")),
    (Area::Nvrtc, "nv12 vs cpu", 500, Some("compile")),
];

#[cfg(not(feature = "cuda"))]
pub fn checks() -> Vec<Check> {
    let why = "not compiled in (build with --features cuda-11040, cuda-12020, cuda-12060 or cuda-13000)";
    // No prerequisites here: each check says why it cannot run, not which other one did not pass.
    CHECKS
        .iter()
        .map(|&(area, name, ms, _)| Check::new(area, name, ms, move |_, _| super::Outcome::skip(why)))
        .collect()
}

#[cfg(feature = "cuda")]
pub fn checks() -> Vec<Check> {
    use on_gpu::*;
    let runs: [fn(&super::Options, &super::Facts) -> super::Outcome; 8] =
        [libcuda, device, memory, pinned, zero_copy, compile, yuyv, nv12];
    CHECKS
        .iter()
        .zip(runs)
        .map(|(&(area, name, ms, needs), run)| Check { needs, ..Check::new(area, name, ms, run) })
        .collect()
}

#[cfg(feature = "cuda")]
mod on_gpu {
    use std::sync::Arc;

    use cudarc::driver::{sys, CudaContext};

    use crate::cuda::{device, version_text, GpuError};
    use crate::doctor::{Facts, Options, Outcome};
    use crate::frame::{Frame, PixelFormat};
    use crate::model::manifest::{Layout, PreprocessSpec};
    use crate::preprocess::fused::FusedPreprocess;
    use crate::preprocess::gpu::GpuPreprocess;

    /// Bytes the memory checks move: enough to cross pages and DMA chunks, quick everywhere.
    const BYTES: usize = 16 << 20;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i.wrapping_mul(131) >> 3) as u8).collect()
    }

    fn failed(what: &str, e: impl std::fmt::Display) -> Outcome {
        Outcome::fail(
            what,
            e.to_string(),
            "the CUDA driver misbehaves: check `nvidia-smi` or `tegrastats`, reboot",
        )
    }

    /// Bytes copied to the GPU and back: the same as sent, or how the copy failed.
    fn round_trip(
        back: Result<Vec<u8>, cudarc::driver::DriverError>,
        sent: &[u8],
        seen: String,
        what: &str,
    ) -> Outcome {
        match back {
            Ok(back) if back == sent => Outcome::pass(seen),
            Ok(_) => Outcome::fail(
                "the bytes copied back unchanged",
                "they differ",
                "a GPU memory fault: reboot, then report it",
            ),
            Err(e) => failed(what, e),
        }
    }

    fn open() -> Result<Arc<CudaContext>, Outcome> {
        device::open(0, crate::gpu_sync::GpuSync::default()).map_err(|e| failed("GPU 0 to open", e))
    }

    pub fn libcuda(_: &Options, facts: &Facts) -> Outcome {
        match device::compatible_driver() {
            Ok(v) => Outcome::pass(format!(
                "driver CUDA {}; this binary calls CUDA {}",
                version_text(v),
                version_text(crate::cuda::BUILT_FOR)
            )),
            Err(e @ GpuError::MissingLibrary { .. }) if !facts.jetson => Outcome::skip(e.to_string()),
            Err(e) => Outcome::fail(
                "libcuda to load, at least as new as this build's CUDA",
                e.to_string(),
                "see the error",
            ),
        }
    }

    pub fn device(_: &Options, facts: &Facts) -> Outcome {
        match device::describe(0) {
            Ok(d) => Outcome::pass(d),
            Err(e @ GpuError::NoDevice(_)) if !facts.jetson => Outcome::skip(e.to_string()),
            Err(e) => failed("GPU 0 to open", e),
        }
    }

    pub fn memory(_: &Options, _: &Facts) -> Outcome {
        let context = match open() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let stream = context.default_stream();
        let host = pattern(BYTES);
        let back = stream.clone_htod(&host).and_then(|d| stream.clone_dtoh(&d));
        let (free, total) = context.mem_get_info().unwrap_or((0, 0));
        let seen = format!(
            "{} MiB to the GPU and back, unchanged; {} of {} MiB free",
            BYTES >> 20,
            free >> 20,
            total >> 20
        );
        round_trip(back, &host, seen, "a device allocation and copies both ways")
    }

    pub fn pinned(_: &Options, _: &Facts) -> Outcome {
        let context = match open() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let stream = context.default_stream();
        let host = pattern(BYTES);
        let result = (|| {
            // SAFETY: every byte is written below before it is read.
            let mut pinned = unsafe { context.alloc_pinned::<u8>(BYTES) }?;
            pinned.as_mut_slice()?.copy_from_slice(&host);
            let mut device = stream.alloc_zeros::<u8>(BYTES)?;
            stream.memcpy_htod(&pinned, &mut device)?;
            stream.clone_dtoh(&device)
        })();
        let seen = format!("{} MiB page-locked, copied to the GPU and back", BYTES >> 20);
        round_trip(result, &host, seen, "page-locked host memory and a copy from it")
    }

    pub fn zero_copy(_: &Options, _: &Facts) -> Outcome {
        let context = match open() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let attribute = |a| context.attribute(a).unwrap_or(0);
        if attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED) != 1 {
            return Outcome::skip("a discrete GPU: frames are copied to it, not mapped");
        }
        if attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 1 {
            return Outcome::fail(
                "an integrated GPU that maps host memory",
                "it cannot",
                "report it with this output",
            );
        }
        let stream = context.default_stream();
        const VALUE: u8 = 0xA5;
        let result = (|| {
            let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
            // SAFETY: the GPU writes every byte below before the CPU reads them.
            let mut mapped = unsafe { context.alloc_pinned_with_flags::<u8>(BYTES, flags) }?;
            let host = mapped.as_ptr()?;
            let mut address: sys::CUdeviceptr = 0;
            // SAFETY: `host` starts memory allocated with CU_MEMHOSTALLOC_DEVICEMAP, BYTES long; the
            // GPU writes exactly that range, and the stream is waited for before the CPU reads.
            unsafe {
                sys::cuMemHostGetDevicePointer_v2(&mut address, host as *mut _, 0).result()?;
                sys::cuMemsetD8Async(address, VALUE, BYTES, stream.cu_stream()).result()?;
            }
            stream.synchronize()?;
            Ok::<bool, cudarc::driver::DriverError>(mapped.as_mut_slice()?.iter().all(|&b| b == VALUE))
        })();
        match result {
            Ok(true) => Outcome::pass(format!(
                "the GPU wrote {} MiB of mapped memory; the CPU read it back",
                BYTES >> 20
            )),
            Ok(false) => Outcome::fail(
                "what the GPU wrote, seen by the CPU",
                "other bytes",
                "mapped memory is not coherent here: run with --preprocess cpu and report it",
            ),
            Err(e) => failed("a mapped buffer the GPU writes", e),
        }
    }

    fn needs_gpu() -> Result<Arc<CudaContext>, Outcome> {
        device::open(0, crate::gpu_sync::GpuSync::default())
            .map_err(|e| Outcome::skip(format!("no GPU to compile for: {e}")))
    }

    pub fn compile(_: &Options, _: &Facts) -> Outcome {
        let context = match needs_gpu() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let sm = match context.compute_capability() {
            Ok(sm) => sm,
            Err(e) => return failed("the compute capability", e),
        };
        // Compiled now (or said to come from the cache), then loaded as the pipeline loads it.
        let started = std::time::Instant::now();
        let compiled = match crate::cuda::compile::kernels("fused", crate::preprocess::gpu::SOURCE, sm) {
            Ok(c) => c,
            Err(e) => {
                return Outcome::fail(
                    "the fused preprocessing kernel to compile for this GPU",
                    e.to_string(),
                    "NVRTC comes with CUDA (JetPack has it): put libnvrtc on the loader's path",
                )
            }
        };
        let how = match compiled.cached {
            true => format!("taken from the cache in {}", crate::cuda::compile::cache_dir().display()),
            false => format!("compiled now in {:.0} ms", started.elapsed().as_secs_f64() * 1e3),
        };
        let (major, minor) = crate::cuda::compile::nvrtc_version().unwrap_or((0, 0));
        let plan = match plan() {
            Ok(p) => p,
            Err(o) => return o,
        };
        match GpuPreprocess::new(&context, plan) {
            Ok(_) => Outcome::pass(format!("NVRTC {major}.{minor}, {}: {how}", compiled.target.name())),
            Err(e) => Outcome::fail(
                "the fused preprocessing kernel to load on this GPU",
                e.to_string(),
                "NVRTC comes with CUDA (JetPack has it): put libnvrtc on the loader's path",
            ),
        }
    }

    /// 640×480 into 1×3×224×224 f32, ImageNet's mean and std: a camera frame into a classifier.
    fn plan() -> Result<FusedPreprocess, Outcome> {
        FusedPreprocess::new(&PreprocessSpec::imagenet(), 224, 224, Layout::Nchw, 640, 480)
            .map_err(|e| Outcome::fail("a preprocessing plan", e.to_string(), "a bug in edgert: report it"))
    }

    fn against_cpu(format: PixelFormat) -> Outcome {
        let context = match needs_gpu() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let cpu_plan = match plan() {
            Ok(p) => p,
            Err(o) => return o,
        };
        let stride = format.min_stride(640);
        let data = crate::capture::synthetic::noise(format.frame_bytes(stride, 480), 0x5eed);
        let frame = match Frame::new(format, 640, 480, stride, &data) {
            Ok(f) => f,
            Err(e) => return Outcome::fail("a synthetic frame", e.to_string(), "a bug in edgert: report it"),
        };
        let mut want = vec![0.0f32; cpu_plan.item_len()];
        if let Err(e) = cpu_plan.run(&frame, &mut want) {
            return Outcome::fail("the CPU pass", e.to_string(), "a bug in edgert: report it");
        }
        let result = GpuPreprocess::new(&context, cpu_plan).and_then(|mut gpu| {
            let stream = gpu.stream().clone();
            let mut out = stream
                .alloc_zeros::<f32>(gpu.item_len())
                .map_err(|e| crate::cuda::driver_error("allocating", e))?;
            gpu.run(&frame, &mut out.as_view_mut())?;
            stream.clone_dtoh(&out).map_err(|e| crate::cuda::driver_error("copying back", e))
        });
        match result {
            Ok(got) => {
                let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                let seen = format!("640x480 {} → 1x3x224x224: largest difference {worst:.1e}", format.name());
                if worst <= 1e-3 {
                    Outcome::pass(seen)
                } else {
                    Outcome::fail(
                        "the CPU pass's values within 1e-3",
                        seen,
                        "run with --preprocess cpu and report it",
                    )
                }
            }
            Err(e) => failed("the kernel to run", e),
        }
    }

    pub fn yuyv(_: &Options, _: &Facts) -> Outcome {
        against_cpu(PixelFormat::Yuyv)
    }

    pub fn nv12(_: &Options, _: &Facts) -> Outcome {
        against_cpu(PixelFormat::Nv12)
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use std::sync::Arc;

    use crate::doctor::runner::{run_checks, LEAST_DEADLINE};
    use crate::doctor::{Facts, Options, Outcome};

    /// Without a driver (CI) every GPU check skips, naming libcuda or the check it needs; with a
    /// GPU (`benches/gpu-check.sh`) every one passes but zero-copy, which a discrete GPU skips.
    #[test]
    fn gpu_checks_skip_naming_what_is_missing_or_pass_on_a_gpu() {
        let options = Options::default();
        let mut facts = Facts::read(&options);
        facts.jetson = false;
        let done = run_checks(super::checks(), &Arc::new(options), &Arc::new(facts), LEAST_DEADLINE, |_| {});
        let libcuda = &done[0].outcome;
        if crate::cuda::device::driver_version().is_err() {
            assert!(matches!(libcuda, Outcome::Skip { reason } if reason.contains("libcuda")), "{libcuda:?}");
            for d in &done[1..] {
                match &d.outcome {
                    Outcome::Skip { reason } => {
                        assert!(
                            reason.starts_with("needs `") || reason.starts_with("no GPU to compile for"),
                            "{reason}"
                        )
                    }
                    other => panic!("{}: {other:?}", d.name),
                }
            }
        } else {
            for d in &done {
                let discrete_zero_copy = d.name == "zero-copy" && d.outcome.status() == "skip";
                assert!(d.outcome.passed() || discrete_zero_copy, "{}: {:?}", d.name, d.outcome);
            }
        }
    }
}
