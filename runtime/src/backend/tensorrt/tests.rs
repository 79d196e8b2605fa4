//! The backend against the mock shim: building, caching, loading and running engines, and every
//! error path a machine without TensorRT can produce.

use std::path::{Path, PathBuf};

use super::{cache, ffi, mock, BuildPrecision, Loaded, TensorrtBackend, TrtOptions};
use crate::backend::{cpu::CpuBackend, Backend, DeviceBatch, PrepareOptions, Unsupported};
use crate::model::{BareModelOptions, Model};
use crate::tensor::HostTensor;
use crate::Error;

pub(super) fn orin_trt10() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::orin, mock::malloc), None))
}
fn xavier_trt10() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::xavier, mock::malloc), None))
}
pub(super) fn orin_trt8() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_8_6, mock::orin, mock::malloc), None))
}
fn orin_trt84() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_8_4, mock::orin, mock::malloc), None))
}
fn no_gpu() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::no_gpu, mock::malloc), None))
}
fn out_of_memory() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::orin, mock::malloc_out_of_memory), None))
}

pub(super) fn backend(load: super::Loader, cache: &Path) -> TensorrtBackend {
    let options = TrtOptions { engine_cache: Some(cache.to_owned()), ..TrtOptions::default() };
    TensorrtBackend::with(Some(&mock::API), load, options)
}

pub(super) fn model(name: &str) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models").join(name);
    Model::load(&path, &BareModelOptions::default()).unwrap()
}

pub(super) fn digits(batch: usize) -> HostTensor {
    let data = (0..batch * 64).map(|i| ((i * 7) % 17) as f32).collect();
    HostTensor::new(vec![batch, 1, 8, 8], data)
}

pub(super) fn engines_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "engine")).collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn an_onnx_model_is_built_once_cached_and_agrees_with_the_cpu_backend() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, dir.path());
    let model = model("digits_mlp_nchw.toml");
    for batch in [1, 4] {
        let options = PrepareOptions { batch, threads: 1 };
        let prepared = trt.prepare(&model, &options).unwrap();
        assert_eq!(prepared.inputs()[0].name, model.manifest.input.name);
        let mut session = prepared.spawn().unwrap();
        let outputs = session.run(&digits(batch)).unwrap();
        let expected =
            CpuBackend.prepare(&model, &options).unwrap().spawn().unwrap().run(&digits(batch)).unwrap();
        assert_eq!(outputs.len(), expected.len());
        for (got, want) in outputs.iter().zip(&expected) {
            assert_eq!(got.shape, want.shape);
            // Relative: the logits reach the hundreds, where the `cpu` backend's matrix products
            // (summed in another order than the mock's tract plan) land an ulp (3e-5) away.
            let relative = |(a, b): (&f32, &f32)| (a - b).abs() / (1.0 + b.abs());
            let worst = got.data.iter().zip(&want.data).map(relative).fold(0.0, f32::max);
            assert!(worst < 1e-5, "batch {batch}: differs by {worst} (relative)");
        }
        let timing = session.device_timing().expect("a GPU backend reports its stages");
        assert!(timing.compute_ms > 0.0, "{timing:?}");
    }
    // One engine per batch size, each with its sidecar; preparing again builds nothing new.
    let engines = engines_in(dir.path());
    assert_eq!(engines.len(), 2, "{engines:?}");
    let modified = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let before: Vec<_> = engines.iter().map(|p| modified(p)).collect();
    trt.prepare(&model, &PrepareOptions { batch: 4, threads: 1 }).unwrap();
    assert_eq!(engines_in(dir.path()).iter().map(|p| modified(p)).collect::<Vec<_>>(), before);
    let info = cache::read_info(&engines[0]).unwrap().unwrap();
    assert_eq!(
        (info.tensorrt.as_str(), info.sm.as_str(), info.precision.as_str()),
        ("10.3.0", "8.7", "fp32")
    );
    assert_eq!(info.model_sha256, model.sha256);
}

#[test]
fn a_qdq_model_builds_in_int8_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let model = model("digits_mlp_int8_qdq.toml");
    let (_, info) = backend(orin_trt10, dir.path()).build(&model, 1).unwrap();
    assert_eq!(info.precision, "int8");
    let mut fp16 = backend(orin_trt10, dir.path());
    fp16.options.precision = Some(BuildPrecision::Fp16);
    assert_eq!(fp16.build(&model, 1).unwrap().1.precision, "fp16");
}

