//! `--backend ort` settings: which ONNX Runtime library, the execution provider and TensorRT's
//! options (used on Jetson, where ONNX Runtime's GPU builds carry the TensorRT provider).

use std::path::PathBuf;

use crate::choice::Choice;

/// The execution provider ONNX Runtime runs the model with (`--ort-provider`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Provider {
    #[default]
    Cpu,
    Cuda,
    Tensorrt,
}

impl Choice for Provider {
    const ALL: &'static [Self] = &[Provider::Cpu, Provider::Cuda, Provider::Tensorrt];

    fn name(self) -> &'static str {
        match self {
            Provider::Cpu => "cpu",
            Provider::Cuda => "cuda",
            Provider::Tensorrt => "tensorrt",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrtOptions {
    /// The library to load (`--ort-lib`); None: `ORT_DYLIB_PATH`, else the usual locations.
    pub library: Option<PathBuf>,
    pub provider: Provider,
    /// TensorRT: let it pick FP16 kernels.
    pub trt_fp16: bool,
    /// TensorRT: INT8 (from the model's Q/DQ nodes, or a calibration table).
    pub trt_int8: bool,
    /// TensorRT: cache built engines in this folder (building takes minutes on a Jetson).
    pub trt_cache: Option<PathBuf>,
    /// TensorRT: run on this DLA core (Xavier, Orin AGX/NX), falling back to the GPU per layer.
    pub trt_dla: Option<u32>,
}
