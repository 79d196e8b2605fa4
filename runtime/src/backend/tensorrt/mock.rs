//! A test double of the shim's C API that behaves like a small TensorRT: "building" stores the
//! ONNX model in a plan stamped with the TensorRT version and GPU it was built for, loading refuses
//! plans from another version or GPU as TensorRT does, and running executes the model with tract.
//! Device memory comes from the `Symbols` it is given, so tests can make `cudaMalloc` fail.
//!
//! It refuses what TensorRT (through the shim) refuses, so the backend's tests cannot pass on a
//! permissive double: Q/DQ nodes without the INT8 flag, INT8 without scales, DLA without FP16 or
//! INT8 or on a device without that core, plugin layers without libnvinfer_plugin, device
//! addresses not aligned to 256 bytes, buffers sized as dense for a vectorized IO format, a timing
//! cache another release or GPU wrote, external weights without the model's path; and it
//! leaves data-dependent output shapes at -1, as TensorRT does.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tract_onnx::prelude::*;

use super::ffi::{self, Api, Binding, Blob, BuildOptions, ErrorBuf, Symbols, Timing};
use crate::model::onnx;

const MAGIC: &[u8] = b"EDGERT-MOCK-TRT\n";

#[derive(Serialize, Deserialize)]
pub struct Stamp {
    tensorrt: i32,
    sm: String,
    pub fp16: bool,
    pub int8: bool,
    #[serde(default)]
    pub fp8: bool,
    /// The inputs' and outputs' type (`ffi::F32`, `F16` as with `--inputIOFormats=fp16:chw`, ...).
    io_dtype: i32,
    /// Each output's type where it is not `io_dtype` (an NMS plugin's INT32 `num_detections`).
    #[serde(default)]
    output_dtypes: Vec<i32>,
    /// The IO tensors' format description when not linear (`--inputIOFormats=fp16:chw16`).
    #[serde(default)]
    io_format: Option<String>,
    #[serde(default)]
    pub calibrated: Option<Calibrated>,
    /// TensorRT plugins the plan's layers use (ONNX operators named `*_TRT`).
    #[serde(default)]
    plugins: Vec<String>,
    #[serde(default)]
    dla_core: Option<i32>,
    /// The workspace the builder was given (0: TensorRT's default, all device memory).
    #[serde(default)]
    pub workspace_bytes: i64,
}

/// What a calibrator gave the mock builder.
#[derive(Debug, Serialize, Deserialize)]
pub struct Calibrated {
    pub batches: usize,
    /// Mean of every value fed, to tell real inputs from zeros.
    pub mean: f64,
    pub from_cache: bool,
}

struct MockRuntime {
    symbols: Symbols,
    version: i32,
    sm: String,
    dla_cores: i32,
    integrated: i32,
    plugins: bool,
}

struct MockEngine {
    runtime: *const MockRuntime,
    proto: tract_onnx::pb::ModelProto,
    tensors: Vec<MockTensor>,
    io_format: Option<CString>,
}

struct MockTensor {
    name: CString,
    is_input: bool,
    dims: Vec<i64>,
    dtype: i32,
}

/// Bytes of one value of an `ffi` type.
fn dtype_bytes(dtype: i32) -> usize {
    match dtype {
        ffi::F16 | ffi::BF16 => 2,
        ffi::I8 | ffi::U8 | ffi::BOOL | ffi::FP8 => 1,
        ffi::I64 => 8,
        _ => 4,
    }
}

/// A plan per input shape set, with the output shapes it gives (-1: known only from the data).
type Plans = HashMap<Vec<usize>, (Arc<TypedRunnableModel>, Vec<Vec<i64>>)>;

/// The mock's own device attribute (not a CUDA one): how many DLA cores the device has.
const DLA_CORES: c_int = -1;
/// cudaDevAttrIntegrated: 1 on a Jetson.
const INTEGRATED: c_int = 18;

