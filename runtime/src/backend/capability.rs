//! Why a backend cannot run here (`Backend::check`), and why it has no kernels for a precision
//! (`Backend::supports`).

#[cfg(feature = "ort")]
use super::ort::LibraryError;
#[cfg(feature = "tensorrt")]
use super::tensorrt::TrtError;

/// Why a backend compiled into this binary cannot run on this machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unavailable {
    /// `EDGERT_CPU_KERNELS` set to something other than `edgert` or `tract`.
    #[error("EDGERT_CPU_KERNELS is '{0}': set it to edgert (the default) or tract")]
    CpuKernels(String),
    #[error("could not start {threads} threads: {reason}")]
    Threads { threads: usize, reason: String },
    #[cfg(feature = "ort")]
    #[error(transparent)]
    OrtLibrary(#[from] LibraryError),
    /// The GPU, its driver or tract's CUDA runtime (cuBLAS, cuDNN, ...): their own words.
    #[error("{0}")]
    Cuda(String),
    /// TensorRT's libraries, the shim or the device.
    #[cfg(feature = "tensorrt")]
    #[error(transparent)]
    Tensorrt(#[from] TrtError),
}

/// A weight precision a backend has no kernels for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unsupported {
    /// A runtime without FP8 kernels, and what would have them.
    #[error("{runtime} has no FP8 kernels{hint}")]
    NoFp8Kernels { runtime: &'static str, hint: &'static str },
    #[error("FP8 needs a GPU of compute capability 8.9 or more; this one is {sm}")]
    Fp8Compute { sm: String },
    #[error("a TensorRT engine runs only on --backend tensorrt")]
    EngineNeedsTensorrt,
    /// The backend cannot run here at all.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}
