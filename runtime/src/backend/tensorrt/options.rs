//! `--backend tensorrt` settings: the build precision, DLA core, workspace, sparsity,
//! calibration, and where built engines and the timing cache live.

use std::path::PathBuf;

use crate::choice::Choice;
use crate::precision::Precision;

/// What TensorRT builds in: `--trt-precision` picks the first four; FP8 and typed builds follow
/// from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildPrecision {
    Fp32,
    Fp16,
    Int8,
    Best,
    /// An FP8 Q/DQ model (TensorRT 8.6 to 10: the FP8 flag, with FP16 between its Q/DQ pairs).
    Fp8,
    /// TensorRT 11 and later: the types the model has (strongly typed networks, no precision flags).
    Typed,
}

impl Choice for BuildPrecision {
    const ALL: &'static [Self] =
        &[BuildPrecision::Fp32, BuildPrecision::Fp16, BuildPrecision::Int8, BuildPrecision::Best];

    fn name(self) -> &'static str {
        match self {
            BuildPrecision::Fp32 => "fp32",
            BuildPrecision::Fp16 => "fp16",
            BuildPrecision::Int8 => "int8",
            BuildPrecision::Best => "best",
            BuildPrecision::Fp8 => "fp8",
            BuildPrecision::Typed => "typed",
        }
    }

    fn help(self) -> Option<&'static str> {
        match self {
            BuildPrecision::Int8 => Some("Explicit quantization: the model's Q/DQ nodes"),
            BuildPrecision::Best => {
                Some("FP16 and INT8 kernels both allowed; TensorRT picks the faster per layer")
            }
            _ => None,
        }
    }
}

impl BuildPrecision {
    /// What a model's own weights ask for (`inspect::precision`): Q/DQ models build in INT8.
    pub fn for_weights(weights: Precision) -> BuildPrecision {
        match weights {
            Precision::Int8Qdq => BuildPrecision::Int8,
            Precision::Fp16 => BuildPrecision::Fp16,
            _ => BuildPrecision::Fp32,
        }
    }

    pub fn fp16(self) -> bool {
        matches!(self, BuildPrecision::Fp16 | BuildPrecision::Best | BuildPrecision::Fp8)
    }

    pub fn fp8(self) -> bool {
        self == BuildPrecision::Fp8
    }

    pub fn int8(self) -> bool {
        matches!(self, BuildPrecision::Int8 | BuildPrecision::Best)
    }
}

#[derive(Debug, Clone, Default)]
pub struct TrtOptions {
    /// None: from the model's weights.
    pub precision: Option<BuildPrecision>,
    pub dla_core: Option<u32>,
    pub workspace_mb: Option<u64>,
    pub sparsity: bool,
    /// Folder of built engines; None: `EngineCache::default_dir()`.
    pub engine_cache: Option<PathBuf>,
    /// TensorRT's timing cache, read before and written after a build: later builds go faster.
    pub timing_cache: Option<PathBuf>,
    /// Calibrator-based INT8 for a model without Q/DQ nodes.
    pub calibration: Option<super::calibration::Calibration>,
    /// How threads wait for TensorRT's work (`--gpu-sync`), set before TensorRT opens the GPU.
    pub sync: crate::gpu_sync::GpuSync,
}
