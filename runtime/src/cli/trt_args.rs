//! `--trt-*` flags of the commands that take `--backend`: how `--backend tensorrt` builds engines
//! and where it keeps them.

use std::path::PathBuf;

use clap::Args;

use crate::backend::tensorrt::{self, Precision, TrtOptions};

#[derive(Args, Clone)]
pub struct TrtArgs {
    /// TensorRT: engine precision (default: the model's own, INT8 for Q/DQ models).
    #[arg(long, value_enum, value_name = "P")]
    trt_precision: Option<Precision>,
    /// TensorRT: run on this DLA core (Xavier, Orin AGX/NX), falling back to the GPU per layer.
    #[arg(long, value_name = "N")]
    trt_dla: Option<u32>,
    /// TensorRT: builder workspace limit.
    #[arg(long, value_name = "MB")]
    trt_workspace_mb: Option<u64>,
    /// TensorRT: allow 2:4 structured-sparse kernels (Ampere and Orin).
    #[arg(long)]
    trt_sparsity: bool,
    /// TensorRT: folder of built engines (default: EDGERT_ENGINE_CACHE, else ~/.cache/edgert/engines).
    #[arg(long, value_name = "DIR")]
    trt_engine_cache: Option<PathBuf>,
    /// TensorRT: timing cache read before and written after each build.
    #[arg(long, value_name = "FILE")]
    trt_timing_cache: Option<PathBuf>,
}

impl TrtArgs {
    /// Hands the flags to the tensorrt backend, before any backend is picked.
    pub fn apply(&self) {
        tensorrt::configure(TrtOptions {
            precision: self.trt_precision,
            dla_core: self.trt_dla,
            workspace_mb: self.trt_workspace_mb,
            sparsity: self.trt_sparsity,
            engine_cache: self.trt_engine_cache.clone(),
            timing_cache: self.trt_timing_cache.clone(),
            calibration: None,
        });
    }
}