/// What the model's graph holds that TensorRT builds specially: Q/DQ nodes, plugin layers.
fn graph_needs(proto: &tract_onnx::pb::ModelProto) -> (bool, Vec<String>) {
    let nodes = onnx::all_nodes(onnx::graph(proto));
    let qdq = nodes.iter().any(|n| n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear");
    let plugins = nodes.iter().filter(|n| n.op_type.ends_with("_TRT")).map(|n| n.op_type.clone()).collect();
    (qdq, plugins)
}

/// The operators the mock's DLA runs (a few of those NVIDIA's DLA supports); others fall back.
fn runs_on_dla(op: &str) -> bool {
    ["Conv", "Gemm", "MatMul", "Relu", "Add", "Mul", "MaxPool", "AveragePool", "Concat", "Sigmoid"]
        .contains(&op)
}

/// Whether the graph's Q/DQ nodes are FP8 ones (an FP8 zero point, ONNX types 17 to 20).
fn fp8_qdq(proto: &tract_onnx::pb::ModelProto) -> bool {
    onnx::graph(proto).initializer.iter().any(|t| (17..=20).contains(&t.data_type))
}

struct MockContext {
    engine: *const MockEngine,
    input_shape: Option<Vec<usize>>,
    plans: Plans,
}

fn fail(error: *mut ErrorBuf, message: &str) {
    // SAFETY: every shim call is given a live `ErrorBuf`, as the real shim's are.
    let error = unsafe { &mut *error };
    for (slot, byte) in error.message.iter_mut().zip(message.bytes().chain([0]).take(1023)) {
        *slot = byte as c_char;
    }
    error.message[1023] = 0;
}

/// A stamped plan for `onnx`, as if TensorRT `version` had built it for a GPU of compute `sm`.
pub fn plan(onnx: &[u8], version: i32, sm: &str, io_dtype: i32) -> Vec<u8> {
    plan_with(onnx, version, sm, io_dtype, None, Vec::new())
}

/// A stamped plan whose IO tensors are in `io_format` (None: linear) and whose layers use
/// `plugins`.
pub fn plan_with(
    onnx: &[u8],
    version: i32,
    sm: &str,
    io_dtype: i32,
    io_format: Option<&str>,
    plugins: Vec<String>,
) -> Vec<u8> {
    let stamp = Stamp {
        tensorrt: version,
        sm: sm.into(),
        fp16: false,
        int8: false,
        fp8: false,
        io_dtype,
        output_dtypes: Vec::new(),
        io_format: io_format.map(String::from),
        calibrated: None,
        plugins,
        dla_core: None,
        workspace_bytes: 0,
    };
    stamped(&stamp, onnx)
}

/// A stamped plan with f32 inputs and outputs of `output_dtypes`, in the order of the graph's.
pub fn plan_with_outputs(onnx: &[u8], version: i32, sm: &str, output_dtypes: Vec<i32>) -> Vec<u8> {
    let mut stamp = self::stamp(&plan(onnx, version, sm, ffi::F32));
    stamp.output_dtypes = output_dtypes;
    stamped(&stamp, onnx)
}

/// The stamp of a plan the mock built.
pub fn stamp(plan: &[u8]) -> Stamp {
    let rest = plan.strip_prefix(MAGIC).expect("a mock plan");
    let split = rest.iter().position(|&b| b == b'\n').unwrap();
    serde_json::from_slice(&rest[..split]).unwrap()
}

fn stamped(stamp: &Stamp, onnx: &[u8]) -> Vec<u8> {
    [MAGIC, &serde_json::to_vec(stamp).unwrap(), b"\n", onnx].concat()
}

fn version_text(encoded: i32) -> String {
    super::version::TrtVersion::decode(encoded).to_string()
}

unsafe extern "C" fn runtime_create(
    symbols: *const Symbols,
    error: *mut ErrorBuf,
) -> *mut ffi::RuntimeHandle {
    let symbols = *symbols;
    let version = (symbols.get_infer_lib_version.expect("tests give a version"))();
    let attribute = symbols.cuda_device_get_attribute.expect("tests give a device");
    let (mut major, mut minor) = (0, 0);
    let code = attribute(&mut major, 75, 0);
    if code != 0 || attribute(&mut minor, 76, 0) != 0 {
        let text = CStr::from_ptr((symbols.cuda_get_error_string.unwrap())(code)).to_string_lossy();
        fail(error, &format!("cudaDeviceGetAttribute failed: {text}"));
        return std::ptr::null_mut();
    }
    let (mut dla_cores, mut integrated) = (0, 0);
    attribute(&mut dla_cores, DLA_CORES, 0);
    attribute(&mut integrated, INTEGRATED, 0);
    // As the shim: TensorRT's plugins registered where libnvinfer_plugin was found.
    let plugins = match symbols.init_plugins {
        Some(init) => init(std::ptr::null_mut(), c"".as_ptr()),
        None => false,
    };
    let sm = format!("{major}.{minor}");
    let runtime = MockRuntime { symbols, version, sm, dla_cores, integrated, plugins };
    Box::into_raw(Box::new(runtime)).cast()
}

unsafe extern "C" fn runtime_destroy(runtime: *mut ffi::RuntimeHandle) {
    drop(Box::from_raw(runtime.cast::<MockRuntime>()));
}

unsafe extern "C" fn runtime_version(runtime: *const ffi::RuntimeHandle) -> i32 {
    (*runtime.cast::<MockRuntime>()).version
}

unsafe extern "C" fn runtime_device(
    runtime: *const ffi::RuntimeHandle,
    device: *mut ffi::Device,
    _error: *mut ErrorBuf,
) -> c_int {
    let runtime = &*runtime.cast::<MockRuntime>();
    let (major, minor) = runtime.sm.split_once('.').unwrap();
    *device = ffi::Device {
        sm_major: major.parse().unwrap(),
        sm_minor: minor.parse().unwrap(),
        integrated: runtime.integrated,
        dla_cores: runtime.dla_cores,
    };
    0
}

unsafe extern "C" fn engine_load(
    runtime: *mut ffi::RuntimeHandle,
    plan: *const c_void,
    bytes: usize,
    dla_core: i32,
    error: *mut ErrorBuf,
) -> *mut ffi::EngineHandle {
    let runtime = &*runtime.cast::<MockRuntime>();
    if dla_core >= runtime.dla_cores {
        let cores = runtime.dla_cores;
        fail(error, &format!("DLA core {dla_core} does not exist: this device has {cores} DLA cores"));
        return std::ptr::null_mut();
    }
    let plan = std::slice::from_raw_parts(plan.cast::<u8>(), bytes);
    let Some(rest) = plan.strip_prefix(MAGIC) else {
        fail(
            error,
            "deserializeCudaEngine failed: the plan file is not a TensorRT engine (magic tag mismatch)",
        );
        return std::ptr::null_mut();
    };
    let split = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let stamp: Stamp = serde_json::from_slice(&rest[..split]).unwrap();
    if stamp.tensorrt != runtime.version {
        let message = format!(
            "deserializeCudaEngine failed: the engine plan file is not compatible with this version of TensorRT, \
             expecting library version {} got {}, please rebuild",
            version_text(runtime.version),
            version_text(stamp.tensorrt)
        );
        fail(error, &message);
        return std::ptr::null_mut();
    }
    if stamp.sm != runtime.sm {
        let message = format!(
            "deserializeCudaEngine failed: the engine plan file is generated on an incompatible device, \
             expecting compute {} got compute {}, please rebuild",
            runtime.sm, stamp.sm
        );
        fail(error, &message);
        return std::ptr::null_mut();
    }
    if let (Some(plugin), false) = (stamp.plugins.first(), runtime.plugins) {
        let message = format!(
            "deserializeCudaEngine failed: getPluginCreator could not find plugin: {plugin} version: 1 \
             (libnvinfer_plugin was not found: engines that use TensorRT's plugins, such as EfficientNMS_TRT, \
             need it)"
        );
        fail(error, &message);
        return std::ptr::null_mut();
    }
    let proto = onnx::framework().proto_model_for_read(&mut &rest[split + 1..]).unwrap();
    let dims =
        |spec: &crate::tensor::TensorSpec| spec.shape.iter().map(|d| d.map_or(-1, |d| d as i64)).collect();
    let mut tensors = Vec::new();
    for (specs, is_input) in [(onnx::inputs(&proto), true), (onnx::outputs(&proto), false)] {
        for spec in specs {
            let output = tensors.iter().filter(|t: &&MockTensor| !t.is_input).count();
            let dtype = match is_input {
                false => stamp.output_dtypes.get(output).copied().unwrap_or(stamp.io_dtype),
                true => stamp.io_dtype,
            };
            let name = CString::new(spec.name.clone()).unwrap();
            tensors.push(MockTensor { name, is_input, dims: dims(&spec), dtype });
        }
    }
    let io_format = stamp.io_format.map(|f| CString::new(f).unwrap());
    let engine = MockEngine { runtime, proto, tensors, io_format };
    Box::into_raw(Box::new(engine)).cast()
}

unsafe extern "C" fn engine_destroy(engine: *mut ffi::EngineHandle) {
    drop(Box::from_raw(engine.cast::<MockEngine>()));
}

unsafe extern "C" fn engine_tensor_count(engine: *const ffi::EngineHandle) -> i32 {
    (*engine.cast::<MockEngine>()).tensors.len() as i32
}

unsafe extern "C" fn engine_tensor(
    engine: *const ffi::EngineHandle,
    index: i32,
    tensor: *mut ffi::Tensor,
    error: *mut ErrorBuf,
) -> c_int {
    let engine = &*engine.cast::<MockEngine>();
    let Some(t) = engine.tensors.get(index as usize) else {
        fail(error, &format!("tensor index {index} is out of range"));
        return 1;
    };
    let mut out = ffi::Tensor::empty();
    out.name = t.name.as_ptr();
    out.is_input = t.is_input as i32;
    out.dtype = t.dtype;
    out.nb_dims = t.dims.len() as i32;
    out.dims[..t.dims.len()].copy_from_slice(&t.dims);
    out.linear = engine.io_format.is_none() as i32;
    out.format =
        engine.io_format.as_ref().map_or(c"Row major linear FP32 format (kLINEAR)".as_ptr(), |f| f.as_ptr());
    *tensor = out;
    0
}

unsafe extern "C" fn context_create(
    engine: *mut ffi::EngineHandle,
    _error: *mut ErrorBuf,
) -> *mut ffi::ContextHandle {
    let context = MockContext { engine: engine.cast(), input_shape: None, plans: HashMap::new() };
    Box::into_raw(Box::new(context)).cast()
}

unsafe extern "C" fn context_destroy(context: *mut ffi::ContextHandle) {
    drop(Box::from_raw(context.cast::<MockContext>()));
}

unsafe extern "C" fn context_set_input_shape(
    context: *mut ffi::ContextHandle,
    name: *const c_char,
    nb_dims: i32,
    dims: *const i64,
    error: *mut ErrorBuf,
) -> c_int {
    let context = &mut *context.cast::<MockContext>();
    let engine = &*context.engine;
    let name = CStr::from_ptr(name);
    let dims = std::slice::from_raw_parts(dims, nb_dims as usize);
    let declared = engine.tensors.iter().find(|t| t.name.as_c_str() == name && t.is_input);
    let fits = declared.is_some_and(|t| {
        let d = &t.dims;
        d.len() == dims.len()
            && d.iter().zip(dims).all(|(&want, &got)| got > 0 && (want == -1 || want == got))
    });
    if !fits {
        fail(
            error,
            &format!(
                "input {} cannot take shape {dims:?}: outside the engine's profile",
                name.to_string_lossy()
            ),
        );
        return 1;
    }
    let shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    if !context.plans.contains_key(&shape) {
        let compiled = (|| -> TractResult<_> {
            let mut model = onnx::framework().model_for_proto_model(&engine.proto)?;
            model.set_input_fact(0, f32::fact(&shape).into())?;
            let typed = model.into_optimized()?;
            let dim = |d: &TDim| d.to_i64().unwrap_or(-1);
            let shapes = typed
                .output_outlets()?
                .iter()
                .map(|&o| Ok(typed.outlet_fact(o)?.shape.iter().map(dim).collect()))
                .collect::<TractResult<Vec<_>>>()?;
            Ok((typed.into_runnable()?, shapes))
        })();
        match compiled {
            Ok(plan) => drop(context.plans.insert(shape.clone(), plan)),
            Err(e) => {
                fail(error, &format!("mock engine: {e}"));
                return 1;
            }
        }
    }
    context.input_shape = Some(shape);
    0
}

impl MockContext {
    unsafe fn shape_of(&self, name: &CStr) -> Option<Vec<i64>> {
        let input = self.input_shape.as_ref()?;
        let engine = &*self.engine;
        let (_, outputs) = &self.plans[input];
        let mut output_index = 0;
        for t in &engine.tensors {
            if t.name.as_c_str() == name {
                let input = || input.iter().map(|&d| d as i64).collect();
                return Some(if t.is_input { input() } else { outputs[output_index].clone() });
            }
            output_index += !t.is_input as usize;
        }
        None
    }
}

unsafe extern "C" fn context_tensor_shape(
    context: *mut ffi::ContextHandle,
    name: *const c_char,
    nb_dims: *mut i32,
    dims: *mut i64,
    error: *mut ErrorBuf,
) -> c_int {
    let context = &*context.cast::<MockContext>();
    let Some(shape) = context.shape_of(CStr::from_ptr(name)) else {
        fail(error, "tensor has no shape: set every input's shape first");
        return 1;
    };
    *nb_dims = shape.len() as i32;
    for (i, d) in shape.iter().enumerate() {
        *dims.add(i) = *d;
    }
    0
}

unsafe extern "C" fn context_run(
    context: *mut ffi::ContextHandle,
    bindings: *const Binding,
    count: i32,
    timing: *mut Timing,
    error: *mut ErrorBuf,
) -> c_int {
    let context = &*context.cast::<MockContext>();
    let engine = &*context.engine;
    let symbols = &(*engine.runtime).symbols;
    let bindings = std::slice::from_raw_parts(bindings, count as usize);
    if bindings.len() != engine.tensors.len() {
        fail(error, "wrong number of buffers");
        return 1;
    }
    // TensorRT's rule for setTensorAddress.
    let misaligned = |b: &&Binding| !b.device.is_null() && !(b.device as usize).is_multiple_of(256);
    if let Some(b) = bindings.iter().find(misaligned) {
        let name = CStr::from_ptr(b.name).to_string_lossy();
        fail(error, &format!("setTensorAddress({name}) failed: the address is not aligned to 256 bytes"));
        return 1;
    }
    // A vectorized format pads its vectors: a buffer sized as the dense tensor is too small.
    if let Some(format) = &engine.io_format {
        let format = format.to_string_lossy();
        fail(
            error,
            &format!("mock: the IO tensors are {format}; buffers sized as dense tensors are too small"),
        );
        return 1;
    }
    // Device memory for every buffer, as the shim allocates it: lets tests run out of it.
    let mut device = Vec::new();
    for binding in bindings.iter().filter(|b| b.device.is_null()) {
        let mut pointer = std::ptr::null_mut();
        let code = (symbols.cuda_malloc.unwrap())(&mut pointer, binding.bytes);
        if code != 0 {
            let text = CStr::from_ptr((symbols.cuda_get_error_string.unwrap())(code)).to_string_lossy();
            let name = CStr::from_ptr(binding.name).to_string_lossy();
            fail(error, &format!("cudaMalloc of {} bytes for {name} failed: {text}", binding.bytes));
            return 1;
        }
        device.push(pointer);
    }
    let Some(shape) = context.input_shape.clone() else {
        fail(error, "set every input's shape first");
        return 1;
    };
    // Memory bound in place is read and written where it is: host memory in these tests, as
    // mapped memory is on a Jetson.
    let memory = |b: &Binding| if b.device.is_null() { b.host } else { b.device };
    let input = &bindings[0];
    let values: Vec<f32> = if engine.tensors[0].dtype == ffi::F16 {
        let bits = std::slice::from_raw_parts(memory(input).cast::<u16>(), input.bytes / 2);
        bits.iter().map(|&b| half::f16::from_bits(b).to_f32()).collect()
    } else {
        std::slice::from_raw_parts(memory(input).cast::<f32>(), input.bytes / 4).to_vec()
    };
    let started = Instant::now();
    let (plan, shapes) = &context.plans[&shape];
    if shapes.iter().flatten().any(|&d| d < 0) {
        fail(
            error,
            "mock: data-dependent output shapes need an output allocator, which the shim has none of",
        );
        return 1;
    }
    let outputs = plan.run(tvec!(Tensor::from_shape(&shape, &values).unwrap().into_tvalue())).unwrap();
    let compute_ms = started.elapsed().as_secs_f32() * 1e3;
    let declared = engine.tensors.iter().filter(|t| !t.is_input);
    for ((binding, value), tensor) in bindings[1..].iter().zip(outputs.iter()).zip(declared) {
        let value = value.cast_to::<f64>().unwrap();
        let data: Vec<f64> = value.to_plain_array_view::<f64>().unwrap().iter().copied().collect();
        if binding.bytes != data.len() * dtype_bytes(tensor.dtype) {
            fail(error, "output buffer of the wrong size");
            return 1;
        }
        let bytes: Vec<u8> = match tensor.dtype {
            ffi::F16 => data.iter().flat_map(|&v| half::f16::from_f64(v).to_ne_bytes()).collect(),
            ffi::I32 => data.iter().flat_map(|&v| (v as i32).to_ne_bytes()).collect(),
            ffi::I64 => data.iter().flat_map(|&v| (v as i64).to_ne_bytes()).collect(),
            ffi::BOOL => data.iter().map(|&v| u8::from(v != 0.0)).collect(),
            _ => data.iter().flat_map(|&v| (v as f32).to_ne_bytes()).collect(),
        };
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory(binding).cast::<u8>(), bytes.len());
    }
    for pointer in device {
        (symbols.cuda_free.unwrap())(pointer);
    }
    *timing = Timing { h2d_ms: 0.0, compute_ms, d2h_ms: 0.0, enqueue_ms: 0.0 };
    0
}

