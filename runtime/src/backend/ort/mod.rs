//! The `ort` backend: ONNX Runtime through the `ort` crate, loaded at run time (`load-dynamic`),
//! so nothing links at build time and a machine without ONNX Runtime says so instead of failing
//! to start. Execution providers: `cpu`, and on ONNX Runtime builds that carry them (JetPack's GPU
//! builds) `cuda` and `tensorrt`. A provider that fails to register is an error, never a quiet CPU run.

mod error;
mod library;
mod options;

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};

use ort::ep;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::SessionInputValue;
use ort::value::{PrimitiveTensorElementType, Tensor, TensorRef};

pub use self::error::LibraryError;
pub use self::options::{OrtOptions, Provider};
use super::{cannot_run, Backend, PrepareOptions, Prepared, Session, Unavailable, Unsupported};
use crate::model::Model;
use crate::precision::Precision;
use crate::tensor::ElementType;
use crate::tensor::{Batch, DataType, HostTensor, TensorSpec};
use crate::{Error, Result};

/// The `ort` backend with its options.
#[derive(Debug, Clone, Default)]
pub struct OrtBackend {
    options: OrtOptions,
}

impl OrtBackend {
    pub fn new(options: OrtOptions) -> OrtBackend {
        OrtBackend { options }
    }
}

/// The process's ONNX Runtime: loaded once (the library is process-global in `ort`), from the
/// library the first backend asked for; a later one that names another library is refused.
struct Runtime {
    environment: ort::environment::Environment,
    version: String,
    path: std::path::PathBuf,
}

static RUNTIME: OnceLock<Result<Runtime, LibraryError>> = OnceLock::new();

fn runtime(flag: Option<&std::path::Path>) -> Result<&'static Runtime, LibraryError> {
    let runtime = RUNTIME
        .get_or_init(|| {
            let path = library::resolve(flag)?;
            let version = library::check(&path)?;
            let init = |reason: String| LibraryError::Init { path: path.clone(), reason };
            let environment = ort::init_from(&path)
                .map_err(|e| init(e.to_string()))?
                .with_name("edgert")
                .build()
                .map_err(|e| init(format!("cannot create an ONNX Runtime environment: {e}")))?;
            Ok(Runtime { environment, version, path })
        })
        .as_ref()
        .map_err(Clone::clone)?;
    match flag {
        Some(path) if library::resolve(Some(path))? != runtime.path => {
            Err(LibraryError::AlreadyLoaded { path: path.to_owned(), loaded: runtime.path.clone() })
        }
        _ => Ok(runtime),
    }
}

/// The execution providers edgert can ask for (`--ort-provider`) that the loaded ONNX Runtime
/// was built with: a CPU-only wheel lists `cpu` alone.
pub fn providers(options: &OrtOptions) -> Result<Vec<&'static str>, LibraryError> {
    use ort::ep::ExecutionProvider;
    runtime(options.library.as_deref())?;
    let built = [
        ("cpu", ep::CPU::is_available()),
        ("cuda", ep::CUDA::is_available()),
        ("tensorrt", ep::TensorRT::is_available()),
    ];
    Ok(built
        .into_iter()
        .filter(|(_, available)| matches!(available, Ok(true)))
        .map(|(name, _)| name)
        .collect())
}

