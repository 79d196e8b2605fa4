//! The GPU through CUDA's driver API (features `cuda-*`): libcuda loads, the device and its
//! compute capability, a device allocation and a host↔device copy that round-trips, pinned memory,
//! and on an integrated GPU a mapped buffer the GPU writes and the CPU reads. Then NVRTC: the fused
//! preprocessing kernel compiles for this GPU and matches the CPU pass on YUYV and NV12 frames.

use super::{Area, Check};

/// The checks: area, name, budget on an Orin Nano, and the check of that area to pass first.
const CHECKS: [(Area, &str, u64, Option<&str>); 9] = [
    (Area::Gpu, "libcuda", 500, None),
    (Area::Gpu, "device", 1_000, Some("libcuda")),
    (Area::Gpu, "memory", 500, Some("device")),
    (Area::Gpu, "pinned memory", 500, Some("device")),
    (Area::Gpu, "mapped memory", 500, Some("device")),
    // NVRTC's compile needs the GPU's (another area): it says so itself when there is none.
    (Area::Nvrtc, "compile", 5_000, None),
    (Area::Nvrtc, "yuyv vs cpu", 500, Some("compile")),
    (Area::Nvrtc, "nv12 vs cpu", 500, Some("compile")),
    (Area::Nvrtc, "f16 nhwc letterbox vs cpu", 1_000, Some("compile")),
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
    let runs: [fn(&super::Options, &super::Facts) -> super::Outcome; 9] =
        [libcuda, device, memory, pinned, mapped, compile, yuyv, nv12, f16_nhwc_letterbox];
    CHECKS
        .iter()
        .zip(runs)
        .map(|(&(area, name, ms, needs), run)| Check { needs, ..Check::new(area, name, ms, run) })
        .collect()
}

#[cfg(feature = "cuda")]
mod on_gpu {
    use std::sync::{Arc, OnceLock};

    use cudarc::driver::{sys, CudaContext};

    use crate::cuda::{device, version_text, GpuError};
    use crate::doctor::{Facts, Options, Outcome};
    use crate::frame::{Frame, PixelFormat};
    use crate::model::manifest::{Layout, PreprocessSpec, ResizeMode};
    use crate::preprocess::fused::FusedPreprocess;
    use crate::preprocess::gpu::GpuPreprocess;

