//! The backend against the mock shim: building, caching, loading and running engines, and every
//! error path a machine without TensorRT can produce.

use std::path::{Path, PathBuf};

use super::{cache, ffi, mock, BuildPrecision, Loaded, TensorrtBackend, TrtOptions};
use crate::backend::{cpu::CpuBackend, Backend, DeviceBatch, PrepareOptions, Unsupported};
use crate::choice::Choice;
use crate::limits::MemoryLimit;
use crate::model::{BareModelOptions, Model};
use crate::tensor::{DataType, HostTensor};
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
fn orin_nano_trt10() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::orin_nano, mock::malloc), None))
}
fn orin_trt10_with_plugins() -> Loaded {
    let symbols = mock::symbols(mock::tensorrt_10_3, mock::orin, mock::malloc);
    Ok((ffi::Symbols { init_plugins: Some(mock::init_plugins), ..symbols }, None))
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

/// The digits MLP with its graph changed by `edit`, saved in `dir` as `NAME.onnx` with a manifest.
pub(super) fn digits_variant(
    dir: &Path,
    name: &str,
    edit: impl FnOnce(&mut tract_onnx::pb::GraphProto),
) -> Model {
    use prost::Message;

    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let onnx = std::fs::read(models.join("digits_mlp_nchw.onnx")).unwrap();
    let mut proto = tract_onnx::pb::ModelProto::decode(&*onnx).unwrap();
    edit(proto.graph.as_mut().unwrap());
    let path = dir.join(format!("{name}.onnx"));
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    let sha256 = crate::model::digest::sha256_file(&path).unwrap();
    let manifest = std::fs::read_to_string(models.join("digits_mlp_nchw.toml"))
        .unwrap()
        .lines()
        .map(|l| match l {
            l if l.starts_with("file") => format!("file = \"{name}.onnx\""),
            l if l.starts_with("sha256") => format!("sha256 = \"{sha256}\""),
            l => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let manifest_path = dir.join(format!("{name}.toml"));
    std::fs::write(&manifest_path, manifest).unwrap();
    Model::load(&manifest_path, &BareModelOptions::default()).unwrap()
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

/// Proves the plumbing (build, cache, load, shapes, buffers, timing) through the mock, whose
/// engines run tract: it is tract against tract, not TensorRT's numbers against the CPU's.
/// `edgert doctor` on a board checks TensorRT's own outputs against `cpu`.
#[test]
fn an_onnx_model_is_built_once_cached_and_runs_through_the_shims_calls() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, dir.path());
    let model = model("digits_mlp_nchw.toml");
    for batch in [1, 4] {
        let options = PrepareOptions { batch, ..Default::default() };
        let prepared = trt.prepare(&model, &options).unwrap();
        assert_eq!(prepared.inputs()[0].name, model.manifest.input.name);
        let mut session = prepared.spawn().unwrap();
        let outputs = session.run(&digits(batch)).unwrap();
        let expected = CpuBackend::default()
            .prepare(&model, &options)
            .unwrap()
            .spawn()
            .unwrap()
            .run(&digits(batch))
            .unwrap();
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
    trt.prepare(&model, &PrepareOptions { batch: 4, ..Default::default() }).unwrap();
    assert_eq!(engines_in(dir.path()).iter().map(|p| modified(p)).collect::<Vec<_>>(), before);
    let info = cache::read_info(&engines[0]).unwrap().unwrap();
    assert_eq!(
        (info.tensorrt.as_str(), info.sm.as_str(), info.precision.as_str()),
        ("10.3.0", "8.7", "fp32")
    );
    assert_eq!(info.model_sha256, model.sha256);
}

#[test]
fn a_qdq_model_builds_with_int8_and_fp16_and_is_refused_without_int8() {
    let dir = tempfile::tempdir().unwrap();
    let model = model("digits_mlp_int8_qdq.toml");
    for asked in [None, Some(BuildPrecision::Int8), Some(BuildPrecision::Best)] {
        let mut trt = backend(orin_trt10, dir.path());
        trt.options.precision = asked;
        let (plan, info) = trt.build(&model, 1).unwrap();
        assert_eq!(info.precision, "best", "{asked:?}");
        let stamp = mock::stamp(&plan);
        assert!(
            stamp.int8 && stamp.fp16,
            "{asked:?}: TensorRT needs kINT8 for Q/DQ, kFP16 for the layers between"
        );
    }
    for asked in [BuildPrecision::Fp32, BuildPrecision::Fp16] {
        let mut trt = backend(orin_trt10, dir.path());
        trt.options.precision = Some(asked);
        let error = trt.build(&model, 1).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("digits_mlp_int8_qdq.toml: is quantized (Q/DQ nodes)"), "{message}");
        assert!(message.contains(&format!("not --trt-precision {}", asked.name())), "{message}");
        assert_eq!(error.exit_code(), 2);
    }
    // The mock refuses what TensorRT 8 and 10 refuse: Q/DQ nodes without the INT8 flag.
    let message = raw_build(&model, false, false, -1).unwrap_err();
    assert!(message.contains("Q/DQ nodes, which TensorRT builds only with INT8"), "{message}");
    assert!(engines_in(dir.path()).is_empty());
}

/// The digits MLP with an FP8 Q/DQ pair on its input (zero point FLOAT8E4M3FN), as NVIDIA's
/// ModelOpt writes FP8 models.
fn fp8_model(dir: &Path) -> Model {
    use tract_onnx::pb;
    digits_variant(dir, "digits_fp8", |graph| {
        let input = graph.input[0].name.clone();
        graph.initializer.push(pb::TensorProto {
            name: "q_scale".into(),
            data_type: 1,
            float_data: vec![0.05],
            ..Default::default()
        });
        graph.initializer.push(pb::TensorProto {
            name: "q_zero".into(),
            data_type: 17,
            raw_data: vec![0],
            ..Default::default()
        });
        let node = |op: &str, from: &str, to: &str| pb::NodeProto {
            op_type: op.into(),
            input: vec![from.into(), "q_scale".into(), "q_zero".into()],
            output: vec![to.into()],
            ..Default::default()
        };
        for n in graph.node.iter_mut() {
            for i in n.input.iter_mut().filter(|i| **i == input) {
                *i = "dq".into();
            }
        }
        graph.node.insert(0, node("DequantizeLinear", "q", "dq"));
        graph.node.insert(0, node("QuantizeLinear", &input, "q"));
    })
}

fn desktop_trt10() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_10_3, mock::desktop, mock::malloc), None))
}