unsafe extern "C" fn build(
    runtime: *mut ffi::RuntimeHandle,
    onnx: *const c_void,
    bytes: usize,
    options: *const BuildOptions,
    plan: *mut Blob,
    timing_cache: *mut Blob,
    report: *mut ffi::BuildReport,
    error: *mut ErrorBuf,
) -> c_int {
    let runtime = &*runtime.cast::<MockRuntime>();
    let options = &*options;
    let model = std::slice::from_raw_parts(onnx.cast::<u8>(), bytes);
    let Ok(mut proto) = onnx::framework().proto_model_for_read(&mut &model[..]) else {
        fail(error, "the ONNX parser refused the model: not an ONNX protobuf");
        return 1;
    };
    // As TensorRT: a timing cache another release or GPU wrote is refused before anything is built.
    let given = match options.timing_cache.is_null() {
        true => &[][..],
        false => std::slice::from_raw_parts(options.timing_cache.cast::<u8>(), options.timing_cache_bytes),
    };
    if !given.is_empty() && given != timing_cache_of(runtime).as_slice() {
        fail(
            error,
            "TensorRT refused the timing cache: Serialization assertion magicTagRead == kMAGIC_TAG failed",
        );
        return ffi::TIMING_CACHE_REFUSED;
    }
    // The parser reads external weights relative to the model's path, and only with it.
    let folder = (!options.model_path.is_null())
        .then(|| std::path::PathBuf::from(CStr::from_ptr(options.model_path).to_string_lossy().into_owned()))
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf));
    if let Err(message) = embed_external_weights(&mut proto, folder.as_deref()) {
        fail(error, &format!("the ONNX parser refused the model: {message}"));
        return 1;
    }
    let model = &prost::Message::encode_to_vec(&proto)[..];
    let (qdq, plugins) = graph_needs(&proto);
    if let (Some(plugin), false) = (plugins.first(), runtime.plugins) {
        fail(error, &format!("the ONNX parser refused the model: plugin not found: {plugin} (libnvinfer_plugin is not loaded)"));
        return 1;
    }
    if options.int8 != 0 && options.calibrator.is_null() && !qdq {
        fail(error, "INT8 needs scales: the model has no Q/DQ nodes and no calibration set was given");
        return 1;
    }
    let typed = runtime.version >= 110000;
    if typed && (options.fp16 != 0 || options.int8 != 0 || options.fp8 != 0) {
        fail(error, "TensorRT 11 has no FP16/INT8/FP8 builder flags: it builds the types the model has");
        return 1;
    }
    if options.fp8 != 0 && runtime.version < 100000 {
        fail(error, "TensorRT 8 has no FP8 kernels");
        return 1;
    }
    // As TensorRT (weakly typed): INT8 Q/DQ pairs need the INT8 flag, FP8 ones the FP8 flag.
    if !typed && qdq && fp8_qdq(&proto) && options.fp8 == 0 {
        fail(
            error,
            "the model has FP8 Q/DQ nodes: [network.cpp::validate] FP8 layers need BuilderFlag::kFP8",
        );
        return 1;
    }
    if !typed && qdq && options.int8 == 0 && options.fp8 == 0 {
        fail(
            error,
            "the model has Q/DQ nodes, which TensorRT builds only with INT8 (or, for FP8 ones, FP8) enabled",
        );
        return 1;
    }
    if options.dla_core >= 0 {
        if options.dla_core >= runtime.dla_cores {
            let (core, cores) = (options.dla_core, runtime.dla_cores);
            fail(error, &format!("DLA core {core} does not exist: this device has {cores} DLA cores"));
            return 1;
        }
        if options.fp16 == 0 && options.int8 == 0 && !typed {
            fail(error, "DLA runs FP16 and INT8 only: build with fp16 or int8");
            return 1;
        }
    }
    let calibrated = match options.calibrator.as_ref() {
        None => None,
        Some(_) if options.int8 == 0 => {
            fail(error, "a calibrator needs INT8 precision");
            return 1;
        }
        Some(_) if runtime.version >= 110000 => {
            fail(error, "TensorRT 11 has no INT8 calibrator: quantize the model with Q/DQ nodes");
            return 1;
        }
        Some(calibrator) => match calibrate(calibrator, model, options) {
            Ok(calibrated) => Some(calibrated),
            Err(message) => {
                fail(error, &message);
                return 1;
            }
        },
    };
    let stamp = Stamp {
        tensorrt: runtime.version,
        sm: runtime.sm.clone(),
        fp16: options.fp16 != 0,
        int8: options.int8 != 0,
        fp8: options.fp8 != 0,
        io_dtype: ffi::F32,
        output_dtypes: Vec::new(),
        io_format: None,
        calibrated,
        plugins,
        dla_core: (options.dla_core >= 0).then_some(options.dla_core),
        workspace_bytes: options.workspace_bytes,
    };
    let nodes = onnx::all_nodes(onnx::graph(&proto));
    let on_dla = nodes.iter().filter(|n| options.dla_core >= 0 && runs_on_dla(&n.op_type)).count();
    *report = ffi::BuildReport { layers: nodes.len() as i32, dla_layers: on_dla as i32 };
    *plan = leak(stamped(&stamp, model));
    if !timing_cache.is_null() {
        *timing_cache = leak(timing_cache_of(runtime));
    }
    0
}

