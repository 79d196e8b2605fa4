//! Safe owners of the shim's runtime, engine and execution context: each frees its handle on drop
//! and keeps alive what it was made from (context → engine → runtime → libraries).

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::device::DeviceIdentity;
use super::error::TrtError;
use super::ffi::{self, Api, ErrorBuf};
use super::library::Libraries;
use super::version::TrtVersion;
use crate::choice::Choice;
use crate::gpu_sync::GpuSync;

pub struct Runtime {
    api: &'static Api,
    raw: *mut ffi::RuntimeHandle,
    pub version: TrtVersion,
    pub device: ffi::Device,
    /// The device's name and memory, and the tactic libraries, that engines are keyed by.
    pub identity: DeviceIdentity,
    /// Whether TensorRT's standard plugins (libnvinfer_plugin) are registered.
    pub plugins: bool,
    libraries: Option<Arc<Libraries>>,
}

// SAFETY: TensorRT's IRuntime may be used from any thread; the shim guards its logger.
unsafe impl Send for Runtime {}
// SAFETY: as above; `&Runtime` methods only create engines and read versions.
unsafe impl Sync for Runtime {}

impl Runtime {
    /// TensorRT's runtime, on a GPU whose waits are scheduled as `sync` says.
    pub fn open(
        api: &'static Api,
        symbols: &ffi::Symbols,
        libraries: Option<Arc<Libraries>>,
        sync: GpuSync,
    ) -> Result<Runtime, TrtError> {
        if let Some(set_flags) = symbols.cuda_set_device_flags {
            // cudaDeviceMapHost as well: inputs bound in place may be mapped host memory.
            const MAP_HOST: u32 = 8;
            // SAFETY: cudaSetDeviceFlags takes a flag word; it applies to the current device.
            let code = unsafe { set_flags(sync.flag() | MAP_HOST) };
            if code != 0 {
                eprintln!("edgert: warning: --gpu-sync {}: cudaSetDeviceFlags failed ({code})", sync.name());
            }
        }
        let mut error = ErrorBuf::new();
        // SAFETY: `symbols` outlives the call and the shim copies it.
        let raw = unsafe { (api.runtime_create)(symbols, &mut error) };
        if raw.is_null() {
            return Err(TrtError::Call(error.text()));
        }
        // From here on `Drop` frees `raw`, also when the checks below fail.
        let mut runtime = Runtime {
            api,
            raw,
            version: TrtVersion {
                // SAFETY: a function of TensorRT's that takes nothing, resolved with the library.
                build: symbols.get_infer_lib_build_version.map(|f| unsafe { f() }),
                // SAFETY: `raw` is the live runtime just created.
                ..TrtVersion::decode(unsafe { (api.runtime_version)(raw) })
            },
            device: ffi::Device::default(),
            identity: DeviceIdentity::default(),
            plugins: symbols.init_plugins.is_some(),
            libraries,
        };
        if !runtime.version.is_supported() {
            return Err(TrtError::TooOld { version: runtime.version.to_string() });
        }
        // SAFETY: `raw` is live; the shim writes one `Device` and at most an `ErrorBuf`.
        if unsafe { (api.runtime_device)(raw, &mut runtime.device, &mut error) } != 0 {
            return Err(TrtError::Call(error.text()));
        }
        runtime.identity = super::device::probe(symbols, runtime.version.major);
        Ok(runtime)
    }

    /// The fix when libnvinfer came from a folder the dynamic loader does not search.
    pub fn search_path_fix(&self) -> Option<String> {
        self.libraries.as_ref().and_then(|l| l.search_path_fix())
    }

    /// Compute capability, `8.7`.
    pub fn sm(&self) -> String {
        format!("{}.{}", self.device.sm_major, self.device.sm_minor)
    }