/// An FP8 Q/DQ model builds with TensorRT's FP8 flag (and FP16 between its pairs), not INT8; a
/// TensorRT without FP8 kernels is refused before building.
#[test]
fn an_fp8_qdq_model_builds_with_the_fp8_flag_where_tensorrt_has_fp8() {
    let dir = tempfile::tempdir().unwrap();
    let fp8 = fp8_model(dir.path());
    assert_eq!(fp8.precision(), crate::precision::Precision::Fp8);
    let trt = backend(desktop_trt10, dir.path());
    assert!(trt.supports(crate::precision::Precision::Fp8).is_ok());
    let (plan, info) = trt.build(&fp8, 1).unwrap();
    let stamp = mock::stamp(&plan);
    assert!(
        stamp.fp8 && stamp.fp16 && !stamp.int8,
        "fp8 {} fp16 {} int8 {}",
        stamp.fp8,
        stamp.fp16,
        stamp.int8
    );
    assert_eq!(info.precision, "fp8");
    // What the mock refuses, as TensorRT does: FP8 Q/DQ with only the INT8 flag.
    let message = raw_build(&fp8, true, true, -1).unwrap_err();
    assert!(message.contains("FP8 layers need BuilderFlag::kFP8"), "{message}");
    let mut fp32 = backend(desktop_trt10, dir.path());
    fp32.options.precision = Some(BuildPrecision::Fp32);
    let message = fp32.build(&fp8, 1).unwrap_err().to_string();
    assert!(
        message.contains("which TensorRT builds only with FP8 enabled, not --trt-precision fp32"),
        "{message}"
    );
    let message = backend(orin_trt8, dir.path()).build(&fp8, 1).unwrap_err().to_string();
    assert!(
        message.contains("digits_fp8.toml: has FP8 Q/DQ nodes, and TensorRT 8.6.2 has no FP8 kernels"),
        "{message}"
    );
}

pub(super) fn orin_trt11() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_11_1, mock::orin, mock::malloc), None))
}

/// TensorRT 11 has no precision flags: every model builds in the types it has (a Q/DQ model as
/// INT8, without the flag the shim would refuse), and asking for another precision is refused
/// with what to give instead.
#[test]
fn tensorrt_11_builds_the_types_the_model_has_and_refuses_other_precisions() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt11, dir.path());
    for name in ["digits_mlp_int8_qdq.toml", "digits_mlp_nchw.toml"] {
        let (plan, info) = trt.build(&model(name), 1).unwrap();
        let stamp = mock::stamp(&plan);
        assert!(!stamp.fp16 && !stamp.int8 && !stamp.fp8, "{name}");
        assert_eq!(info.precision, "typed", "{name}");
    }
    let prepared = trt.prepare(&model("digits_mlp_int8_qdq.toml"), &PrepareOptions::default()).unwrap();
    assert_eq!(prepared.spawn().unwrap().run(&digits(1)).unwrap()[0].shape, vec![1, 10]);
    let mut fp16 = backend(orin_trt11, dir.path());
    fp16.options.precision = Some(BuildPrecision::Fp16);
    let error = fp16.build(&model("digits_mlp_nchw.toml"), 1).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("--trt-precision fp16: TensorRT 11.1.0 builds a model in the types it has (fp32)"),
        "{message}"
    );
    assert!(message.contains("models/variants.py"), "{message}");
    assert_eq!(error.exit_code(), 2);
    let mut dla = backend(orin_trt11, dir.path());
    dla.options.dla_core = Some(0);
    let message = dla.build(&model("digits_mlp_nchw.toml"), 1).unwrap_err().to_string();
    assert!(message.contains("DLA runs FP16 and INT8 only"), "{message}");
    assert!(dla.build(&model("digits_mlp_int8_qdq.toml"), 1).is_ok());
}

/// The mock's runtime of a TensorRT 10.3 on an AGX Orin, opened as the backend opens it.
fn orin_runtime() -> super::handles::Runtime {
    let (symbols, _) = orin_trt10().unwrap();
    super::handles::Runtime::open(&mock::API, &symbols, None, Default::default()).unwrap()
}

/// Build options for the digits MLP at batch 1 in FP32 on the GPU, with nothing else given.
fn digits_build() -> ffi::BuildOptions {
    let mut dims = [0i64; ffi::MAX_DIMS];
    dims[..4].copy_from_slice(&[1, 1, 8, 8]);
    ffi::BuildOptions {
        fp16: 0,
        int8: 0,
        sparsity: 0,
        dla_core: -1,
        workspace_bytes: 0,
        timing_cache: std::ptr::null(),
        timing_cache_bytes: 0,
        profile_nb_dims: 4,
        profile_min: dims,
        profile_opt: dims,
        profile_max: dims,
        calibrator: std::ptr::null(),
        model_path: std::ptr::null(),
        fp8: 0,
    }
}