/// The timing cache the mock writes, tied to its TensorRT release and GPU as TensorRT's is.
fn timing_cache_of(runtime: &MockRuntime) -> Vec<u8> {
    format!("mock timing cache: TensorRT {} sm {}", version_text(runtime.version), runtime.sm).into_bytes()
}

/// Reads each initializer stored outside the model (`data_location: EXTERNAL`) into the model, as
/// TensorRT's parser copies weights into the engine; `folder` is the model's, if the parser knows it.
fn embed_external_weights(
    proto: &mut tract_onnx::pb::ModelProto,
    folder: Option<&std::path::Path>,
) -> Result<(), String> {
    use tract_onnx::pb::tensor_proto::DataLocation;
    let Some(graph) = proto.graph.as_mut() else { return Ok(()) };
    for tensor in
        graph.initializer.iter_mut().filter(|t| t.data_location == Some(DataLocation::External as i32))
    {
        let entry = |key: &str| tensor.external_data.iter().find(|e| e.key == key).map(|e| e.value.clone());
        let location = entry("location").unwrap_or_default();
        let Some(folder) = folder else {
            return Err(format!("Failed to open file: {location} (no model path to resolve it against)"));
        };
        let bytes = std::fs::read(folder.join(&location))
            .map_err(|e| format!("Failed to open file: {location}: {e}"))?;
        let offset: usize = entry("offset").map_or(0, |o| o.parse().unwrap());
        let length: usize = entry("length").map_or(bytes.len() - offset, |l| l.parse().unwrap());
        tensor.raw_data = bytes[offset..offset + length].to_vec();
        tensor.data_location = None;
        tensor.external_data.clear();
    }
    Ok(())
}

