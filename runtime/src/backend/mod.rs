//! Backends run models: `Backend` (usable here?) → `Prepared` (a compiled plan) → `Session`
//! (per thread: buffers and state). `registry` lists them in priority order.

pub(crate) mod cannot_run;
pub(crate) mod capability;
mod constant_dequantize;
pub mod cpu;
#[cfg(feature = "cuda-backend")]
pub(crate) mod cuda;
pub(crate) mod finite;
#[cfg(feature = "ort")]
pub(crate) mod ort;
#[cfg(feature = "tensorrt")]
pub(crate) mod tensorrt;
mod tract_cache;
mod tract_checks;
mod tract_memory;
pub(crate) mod tract_model;
pub mod tract_ops;

pub use capability::{Unavailable, Unsupported};

use crate::limits::MemoryLimit;
use crate::model::Model;
use crate::precision::Precision;
use crate::tensor::{Batch, HostTensor, TensorSpec};
use crate::{Error, Result};

/// How backends run, from the command line or a program: each backend gets its own part when
/// `select` makes it. Values, not process-wide state.
#[derive(Debug, Clone, Default)]
pub struct BackendOptions {
    #[cfg(feature = "ort")]
    pub ort: ort::OrtOptions,
    #[cfg(feature = "tensorrt")]
    pub tensorrt: tensorrt::TrtOptions,
}

/// How to prepare a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOptions {
    /// Batch size the plan is compiled for.
    pub batch: usize,
    /// Intra-op threads; 1 runs on the calling thread.
    pub threads: usize,
    /// The most memory one tensor of the model may take at this batch size.
    pub memory: MemoryLimit,
    /// Where the `cpu` backend's threads run, when there are two or more.
    pub pinning: Pinning,
    /// How threads wait for the GPU (GPU backends and `--preprocess gpu`).
    pub gpu_sync: crate::gpu_sync::GpuSync,
}

/// Where the `cpu` backend's threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pinning {
    /// One to a CPU: the pool's `n`th thread on the `(first + n)`th of the CPUs this process may
    /// run on (`taskset`, a container's cpuset), where all its threads fit; else as `Off`.
    From(usize),
    /// Wherever the OS scheduler puts them.
    Off,
}

impl Pinning {
    /// The same, `n` CPUs further on: for the next of several pools that are to run side by side.
    pub fn after(self, n: usize) -> Pinning {
        match self {
            Pinning::From(first) => Pinning::From(first.saturating_add(n)),
            Pinning::Off => Pinning::Off,
        }
    }
}

impl Default for PrepareOptions {
    fn default() -> Self {
        PrepareOptions {
            batch: 1,
            threads: 1,
            memory: MemoryLimit::of_machine(),
            pinning: Pinning::From(0),
            gpu_sync: crate::gpu_sync::GpuSync::default(),
        }
    }
}

pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether the backend can run on this machine, and why not.
    fn check(&self) -> Result<(), Unavailable>;
    /// What runs underneath, for reports: `tract-onnx 0.23.9`, `ONNX Runtime 1.32.0 (path)`.
    fn version(&self) -> Option<String>;
    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>>;
    /// Whether the backend has kernels for a weight precision, and why not.
    fn supports(&self, precision: Precision) -> Result<(), Unsupported>;
}

pub trait Prepared: Send + Sync {
    fn inputs(&self) -> &[TensorSpec];
    fn outputs(&self) -> &[TensorSpec];
    fn spawn(&self) -> Result<Box<dyn Session>>;
}

pub trait Session: Send {
    /// Runs one batch; outputs come in the order of `Prepared::outputs`. The input is borrowed so
    /// a camera pipeline can reuse its buffer for the next frame. Its values may be f32, f16 or
    /// u8: the backend converts those not of the model's input type.
    fn run_batch(&mut self, input: Batch) -> Result<Vec<HostTensor>>;

    /// Runs one f32 batch.
    fn run(&mut self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        self.run_batch(input.into())
    }

    /// Where a GPU backend's last run spent its time; None on the CPU.
    fn device_timing(&self) -> Option<DeviceTiming> {
        None
    }

    /// Whether `run_on_device` works: the backend reads its input from GPU memory in place.
    fn takes_device_input(&self) -> bool {
        false
    }

    /// Runs one batch that GPU preprocessing left in device memory, without copying it.
    fn run_on_device(&mut self, _input: &DeviceBatch) -> Result<Vec<HostTensor>> {
        Err(Error::Usage("this backend takes its input in host memory, not on the GPU".into()))
    }
}

/// A batch in GPU-visible memory at `address`: `shape`'s values, as f16 bits when `half`, else f32.
/// Made only by `unsafe fn new`, whose caller vouches for the memory, so a backend may hand the
/// address to the GPU.
#[derive(Debug, Clone, Copy)]
pub struct DeviceBatch<'a> {
    address: u64,
    shape: &'a [usize],
    half: bool,
}