/// The mock's build called as the backend calls the shim, with these flags and no calibrator;
/// the shim's refusal, in its words.
fn raw_build(model: &Model, fp16: bool, int8: bool, dla_core: i32) -> Result<Vec<u8>, String> {
    let runtime = orin_runtime();
    let onnx = std::fs::read(&model.file).unwrap();
    let options = ffi::BuildOptions { fp16: fp16 as i32, int8: int8 as i32, dla_core, ..digits_build() };
    match runtime.build(&onnx, &options) {
        Ok((plan, _, _)) => Ok(plan),
        Err(super::TrtError::Call(message)) => Err(message),
        Err(other) => panic!("not a refusal of the build call: {other:?}"),
    }
}

#[test]
fn int8_without_q_dq_nodes_or_a_calibration_set_is_refused_with_both_ways_out() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    for asked in [BuildPrecision::Int8, BuildPrecision::Best] {
        let mut trt = backend(orin_trt10, dir.path());
        trt.options.precision = Some(asked);
        let error = trt.prepare(&digits, &PrepareOptions::default()).err().unwrap();
        let message = error.to_string();
        assert!(
            message.contains(&format!("--trt-precision {}: INT8 needs scales", asked.name())),
            "{message}"
        );
        assert!(message.contains("a Q/DQ model") && message.contains("--calib"), "{message}");
        assert_eq!(error.exit_code(), 2);
    }
    assert!(engines_in(dir.path()).is_empty(), "nothing built, nothing cached");
    // What TensorRT itself would stop with ("no scaling factors detected"), the mock stops with.
    let message = raw_build(&digits, false, true, -1).unwrap_err();
    assert!(message.contains("INT8 needs scales"), "{message}");
}

#[test]
fn a_fixed_batch_model_at_another_batch_is_refused_before_building_or_caching() {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value;

    let dir = tempfile::tempdir().unwrap();
    let fixed = digits_variant(dir.path(), "fixed_batch", |graph| {
        for value in graph.input.iter_mut().chain(graph.output.iter_mut()) {
            let Some(tract_onnx::pb::type_proto::Value::TensorType(tensor)) =
                value.r#type.as_mut().and_then(|t| t.value.as_mut())
            else {
                panic!("a tensor")
            };
            tensor.shape.as_mut().unwrap().dim[0].value = Some(Value::DimValue(1));
        }
    });
    let cache = dir.path().join("engines");
    let trt = backend(orin_trt10, &cache);
    let error = trt.prepare(&fixed, &PrepareOptions { batch: 4, ..Default::default() }).err().unwrap();
    let message = error.to_string();
    assert!(message.contains("fixed_batch.toml: input 'input' has the fixed shape 1x1x8x8"), "{message}");
    assert!(message.contains("not 4x1x8x8") && message.contains("dynamic batch"), "{message}");
    assert_eq!(error.exit_code(), 2);
    assert!(engines_in(&cache).is_empty(), "no engine cached under a batch-4 key");
    // At its own batch it builds and runs.
    let outputs = trt.prepare(&fixed, &PrepareOptions::default()).unwrap().spawn().unwrap().run(&digits(1));
    assert_eq!(outputs.unwrap()[0].shape, vec![1, 10]);
}

#[test]
fn dla_builds_in_fp16_and_a_core_the_device_lacks_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let mut agx = backend(orin_trt10, dir.path());
    agx.options.dla_core = Some(1);
    let (plan, info) = agx.build(&digits, 1).unwrap();
    assert_eq!((info.precision.as_str(), info.dla_core), ("fp16", Some(1)));
    assert!(mock::stamp(&plan).fp16);
    agx.options.dla_core = Some(2);
    let message = agx.build(&digits, 1).unwrap_err().to_string();
    assert!(message.contains("--trt-dla 2: this device has 2 DLA cores"), "{message}");
    let mut nano = backend(orin_nano_trt10, dir.path());
    nano.options.dla_core = Some(0);
    let error = nano.prepare(&digits, &PrepareOptions::default()).err().unwrap();
    assert!(error.to_string().contains("--trt-dla 0: this device has 0 DLA cores"), "{error}");
    assert_eq!(error.exit_code(), 2);
    // An engine file asked onto a DLA core the device lacks, too.
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::F32), None);
    let message = nano.prepare_engine_file(&path, &PrepareOptions::default()).err().unwrap().to_string();
    assert!(message.contains("this device has 0 DLA cores"), "{message}");
    // The mock refuses FP32 on DLA, and a core the device lacks, as the shim does.
    let message = raw_build(&digits, false, false, 0).unwrap_err();
    assert!(message.contains("DLA runs FP16 and INT8 only"), "{message}");
    let message = raw_build(&digits, true, false, 5).unwrap_err();
    assert!(message.contains("DLA core 5 does not exist: this device has 2 DLA cores"), "{message}");
}

#[test]
fn an_engine_with_tensorrt_plugins_needs_libnvinfer_plugin_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan =
        mock::plan_with(&digits_onnx(), 100300, "8.7", ffi::F32, None, vec!["EfficientNMS_TRT".into()]);
    let path = write_engine(dir.path(), &plan, None);
    let without = backend(orin_trt10, dir.path());
    let message = without.prepare_engine_file(&path, &PrepareOptions::default()).err().unwrap().to_string();
    assert!(message.contains("could not find plugin: EfficientNMS_TRT"), "{message}");
    assert!(message.contains("libnvinfer_plugin was not found"), "{message}");
    assert!(without.version().unwrap().contains("without libnvinfer_plugin"));
    let with = backend(orin_trt10_with_plugins, dir.path());
    let prepared = with.prepare_engine_file(&path, &PrepareOptions::default()).unwrap();
    assert_eq!(prepared.outputs()[0].name, "logits");
    assert!(!with.version().unwrap().contains("without"));
}

