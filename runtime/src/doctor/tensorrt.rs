//! TensorRT (feature `tensorrt`): the library loads; the embedded model builds into an engine in
//! FP32 and FP16, and its Q/DQ form in INT8; each runs and matches `cpu`; an engine is written to
//! the engine cache and read back; DLA cores are listed and, where there are any, one engine
//! builds with layers on DLA 0 and runs; with CUDA too, a frame preprocessed on the GPU is read by
//! the engine where it is and answers as the host copy does.

use super::{Area, Check};

const CHECKS: [(&str, u64); 7] = [
    ("library", 2_000),
    ("fp32 engine", 10_000),
    ("fp16 engine", 10_000),
    ("int8 engine", 10_000),
    ("engine cache", 10_000),
    ("dla", 20_000),
    ("gpu input in place", 10_000),
];

#[cfg(not(feature = "tensorrt"))]
pub fn checks() -> Vec<Check> {
    CHECKS
        .iter()
        .map(|(name, ms)| {
            Check::new(Area::Tensorrt, *name, *ms, |_, _| {
                super::Outcome::skip("not compiled in (build with --features tensorrt)")
            })
        })
        .collect()
}

#[cfg(feature = "tensorrt")]
pub fn checks() -> Vec<Check> {
    with(TensorrtBackend::with_options)
}

/// The checks with TensorRT made by `make` (the machine's, or a mock in tests).
#[cfg(feature = "tensorrt")]
fn with(make: fn(TrtOptions) -> TensorrtBackend) -> Vec<Check> {
    use on_trt::*;
    let quick_skips = |run: fn(Make, &Options, &Facts) -> Outcome| {
        move |o: &Options, f: &Facts| {
            if o.quick {
                Outcome::skip("--quick builds no engines")
            } else {
                run(make, o, f)
            }
        }
    };
    let [library_, fp32, fp16, int8, cache, dla_, in_place] = CHECKS;
    vec![
        Check::new(Area::Tensorrt, library_.0, library_.1, move |o, f| library(make, o, f)),
        Check::new(Area::Tensorrt, fp32.0, fp32.1, quick_skips(fp32_engine)).needs("library"),
        Check::new(Area::Tensorrt, fp16.0, fp16.1, quick_skips(fp16_engine)).needs("library"),
        Check::new(Area::Tensorrt, int8.0, int8.1, quick_skips(int8_engine)).needs("library"),
        Check::new(Area::Tensorrt, cache.0, cache.1, quick_skips(engine_cache)).needs("library"),
        Check::new(Area::Tensorrt, dla_.0, dla_.1, quick_skips(dla)).needs("library"),
        Check::new(Area::Tensorrt, in_place.0, in_place.1, quick_skips(gpu_input_in_place)).needs("library"),
    ]
}

#[cfg(feature = "tensorrt")]
use crate::backend::tensorrt::{TensorrtBackend, TrtOptions};
#[cfg(feature = "tensorrt")]
use crate::doctor::{Facts, Options, Outcome};

#[cfg(feature = "tensorrt")]
mod on_trt {
    use std::path::Path;

    use super::*;
    use crate::backend::tensorrt::BuildPrecision;
    use crate::backend::{Backend, Selected};
    use crate::doctor::embedded::{self, Written};

    pub type Make = fn(TrtOptions) -> TensorrtBackend;

    /// Largest difference from `cpu`'s logits (tens in size) per precision: FP32 reassociates;
    /// FP16 keeps 11 bits; INT8 engines fuse and round the Q/DQ pairs tract runs one by one.
    const FP32: f32 = 1e-3;
    const FP16: f32 = 5e-2;
    const INT8: f32 = 0.5;

    const FIX: &str = "TensorRT fails on this board: report it with this output (edgert doctor --json -)";