    pub fn load(self: &Arc<Self>, plan: &[u8], dla_core: Option<u32>) -> Result<Engine, TrtError> {
        let mut error = ErrorBuf::new();
        let dla = dla_core.map_or(-1, |c| c as i32);
        // SAFETY: the runtime is live and `plan` is `plan.len()` readable bytes for the call; the
        // shim copies what it keeps.
        let raw =
            unsafe { (self.api.engine_load)(self.raw, plan.as_ptr().cast(), plan.len(), dla, &mut error) };
        if raw.is_null() {
            return Err(TrtError::Call(error.text()));
        }
        let mut engine = Engine { runtime: Arc::clone(self), raw, tensors: Vec::new() };
        // SAFETY: `raw` is the live engine just loaded (`engine` frees it from here on).
        let count = unsafe { (self.api.engine_tensor_count)(raw) };
        for index in 0..count {
            let mut tensor = ffi::Tensor::empty();
            // SAFETY: `index` is below the engine's count; the shim fills one `Tensor`.
            if unsafe { (self.api.engine_tensor)(raw, index, &mut tensor, &mut error) } != 0 {
                return Err(TrtError::Call(error.text()));
            }
            // SAFETY: the shim set `name` to the engine's NUL-terminated name, alive with the engine.
            let name = unsafe { tensor.name() };
            engine.tensors.push(EngineTensor {
                c_name: CString::new(name.clone()).map_err(|_| TrtError::TensorName(name.clone()))?,
                name,
                is_input: tensor.is_input != 0,
                dtype: tensor.dtype,
                dims: tensor.dims[..tensor.nb_dims.clamp(0, ffi::MAX_DIMS as i32) as usize].to_vec(),
                linear: tensor.linear != 0,
                // SAFETY: the shim set `format` to null or the engine's NUL-terminated text.
                format: unsafe { tensor.format() },
            });
        }
        Ok(engine)
    }

    /// A serialized engine built from ONNX bytes, the updated timing cache, and where the layers
    /// were placed.
    pub fn build(
        &self,
        onnx: &[u8],
        options: &ffi::BuildOptions,
    ) -> Result<(Vec<u8>, Vec<u8>, ffi::BuildReport), TrtError> {
        let mut error = ErrorBuf::new();
        let (mut plan, mut timing_cache) = (ffi::Blob::empty(), ffi::Blob::empty());
        let mut report = ffi::BuildReport::default();
        // SAFETY: the runtime is live, `onnx` and `options` are readable for the call, and the shim
        // writes the two blobs (freed below), one report and at most an `ErrorBuf`.
        let status = unsafe {
            (self.api.build)(
                self.raw,
                onnx.as_ptr().cast(),
                onnx.len(),
                options,
                &mut plan,
                &mut timing_cache,
                &mut report,
                &mut error,
            )
        };
        let take = |blob: &mut ffi::Blob| {
            let bytes = if blob.data.is_null() {
                Vec::new()
            } else {
                // SAFETY: the shim allocated `bytes` bytes at `data`.
                unsafe { std::slice::from_raw_parts(blob.data as *const u8, blob.bytes) }.to_vec()
            };
            // SAFETY: a blob the shim filled (or left empty), freed once.
            unsafe { (self.api.blob_free)(blob) };
            bytes
        };
        let (plan, timing_cache) = (take(&mut plan), take(&mut timing_cache));
        match status {
            0 => {}
            ffi::TIMING_CACHE_REFUSED => return Err(TrtError::TimingCacheRefused(error.text())),
            _ => return Err(TrtError::Call(error.text())),
        }
        Ok((plan, timing_cache, report))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: engines hold an `Arc` of the runtime, so none is left; freed once.
        unsafe { (self.api.runtime_destroy)(self.raw) }
    }
}

/// An input or output of an engine as it declares it (`-1`: dynamic).
#[derive(Debug, Clone)]
pub struct EngineTensor {
    pub name: String,
    pub c_name: CString,
    pub is_input: bool,
    pub dtype: i32,
    pub dims: Vec<i64>,
    /// Dense row-major memory; false for vectorized or channel-last formats.
    pub linear: bool,
    /// TensorRT's description of the format.
    pub format: Option<String>,
}

pub struct Engine {
    runtime: Arc<Runtime>,
    raw: *mut ffi::EngineHandle,
    pub tensors: Vec<EngineTensor>,
}

// SAFETY: ICudaEngine is immutable once built; contexts are created from any thread.
unsafe impl Send for Engine {}
// SAFETY: as above.
unsafe impl Sync for Engine {}