impl Backend for OrtBackend {
    fn name(&self) -> &'static str {
        "ort"
    }

    fn check(&self) -> Result<(), Unavailable> {
        Ok(runtime(self.options.library.as_deref()).map(|_| ())?)
    }

    fn version(&self) -> Option<String> {
        runtime(self.options.library.as_deref())
            .ok()
            .map(|r| format!("ONNX Runtime {} ({})", r.version, r.path.display()))
    }

    fn supports(&self, precision: Precision) -> Result<(), Unsupported> {
        match precision {
            Precision::Fp32 | Precision::Fp16 | Precision::Int8Qdq => Ok(()),
            Precision::Fp8 => Err(Unsupported::NoFp8Kernels {
                runtime: "ONNX Runtime's CPU provider",
                hint: "; FP8 needs a GPU of compute capability >= 8.9",
            }),
            Precision::Engine => Err(Unsupported::EngineNeedsTensorrt),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let runtime =
            runtime(self.options.library.as_deref()).map_err(|reason| Error::unavailable("ort", reason))?;
        let path = model.file.clone();
        // No check against tract's operator list: ONNX Runtime has its own, and says what it lacks.
        // An edited graph (an input folded in) is read from memory; otherwise the file, so that
        // external weights beside it are found.
        let edited = model.graph_edited.then(|| model.onnx_bytes()).transpose()?.map(std::sync::Arc::new);
        let recipe =
            Recipe { path: path.clone(), edited, threads: options.threads, ort: self.options.clone() };
        let session = recipe.commit(runtime)?;
        let shape = model.input_shape(options.batch);
        let inputs = vec![TensorSpec {
            name: model.manifest.input.name.clone(),
            shape: shape.iter().map(|&d| Some(d)).collect(),
            dtype: model.manifest.input.dtype.into(),
        }];
        let outputs = session
            .outputs()
            .iter()
            .map(|o| TensorSpec { name: o.name().to_string(), shape: Vec::new(), dtype: DataType::F32 })
            .collect();
        let dtype = model.manifest.input.dtype;
        Ok(Box::new(OrtPrepared { recipe, first: Mutex::new(Some(session)), shape, dtype, inputs, outputs }))
    }
}

/// How to build a session, so each `spawn` after the first gets its own.
struct Recipe {
    path: std::path::PathBuf,
    edited: Option<std::sync::Arc<Vec<u8>>>,
    threads: usize,
    ort: OrtOptions,
}

impl Recipe {
    fn commit(&self, runtime: &Runtime) -> Result<ort::session::Session> {
        let fail = |what: &str, e: &dyn std::fmt::Display| Error::BackendUnavailable {
            name: "ort".into(),
            reason: format!("{}: {what}: {}", self.path.display(), crate::error::one_line(&e.to_string())),
        };
        let builder =
            ort::session::Session::builder(&runtime.environment).map_err(|e| fail("session", &e))?;
        let builder = self.configure(builder).map_err(|e| fail("session options", &e))?;
        let mut builder = builder
            .with_execution_providers([self.provider()])
            .map_err(|e| fail(&format!("execution provider {} did not register", self.ort.provider), &e))?;
        let session = match &self.edited {
            Some(bytes) => builder.commit_from_memory(bytes),
            None => builder.commit_from_file(&self.path),
        };
        session.map_err(|e| cannot_run::ort(&self.path, &runtime.version, &e))
    }

    fn configure(&self, builder: SessionBuilder) -> std::result::Result<SessionBuilder, ort::Error> {
        Ok(builder
            .with_optimization_level(GraphOptimizationLevel::All)?
            .with_intra_threads(self.threads)?
            .with_inter_threads(1)?
            .with_parallel_execution(false)?)
    }

    fn provider(&self) -> ep::ExecutionProviderDispatch {
        let o = &self.ort;
        match o.provider {
            // With ONNX Runtime's own default, the arena allocator: `ort`'s default turns it off,
            // which slows models of many small intermediate tensors (INT8 QDQ models).
            Provider::Cpu => ep::CPU::default().with_arena_allocator(true).build().error_on_failure(),
            Provider::Cuda => ep::CUDA::default().build().error_on_failure(),
            Provider::Tensorrt => {
                let mut trt = ep::TensorRT::default().with_fp16(o.trt_fp16).with_int8(o.trt_int8);
                if let Some(dir) = &o.trt_cache {
                    trt = trt.with_engine_cache(true).with_engine_cache_path(dir.display());
                }
                if let Some(core) = o.trt_dla {
                    trt = trt.with_dla(true).with_dla_core(core);
                }
                trt.build().error_on_failure()
            }
        }
    }
}