#[test]
fn the_timing_cache_is_read_and_written_around_a_build() {
    let dir = tempfile::tempdir().unwrap();
    let mut trt = backend(orin_trt10, dir.path());
    let timing_cache = dir.path().join("timing.cache");
    trt.options.timing_cache = Some(timing_cache.clone());
    trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap();
    assert_eq!(std::fs::read(&timing_cache).unwrap(), b"mock timing cache");
}

fn write_engine(dir: &Path, plan: &[u8], info: Option<&cache::EngineInfo>) -> PathBuf {
    let path = dir.join("model.engine");
    std::fs::write(&path, plan).unwrap();
    if let Some(info) = info {
        std::fs::write(cache::sidecar_path(&path), serde_json::to_vec(info).unwrap()).unwrap();
    }
    path
}

fn digits_onnx() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/digits_mlp_nchw.onnx")).unwrap()
}

#[test]
fn an_engine_file_runs_bare_or_behind_an_ultralytics_header() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, dir.path());
    let plan = mock::plan(&digits_onnx(), 100300, "8.7", ffi::F32);
    let json = br#"{"description": "digits", "imgsz": [8, 8], "batch": 1}"#;
    let mut ultralytics = (json.len() as u32).to_le_bytes().to_vec();
    ultralytics.extend_from_slice(json);
    ultralytics.extend_from_slice(&plan);
    for bytes in [plan, ultralytics] {
        let path = write_engine(dir.path(), &bytes, None);
        let prepared = trt.prepare_engine_file(&path).unwrap();
        let outputs = prepared.spawn().unwrap().run(&digits(1)).unwrap();
        assert_eq!(outputs[0].shape, vec![1, 10]);
    }
}

#[test]
fn an_engine_from_another_tensorrt_or_gpu_is_refused_with_how_to_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = digits_onnx();
    let cases: [(super::Loader, i32, &str, &str); 2] = [
        (orin_trt10, 8602, "8.7", "expecting library version 10.3.0 got 8.6.2"),
        (xavier_trt10, 100300, "8.7", "expecting compute 7.2 got compute 8.7"),
    ];
    for (load, built_by, built_for, says) in cases {
        let path = write_engine(dir.path(), &mock::plan(&onnx, built_by, built_for, ffi::F32), None);
        let error = backend(load, dir.path()).prepare_engine_file(&path).err().unwrap();
        let message = error.to_string();
        assert!(message.contains("model.engine") && message.contains(says), "{message}");
        assert!(message.contains("rebuild it on this machine with `edgert build-engine`"), "{message}");
        assert_eq!(error.exit_code(), 2);
    }
    // With edgert's sidecar the mismatch is found before TensorRT is asked.
    let info = cache::EngineInfo {
        model_sha256: "00".repeat(32),
        tensorrt: "8.6.2".into(),
        sm: "8.7".into(),
        dla_core: None,
        precision: "fp16".into(),
        profile: "1x1x8x8".into(),
        calibration_sha256: None,
    };
    let path = write_engine(dir.path(), b"not even a plan", Some(&info));
    let message = backend(orin_trt10, dir.path()).prepare_engine_file(&path).err().unwrap().to_string();
    assert!(message.contains("built by TensorRT 8.6.2 and this is TensorRT 10.3.0"), "{message}");
}

#[test]
fn a_file_that_is_no_engine_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), b"certainly not a TensorRT plan", None);
    let message = backend(orin_trt10, dir.path()).prepare_engine_file(&path).err().unwrap().to_string();
    assert!(message.contains("model.engine") && message.contains("not a TensorRT engine"), "{message}");
}

#[test]
fn an_engine_with_f16_inputs_and_outputs_is_fed_and_read_through_f32() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::F16), None);
    let prepared = backend(orin_trt10, dir.path()).prepare_engine_file(&path).unwrap();
    assert_eq!((prepared.inputs()[0].dtype.as_str(), prepared.outputs()[0].dtype.as_str()), ("f16", "f16"));
    let got = prepared.spawn().unwrap().run(&digits(2)).unwrap();
    let model = model("digits_mlp_nchw.toml");
    let options = PrepareOptions { batch: 2, threads: 1 };
    let want = CpuBackend.prepare(&model, &options).unwrap().spawn().unwrap().run(&digits(2)).unwrap();
    assert_eq!(got[0].shape, want[0].shape);
    // The input and the outputs each lose bits to f16: within a few f16 steps of the f32 answer.
    for (g, w) in got[0].data.iter().zip(&want[0].data) {
        assert!((g - w).abs() <= 0.01 * w.abs().max(1.0), "{g} against {w}");
    }
}