#[test]
fn an_engine_with_vectorized_io_formats_is_refused_with_how_to_rebuild_it() {
    let dir = tempfile::tempdir().unwrap();
    let chw16 = "Row major C/16 vectorized (CHW16) FP16 format";
    let plan = mock::plan_with(&digits_onnx(), 100300, "8.7", ffi::F16, Some(chw16), Vec::new());
    let path = write_engine(dir.path(), &plan, None);
    let trt = backend(orin_trt10, dir.path());
    let error = trt.prepare_engine_file(&path, &PrepareOptions::default()).err().unwrap();
    let message = error.to_string();
    assert!(message.contains(&format!("tensor 'input' is in the format \"{chw16}\"")), "{message}");
    assert!(message.contains("--inputIOFormats=fp32:chw"), "{message}");
    assert_eq!(error.exit_code(), 2);
    let listed = trt.list_engine(&path).unwrap();
    assert_eq!(listed.tensors[0].format.as_deref(), Some(chw16));
}

#[test]
fn an_output_whose_shape_depends_on_the_data_is_refused_as_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let nonzero = digits_variant(dir.path(), "nonzero", |graph| {
        let node = tract_onnx::pb::NodeProto {
            op_type: "NonZero".into(),
            input: vec![graph.output[0].name.clone()],
            output: vec!["positive".into()],
            ..Default::default()
        };
        graph.node.push(node);
        let mut output = graph.output[0].clone();
        output.name = "positive".into();
        output.r#type = None;
        graph.output.push(output);
    });
    let prepared = backend(orin_trt10, dir.path()).prepare(&nonzero, &PrepareOptions::default()).unwrap();
    let error = prepared.spawn().unwrap().run(&digits(1)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("output 'positive' has shape [2, -1]"), "{message}");
    assert!(message.contains("does not support data-dependent output shapes"), "{message}");
    assert!(matches!(error, Error::Inference { .. }));
}

#[test]
fn the_timing_cache_is_read_and_written_around_a_build() {
    let dir = tempfile::tempdir().unwrap();
    let mut trt = backend(orin_trt10, dir.path());
    let timing_cache = dir.path().join("timing.cache");
    trt.options.timing_cache = Some(timing_cache.clone());
    trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap();
    assert_eq!(std::fs::read(&timing_cache).unwrap(), b"mock timing cache: TensorRT 10.3.0 sm 8.7");
    // Read back by the next build, which TensorRT takes.
    trt.build(&model("digits_mlp_nchw.toml"), 4).unwrap();
}

/// A timing cache written by another TensorRT release or GPU (a board updated, a cache copied from
/// a desktop) costs the build its head start, not the build: built without it, and replaced.
#[test]
fn a_timing_cache_from_another_release_or_gpu_is_replaced_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let timing_cache = dir.path().join("timing.cache");
    std::fs::write(&timing_cache, b"mock timing cache: TensorRT 8.6.2 sm 8.7").unwrap();
    let mut trt = backend(orin_trt10, dir.path());
    trt.options.timing_cache = Some(timing_cache.clone());
    let (plan, _) = trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap();
    assert!(!plan.is_empty());
    assert_eq!(std::fs::read(&timing_cache).unwrap(), b"mock timing cache: TensorRT 10.3.0 sm 8.7");
    // What the mock refuses, as the shim hands it to the backend.
    let stale = b"mock timing cache: TensorRT 10.3.0 sm 7.2";
    let options = ffi::BuildOptions {
        timing_cache: stale.as_ptr().cast(),
        timing_cache_bytes: stale.len(),
        ..digits_build()
    };
    let refused = orin_runtime().build(&digits_onnx(), &options).unwrap_err();
    assert!(matches!(refused, super::TrtError::TimingCacheRefused(_)), "{refused:?}");
}

/// The digits MLP with its first weight stored beside it in `digits.weights`, as
/// `onnx.save_model(..., save_as_external_data=True)` writes large models.
fn external_weights_model(dir: &Path) -> Model {
    use tract_onnx::pb::{tensor_proto::DataLocation, StringStringEntryProto};
    let weights = dir.join("digits.weights");
    digits_variant(dir, "digits_external", |graph| {
        let tensor = graph.initializer.iter_mut().find(|t| !t.raw_data.is_empty()).expect("raw weights");
        let raw = std::mem::take(&mut tensor.raw_data);
        let mut file = vec![0u8; 16]; // an offset, as ONNX's writer aligns tensors
        file.extend_from_slice(&raw);
        std::fs::write(&weights, file).unwrap();
        let entry = |key: &str, value: String| StringStringEntryProto { key: key.into(), value };
        tensor.external_data = vec![
            entry("location", "digits.weights".into()),
            entry("offset", "16".into()),
            entry("length", raw.len().to_string()),
        ];
        tensor.data_location = Some(DataLocation::External as i32);
    })
}

/// TensorRT's parser finds external weights from the model's path, which edgert gives it: the
/// engine builds wherever edgert runs from, and answers as the model does.
#[test]
fn a_model_with_external_weights_builds_from_any_working_folder() {
    let dir = tempfile::tempdir().unwrap();
    let external = external_weights_model(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, cache.path());
    let options = PrepareOptions::default();
    let got = trt.prepare(&external, &options).unwrap().spawn().unwrap().run(&digits(1)).unwrap();
    let want = CpuBackend::default()
        .prepare(&model("digits_mlp_nchw.toml"), &options)
        .unwrap()
        .spawn()
        .unwrap()
        .run(&digits(1))
        .unwrap();
    for (g, w) in got[0].data.iter().zip(&want[0].data) {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} against {w}");
    }
    // Without the path (what the shim did before), the parser cannot find them.
    let message = raw_build(&external, false, false, -1).unwrap_err();
    assert!(message.contains("Failed to open file: digits.weights"), "{message}");
}

