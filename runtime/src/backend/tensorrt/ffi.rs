//! `shim/edgert_trt.h` in Rust: the C structs, and the API as a table of function pointers, so the
//! backend runs against the compiled shim or, in tests, against `mock`.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::tensor::DataType;

pub const MAX_DIMS: usize = 8;

pub const F32: i32 = 0;
pub const F16: i32 = 1;
pub const I8: i32 = 2;
pub const I32: i32 = 3;
pub const BOOL: i32 = 4;
pub const U8: i32 = 5;
pub const FP8: i32 = 6;
pub const BF16: i32 = 7;
pub const I64: i32 = 8;

/// An `EDGERT_TRT_*` data type as edgert's `DataType`.
pub fn data_type(dtype: i32) -> DataType {
    match dtype {
        F32 => DataType::F32,
        F16 => DataType::F16,
        I8 => DataType::I8,
        I32 => DataType::I32,
        BOOL => DataType::Bool,
        U8 => DataType::U8,
        FP8 => DataType::Fp8,
        BF16 => DataType::Bf16,
        I64 => DataType::I64,
        _ => DataType::Other,
    }
}

type CudaFn<A> = Option<unsafe extern "C" fn(A) -> c_int>;

/// Library entry points the shim calls, resolved by `library`. `None` is a null pointer.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Symbols {
    pub create_infer_runtime: Option<unsafe extern "C" fn(*mut c_void, i32) -> *mut c_void>,
    pub create_infer_builder: Option<unsafe extern "C" fn(*mut c_void, i32) -> *mut c_void>,
    pub get_infer_lib_version: Option<unsafe extern "C" fn() -> i32>,
    pub get_infer_lib_build_version: Option<unsafe extern "C" fn() -> i32>,
    pub create_onnx_parser: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, i32) -> *mut c_void>,
    pub init_plugins: Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> bool>,
    pub cuda_malloc: Option<unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int>,
    pub cuda_free: CudaFn<*mut c_void>,
    pub cuda_memcpy_async:
        Option<unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> c_int>,
    pub cuda_stream_create_with_flags: Option<unsafe extern "C" fn(*mut *mut c_void, u32) -> c_int>,
    pub cuda_stream_destroy: CudaFn<*mut c_void>,
    pub cuda_stream_synchronize: CudaFn<*mut c_void>,
    pub cuda_event_create: CudaFn<*mut *mut c_void>,
    pub cuda_event_destroy: CudaFn<*mut c_void>,
    pub cuda_event_record: Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    pub cuda_event_elapsed_time: Option<unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> c_int>,
    pub cuda_get_device: CudaFn<*mut c_int>,
    pub cuda_device_get_attribute: Option<unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int>,
    pub cuda_get_error_string: Option<unsafe extern "C" fn(c_int) -> *const c_char>,
    pub cuda_mem_get_info: Option<unsafe extern "C" fn(*mut usize, *mut usize) -> c_int>,
    // Read by edgert, not the shim: the device and the tactic libraries an engine is keyed by.
    pub cu_init: Option<unsafe extern "C" fn(u32) -> c_int>,
    pub cu_device_get: Option<unsafe extern "C" fn(*mut c_int, c_int) -> c_int>,
    pub cu_device_get_name: Option<unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int>,
    pub cudnn_get_version: Option<unsafe extern "C" fn() -> usize>,
    pub cublaslt_get_version: Option<unsafe extern "C" fn() -> usize>,
    /// Called by edgert before TensorRT opens the GPU: how waits are scheduled (`--gpu-sync`).
    pub cuda_set_device_flags: Option<unsafe extern "C" fn(u32) -> c_int>,
}

/// What `edgert_trt_build` returns when TensorRT refused the timing cache it was given.
pub const TIMING_CACHE_REFUSED: c_int = 2;

#[repr(C)]
pub struct ErrorBuf {
    pub message: [c_char; 1024],
}

impl ErrorBuf {
    pub fn new() -> ErrorBuf {
        ErrorBuf { message: [0; 1024] }
    }