/// Pulls batches as TensorRT's builder does, at the profile's optimum shape, and writes a
/// calibration cache; or takes the cache it is given instead.
unsafe fn calibrate(
    calibrator: &ffi::Calibrator,
    model: &[u8],
    options: &BuildOptions,
) -> Result<Calibrated, String> {
    let calibrated = if calibrator.cache_bytes > 0 {
        Calibrated { batches: 0, mean: 0.0, from_cache: true }
    } else {
        let proto = onnx::framework().proto_model_for_read(&mut &model[..]).unwrap();
        let name = CString::new(onnx::inputs(&proto)[0].name.clone()).unwrap();
        let len: i64 = options.profile_opt[..options.profile_nb_dims as usize].iter().product();
        let mut batch = vec![0f32; len as usize];
        let (mut batches, mut sum, mut count) = (0, 0.0, 0usize);
        loop {
            let filled = (calibrator.next_batch)(
                calibrator.user,
                name.as_ptr(),
                batch.as_mut_ptr().cast(),
                batch.len() * 4,
            );
            match filled {
                1 => {
                    batches += 1;
                    sum += batch.iter().map(|&v| v as f64).sum::<f64>();
                    count += batch.len();
                }
                0 => break,
                _ => return Err("calibration stopped: the calibration set failed".into()),
            }
        }
        let cache = format!("mock calibration cache: {batches} batches");
        (calibrator.write_cache)(calibrator.user, cache.as_ptr().cast(), cache.len());
        Calibrated { batches, mean: sum / count.max(1) as f64, from_cache: false }
    };
    Ok(calibrated)
}