#[test]
fn an_engine_with_int8_inputs_is_refused_with_the_types_edgert_feeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::I8), None);
    let message = backend(orin_trt10, dir.path()).prepare_engine_file(&path).err().unwrap().to_string();
    assert!(message.contains("is i8") && message.contains("f32 and f16 tensors"), "{message}");
}

#[test]
fn out_of_device_memory_is_an_inference_error_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = backend(out_of_memory, dir.path())
        .prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions::default())
        .unwrap();
    let error = prepared.spawn().unwrap().run(&digits(1)).err().unwrap();
    let message = error.to_string();
    assert!(message.contains("cudaMalloc of 256 bytes for input failed: out of memory"), "{message}");
    assert!(matches!(error, Error::Inference { .. }));
}

#[test]
fn a_machine_that_cannot_run_tensorrt_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(super::Loader, &str); 2] =
        [(no_gpu, "no CUDA-capable device is detected"), (orin_trt84, "TensorRT 8.4.1 is too old")];
    for (load, says) in cases {
        let trt = backend(load, dir.path());
        let reason = trt.check().unwrap_err().to_string();
        assert!(reason.contains(says), "{reason}");
        let error = trt.prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions::default()).err().unwrap();
        assert!(error.to_string().contains(says) && error.exit_code() == 1, "{error}");
    }
    let no_shim = TensorrtBackend::with(None, orin_trt10, TrtOptions::default());
    assert!(no_shim.check().unwrap_err().to_string().contains("without TensorRT's headers"));
}

#[test]
fn fp8_is_refused_on_a_gpu_below_compute_8_9() {
    let dir = tempfile::tempdir().unwrap();
    let reason = backend(orin_trt10, dir.path()).supports(crate::precision::Precision::Fp8).unwrap_err();
    assert_eq!(reason, Unsupported::Fp8Compute { sm: "8.7".into() });
    assert!(backend(orin_trt8, dir.path()).supports(crate::precision::Precision::Int8Qdq).is_ok());
}

#[test]
fn a_manifest_naming_an_engine_runs_it_and_checks_its_input_name() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("digits.engine");
    std::fs::write(&engine, mock::plan(&digits_onnx(), 100300, "8.7", ffi::F32)).unwrap();
    let sha256 = crate::model::digest::sha256_file(&engine).unwrap();
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/digits_mlp_nchw.toml"))
            .unwrap()
            .replace("file = \"digits_mlp_nchw.onnx\"", "file = \"digits.engine\"")
            .lines()
            .map(|l| if l.starts_with("sha256") { format!("sha256 = \"{sha256}\"") } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
    let path = dir.path().join("digits.toml");
    std::fs::write(&path, &manifest).unwrap();
    let model = Model::load(&path, &BareModelOptions::default()).unwrap();
    assert!(model.is_engine() && model.precision() == crate::precision::Precision::Engine);
    let trt = backend(orin_trt10, dir.path());
    let message = trt.build(&model, 1).err().unwrap().to_string();
    assert!(
        message.contains("digits.engine: is a TensorRT engine; building an engine needs the ONNX model"),
        "{message}"
    );
    let outputs =
        trt.prepare(&model, &PrepareOptions::default()).unwrap().spawn().unwrap().run(&digits(1)).unwrap();
    assert_eq!(outputs[0].shape, vec![1, 10]);
    std::fs::write(&path, manifest.replace("name = \"input\"", "name = \"pixels\"")).unwrap();
    let model = Model::load(&path, &BareModelOptions::default()).unwrap();
    let message = trt.prepare(&model, &PrepareOptions::default()).err().unwrap().to_string();
    assert!(message.contains("input 'pixels' is not in the engine (its input: input)"), "{message}");
}

#[test]
fn a_timing_cache_that_cannot_be_written_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut trt = backend(orin_trt10, dir.path());
    let file = dir.path().join("missing-folder/timing.cache");
    trt.options.timing_cache = Some(file.clone());
    let error = trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap_err();
    assert!(matches!(&error, Error::Write { path, .. } if *path == file), "{error}");
    assert!(error.to_string().contains("timing.cache: cannot write"), "{error}");
    assert_eq!(error.exit_code(), 1);
}