/// An AGX Orin and an Orin Nano share compute capability 8.7; their engines are not one cache
/// entry. The device's name and memory are in the key, and a cache built on one is rebuilt on the
/// other.
#[test]
fn the_device_and_its_memory_are_part_of_the_cache_key() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let agx = backend(orin_trt10, dir.path());
    let nano = || {
        let symbols = mock::symbols(mock::tensorrt_10_3, mock::orin_nano, mock::malloc);
        Ok((ffi::Symbols { cuda_mem_get_info: Some(mock::memory_nano), ..symbols }, None))
    };
    let nano = backend(nano, dir.path());
    agx.prepare(&digits, &PrepareOptions::default()).unwrap();
    assert_eq!(engines_in(dir.path()).len(), 1);
    nano.prepare(&digits, &PrepareOptions::default()).unwrap();
    let engines = engines_in(dir.path());
    assert_eq!(engines.len(), 2, "{engines:?}");
    let devices: Vec<Option<String>> =
        engines.iter().map(|e| cache::read_info(e).unwrap().unwrap().device).collect();
    assert!(devices.contains(&Some("Orin, 30697 MiB".into())), "{devices:?}");
    assert!(devices.contains(&Some("Orin, 7620 MiB".into())), "{devices:?}");
    // An entry edgert wrote before the key had the device is a miss, rebuilt under the new key.
    let old = engines_in(dir.path()).into_iter().next().unwrap();
    let mut info = cache::read_info(&old).unwrap().unwrap();
    info.device = None;
    std::fs::write(cache::sidecar_path(&old), serde_json::to_vec(&info).unwrap()).unwrap();
    agx.prepare(&digits, &PrepareOptions::default()).unwrap();
    nano.prepare(&digits, &PrepareOptions::default()).unwrap();
    assert_eq!(engines_in(dir.path()).len(), 2);
    assert!(agx.version().unwrap().contains("Orin, 30697 MiB"), "{:?}", agx.version());
}

/// A Jetson's GPU memory is the system's: without --trt-workspace-mb a build is bounded to half the
/// memory free, and says so; a desktop GPU keeps TensorRT's default.
#[test]
fn on_an_integrated_gpu_the_build_workspace_is_bounded_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let mut trt = backend(orin_trt10, dir.path());
    let (plan, _) = trt.build(&digits, 1).unwrap();
    assert_eq!(mock::stamp(&plan).workspace_bytes, 10 << 30, "half of the mock Orin's 20 GiB free");
    assert!(trt.version().unwrap().contains("engine builds take at most 10240 MiB of workspace"));
    trt.options.workspace_mb = Some(512);
    let (plan, _) = trt.build(&digits, 1).unwrap();
    assert_eq!(mock::stamp(&plan).workspace_bytes, 512 << 20);
    let desktop = || Ok((mock::symbols(mock::tensorrt_10_3, mock::desktop, mock::malloc), None));
    let desktop = backend(desktop, dir.path());
    let (plan, _) = desktop.build(&digits, 1).unwrap();
    assert_eq!(mock::stamp(&plan).workspace_bytes, 0);
    assert!(!desktop.version().unwrap().contains("workspace"));
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
        let prepared = trt.prepare_engine_file(&path, &PrepareOptions::default()).unwrap();
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
        let error =
            backend(load, dir.path()).prepare_engine_file(&path, &PrepareOptions::default()).err().unwrap();
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
        device: None,
        tactic_libraries: None,
        dla_core: None,
        precision: "fp16".into(),
        profile: "1x1x8x8".into(),
        calibration_sha256: None,
        sparsity: false,
    };
    let path = write_engine(dir.path(), b"not even a plan", Some(&info));
    let message = backend(orin_trt10, dir.path())
        .prepare_engine_file(&path, &PrepareOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("built by TensorRT 8.6.2 and this is TensorRT 10.3.0"), "{message}");
}

#[test]
fn a_file_that_is_no_engine_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), b"certainly not a TensorRT plan", None);
    let message = backend(orin_trt10, dir.path())
        .prepare_engine_file(&path, &PrepareOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("model.engine") && message.contains("not a TensorRT engine"), "{message}");
}

#[test]
fn an_engine_with_f16_inputs_and_outputs_is_fed_and_read_through_f32() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::F16), None);
    let prepared =
        backend(orin_trt10, dir.path()).prepare_engine_file(&path, &PrepareOptions::default()).unwrap();
    assert_eq!((prepared.inputs()[0].dtype, prepared.outputs()[0].dtype), (DataType::F16, DataType::F16));
    let got = prepared.spawn().unwrap().run(&digits(2)).unwrap();
    let model = model("digits_mlp_nchw.toml");
    let options = PrepareOptions { batch: 2, ..Default::default() };
    let want =
        CpuBackend::default().prepare(&model, &options).unwrap().spawn().unwrap().run(&digits(2)).unwrap();
    assert_eq!(got[0].shape, want[0].shape);
    // The input and the outputs each lose bits to f16: within a few f16 steps of the f32 answer.
    for (g, w) in got[0].data.iter().zip(&want[0].data) {
        assert!((g - w).abs() <= 0.01 * w.abs().max(1.0), "{g} against {w}");
    }
}

