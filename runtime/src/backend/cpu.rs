//! The `cpu` backend: tract-onnx on the host's cores (x86_64, or a Jetson's ARM cores).

use tract_linalg::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::runtime::RunOptions;

use super::tract_model::{self, invalid, TractModel, TractPrepared};
use super::{Backend, PrepareOptions, Prepared};
use crate::model::Model;
use crate::Result;

pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    fn version(&self) -> Option<String> {
        Some(concat!("tract-onnx ", env!("EDGERT_TRACT_VERSION")).into())
    }

    fn supports(&self, precision: &str) -> Result<(), String> {
        match precision {
            "fp32" | "fp16" | "int8-qdq" => Ok(()),
            "fp8" => {
                Err("tract has no FP8 kernels; FP8 needs a GPU of compute capability >= 8.9 (Orin is 8.7)"
                    .into())
            }
            "engine" => Err(super::ENGINE_NEEDS_TENSORRT.into()),
            other => Err(format!("unknown precision '{other}'")),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let path = &model.onnx_path;
        let TractModel { mut typed, input, outputs } =
            tract_model::decluttered(model, options.batch, self.name())?;
        typed.optimize().map_err(|e| invalid(path, "optimization", e))?;
        let executor = if options.threads > 1 { Some(Executor::multithread(options.threads)) } else { None };
        let run_options = RunOptions { executor, ..Default::default() };
        let plan = typed.into_runnable_with_options(&run_options).map_err(|e| invalid(path, "plan", e))?;
        Ok(Box::new(TractPrepared::new(Box::new(plan), input, outputs, model)))
    }
}