struct OrtPrepared {
    recipe: Recipe,
    /// The session `prepare` built, handed to the first `spawn`.
    first: Mutex<Option<ort::session::Session>>,
    shape: Vec<usize>,
    dtype: ElementType,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl Prepared for OrtPrepared {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn spawn(&self) -> Result<Box<dyn Session>> {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner()).take();
        let session = match first {
            Some(session) => session,
            None => {
                let runtime = runtime(self.recipe.ort.library.as_deref())
                    .map_err(|reason| Error::unavailable("ort", reason))?;
                self.recipe.commit(runtime)?
            }
        };
        Ok(Box::new(OrtSession {
            session,
            input_name: self.inputs[0].name.clone(),
            dtype: self.dtype,
            expected: self.shape.clone(),
            path: self.recipe.path.clone(),
        }))
    }
}

struct OrtSession {
    session: ort::session::Session,
    input_name: String,
    dtype: ElementType,
    expected: Vec<usize>,
    path: std::path::PathBuf,
}

impl Session for OrtSession {
    fn run_batch(&mut self, input: Batch) -> Result<Vec<HostTensor>> {
        let failed = |e: &dyn std::fmt::Display| Error::Inference {
            path: self.path.clone(),
            reason: crate::error::one_line(&e.to_string()),
        };
        if input.shape != self.expected {
            return Err(failed(&format!(
                "input shape {:?}, session prepared for {:?}",
                input.shape, self.expected
            )));
        }
        let shape: Vec<i64> = input.shape.iter().map(|&d| d as i64).collect();
        // Values of the model's type are borrowed as they are; others are converted into a tensor
        // of their own.
        let value: SessionInputValue = match self.dtype {
            ElementType::F32 => session_input(shape, input.values.to::<f32>()),
            ElementType::F16 => session_input(shape, input.values.to::<half::f16>()),
            ElementType::U8 => session_input(shape, input.values.to::<u8>()),
        }
        .map_err(|e| failed(&e))?;
        let outputs =
            self.session.run(ort::inputs![self.input_name.as_str() => value]).map_err(|e| failed(&e))?;
        outputs.values().map(|value| as_f32(&value).map_err(|e| failed(&e))).collect()
    }
}

/// An output's values as f32, whatever their numeric type, as the `cpu` backend casts them
/// (indices from ArgMax or a sequence model's lengths are i64).
fn as_f32(value: &ort::value::DynValueRef<'_>) -> std::result::Result<HostTensor, String> {
    fn cast<T: PrimitiveTensorElementType + Copy + std::fmt::Debug>(
        value: &ort::value::DynValueRef<'_>,
        to_f32: impl Fn(T) -> f32,
    ) -> std::result::Result<HostTensor, String> {
        let (shape, data) = value.try_extract_tensor::<T>().map_err(|e| e.to_string())?;
        Ok(HostTensor::new(
            shape.iter().map(|&d| d as usize).collect(),
            data.iter().map(|&v| to_f32(v)).collect(),
        ))
    }
    use ort::value::{TensorElementType as T, ValueType};
    match value.dtype() {
        ValueType::Tensor { ty: T::Float32, .. } => cast::<f32>(value, |v| v),
        ValueType::Tensor { ty: T::Float16, .. } => cast::<half::f16>(value, half::f16::to_f32),
        ValueType::Tensor { ty: T::Float64, .. } => cast::<f64>(value, |v| v as f32),
        ValueType::Tensor { ty: T::Int64, .. } => cast::<i64>(value, |v| v as f32),
        ValueType::Tensor { ty: T::Int32, .. } => cast::<i32>(value, |v| v as f32),
        ValueType::Tensor { ty: T::Int8, .. } => cast::<i8>(value, f32::from),
        ValueType::Tensor { ty: T::Uint8, .. } => cast::<u8>(value, f32::from),
        ValueType::Tensor { ty: T::Bool, .. } => cast::<bool>(value, |v| f32::from(u8::from(v))),
        other => Err(format!("an output of type {other}, which edgert does not read")),
    }
}

/// Values for a session input: borrowed ones as a view, converted ones moved into a tensor.
fn session_input<T>(shape: Vec<i64>, values: Cow<'_, [T]>) -> ort::Result<SessionInputValue<'_>>
where
    T: PrimitiveTensorElementType + std::fmt::Debug + Clone + 'static,
{
    match values {
        Cow::Borrowed(values) => TensorRef::from_array_view((shape, values)).map(Into::into),
        Cow::Owned(values) => Tensor::from_array((shape, values)).map(Into::into),
    }
}