impl<'a> DeviceBatch<'a> {
    /// # Safety
    /// `address` must be the start of device memory (or mapped host memory the GPU reads) holding
    /// the product of `shape` values, f16 when `half` else f32, aligned for them; it must stay
    /// allocated, and nothing may write it, until every run given this input has returned.
    pub unsafe fn new(address: u64, shape: &'a [usize], half: bool) -> DeviceBatch<'a> {
        DeviceBatch { address, shape, half }
    }

    pub fn address(&self) -> u64 {
        self.address
    }

    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    pub fn half(&self) -> bool {
        self.half
    }
}

/// A GPU run as trtexec splits it: copies and GPU work timed by CUDA events, and the host time
/// spent enqueueing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceTiming {
    pub h2d_ms: f64,
    pub compute_ms: f64,
    pub d2h_ms: f64,
    pub enqueue_ms: f64,
}

/// `registry_with` the default options.
pub fn registry() -> Vec<Box<dyn Backend>> {
    registry_with(&BackendOptions::default())
}

/// Backends compiled into this binary with their options, in priority order (GPU backends first).
pub fn registry_with(options: &BackendOptions) -> Vec<Box<dyn Backend>> {
    // Without the optional backends, `options` has no fields to read.
    let _ = options;
    vec![
        #[cfg(feature = "tensorrt")]
        Box::new(tensorrt::TensorrtBackend::with_options(options.tensorrt.clone())),
        #[cfg(feature = "cuda-backend")]
        Box::new(cuda::CudaBackend),
        Box::new(cpu::CpuBackend::default()),
        #[cfg(feature = "ort")]
        Box::new(ort::OrtBackend::new(options.ort.clone())),
    ]
}

/// Backends edgert knows of but that this binary was built without, with the feature to enable.
pub const NOT_COMPILED: &[(&str, &str)] = &[
    #[cfg(not(feature = "cuda-backend"))]
    ("cuda", "cuda-12020, cuda-12060 or cuda-13000"),
    #[cfg(not(feature = "tensorrt"))]
    ("tensorrt", "tensorrt"),
    #[cfg(not(feature = "ort"))]
    ("ort", "ort"),
];

/// A backend picked by name, and whether a GPU request fell back to the CPU.
pub struct Selected {
    pub backend: Box<dyn Backend>,
    pub requested: String,
    /// Set when `gpu-or-cpu` found no usable GPU backend: said in the log and in the report.
    pub fallback: Option<String>,
}

const GPU_BACKENDS: &[&str] = &["cuda", "tensorrt"];

/// Whether backend `name` runs on the GPU.
pub fn is_gpu(name: &str) -> bool {
    GPU_BACKENDS.contains(&name)
}

/// `select_with` and the default options.
pub fn select(name: &str) -> Result<Selected> {
    select_with(name, &BackendOptions::default())
}

/// Resolves a backend name: a concrete backend, `gpu` (the best GPU backend, strictly) or
/// `gpu-or-cpu` (the best GPU backend, else the CPU, saying so), made with `options`. Never a
/// silent fallback.
pub fn select_with(name: &str, options: &BackendOptions) -> Result<Selected> {
    let requested = name.to_string();
    let mut backends = registry_with(options);
    let known = || {
        let mut names: Vec<&str> = registry().iter().map(|b| b.name()).collect();
        names.extend(NOT_COMPILED.iter().map(|(n, _)| *n));
        names.extend(["gpu", "gpu-or-cpu"]);
        names.join(", ")
    };
    if name == "gpu" || name == "gpu-or-cpu" {
        let mut reasons = Vec::new();
        let gpu_index = backends.iter().position(|b| {
            GPU_BACKENDS.contains(&b.name())
                && b.check().map_err(|r| reasons.push(format!("{}: {r}", b.name()))).is_ok()
        });
        if let Some(i) = gpu_index {
            return Ok(Selected { backend: backends.swap_remove(i), requested, fallback: None });
        }
        let why = if reasons.is_empty() {
            "no GPU backend is compiled into this binary (build with --features cuda-12060 or tensorrt)"
                .to_string()
        } else {
            reasons.join("; ")
        };
        if name == "gpu" {
            return Err(Error::BackendUnavailable { name: requested, reason: why });
        }
        let cpu = backends.into_iter().find(|b| b.name() == "cpu").expect("cpu is always built");
        return Ok(Selected { backend: cpu, requested, fallback: Some(format!("fell back to cpu: {why}")) });
    }
    if let Some((_, feature)) = NOT_COMPILED.iter().find(|(n, _)| *n == name) {
        return Err(Error::BackendUnavailable {
            name: requested,
            reason: format!("not compiled into this binary (build with --features {feature})"),
        });
    }
    let Some(i) = backends.iter().position(|b| b.name() == name) else {
        return Err(Error::UnknownBackend { name: requested, known: known() });
    };
    let backend = backends.swap_remove(i);
    backend.check().map_err(|reason| Error::unavailable(&requested, reason))?;
    Ok(Selected { backend, requested, fallback: None })
}