fn leak(bytes: Vec<u8>) -> Blob {
    let boxed = bytes.into_boxed_slice();
    Blob { bytes: boxed.len(), data: Box::into_raw(boxed).cast() }
}

unsafe extern "C" fn blob_free(blob: *mut Blob) {
    let blob = &mut *blob;
    if !blob.data.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(blob.data.cast::<u8>(), blob.bytes)));
    }
    *blob = Blob::empty();
}

const CALLS: Api = Api {
    runtime_create,
    runtime_destroy,
    runtime_version,
    runtime_device,
    engine_load,
    engine_destroy,
    engine_tensor_count,
    engine_tensor,
    context_create,
    context_destroy,
    context_set_input_shape,
    context_tensor_shape,
    context_run,
    build,
    blob_free,
};

pub static API: Api = CALLS;

/// A TensorRT whose engines answer wrongly: every output one more than it should be.
pub static API_WRONG_OUTPUTS: Api = Api { context_run: context_run_off_by_one, ..CALLS };

/// A TensorRT that places no layer on the DLA (each falls back to the GPU).
pub static API_NO_DLA_LAYERS: Api = Api { build: build_without_dla, ..CALLS };

unsafe extern "C" fn build_without_dla(
    runtime: *mut ffi::RuntimeHandle,
    onnx: *const c_void,
    bytes: usize,
    options: *const BuildOptions,
    plan: *mut Blob,
    timing_cache: *mut Blob,
    report: *mut ffi::BuildReport,
    error: *mut ErrorBuf,
) -> c_int {
    let code = build(runtime, onnx, bytes, options, plan, timing_cache, report, error);
    (*report).dla_layers = 0;
    code
}