#[test]
fn a_damaged_cached_engine_is_an_error_naming_it_and_saying_to_delete_it() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, dir.path());
    let digits = model("digits_mlp_nchw.toml");
    trt.prepare(&digits, &PrepareOptions::default()).unwrap();
    let engines = engines_in(dir.path());
    std::fs::write(&engines[0], b"half an engine").unwrap();
    let error = trt.prepare(&digits, &PrepareOptions::default()).err().unwrap();
    let message = error.to_string();
    let name = engines[0].file_name().unwrap().to_string_lossy();
    assert!(message.contains(&*name) && message.contains("delete it to rebuild"), "{message}");
    assert_eq!(error.exit_code(), 2);
}

#[test]
fn an_input_already_on_the_gpu_is_bound_in_place_and_gives_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = backend(orin_trt10, dir.path())
        .prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions { batch: 2, threads: 1 })
        .unwrap();
    let mut session = prepared.spawn().unwrap();
    assert!(session.takes_device_input());
    let input = digits(2);
    let from_host = session.run(&input).unwrap();
    // The mock reads "device" memory where it is, as a Jetson reads mapped memory.
    let address = input.data.as_ptr() as u64;
    // SAFETY: `input`'s f32 values, alive and unwritten until the end of the test.
    let device = unsafe { DeviceBatch::new(address, &input.shape, false) };
    let in_place = session.run_on_device(&device).unwrap();
    assert_eq!(in_place[0].shape, from_host[0].shape);
    assert_eq!(in_place[0].data, from_host[0].data);
    // SAFETY: the same memory, said to be f16: the run refuses the type before reading anything.
    let half = unsafe { DeviceBatch::new(address, &input.shape, true) };
    let error = session.run_on_device(&half).unwrap_err();
    assert!(error.to_string().contains("the engine's input is f32, the GPU input given is f16"), "{error}");
    let cpu = CpuBackend.prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions::default()).unwrap();
    assert!(!cpu.spawn().unwrap().takes_device_input());
}

#[test]
fn gpu_preprocessing_into_an_engine_says_what_this_machine_lacks() {
    use crate::capture::source::synthetic::Synthetic;
    use crate::frame::PixelFormat;
    use crate::stream::{DropPolicy, StreamConfig};

    let dir = tempfile::tempdir().unwrap();
    let selected = crate::backend::Selected {
        backend: Box::new(backend(orin_trt10, dir.path())),
        requested: "tensorrt".into(),
        fallback: None,
    };
    let mut pipeline =
        crate::pipeline::Pipeline::open(model("digits_mlp_nchw.toml"), selected, PrepareOptions::default())
            .unwrap();
    let mut source = Synthetic::new("synthetic:64x48", PixelFormat::Yuyv, 64, 48, None).unwrap();
    let config = StreamConfig {
        drop: DropPolicy::None,
        queue_depth: 2,
        frames: Some(4),
        duration: None,
        min_frames: 0,
        timeout: std::time::Duration::from_secs(2),
        gpu_preprocess: true,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let error = match crate::stream::run(&mut pipeline, &mut source, &config, &stop, &mut |_| Ok(())) {
        Ok(_) => return eprintln!("skipped: this machine has CUDA and a GPU"),
        Err(error) => error,
    };
    let message = error.to_string();
    let lacks = if cfg!(feature = "cuda") {
        "libcuda (the NVIDIA driver) not found"
    } else {
        "CUDA is not compiled into this binary"
    };
    assert!(message.contains(lacks), "{message}");
    assert_eq!(error.exit_code(), 1);
}

#[test]
fn an_engine_is_listed_whatever_its_types_with_what_its_sidecar_says() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::I8), None);
    let listing = backend(orin_trt10, dir.path()).list_engine(&path).unwrap();
    assert_eq!((listing.tensorrt.as_str(), listing.sm.as_str()), ("10.3.0", "8.7"));
    assert!(listing.built.is_none());
    let tensors: Vec<_> =
        listing.tensors.iter().map(|t| (t.mode, t.name.as_str(), t.dtype, t.shape.clone())).collect();
    assert_eq!(
        tensors,
        [("input", "input", "i8", vec![-1, 1, 8, 8]), ("output", "logits", "i8", vec![-1, 10])]
    );

    let trt = backend(orin_trt10, dir.path());
    let (plan, info) = trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap();
    let built = dir.path().join("built.engine");
    cache::write(&built, &plan, &info).unwrap();
    assert_eq!(trt.list_engine(&built).unwrap().built, Some(info));
    let error = backend(xavier_trt10, dir.path()).list_engine(&built).unwrap_err();
    assert!(error.to_string().contains("compute capability 8.7 and this one is 7.2"), "{error}");
}