/// The engine's inputs and outputs at the batch asked for (dynamic dimensions set to it), on the GPU
/// and on the host, against `--max-memory-mb`: 74 values a digit, 8 bytes each.
#[test]
fn an_engine_whose_inputs_and_outputs_would_not_fit_the_memory_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_engine(dir.path(), &mock::plan(&digits_onnx(), 100300, "8.7", ffi::F32), None);
    let trt = backend(orin_trt10, dir.path());
    let options = |bytes| PrepareOptions { batch: 1000, memory: MemoryLimit { bytes }, ..Default::default() };
    let message = trt.prepare_engine_file(&path, &options(591_999)).err().unwrap().to_string();
    assert!(
        message.contains("model.engine: the engine's inputs and outputs at batch 1000")
            && message.contains("more than the memory limit"),
        "{message}"
    );
    assert!(trt.prepare_engine_file(&path, &options(592_000)).is_ok());
}

/// An ONNX model that ignores its input `images` [1, 3, h, w] and gives `outputs` (f32, or INT32
/// where `int32`) as constants: the outputs of an engine that ends in an NMS plugin.
fn constant_outputs_onnx(h: i64, w: i64, outputs: &[(String, HostTensor, bool)]) -> Vec<u8> {
    use prost::Message;
    use tract_onnx::pb;

    let value_info = |name: &str, elem_type: i32, dims: &[i64]| pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type,
                shape: Some(pb::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| pb::tensor_shape_proto::Dimension {
                            value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (mut nodes, mut graph_outputs) = (Vec::new(), Vec::new());
    for (name, tensor, int32) in outputs {
        let dims: Vec<i64> = tensor.shape.iter().map(|&d| d as i64).collect();
        let (elem_type, value) = match int32 {
            true => (
                6,
                pb::TensorProto {
                    dims: dims.clone(),
                    data_type: 6,
                    int32_data: tensor.data.iter().map(|&v| v as i32).collect(),
                    ..Default::default()
                },
            ),
            false => (
                1,
                pb::TensorProto {
                    dims: dims.clone(),
                    data_type: 1,
                    float_data: tensor.data.clone(),
                    ..Default::default()
                },
            ),
        };
        nodes.push(pb::NodeProto {
            op_type: "Constant".into(),
            output: vec![name.clone()],
            attribute: vec![pb::AttributeProto {
                name: "value".into(),
                r#type: 4,
                t: Some(value),
                ..Default::default()
            }],
            ..Default::default()
        });
        graph_outputs.push(value_info(name, elem_type, &dims));
    }
    let graph = pb::GraphProto {
        node: nodes,
        input: vec![value_info("images", 1, &[1, 3, h, w])],
        output: graph_outputs,
        ..Default::default()
    };
    pb::ModelProto {
        ir_version: 8,
        opset_import: vec![pb::OperatorSetIdProto { domain: String::new(), version: 17 }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

/// An engine ending in EfficientNMS_TRT gives `num_detections` and `detection_classes` as INT32:
/// they are read into f32 exactly, and its boxes decode as the plugin's layout says.
#[test]
fn an_engine_with_int32_nms_outputs_runs_and_its_boxes_decode() {
    use crate::postprocess::detect::Decoder;
    use crate::postprocess::fixtures::{arrays, fixtures, geometry};

    let dir = tempfile::tempdir().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("efficient_nms.json")).unwrap()).unwrap();
    let order = ["num_detections", "detection_boxes", "detection_scores", "detection_classes"];
    let mut raw = arrays(&fixtures().join("efficient_nms.npz"));
    raw.sort_by_key(|(name, _)| order.iter().position(|o| o == name));
    let outputs: Vec<(String, HostTensor, bool)> = raw
        .iter()
        .map(|(n, t)| (n.clone(), t.clone(), n == "num_detections" || n == "detection_classes"))
        .collect();
    let onnx = constant_outputs_onnx(160, 224, &outputs);
    let plugin_types = vec![ffi::I32, ffi::F32, ffi::F32, ffi::I32];
    let path = write_engine(dir.path(), &mock::plan_with_outputs(&onnx, 100300, "8.7", plugin_types), None);
    let prepared =
        backend(orin_trt10, dir.path()).prepare_engine_file(&path, &PrepareOptions::default()).unwrap();
    let types: Vec<DataType> = prepared.outputs().iter().map(|o| o.dtype).collect();
    assert_eq!(types, [DataType::I32, DataType::F32, DataType::F32, DataType::I32]);
    let got = prepared.spawn().unwrap().run(&HostTensor::zeros(&[1, 3, 160, 224])).unwrap();
    for ((name, want, _), got) in outputs.iter().zip(&got) {
        assert_eq!((&got.shape, &got.data), (&want.shape, &want.data), "{name}");
    }
    let mut spec =
        crate::model::manifest::DetectSpec::new(crate::model::manifest::DetectFormat::EfficientNms);
    spec.confidence = json["confidence"].as_f64().unwrap() as f32;
    let decoder = Decoder::new(&spec, prepared.outputs(), (160, 224)).unwrap();
    let found =
        decoder.decode(&got, 0, &geometry(&json), |c| c.to_string(), MemoryLimit::from_mib(16)).unwrap();
    let wanted = json["detections"].as_array().unwrap();
    assert!(!wanted.is_empty());
    let classes = |d: &serde_json::Value| d[5].as_u64().unwrap() as usize;
    assert_eq!(
        found.iter().map(|d| d.class_id).collect::<Vec<_>>(),
        wanted.iter().map(classes).collect::<Vec<_>>()
    );
}

#[test]
fn an_engine_with_int8_inputs_or_fp8_outputs_is_refused_with_the_types_edgert_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (mock::plan(&digits_onnx(), 100300, "8.7", ffi::I8), "is i8; edgert feeds engines f32 or f16 inputs"),
        (
            mock::plan_with_outputs(&digits_onnx(), 100300, "8.7", vec![ffi::FP8]),
            "is fp8; edgert reads f32, f16, i32, i64 and bool outputs",
        ),
    ];
    for (plan, says) in cases {
        let path = write_engine(dir.path(), &plan, None);
        let message = backend(orin_trt10, dir.path())
            .prepare_engine_file(&path, &PrepareOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(message.contains(says), "{message}");
    }
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

/// libnvinfer found only through TENSORRT_LIB_DIR: a failed build says which folder
/// LD_LIBRARY_PATH must name, and doctor's library check fails with it.
#[test]
fn a_tensorrt_found_off_the_loaders_path_says_to_add_its_folder() {
    fn off_path() -> Loaded {
        let symbols = mock::symbols(mock::tensorrt_10_3, mock::orin, mock::malloc);
        let libraries = super::library::found_in(symbols, PathBuf::from("/opt/TensorRT-10.3/lib"));
        Ok((symbols, Some(std::sync::Arc::new(libraries))))
    }
    let dir = tempfile::tempdir().unwrap();
    let options = TrtOptions { engine_cache: Some(dir.path().to_owned()), ..TrtOptions::default() };
    let trt = TensorrtBackend::with(Some(&mock::API_BUILD_FAILS), off_path, options);
    let message = trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap_err().to_string();
    assert!(message.contains("could not find any implementation"), "{message}");
    assert!(message.contains("export LD_LIBRARY_PATH=/opt/TensorRT-10.3/lib:$LD_LIBRARY_PATH"), "{message}");
    let fine = backend(orin_trt10, dir.path());
    assert_eq!((fine.search_path_fix(), trt.search_path_fix().is_some()), (None, true));
}

/// TensorRT's waits block by default (a Jetson's cores stay free for capture and preprocessing);
/// --gpu-sync changes it, before TensorRT opens the GPU. Mapped memory stays allowed either way.
#[test]
fn the_gpu_sync_mode_is_set_before_tensorrt_opens_the_gpu() {
    use crate::gpu_sync::GpuSync;
    let dir = tempfile::tempdir().unwrap();
    for (sync, flags) in [(GpuSync::Block, 4 | 8), (GpuSync::Spin, 1 | 8), (GpuSync::Yield, 2 | 8)] {
        mock::DEVICE_FLAGS.with(|f| f.set(None));
        let mut trt = backend(orin_trt10, dir.path());
        trt.options.sync = sync;
        trt.check().unwrap();
        assert_eq!(mock::DEVICE_FLAGS.with(|f| f.get()), Some(flags), "{sync:?}");
    }
    assert_eq!(TrtOptions::default().sync, GpuSync::Block);
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
fn an_engine_cache_that_cannot_be_written_costs_only_the_next_build() {
    let dir = tempfile::tempdir().unwrap();
    // The cache's folder lies under a file: nothing can be stored there.
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let trt = backend(orin_trt10, &file.join("engines"));
    let mut session =
        trt.prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions::default()).unwrap().spawn().unwrap();
    assert_eq!(session.run(&digits(1)).unwrap()[0].shape, vec![1, 10]);
    assert!(!file.join("engines").exists());
}

#[test]
fn a_cached_engine_tensorrt_refuses_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let trt = backend(orin_trt10, dir.path());
    let mlp = model("digits_mlp_nchw.toml");
    trt.prepare(&mlp, &PrepareOptions::default()).unwrap();
    let engines = engines_in(dir.path());
    let built = std::fs::read(&engines[0]).unwrap();
    // Damaged, or built by a TensorRT whose build number the key did not have.
    for refused in [b"half an engine".to_vec(), mock::plan(&digits_onnx(), 100301, "8.7", ffi::F32)] {
        std::fs::write(&engines[0], refused).unwrap();
        let outputs = trt.prepare(&mlp, &PrepareOptions::default()).unwrap().spawn().unwrap().run(&digits(1));
        assert_eq!(outputs.unwrap()[0].shape, vec![1, 10]);
        assert_eq!(std::fs::read(&engines[0]).unwrap(), built, "the entry is replaced by a good one");
    }
}

#[test]
fn sparsity_and_the_build_number_are_part_of_the_cache_key() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let (_, dense) = backend(orin_trt10, dir.path()).build(&digits, 1).unwrap();
    let mut sparse = backend(orin_trt10, dir.path());
    sparse.options.sparsity = true;
    let (_, info) = sparse.build(&digits, 1).unwrap();
    assert!(info.sparsity && !dense.sparsity);
    assert_ne!(info.cache_name(), dense.cache_name());
    let with_build = || {
        let symbols = mock::symbols(mock::tensorrt_10_3, mock::orin, mock::malloc);
        Ok((ffi::Symbols { get_infer_lib_build_version: Some(mock::build_26), ..symbols }, None))
    };
    let (_, info) = backend(with_build, dir.path()).build(&digits, 1).unwrap();
    assert_eq!(info.tensorrt, "10.3.0.26");
}

#[test]
fn an_input_already_on_the_gpu_is_bound_in_place_and_gives_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = backend(orin_trt10, dir.path())
        .prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions { batch: 2, ..Default::default() })
        .unwrap();
    let mut session = prepared.spawn().unwrap();
    assert!(session.takes_device_input());
    let input = digits(2);
    let from_host = session.run(&input).unwrap();
    // The mock reads "device" memory where it is, as a Jetson reads mapped memory; aligned to
    // 256 bytes, as TensorRT requires of the addresses it is given.
    let aligned = Aligned::from(&input.data);
    let address = aligned.address();
    // SAFETY: `input`'s f32 values, alive and unwritten until the end of the test.
    let device = unsafe { DeviceBatch::new(address, &input.shape, false) };
    let in_place = session.run_on_device(&device).unwrap();
    assert_eq!(in_place[0].shape, from_host[0].shape);
    assert_eq!(in_place[0].data, from_host[0].data);
    // SAFETY: the same memory, said to be f16: the run refuses the type before reading anything.
    let half = unsafe { DeviceBatch::new(address, &input.shape, true) };
    let error = session.run_on_device(&half).unwrap_err();
    assert!(error.to_string().contains("the engine's input is f32, the GPU input given is f16"), "{error}");
    // SAFETY: the run refuses the misaligned address before reading anything.
    let misaligned = unsafe { DeviceBatch::new(address + 4, &input.shape, false) };
    let error = session.run_on_device(&misaligned).unwrap_err();
    assert!(error.to_string().contains("is not aligned to 256 bytes"), "{error}");
    let cpu =
        CpuBackend::default().prepare(&model("digits_mlp_nchw.toml"), &PrepareOptions::default()).unwrap();
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
        reconnect: 0,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let error = match crate::stream::run(
        &mut pipeline,
        &mut source,
        &config,
        &stop,
        &mut |_| Ok(()),
        &mut crate::output::Outputs::none(),
    ) {
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
        [
            ("input", "input", DataType::I8, vec![-1, 1, 8, 8]),
            ("output", "logits", DataType::I8, vec![-1, 10])
        ]
    );

    let trt = backend(orin_trt10, dir.path());
    let (plan, info) = trt.build(&model("digits_mlp_nchw.toml"), 1).unwrap();
    let built = dir.path().join("built.engine");
    cache::write(&built, &plan, &info).unwrap();
    assert_eq!(trt.list_engine(&built).unwrap().built, Some(info));
    let error = backend(xavier_trt10, dir.path()).list_engine(&built).unwrap_err();
    assert!(error.to_string().contains("compute capability 8.7 and this one is 7.2"), "{error}");
}