/// A TensorRT whose builder fails, as TensorRT's does when a layer has no implementation.
pub static API_BUILD_FAILS: Api = Api { build: build_fails, ..CALLS };

unsafe extern "C" fn context_run_off_by_one(
    context: *mut ffi::ContextHandle,
    bindings: *const Binding,
    count: i32,
    timing: *mut Timing,
    error: *mut ErrorBuf,
) -> c_int {
    let code = context_run(context, bindings, count, timing, error);
    let engine = &*(*context.cast::<MockContext>()).engine;
    if code != 0 {
        return code;
    }
    for b in std::slice::from_raw_parts(bindings, count as usize).iter().skip(1) {
        let memory = if b.device.is_null() { b.host } else { b.device };
        if engine.tensors[0].dtype == ffi::F16 {
            for v in std::slice::from_raw_parts_mut(memory.cast::<u16>(), b.bytes / 2) {
                *v = half::f16::from_f32(half::f16::from_bits(*v).to_f32() + 1.0).to_bits();
            }
        } else {
            for v in std::slice::from_raw_parts_mut(memory.cast::<f32>(), b.bytes / 4) {
                *v += 1.0;
            }
        }
    }
    code
}

unsafe extern "C" fn build_fails(
    _runtime: *mut ffi::RuntimeHandle,
    _onnx: *const c_void,
    _bytes: usize,
    _options: *const BuildOptions,
    _plan: *mut Blob,
    _timing_cache: *mut Blob,
    _report: *mut ffi::BuildReport,
    error: *mut ErrorBuf,
) -> c_int {
    fail(error, "[optimizer] could not find any implementation for node /fc1/Gemm");
    1
}

