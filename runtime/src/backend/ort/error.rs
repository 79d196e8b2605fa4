//! Why an ONNX Runtime library cannot be found, loaded or used; each names the file.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LibraryError {
    #[error(
        "libonnxruntime not found (searched {searched}); install ONNX Runtime (`pip install onnxruntime` \
         ships onnxruntime/capi/libonnxruntime.so.<version>) and set ORT_DYLIB_PATH or --ort-lib"
    )]
    NotFound { searched: String },
    /// A path given by `--ort-lib` or `ORT_DYLIB_PATH` that is not a file.
    #[error("{}: no such file (from {from})", path.display())]
    Missing { path: PathBuf, from: &'static str },
    #[error("{}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}: not a shared library (no ELF header)", path.display())]
    NotElf { path: PathBuf },
    #[error("{}: built for {built}, but this edgert runs on {own}; install the ONNX Runtime for {own}", path.display())]
    OtherMachine { path: PathBuf, built: String, own: &'static str },
    #[error("{}: cannot load: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    #[error("{}: not ONNX Runtime (no OrtGetApiBase symbol)", path.display())]
    NotOrt { path: PathBuf },
    #[error("{}: OrtGetApiBase returned nothing", path.display())]
    NoApiBase { path: PathBuf },
    #[error("{}: ONNX Runtime {version} is too old or not a release; edgert's ort backend needs 1.{min_minor} or newer", path.display())]
    TooOld { path: PathBuf, version: String, min_minor: u32 },
    /// ONNX Runtime's own refusal to start (`ort::init_from`, its environment).
    #[error("{}: {reason}", path.display())]
    Init { path: PathBuf, reason: String },
    #[error("{}: ONNX Runtime is already loaded from {} in this process, and one process holds one", path.display(), loaded.display())]
    AlreadyLoaded { path: PathBuf, loaded: PathBuf },
}
