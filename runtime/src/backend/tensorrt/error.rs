//! Why TensorRT, its libraries or one of its calls failed. What TensorRT itself said (through the
//! shim) is kept as its text: it is the root cause a user searches for.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrtError {
    /// The binary was built with the feature but without TensorRT's headers.
    #[error(
        "this binary was built with --features tensorrt but without TensorRT's headers, so its TensorRT \
         shim is missing: rebuild where NvInfer.h is found (TENSORRT_INCLUDE_DIR and CUDA_INCLUDE_DIR, or \
         JetPack's default folders)"
    )]
    NoShim,
    /// A library the loader found nowhere: which names, which folders, and the fix.
    #[error("{what} not found (tried {names} through the dynamic loader, LD_LIBRARY_PATH and ld.so.cache, and in {folders}): {fix}")]
    NotFound { what: String, names: String, folders: String, fix: &'static str },
    /// A library file that is there but does not load (another architecture, damaged).
    #[error("{}: cannot load {what}: {reason}", path.display())]
    Unloadable { path: PathBuf, what: String, reason: String },
    #[error("{library} has no symbol {symbol}: it is not a TensorRT 8.5+ / CUDA 11+ library")]
    MissingSymbol { library: &'static str, symbol: &'static str },
    #[error(
        "TensorRT {version} is too old: edgert's GPU backends need TensorRT 8.5 or later (JetPack 5.1 or later; \
         JetPack 4 has CUDA 10.2 and TensorRT 8.2): use --backend cpu or ort"
    )]
    TooOld { version: String },
    /// A call into TensorRT or CUDA through the shim that failed, in the shim's words (TensorRT's
    /// first logged error where it logged one).
    #[error("{0}")]
    Call(String),
    /// A timing cache TensorRT would not take (another release or GPU wrote it): nothing was built.
    #[error("{0}")]
    TimingCacheRefused(String),
    #[error("tensor name {0:?} has a NUL")]
    TensorName(String),
    /// An output whose extent is known only from the values (NonZero, NMS).
    #[error(
        "output '{output}' has shape {dims:?}, which depends on the input's values (NonZero, NMS and the like): \
         the tensorrt backend does not support data-dependent output shapes; run the model with --backend cpu \
         or ort, or end the graph before that layer"
    )]
    DataDependentShape { output: String, dims: Vec<i64> },
}