// What tests plug into `Symbols`: TensorRT releases, GPUs, and device memory that works or not.
pub unsafe extern "C" fn tensorrt_10_3() -> i32 {
    100300
}
pub unsafe extern "C" fn tensorrt_8_6() -> i32 {
    8602
}
pub unsafe extern "C" fn tensorrt_11_1() -> i32 {
    110100
}
pub unsafe extern "C" fn tensorrt_8_4() -> i32 {
    8401
}
/// TensorRT 10's getInferLibBuildVersion.
pub unsafe extern "C" fn build_26() -> i32 {
    26
}
/// AGX Orin: compute 8.7, two DLA cores.
pub unsafe extern "C" fn orin(value: *mut c_int, attribute: c_int, _device: c_int) -> c_int {
    *value = match attribute {
        75 => 8,
        DLA_CORES => 2,
        INTEGRATED => 1,
        _ => 7,
    };
    0
}
/// Orin Nano: compute 8.7, no DLA.
pub unsafe extern "C" fn orin_nano(value: *mut c_int, attribute: c_int, _device: c_int) -> c_int {
    *value = match attribute {
        75 => 8,
        DLA_CORES => 0,
        INTEGRATED => 1,
        _ => 7,
    };
    0
}
pub unsafe extern "C" fn xavier(value: *mut c_int, attribute: c_int, _device: c_int) -> c_int {
    *value = match attribute {
        75 => 7,
        DLA_CORES => 2,
        INTEGRATED => 1,
        _ => 2,
    };
    0
}
/// A desktop GPU of compute 8.9 (its own memory, no DLA).
pub unsafe extern "C" fn desktop(value: *mut c_int, attribute: c_int, _device: c_int) -> c_int {
    *value = match attribute {
        75 => 8,
        DLA_CORES | INTEGRATED => 0,
        _ => 9,
    };
    0
}
/// libnvinfer_plugin's initLibNvInferPlugins.
pub unsafe extern "C" fn init_plugins(_logger: *mut c_void, _namespace: *const c_char) -> bool {
    true
}
pub unsafe extern "C" fn no_gpu(_value: *mut c_int, _attribute: c_int, _device: c_int) -> c_int {
    100 // cudaErrorNoDevice
}
pub unsafe extern "C" fn malloc(pointer: *mut *mut c_void, _bytes: usize) -> c_int {
    *pointer = std::ptr::NonNull::<u8>::dangling().as_ptr().cast(); // never dereferenced
    0
}
pub unsafe extern "C" fn malloc_out_of_memory(_pointer: *mut *mut c_void, _bytes: usize) -> c_int {
    2 // cudaErrorMemoryAllocation
}
unsafe extern "C" fn free(_pointer: *mut c_void) -> c_int {
    0
}
unsafe extern "C" fn error_string(code: c_int) -> *const c_char {
    let text: &CStr = match code {
        2 => c"out of memory",
        100 => c"no CUDA-capable device is detected",
        _ => c"unknown error",
    };
    text.as_ptr()
}

/// cudaMemGetInfo of a 32 GB AGX Orin with 20 GiB free.
pub unsafe extern "C" fn memory_agx(free: *mut usize, total: *mut usize) -> c_int {
    (*free, *total) = (20 << 30, 30697 << 20);
    0
}
/// cudaMemGetInfo of an 8 GB Orin Nano with 3 GiB free.
pub unsafe extern "C" fn memory_nano(free: *mut usize, total: *mut usize) -> c_int {
    (*free, *total) = (3 << 30, 7620 << 20);
    0
}
unsafe extern "C" fn cu_init(_flags: u32) -> c_int {
    0
}
unsafe extern "C" fn cu_device_get(device: *mut c_int, ordinal: c_int) -> c_int {
    *device = ordinal;
    0
}
unsafe extern "C" fn get_device(device: *mut c_int) -> c_int {
    *device = 0;
    0
}
/// Every Orin module's name for itself.
unsafe extern "C" fn name_orin(name: *mut c_char, length: c_int, _device: c_int) -> c_int {
    let text = b"Orin\0";
    std::ptr::copy_nonoverlapping(text.as_ptr().cast(), name, text.len().min(length as usize));
    0
}

thread_local! {
    /// The flags the last cudaSetDeviceFlags on this thread was given.
    pub static DEVICE_FLAGS: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}
/// cudaSetDeviceFlags, recording what it was given.
pub unsafe extern "C" fn set_device_flags(flags: u32) -> c_int {
    DEVICE_FLAGS.with(|f| f.set(Some(flags)));
    0
}

type Version = unsafe extern "C" fn() -> i32;
type Attribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
type Malloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;

/// Symbols of a machine with TensorRT `version` and a GPU answering `attribute`.
pub fn symbols(version: Version, attribute: Attribute, malloc: Malloc) -> Symbols {
    Symbols {
        get_infer_lib_version: Some(version),
        cuda_device_get_attribute: Some(attribute),
        cuda_malloc: Some(malloc),
        cuda_free: Some(free),
        cuda_get_error_string: Some(error_string),
        cuda_get_device: Some(get_device),
        cuda_mem_get_info: Some(memory_agx),
        cu_init: Some(cu_init),
        cu_device_get: Some(cu_device_get),
        cu_device_get_name: Some(name_orin),
        cuda_set_device_flags: Some(set_device_flags),
        ..Symbols::default()
    }
}