impl Engine {
    pub fn context(self: &Arc<Self>) -> Result<Context, TrtError> {
        let mut error = ErrorBuf::new();
        // SAFETY: the engine is live (and kept so by the context's `Arc`).
        let raw = unsafe { (self.runtime.api.context_create)(self.raw, &mut error) };
        if raw.is_null() {
            return Err(TrtError::Call(error.text()));
        }
        Ok(Context { engine: Arc::clone(self), raw })
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: contexts hold an `Arc` of the engine, so none is left; freed once.
        unsafe { (self.runtime.api.engine_destroy)(self.raw) }
    }
}

/// Memory of one tensor for a run.
pub enum Buffer<'a> {
    /// Host memory, copied to the GPU before the run.
    In(&'a [u8]),
    /// Host memory, copied back from the GPU after the run.
    Out(&'a mut [u8]),
    /// GPU-visible memory (an address and its size) the engine reads or writes in place.
    Device(*mut c_void, usize),
}

/// One execution context with its stream and device buffers: one per session thread.
pub struct Context {
    engine: Arc<Engine>,
    raw: *mut ffi::ContextHandle,
}

// SAFETY: a context is used by one thread at a time (`&mut self`), which is all TensorRT asks.
unsafe impl Send for Context {}

impl Context {
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn set_input_shape(&mut self, tensor: usize, dims: &[i64]) -> Result<(), TrtError> {
        let mut error = ErrorBuf::new();
        let name = &self.engine.tensors[tensor].c_name;
        let api = self.engine.runtime.api;
        // SAFETY: the context is live, `name` is the tensor's NUL-terminated name and `dims` holds
        // `dims.len()` values for the call.
        if unsafe {
            (api.context_set_input_shape)(
                self.raw,
                name.as_ptr(),
                dims.len() as i32,
                dims.as_ptr(),
                &mut error,
            )
        } != 0
        {
            return Err(TrtError::Call(error.text()));
        }
        Ok(())
    }

    /// The shape of tensor `tensor` now that the input shapes are set.
    pub fn shape(&mut self, tensor: usize) -> Result<Vec<i64>, TrtError> {
        let mut error = ErrorBuf::new();
        let (mut nb_dims, mut dims) = (0i32, [0i64; ffi::MAX_DIMS]);
        let name = &self.engine.tensors[tensor].c_name;
        let api = self.engine.runtime.api;
        // SAFETY: the context is live; the shim writes at most `MAX_DIMS` values into `dims`.
        if unsafe {
            (api.context_tensor_shape)(self.raw, name.as_ptr(), &mut nb_dims, dims.as_mut_ptr(), &mut error)
        } != 0
        {
            return Err(TrtError::Call(error.text()));
        }
        Ok(dims[..nb_dims.clamp(0, ffi::MAX_DIMS as i32) as usize].to_vec())
    }

    /// Runs once: `buffers[i]` is the memory of `tensors[i]`.
    ///
    /// # Safety
    /// Each `Buffer::Device` must point to that many bytes of memory the GPU can read (an input)
    /// or write (an output), allocated until this call returns.
    pub unsafe fn run(&mut self, buffers: &mut [Buffer]) -> Result<ffi::Timing, TrtError> {
        let tensors = &self.engine.tensors;
        let bindings: Vec<ffi::Binding> = tensors
            .iter()
            .zip(buffers.iter_mut())
            .map(|(t, b)| {
                let null = std::ptr::null_mut();
                let (host, bytes, device) = match b {
                    // The shim only reads inputs.
                    Buffer::In(b) => (b.as_ptr() as *mut c_void, b.len(), null),
                    Buffer::Out(b) => (b.as_mut_ptr() as *mut c_void, b.len(), null),
                    Buffer::Device(address, bytes) => (null, *bytes, *address),
                };
                ffi::Binding { name: t.c_name.as_ptr(), host, bytes, device }
            })
            .collect();
        let mut error = ErrorBuf::new();
        let mut timing = ffi::Timing::default();
        let api = self.engine.runtime.api;
        // SAFETY: `bindings` and the names it points to live until the call returns; host buffers
        // are slices of their stated length, device ones are the caller's promise (# Safety).
        if unsafe {
            (api.context_run)(self.raw, bindings.as_ptr(), bindings.len() as i32, &mut timing, &mut error)
        } != 0
        {
            return Err(TrtError::Call(error.text()));
        }
        Ok(timing)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is freed once, before the engine its `Arc` keeps alive.
        unsafe { (self.engine.runtime.api.context_destroy)(self.raw) }
    }
}