    pub fn library(make: Make, _: &Options, facts: &Facts) -> Outcome {
        let trt = make(TrtOptions::default());
        match trt.check() {
            Ok(()) => match trt.search_path_fix() {
                Some(fix) => Outcome::fail(
                    "TensorRT's folder on LD_LIBRARY_PATH (it opens its builder resource and plugins by name)",
                    "libnvinfer found only through TENSORRT_LIB_DIR",
                    fix,
                ),
                None => Outcome::pass(trt.version().unwrap_or_default()),
            },
            Err(why) if facts.jetson => Outcome::fail(
                "libnvinfer to load with the shim, and a GPU",
                why.to_string(),
                "install TensorRT (sudo apt install nvidia-jetpack); build edgert with TensorRT's headers",
            ),
            Err(why) => Outcome::skip(why.to_string()),
        }
    }

    fn selected(trt: TensorrtBackend) -> Selected {
        Selected { backend: Box::new(trt), requested: "tensorrt".into(), fallback: None }
    }

    fn cpu() -> Selected {
        Selected {
            backend: Box::new(crate::backend::cpu::CpuBackend::default()),
            requested: "cpu".into(),
            fallback: None,
        }
    }

    /// Builds `manifest`'s engine with `options` (into a cache inside the temporary folder),
    /// runs the reference images, and compares with `cpu` on the same model.
    fn engine_against_cpu(make: Make, manifest: &Path, options: TrtOptions, tolerance: f32) -> Outcome {
        let model = match embedded::load(manifest) {
            Ok(m) => m,
            Err(e) => return Outcome::fail("the embedded model to load", e, "a bug in edgert: report it"),
        };
        let want = match embedded::logits(&model, cpu()) {
            Ok(l) => l,
            Err(e) => return Outcome::fail("the model to run on cpu", e, "see `cpu cpu backend`"),
        };
        let got = match embedded::logits(&model, selected(make(options))) {
            Ok(l) => l,
            // The layer that broke is in the error: preparing (the builder) or running (the engine).
            Err(e) => return Outcome::fail("an engine built and run", format!("TensorRT, {e}"), FIX),
        };
        let agreement = embedded::compare(&got, &want);
        if agreement.within(tolerance) {
            Outcome::pass(agreement.text_against("cpu's", tolerance))
        } else {
            Outcome::fail(
                format!("cpu's logits within {tolerance:.0e}, every digit right"),
                agreement.text_against("cpu's", tolerance),
                "TensorRT's engine computes a wrong answer here: report it; run on cpu meanwhile",
            )
        }
    }

    fn written() -> Result<Written, Outcome> {
        Written::new().map_err(|e| {
            Outcome::fail("the embedded model written to a temporary folder", e.to_string(), "check TMPDIR")
        })
    }

    /// `precision` `None`: the model's own (INT8 and FP16 for a Q/DQ model).
    fn options(written: &Written, precision: Option<BuildPrecision>) -> TrtOptions {
        TrtOptions { precision, engine_cache: Some(written.dir.join("engines")), ..TrtOptions::default() }
    }

    pub fn fp32_engine(make: Make, _: &Options, _: &Facts) -> Outcome {
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        engine_against_cpu(make, &w.manifest, options(&w, Some(BuildPrecision::Fp32)), FP32)
    }

    /// TensorRT 11 builds a model in the types it has: no FP16 engine of the FP32 model.
    fn typed(make: Make) -> bool {
        make(TrtOptions::default()).builds_typed().unwrap_or(false)
    }

    pub fn fp16_engine(make: Make, _: &Options, _: &Facts) -> Outcome {
        if typed(make) {
            return Outcome::skip(
                "TensorRT 11 builds a model in the types it has, and the embedded model is FP32 (the fp32 check \
                 covers it)",
            );
        }
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        engine_against_cpu(make, &w.manifest, options(&w, Some(BuildPrecision::Fp16)), FP16)
    }

    pub fn int8_engine(make: Make, _: &Options, _: &Facts) -> Outcome {
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        engine_against_cpu(make, &w.int8_manifest, options(&w, None), INT8)
    }

