//! CUDA plumbing (feature `cuda` and one CUDA API version): cudarc loads libcuda and `nvrtc` loads
//! libnvrtc at run time, so the build needs no CUDA and the binary starts without a GPU. Everything is probed
//! before use: cudarc panics on a missing library or symbol, so edgert checks the library, the
//! driver's CUDA version and the device first and returns a `GpuError` naming what is missing,
//! where it was looked for, and the fix.

pub(crate) mod compile;
pub mod device;
pub(crate) mod host;
pub(crate) mod nvrtc;

#[cfg(not(any(
    feature = "cuda-11040",
    feature = "cuda-12020",
    feature = "cuda-12060",
    feature = "cuda-13000"
)))]
compile_error!(
    "feature `cuda` needs the CUDA API version to build for: --features cuda-11040 (JetPack 5.1), \
     cuda-12020 (JetPack 6.0), cuda-12060 (JetPack 6.1/6.2, desktop drivers >= 12.6) or cuda-13000 (JetPack 7)"
);

/// The CUDA API this binary is built for, encoded as the driver encodes its own (12060 = 12.6).
pub const BUILT_FOR: i32 = if cfg!(feature = "cuda-11040") {
    11040
} else if cfg!(feature = "cuda-12020") {
    12020
} else if cfg!(feature = "cuda-12060") {
    12060
} else {
    13000
};

/// `12060` → `12.6`.
pub fn version_text(encoded: i32) -> String {
    format!("{}.{}", encoded / 1000, (encoded % 1000) / 10)
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// A library that is not installed, or not where the loader looks.
    #[error("{library} not found (tried {tried} through the dynamic loader: LD_LIBRARY_PATH and ld.so.cache): {fix}")]
    MissingLibrary { library: String, tried: String, fix: String },
    /// A driver older than the CUDA API this binary calls.
    #[error(
        "the NVIDIA driver supports CUDA {driver} but this edgert is built for CUDA {built} (feature cuda-{built_code}): \
         update the driver (JetPack), or rebuild with the feature of the driver's CUDA"
    )]
    DriverTooOld { driver: String, built: String, built_code: i32 },
    /// A CUDA 10 driver: JetPack 4, for which no build of edgert's GPU backends exists.
    #[error(
        "the NVIDIA driver supports CUDA {0} (JetPack 4 on a Jetson Nano, TX1, TX2 or Xavier): edgert's GPU \
         backends need JetPack 5 or later (CUDA 11.4+); use --backend cpu or ort"
    )]
    JetPack4(String),
    /// The driver loads but sees no GPU.
    #[error("no NVIDIA GPU: the driver loaded but reports no device{0}")]
    NoDevice(String),
    /// A CUDA call that failed.
    #[error("CUDA: {0}")]
    Driver(String),
    /// A frame or output that does not fit the planned preprocessing pass.
    #[error("{0}")]
    Input(String),
    /// A kernel that NVRTC did not compile.
    #[error("NVRTC could not compile {kernel}: {log}")]
    Compile { kernel: String, log: String },
}

/// What an error from cudarc said, on one line.
pub(crate) fn driver_error(what: &str, error: impl std::fmt::Debug) -> GpuError {
    GpuError::Driver(format!("{what} failed: {error:?}"))
}

impl From<GpuError> for crate::Error {
    fn from(error: GpuError) -> crate::Error {
        crate::Error::BackendUnavailable { name: "cuda".into(), reason: error.to_string() }
    }
}
