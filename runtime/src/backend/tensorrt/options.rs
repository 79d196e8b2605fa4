//! `--backend tensorrt` settings, process-wide like TensorRT's runtime: the build precision, DLA
//! core, workspace, sparsity, calibration, and where built engines and the timing cache live.

use std::path::PathBuf;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    Fp32,
    Fp16,
    /// Explicit quantization: the model's Q/DQ nodes.
    Int8,
    /// FP16 and INT8 kernels both allowed; TensorRT picks the faster per layer.
    Best,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
            Precision::Best => "best",
        }
    }

    /// What a model's own weights ask for (`inspect::precision`): Q/DQ models build in INT8.
    pub fn for_weights(weights: &str) -> Precision {
        match weights {
            "int8-qdq" => Precision::Int8,
            "fp16" => Precision::Fp16,
            _ => Precision::Fp32,
        }
    }

    pub fn fp16(self) -> bool {
        matches!(self, Precision::Fp16 | Precision::Best)
    }

    pub fn int8(self) -> bool {
        matches!(self, Precision::Int8 | Precision::Best)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrtOptions {
    /// None: from the model's weights.
    pub precision: Option<Precision>,
    pub dla_core: Option<u32>,
    pub workspace_mb: Option<u64>,
    pub sparsity: bool,
    /// Folder of built engines; None: `EngineCache::default_dir()`.
    pub engine_cache: Option<PathBuf>,
    /// TensorRT's timing cache, read before and written after a build: later builds go faster.
    pub timing_cache: Option<PathBuf>,
    /// Calibrator-based INT8 for a model without Q/DQ nodes.
    pub calibration: Option<super::calibration::Calibration>,
}

static CONFIGURED: OnceLock<TrtOptions> = OnceLock::new();

/// Sets the options for the rest of the process (the command line's `--trt-*` flags).
pub fn configure(options: TrtOptions) {
    let _ = CONFIGURED.set(options);
}

pub(super) fn configured() -> TrtOptions {
    CONFIGURED.get().cloned().unwrap_or_default()
}