    pub fn text(&self) -> String {
        // `c_char` is i8 on x86_64 and u8 on aarch64: its bytes, whichever it is.
        let bytes: Vec<u8> =
            self.message.iter().take_while(|&&c| c != 0).map(|c| c.to_ne_bytes()[0]).collect();
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        if text.is_empty() {
            "no reason given".into()
        } else {
            text
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Tensor {
    pub name: *const c_char,
    pub is_input: i32,
    pub dtype: i32,
    pub nb_dims: i32,
    pub dims: [i64; MAX_DIMS],
    /// 1: dense row-major; 0: vectorized or channel-last, not the dense volume of `dims`.
    pub linear: i32,
    /// TensorRT's description of the format; null when it gives none.
    pub format: *const c_char,
}

impl Tensor {
    pub fn empty() -> Tensor {
        Tensor {
            name: std::ptr::null(),
            is_input: 0,
            dtype: 0,
            nb_dims: 0,
            dims: [0; MAX_DIMS],
            linear: 1,
            format: std::ptr::null(),
        }
    }

    /// The name the shim filled in; it lives as long as the engine.
    ///
    /// # Safety
    /// `name` is null or a NUL-terminated string.
    pub unsafe fn name(&self) -> String {
        if self.name.is_null() {
            return String::new();
        }
        CStr::from_ptr(self.name).to_string_lossy().into_owned()
    }

    /// The format's description the shim filled in, if any.
    ///
    /// # Safety
    /// `format` is null or a NUL-terminated string.
    pub unsafe fn format(&self) -> Option<String> {
        (!self.format.is_null()).then(|| CStr::from_ptr(self.format).to_string_lossy().trim().to_string())
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Device {
    pub sm_major: i32,
    pub sm_minor: i32,
    pub integrated: i32,
    pub dla_cores: i32,
}

#[repr(C)]
pub struct Binding {
    pub name: *const c_char,
    pub host: *mut c_void,
    pub bytes: usize,
    /// Non-null: the tensor is in GPU-visible memory at this address and nothing is copied.
    pub device: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    pub h2d_ms: f32,
    pub compute_ms: f32,
    pub d2h_ms: f32,
    pub enqueue_ms: f32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct BuildOptions {
    pub fp16: i32,
    pub int8: i32,
    pub sparsity: i32,
    pub dla_core: i32,
    pub workspace_bytes: i64,
    pub timing_cache: *const c_void,
    pub timing_cache_bytes: usize,
    pub profile_nb_dims: i32,
    pub profile_min: [i64; MAX_DIMS],
    pub profile_opt: [i64; MAX_DIMS],
    pub profile_max: [i64; MAX_DIMS],
    pub calibrator: *const Calibrator,
    /// The model's absolute path, for external weights; null: none.
    pub model_path: *const c_char,
    /// FP8 kernels, for FP8 Q/DQ models (TensorRT 8.6 to 10).
    pub fp8: i32,
}

/// `next_batch(user, name, host, bytes)`: 1 filled, 0 no more batches, -1 failed.
pub type NextBatch = unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void, usize) -> i32;
pub type WriteCache = unsafe extern "C" fn(*mut c_void, *const c_void, usize);

#[repr(C)]
pub struct Calibrator {
    pub user: *mut c_void,
    pub next_batch: NextBatch,
    pub cache: *const c_void,
    pub cache_bytes: usize,
    pub write_cache: WriteCache,
}

#[repr(C)]
pub struct Blob {
    pub data: *mut c_void,
    pub bytes: usize,
}

impl Blob {
    pub fn empty() -> Blob {
        Blob { data: std::ptr::null_mut(), bytes: 0 }
    }
}

/// Where a build placed the network's layers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildReport {
    pub layers: i32,
    /// Of `layers`, those TensorRT places on the DLA core asked for (0 without one).
    pub dla_layers: i32,
}

/// Opaque handles: what they point at belongs to the shim.
#[repr(C)]
pub struct RuntimeHandle {
    _private: [u8; 0],
}
#[repr(C)]
pub struct EngineHandle {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ContextHandle {
    _private: [u8; 0],
}

/// The shim's functions, in the order of the header.
pub struct Api {
    pub runtime_create: unsafe extern "C" fn(*const Symbols, *mut ErrorBuf) -> *mut RuntimeHandle,
    pub runtime_destroy: unsafe extern "C" fn(*mut RuntimeHandle),
    pub runtime_version: unsafe extern "C" fn(*const RuntimeHandle) -> i32,
    pub runtime_device: unsafe extern "C" fn(*const RuntimeHandle, *mut Device, *mut ErrorBuf) -> c_int,
    pub engine_load: unsafe extern "C" fn(
        *mut RuntimeHandle,
        *const c_void,
        usize,
        i32,
        *mut ErrorBuf,
    ) -> *mut EngineHandle,
    pub engine_destroy: unsafe extern "C" fn(*mut EngineHandle),
    pub engine_tensor_count: unsafe extern "C" fn(*const EngineHandle) -> i32,
    pub engine_tensor: unsafe extern "C" fn(*const EngineHandle, i32, *mut Tensor, *mut ErrorBuf) -> c_int,
    pub context_create: unsafe extern "C" fn(*mut EngineHandle, *mut ErrorBuf) -> *mut ContextHandle,
    pub context_destroy: unsafe extern "C" fn(*mut ContextHandle),
    pub context_set_input_shape:
        unsafe extern "C" fn(*mut ContextHandle, *const c_char, i32, *const i64, *mut ErrorBuf) -> c_int,
    pub context_tensor_shape:
        unsafe extern "C" fn(*mut ContextHandle, *const c_char, *mut i32, *mut i64, *mut ErrorBuf) -> c_int,
    pub context_run:
        unsafe extern "C" fn(*mut ContextHandle, *const Binding, i32, *mut Timing, *mut ErrorBuf) -> c_int,
    pub build: unsafe extern "C" fn(
        *mut RuntimeHandle,
        *const c_void,
        usize,
        *const BuildOptions,
        *mut Blob,
        *mut Blob,
        *mut BuildReport,
        *mut ErrorBuf,
    ) -> c_int,
    pub blob_free: unsafe extern "C" fn(*mut Blob),
}

/// The C++ shim linked into this binary; only where TensorRT's headers were found at build time.
#[cfg(edgert_trt_shim)]
pub static LINKED: Api = {
    extern "C" {
        fn edgert_trt_runtime_create(s: *const Symbols, e: *mut ErrorBuf) -> *mut RuntimeHandle;
        fn edgert_trt_runtime_destroy(r: *mut RuntimeHandle);
        fn edgert_trt_runtime_version(r: *const RuntimeHandle) -> i32;
        fn edgert_trt_runtime_device(r: *const RuntimeHandle, d: *mut Device, e: *mut ErrorBuf) -> c_int;
        fn edgert_trt_engine_load(
            r: *mut RuntimeHandle,
            plan: *const c_void,
            bytes: usize,
            dla: i32,
            e: *mut ErrorBuf,
        ) -> *mut EngineHandle;
        fn edgert_trt_engine_destroy(e: *mut EngineHandle);
        fn edgert_trt_engine_tensor_count(e: *const EngineHandle) -> i32;
        fn edgert_trt_engine_tensor(
            e: *const EngineHandle,
            i: i32,
            t: *mut Tensor,
            err: *mut ErrorBuf,
        ) -> c_int;
        fn edgert_trt_context_create(e: *mut EngineHandle, err: *mut ErrorBuf) -> *mut ContextHandle;
        fn edgert_trt_context_destroy(c: *mut ContextHandle);
        fn edgert_trt_context_set_input_shape(
            c: *mut ContextHandle,
            name: *const c_char,
            nb: i32,
            dims: *const i64,
            e: *mut ErrorBuf,
        ) -> c_int;
        fn edgert_trt_context_tensor_shape(
            c: *mut ContextHandle,
            name: *const c_char,
            nb: *mut i32,
            dims: *mut i64,
            e: *mut ErrorBuf,
        ) -> c_int;
        fn edgert_trt_context_run(
            c: *mut ContextHandle,
            b: *const Binding,
            n: i32,
            t: *mut Timing,
            e: *mut ErrorBuf,
        ) -> c_int;
        fn edgert_trt_build(
            r: *mut RuntimeHandle,
            onnx: *const c_void,
            bytes: usize,
            o: *const BuildOptions,
            plan: *mut Blob,
            cache: *mut Blob,
            report: *mut BuildReport,
            e: *mut ErrorBuf,
        ) -> c_int;
        fn edgert_trt_blob_free(b: *mut Blob);
    }
    Api {
        runtime_create: edgert_trt_runtime_create,
        runtime_destroy: edgert_trt_runtime_destroy,
        runtime_version: edgert_trt_runtime_version,
        runtime_device: edgert_trt_runtime_device,
        engine_load: edgert_trt_engine_load,
        engine_destroy: edgert_trt_engine_destroy,
        engine_tensor_count: edgert_trt_engine_tensor_count,
        engine_tensor: edgert_trt_engine_tensor,
        context_create: edgert_trt_context_create,
        context_destroy: edgert_trt_context_destroy,
        context_set_input_shape: edgert_trt_context_set_input_shape,
        context_tensor_shape: edgert_trt_context_tensor_shape,
        context_run: edgert_trt_context_run,
        build: edgert_trt_build,
        blob_free: edgert_trt_blob_free,
    }
};

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    extern "C" {
        fn edgert_trt_layout(out: *mut usize, capacity: usize) -> usize;
    }

    #[test]
    fn the_rust_structs_are_laid_out_as_the_header_declares() {
        let mut c = [0usize; 32];
        // SAFETY: the C side writes at most `capacity` values into `c`.
        let count = unsafe { edgert_trt_layout(c.as_mut_ptr(), c.len()) };
        let rust = [
            size_of::<Symbols>(),
            offset_of!(Symbols, create_onnx_parser),
            offset_of!(Symbols, init_plugins),
            offset_of!(Symbols, cuda_stream_create_with_flags),
            offset_of!(Symbols, cuda_get_error_string),
            offset_of!(Symbols, cu_device_get_name),
            offset_of!(Symbols, cublaslt_get_version),
            offset_of!(Symbols, cuda_set_device_flags),
            size_of::<ErrorBuf>(),
            size_of::<Tensor>(),
            offset_of!(Tensor, dims),
            offset_of!(Tensor, linear),
            offset_of!(Tensor, format),
            size_of::<Device>(),
            size_of::<Binding>(),
            offset_of!(Binding, device),
            size_of::<Timing>(),
            size_of::<BuildOptions>(),
            offset_of!(BuildOptions, timing_cache),
            offset_of!(BuildOptions, profile_nb_dims),
            offset_of!(BuildOptions, profile_max),
            offset_of!(BuildOptions, calibrator),
            offset_of!(BuildOptions, model_path),
            offset_of!(BuildOptions, fp8),
            size_of::<Calibrator>(),
            offset_of!(Calibrator, next_batch),
            offset_of!(Calibrator, write_cache),
            size_of::<Blob>(),
            size_of::<BuildReport>(),
        ];
        assert_eq!(&c[..count], &rust[..]);
    }

    /// The parts of the shim that need no TensorRT: its logger reports the first error of the
    /// failing call, never one left from an earlier call or another thread; a library older than
    /// the headers, or of another major, is refused with the fix; the INT8 calibrator tells the
    /// builder a batch size of 1 (explicit batch), feeds the caller's batches to the device and
    /// stops, failed and with a reason, on the caller's failure, an unknown input or a failed
    /// cudaMalloc (`shim/shim_check.cpp` numbers each check; 0: all passed).
    #[cfg(edgert_trt_shim_check)]
    #[test]
    fn the_shims_logger_version_rule_and_calibrator_hold() {
        extern "C" {
            fn edgert_trt_shim_check() -> c_int;
        }
        // SAFETY: takes nothing, touches only its own logger.
        assert_eq!(unsafe { edgert_trt_shim_check() }, 0);
    }
}