    fn engines(dir: &Path) -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut found: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "engine"))
            .filter_map(|p| Some((p.clone(), std::fs::metadata(&p).ok()?.modified().ok()?)))
            .collect();
        found.sort();
        found
    }

    /// A first run writes one engine into the cache; a second, by a new backend, reads it back
    /// (no new file, the same file untouched) and gives the same answers.
    pub fn engine_cache(make: Make, _: &Options, _: &Facts) -> Outcome {
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        let dir = w.dir.join("engines");
        let model = match embedded::load(&w.manifest) {
            Ok(m) => m,
            Err(e) => return Outcome::fail("the embedded model to load", e, "a bug in edgert: report it"),
        };
        let run = || embedded::logits(&model, selected(make(options(&w, Some(BuildPrecision::Fp32)))));
        let first = match run() {
            Ok(l) => l,
            Err(e) => return Outcome::fail("an engine built and run", format!("TensorRT, {e}"), FIX),
        };
        let stored = engines(&dir);
        if stored.len() != 1 {
            return Outcome::fail(
                format!("one engine written to {}", dir.display()),
                format!("{} files", stored.len()),
                "check that the engine cache folder is writable (see `user engine cache`)",
            );
        }
        let second = match run() {
            Ok(l) => l,
            Err(e) => {
                return Outcome::fail("the cached engine read back and run", format!("TensorRT, {e}"), FIX)
            }
        };
        let agreement = embedded::compare(&second, &first);
        if engines(&dir) != stored {
            Outcome::fail("the cached engine reused", "a second run built a new engine", FIX)
        } else if !agreement.within(0.0) {
            Outcome::fail(
                "the same logits from the cached engine",
                agreement.text_against("the first run's", 0.0),
                FIX,
            )
        } else {
            let bytes = std::fs::metadata(&stored[0].0).map(|m| m.len()).unwrap_or(0);
            Outcome::pass(format!("written ({} KiB) and read back; same logits", bytes >> 10))
        }
    }

    pub fn dla(make: Make, _: &Options, _: &Facts) -> Outcome {
        let cores = match make(TrtOptions::default()).dla_cores() {
            Ok(n) => n,
            Err(e) => return Outcome::fail("the device's DLA cores counted", e.to_string(), FIX),
        };
        if cores == 0 {
            return Outcome::skip("this device has no DLA cores (Orin Nano and desktop GPUs have none)");
        }
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        // DLA runs FP16 and INT8: the FP32 model built in FP16, or, where TensorRT builds a model
        // in its own types (11), the Q/DQ model.
        let (manifest, precision, tolerance) = match typed(make) {
            true => (&w.int8_manifest, None, INT8),
            false => (&w.manifest, Some(BuildPrecision::Fp16), FP16),
        };
        let options = TrtOptions { dla_core: Some(0), ..options(&w, precision) };
        // With GPU fallback an engine builds and runs even when nothing runs on the DLA.
        let model = match embedded::load(manifest) {
            Ok(m) => m,
            Err(e) => return Outcome::fail("the embedded model to load", e, "a bug in edgert: report it"),
        };
        let placement = match make(options.clone()).build_placed(&model, 1) {
            Ok(built) => built.placement,
            Err(e) => {
                return Outcome::fail("an engine built for DLA 0", format!("TensorRT, preparing: {e}"), FIX)
            }
        };
        if placement.on_dla == 0 {
            return Outcome::fail(
                "layers of the embedded model placed on DLA 0",
                format!("all {} layers fell back to the GPU", placement.layers),
                "DLA support depends on the JetPack: check `jetson_release`, or run without --trt-dla",
            );
        }
        let on = format!("{} of {} layers on DLA 0", placement.on_dla, placement.layers);
        match engine_against_cpu(make, manifest, options, tolerance) {
            Outcome::Pass { seen } => Outcome::pass(format!("{cores} DLA cores; {on}: {seen}")),
            other => other,
        }
    }

    /// A camera frame preprocessed on the GPU into the engine's input, read by TensorRT where it
    /// is (`--preprocess gpu`), against the same frame preprocessed on the CPU and copied.
    #[cfg(feature = "cuda")]
    pub fn gpu_input_in_place(make: Make, _: &Options, _: &Facts) -> Outcome {
        use crate::backend::PrepareOptions;
        use crate::frame::{Frame, PixelFormat};
        use crate::preprocess::fused::FusedPreprocess;
        use crate::tensor::{DataType, HostTensor};

        let sync = crate::gpu_sync::GpuSync::default();
        if let Err(e) = crate::cuda::device::open(0, sync) {
            return Outcome::skip(format!("no GPU to preprocess on: {e}"));
        }
        let w = match written() {
            Ok(w) => w,
            Err(o) => return o,
        };
        let model = match embedded::load(&w.manifest) {
            Ok(m) => m,
            Err(e) => return Outcome::fail("the embedded model to load", e, "a bug in edgert: report it"),
        };
        let trt = make(options(&w, Some(BuildPrecision::Fp32)));
        let mut session = match trt.prepare(&model, &PrepareOptions::default()).and_then(|p| p.spawn()) {
            Ok(s) => s,
            Err(e) => return Outcome::fail("an engine built", format!("TensorRT, preparing: {e}"), FIX),
        };
        let shape = model.input_shape(1);
        let (width, height) = (64, 48);
        let fused = match FusedPreprocess::new(
            &model.manifest.preprocess,
            shape[3],
            shape[2],
            model.manifest.input.layout,
            width,
            height,
        ) {
            Ok(f) => f,
            Err(e) => {
                return Outcome::fail("a preprocessing plan", e.to_string(), "a bug in edgert: report it")
            }
        };
        let data = crate::capture::pattern::noise(PixelFormat::Yuyv.frame_bytes(width * 2, height), 7);
        let frame = match Frame::new(PixelFormat::Yuyv, width, height, width * 2, &data) {
            Ok(f) => f,
            Err(e) => return Outcome::fail("a synthetic frame", e.to_string(), "a bug in edgert: report it"),
        };
        let mut host = HostTensor::zeros(&shape);
        if let Err(e) = fused.run(&frame, &mut host.data) {
            return Outcome::fail("the CPU pass", e.to_string(), "a bug in edgert: report it");
        }
        let want = match session.run(&host) {
            Ok(o) => o,
            Err(e) => return Outcome::fail("the engine run from host memory", format!("TensorRT, {e}"), FIX),
        };
        let got =
            crate::stream::gpu::GpuStage::open(fused, DataType::F32, &shape, sync).and_then(|mut stage| {
                // Where the GPU reads registered memory in place (a Jetson), the frame is there, as
                // a camera run's are; elsewhere it is copied for the GPU.
                let mut buffer = Vec::with_capacity(data.len());
                let pinned = stage.pinner().and_then(|p| p.pin(&mut buffer));
                buffer.extend_from_slice(&data);
                let frame = Frame::new(PixelFormat::Yuyv, width, height, width * 2, &buffer)
                    .map_err(|e| crate::Error::Usage(e.to_string()))?;
                let mut batch = None;
                let failed = |e: crate::stream::error::PassError| crate::Error::Usage(e.to_string());
                stage.fill(&mut batch, 0, &frame, pinned.as_ref()).map_err(failed)?;
                stage.finish().map_err(failed)?;
                let batch = batch.expect("filled above");
                session.run_on_device(&batch.input(&shape))
            });
        let got = match got {
            Ok(o) => o,
            Err(e) => {
                return Outcome::fail(
                    "the engine run on the GPU's preprocessed input, in place",
                    e.to_string(),
                    "run with --preprocess cpu and report it",
                )
            }
        };
        let worst = got[0].data.iter().zip(&want[0].data).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        let seen = format!("logits from the GPU's input in place within {worst:.1e} of the host copy's");
        if worst <= 1e-3 {
            Outcome::pass(seen)
        } else {
            Outcome::fail(
                "logits within 1e-3 of the host copy's",
                seen,
                "run with --preprocess cpu and report it",
            )
        }
    }

    #[cfg(not(feature = "cuda"))]
    pub fn gpu_input_in_place(_: Make, _: &Options, _: &Facts) -> Outcome {
        Outcome::skip("needs CUDA too (build with --features tensorrt,cuda-12060 or the board's CUDA)")
    }
}