/// f32 values in memory aligned to 256 bytes, standing in for a device allocation.
struct Aligned {
    pointer: *mut f32,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn from(values: &[f32]) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(std::mem::size_of_val(values).max(4), 256).unwrap();
        // SAFETY: a non-zero size; the memory is filled before it is read.
        let pointer = unsafe { std::alloc::alloc(layout) }.cast::<f32>();
        assert!(!pointer.is_null());
        // SAFETY: `pointer` holds `values.len()` f32s.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), pointer, values.len()) };
        Aligned { pointer, layout }
    }

    fn address(&self) -> u64 {
        self.pointer as u64
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `from` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.pointer.cast(), self.layout) }
    }
}

/// An Ultralytics `.engine` of the YOLOv8n fixture: its metadata as Ultralytics writes the header
/// (JSON, names keyed by strings), then the plan.
fn ultralytics_engine(dir: &Path) -> PathBuf {
    use prost::Message;

    let detect = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/detect");
    let onnx = std::fs::read(detect.join("yolov8n.onnx")).unwrap();
    let proto = tract_onnx::pb::ModelProto::decode(&*onnx).unwrap();
    let meta = |key: &str| proto.metadata_props.iter().find(|p| p.key == key).unwrap().value.clone();
    let names: serde_json::Map<String, serde_json::Value> =
        (0..20).map(|i| (i.to_string(), format!("class{i}").into())).collect();
    let header = serde_json::json!({
        "description": meta("description"), "task": meta("task"), "batch": 1, "stride": 32,
        "imgsz": [160, 224], "names": names, "args": {"batch": 1, "half": true, "nms": false},
    });
    let json = serde_json::to_vec(&header).unwrap();
    let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
    bytes.extend_from_slice(&json);
    bytes.extend_from_slice(&mock::plan(&onnx, 100300, "8.7", ffi::F32));
    let path = dir.join("yolov8n.engine");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn an_ultralytics_engine_runs_bare_and_finds_what_its_onnx_finds() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Model::load(&ultralytics_engine(dir.path()), &BareModelOptions::default()).unwrap();
    assert_eq!(engine.manifest.input.shape, [1, 3, 160, 224]);
    assert_eq!(engine.label(19), "class19");
    let image_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/detect/bus_letterboxed.png");
    let image = image::open(image_path).unwrap();
    let boxes = |model: Model, backend: Box<dyn Backend>| {
        let selected = crate::backend::Selected { backend, requested: "test".into(), fallback: None };
        let mut pipeline =
            crate::pipeline::Pipeline::open(model, selected, PrepareOptions::default()).unwrap();
        match pipeline.predict(crate::pipeline::Sample::Image(&image)).unwrap() {
            crate::postprocess::Prediction::Boxes(b) => b,
            other => panic!("{other:?}"),
        }
    };
    let onnx = Model::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/detect/yolov8n.onnx"),
        &BareModelOptions::default(),
    )
    .unwrap();
    let from_engine = boxes(engine, Box::new(backend(orin_trt10, dir.path())));
    let from_onnx = boxes(onnx, Box::<CpuBackend>::default());
    // The mock runs the plan's ONNX through tract without edgert's own CPU kernels: the last bits
    // of a box may differ, nothing more.
    assert!(from_engine.len() > 10 && from_engine.len() == from_onnx.len(), "{} boxes", from_engine.len());
    for (e, o) in from_engine.iter().zip(&from_onnx) {
        let close = e.bbox.iter().zip(&o.bbox).all(|(a, b)| (a - b).abs() < 0.01);
        assert!(e.class_id == o.class_id && (e.score - o.score).abs() < 1e-4 && close, "{e:?} against {o:?}");
    }
}