    /// Bytes the memory checks move: enough to cross pages and DMA chunks, quick everywhere.
    const BYTES: usize = 16 << 20;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i.wrapping_mul(131) >> 3) as u8).collect()
    }

    fn failed(facts: &Facts, what: &str, e: impl std::fmt::Display) -> Outcome {
        Outcome::fail(what, e.to_string(), driver_fix(facts.jetson))
    }

    /// What to do about a misbehaving driver, with the tools the machine has: JetPack 4 and 5 have
    /// no `nvidia-smi` on a Jetson.
    pub(crate) fn driver_fix(jetson: bool) -> &'static str {
        match jetson {
            true => "the CUDA driver misbehaves: see the GPU in `tegrastats` and the JetPack in `jetson_release`, reboot",
            false => "the CUDA driver misbehaves: check `nvidia-smi`, reboot",
        }
    }

    /// Bytes copied to the GPU and back: the same as sent, or how the copy failed.
    fn round_trip(
        facts: &Facts,
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
            Err(e) => failed(facts, what, e),
        }
    }

    /// GPU 0's primary context, retained once for the whole doctor run: each check's budget is
    /// its own work, not a context made and torn down again.
    fn context() -> Result<Arc<CudaContext>, GpuError> {
        static CONTEXT: OnceLock<Result<Arc<CudaContext>, GpuError>> = OnceLock::new();
        CONTEXT.get_or_init(|| device::open(0, crate::gpu_sync::GpuSync::default())).clone()
    }

    fn open(facts: &Facts) -> Result<Arc<CudaContext>, Outcome> {
        context().map_err(|e| failed(facts, "GPU 0 to open", e))
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
            Err(e) => failed(facts, "GPU 0 to open", e),
        }
    }

    pub fn memory(_: &Options, facts: &Facts) -> Outcome {
        let context = match open(facts) {
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
        round_trip(facts, back, &host, seen, "a device allocation and copies both ways")
    }

    pub fn pinned(_: &Options, facts: &Facts) -> Outcome {
        let context = match open(facts) {
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
        round_trip(facts, result, &host, seen, "page-locked host memory and a copy from it")
    }

    /// Mapped memory both ways: what `--preprocess gpu` does on a Jetson (the CPU writes a frame,
    /// kernels read it where it is), and the GPU writing what the CPU reads.
    pub fn mapped(_: &Options, facts: &Facts) -> Outcome {
        let context = match open(facts) {
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
        let written = pattern(BYTES);
        let result = (|| {
            let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
            // SAFETY: the CPU writes every byte below before the GPU reads them.
            let mut mapped = unsafe { context.alloc_pinned_with_flags::<u8>(BYTES, flags) }?;
            let host = mapped.as_ptr()?;
            let mut address: sys::CUdeviceptr = 0;
            // SAFETY: `host` starts memory allocated with CU_MEMHOSTALLOC_DEVICEMAP, BYTES long.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut address, host as *mut _, 0).result()? };
            // The CPU writes; the GPU reads it where it is (into device memory, copied back to check).
            mapped.as_mut_slice()?.copy_from_slice(&written);
            let mut device = stream.alloc_zeros::<u8>(BYTES)?;
            {
                let (target, _sync) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut device, &stream);
                // SAFETY: both ranges are BYTES long (`device`'s memory and the mapped address);
                // the stream is waited for below before either is used again.
                unsafe { sys::cuMemcpyDtoDAsync_v2(target, address, BYTES, stream.cu_stream()).result()? };
            }
            let read_by_gpu = stream.clone_dtoh(&device)?;
            // The GPU writes; the CPU reads.
            // SAFETY: the GPU writes exactly the mapped range; the stream is waited for first.
            unsafe { sys::cuMemsetD8Async(address, VALUE, BYTES, stream.cu_stream()).result()? };
            stream.synchronize()?;
            let read_by_cpu = mapped.as_mut_slice()?.iter().all(|&b| b == VALUE);
            Ok::<(bool, bool), cudarc::driver::DriverError>((read_by_gpu == written, read_by_cpu))
        })();
        let fix = "mapped memory is not coherent here: run with --preprocess cpu and report it";
        match result {
            Ok((true, true)) => Outcome::pass(format!(
                "{} MiB of mapped memory: the CPU wrote, the GPU read it in place; the GPU wrote, the CPU read it",
                BYTES >> 20
            )),
            Ok((false, _)) => Outcome::fail("what the CPU wrote, read by the GPU in place", "other bytes", fix),
            Ok((true, false)) => Outcome::fail("what the GPU wrote, seen by the CPU", "other bytes", fix),
            Err(e) => failed(facts, "a mapped buffer both ways", e),
        }
    }

    fn needs_gpu() -> Result<Arc<CudaContext>, Outcome> {
        context().map_err(|e| Outcome::skip(format!("no GPU to compile for: {e}")))
    }

    pub fn compile(_: &Options, facts: &Facts) -> Outcome {
        let context = match needs_gpu() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let sm = match context.compute_capability() {
            Ok(sm) => sm,
            Err(e) => return failed(facts, "the compute capability", e),
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
        plan_for(ResizeMode::Stretch, Layout::Nchw)
    }

    fn plan_for(resize: ResizeMode, layout: Layout) -> Result<FusedPreprocess, Outcome> {
        let spec = PreprocessSpec { resize, ..PreprocessSpec::imagenet() };
        FusedPreprocess::new(&spec, 224, 224, layout, 640, 480)
            .map_err(|e| Outcome::fail("a preprocessing plan", e.to_string(), "a bug in edgert: report it"))
    }

    /// A case of GPU preprocessing checked against the CPU pass.
    struct Case {
        format: PixelFormat,
        resize: ResizeMode,
        layout: Layout,
        /// An f16 input (`trtexec --inputIOFormats=fp16:chw`), written by the f16 kernel.
        half: bool,
    }

    /// Two different frames in a row through the same GPU buffers (what a camera run does), each
    /// against the CPU pass: within 1e-3 in f32, within f16's step (2^-10 of the value) in f16.
    fn against_cpu(facts: &Facts, case: Case) -> Outcome {
        let context = match needs_gpu() {
            Ok(c) => c,
            Err(o) => return o,
        };
        let cpu_plan = match plan_for(case.resize, case.layout) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let stride = case.format.min_stride(640);
        let frames: Vec<Vec<u8>> = (0..2)
            .map(|seed| crate::capture::pattern::noise(case.format.frame_bytes(stride, 480), 0x5eed + seed))
            .collect();
        let mut worst = 0.0f32;
        let result = GpuPreprocess::new(&context, cpu_plan.clone()).and_then(|mut gpu| {
            let stream = gpu.stream().clone();
            let copying = |e| crate::cuda::driver_error("copying back", e);
            let allocating = |e| crate::cuda::driver_error("allocating", e);
            let (mut out32, mut out16) = match case.half {
                false => (Some(stream.alloc_zeros::<f32>(gpu.item_len()).map_err(allocating)?), None),
                true => (None, Some(stream.alloc_zeros::<u16>(gpu.item_len()).map_err(allocating)?)),
            };
            for data in &frames {
                let frame = Frame::new(case.format, 640, 480, stride, data)
                    .map_err(|e| GpuError::Input(format!("a synthetic frame: {e}")))?;
                let mut want = vec![0.0f32; cpu_plan.item_len()];
                cpu_plan.run(&frame, &mut want).map_err(|e| GpuError::Input(format!("the CPU pass: {e}")))?;
                let got: Vec<f32> = match (&mut out32, &mut out16) {
                    (Some(out), _) => {
                        gpu.run(&frame, &mut out.as_view_mut())?;
                        stream.clone_dtoh(out).map_err(copying)?
                    }
                    (_, Some(out)) => {
                        gpu.run(&frame, &mut out.as_view_mut())?;
                        let bits = stream.clone_dtoh(out).map_err(copying)?;
                        bits.into_iter().map(|b| half::f16::from_bits(b).to_f32()).collect()
                    }
                    _ => unreachable!("one output buffer"),
                };
                let step = |w: f32| if case.half { 1e-3 + w.abs() / 1024.0 } else { 1e-3 };
                for (g, w) in got.iter().zip(&want) {
                    worst = worst.max((g - w).abs() / step(*w));
                }
            }
            Ok(())
        });
        let layout = match case.layout {
            Layout::Nchw => "1x3x224x224",
            _ => "1x224x224x3",
        };
        let seen = format!(
            "2 frames of 640x480 {} → {layout} {}{}: largest difference {worst:.2} of the tolerance",
            case.format.name(),
            if case.half { "f16" } else { "f32" },
            if case.resize == ResizeMode::Letterbox { ", letterboxed" } else { "" },
        );
        match result {
            Ok(()) if worst <= 1.0 => Outcome::pass(seen),
            Ok(()) => Outcome::fail(
                "the CPU pass's values within tolerance",
                seen,
                "run with --preprocess cpu and report it",
            ),
            Err(e) => failed(facts, "the kernel to run", e),
        }
    }

    pub fn yuyv(_: &Options, facts: &Facts) -> Outcome {
        let case = Case {
            format: PixelFormat::Yuyv,
            resize: ResizeMode::Stretch,
            layout: Layout::Nchw,
            half: false,
        };
        against_cpu(facts, case)
    }

    pub fn nv12(_: &Options, facts: &Facts) -> Outcome {
        let case = Case {
            format: PixelFormat::Nv12,
            resize: ResizeMode::Stretch,
            layout: Layout::Nchw,
            half: false,
        };
        against_cpu(facts, case)
    }

    /// What the yuyv and nv12 checks leave out: an f16 input, channel-last, letterbox padding.
    pub fn f16_nhwc_letterbox(_: &Options, facts: &Facts) -> Outcome {
        let case = Case {
            format: PixelFormat::Yuyv,
            resize: ResizeMode::Letterbox,
            layout: Layout::Nhwc,
            half: true,
        };
        against_cpu(facts, case)
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use std::sync::Arc;

    use crate::doctor::runner::{run_checks, LEAST_DEADLINE};
    use crate::doctor::{Facts, Options, Outcome};

    /// A Jetson is told of the tools JetPack has; `nvidia-smi` is not one of them before JetPack 6.
    #[test]
    fn driver_fixes_name_the_tools_the_machine_has() {
        let jetson = super::on_gpu::driver_fix(true);
        assert!(jetson.contains("tegrastats") && jetson.contains("jetson_release"), "{jetson}");
        assert!(!jetson.contains("nvidia-smi"), "{jetson}");
        assert!(super::on_gpu::driver_fix(false).contains("nvidia-smi"));
    }

    /// Without a driver (CI) every GPU check skips, naming libcuda or the check it needs; with a
    /// GPU (`benches/gpu-check.sh`) every one passes but mapped memory, which a discrete GPU skips.
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
                let discrete = d.name == "mapped memory" && d.outcome.status() == "skip";
                assert!(d.outcome.passed() || discrete, "{}: {:?}", d.name, d.outcome);
            }
        }
    }
}