#[cfg(all(test, feature = "tensorrt"))]
mod tests {
    use super::*;
    use crate::backend::tensorrt::mock;
    use crate::doctor::runner::{run_checks, LEAST_DEADLINE};

    fn run(make: fn(TrtOptions) -> TensorrtBackend) -> Vec<crate::doctor::Done> {
        let options = Options::default();
        let facts = Facts::read(&options);
        run_checks(
            with(make),
            &std::sync::Arc::new(options),
            &std::sync::Arc::new(facts),
            LEAST_DEADLINE,
            |_| {},
        )
    }

    fn outcome<'a>(done: &'a [crate::doctor::Done], name: &str) -> &'a Outcome {
        &done.iter().find(|d| d.name == name).unwrap().outcome
    }

    #[test]
    fn against_a_working_tensorrt_every_check_passes() {
        let done = run(|o| crate::backend::tensorrt::mocked(&mock::API, o));
        for d in &done {
            // The mock's engines are real host code, but preprocessing on the GPU needs a GPU.
            let no_gpu = d.name == "gpu input in place"
                && matches!(&d.outcome, Outcome::Skip { reason } if reason.starts_with("no GPU") || reason.starts_with("needs CUDA"));
            assert!(d.outcome.passed() || no_gpu, "{}: {:?}", d.name, d.outcome);
        }
        assert!(
            matches!(outcome(&done, "dla"), Outcome::Pass { seen } if seen.starts_with("2 DLA cores; 3 of 4 layers on DLA 0")),
            "{:?}",
            outcome(&done, "dla")
        );
    }

    #[test]
    fn against_tensorrt_11_the_fp16_check_is_skipped_and_the_rest_pass() {
        let done = run(crate::backend::tensorrt::mocked_trt11);
        for d in &done {
            match d.name.as_str() {
                "fp16 engine" => assert!(
                    matches!(&d.outcome, Outcome::Skip { reason } if reason.contains("TensorRT 11 builds a model in the types it has")),
                    "{:?}",
                    d.outcome
                ),
                "gpu input in place" => assert!(d.outcome.status() != "fail", "{:?}", d.outcome),
                _ => assert!(d.outcome.passed(), "{}: {:?}", d.name, d.outcome),
            }
        }
    }

    #[test]
    fn a_dla_engine_whose_layers_all_fell_back_to_the_gpu_fails_the_dla_check() {
        let done = run(|o| crate::backend::tensorrt::mocked(&mock::API_NO_DLA_LAYERS, o));
        match outcome(&done, "dla") {
            Outcome::Fail { seen, .. } => assert!(seen.contains("layers fell back to the GPU"), "{seen}"),
            other => panic!("{other:?}"),
        }
        assert!(outcome(&done, "fp16 engine").passed());
    }

    #[test]
    fn engines_that_answer_wrongly_fail_the_engine_checks() {
        let done = run(|o| crate::backend::tensorrt::mocked(&mock::API_WRONG_OUTPUTS, o));
        assert!(outcome(&done, "library").passed());
        for name in ["fp32 engine", "fp16 engine", "int8 engine", "dla"] {
            match outcome(&done, name) {
                Outcome::Fail { seen, fix, .. } => {
                    assert!(seen.contains("logits within 1.0e0"), "{name}: {seen}");
                    assert!(fix.contains("wrong answer"), "{name}: {fix}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_builder_that_fails_is_named_with_tensorrts_message() {
        let done = run(|o| crate::backend::tensorrt::mocked(&mock::API_BUILD_FAILS, o));
        assert!(outcome(&done, "library").passed());
        for name in ["fp32 engine", "fp16 engine", "int8 engine", "engine cache", "dla"] {
            match outcome(&done, name) {
                Outcome::Fail { seen, .. } => {
                    assert!(seen.starts_with("TensorRT, preparing:"), "{name}: {seen}");
                    assert!(seen.contains("could not find any implementation"), "{name}: {seen}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
