//! `--ort-*` flags of the commands that take `--backend`: where ONNX Runtime is and how
//! `--backend ort` runs it.

use std::path::PathBuf;

use clap::Args;

use crate::backend::ort::{self, OrtOptions, Provider};

#[derive(Args, Clone)]
pub struct OrtArgs {
    /// ONNX Runtime library for `--backend ort` (else ORT_DYLIB_PATH, else the usual locations).
    #[arg(long, value_name = "FILE")]
    ort_lib: Option<PathBuf>,
    /// ONNX Runtime execution provider; cuda and tensorrt need an ONNX Runtime GPU build.
    #[arg(long, value_enum, default_value_t = Provider::Cpu)]
    ort_provider: Provider,
    /// TensorRT provider: allow FP16 kernels.
    #[arg(long)]
    ort_trt_fp16: bool,
    /// TensorRT provider: INT8 (Q/DQ models).
    #[arg(long)]
    ort_trt_int8: bool,
    /// TensorRT provider: cache built engines in this folder.
    #[arg(long, value_name = "DIR")]
    ort_trt_cache: Option<PathBuf>,
    /// TensorRT provider: run on this DLA core.
    #[arg(long, value_name = "N")]
    ort_trt_dla: Option<u32>,
}

impl OrtArgs {
    /// Hands the flags to the ort backend, before any backend is picked.
    pub fn apply(&self) {
        if let Some(path) = &self.ort_lib {
            ort::set_library(path.clone());
        }
        ort::configure(OrtOptions {
            provider: self.ort_provider,
            trt_fp16: self.ort_trt_fp16,
            trt_int8: self.ort_trt_int8,
            trt_cache: self.ort_trt_cache.clone(),
            trt_dla: self.ort_trt_dla,
        });
    }
}
