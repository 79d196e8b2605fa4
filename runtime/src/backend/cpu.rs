//! The `cpu` backend: tract-onnx on the host's cores (x86_64, or a Jetson's ARM cores).

use std::sync::Arc;

use tract_linalg::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::runtime::RunOptions;

use super::tract_model::{self, invalid, TractModel};
use super::{Backend, PrepareOptions, Prepared, Session};
use crate::error::one_line;
use crate::model::Model;
use crate::tensor::{HostTensor, TensorSpec};
use crate::{Error, Result};

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
        Ok(Box::new(CpuPrepared { plan, inputs: vec![input], outputs, path: path.clone() }))
    }
}

struct CpuPrepared {
    plan: Arc<TypedRunnableModel>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    path: std::path::PathBuf,
}

impl Prepared for CpuPrepared {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn spawn(&self) -> Result<Box<dyn Session>> {
        let state = self.plan.spawn().map_err(|e| self.failed(e))?;
        let expected = self.inputs[0].shape.iter().map(|d| d.unwrap_or(0)).collect();
        Ok(Box::new(CpuSession { state, expected, path: self.path.clone() }))
    }
}

impl CpuPrepared {
    fn failed(&self, e: TractError) -> Error {
        Error::Inference { path: self.path.clone(), reason: one_line(&e) }
    }
}

struct CpuSession {
    state: TypedSimpleState,
    expected: Vec<usize>,
    path: std::path::PathBuf,
}

impl Session for CpuSession {
    fn run(&mut self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        let failed = |e: TractError| Error::Inference { path: self.path.clone(), reason: one_line(&e) };
        tract_model::check_shape(&self.path, input, &self.expected)?;
        let outputs = self.state.run(tvec!(tract_model::to_tract(input).map_err(failed)?)).map_err(failed)?;
        tract_model::to_host(&outputs).map_err(failed)
    }
}
