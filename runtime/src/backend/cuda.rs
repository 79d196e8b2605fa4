//! `--backend cuda` (features `cuda-12020`, `cuda-12060`, `cuda-13000`): tract's CUDA runtime
//! (`tract-cuda`: its own kernels, cuBLAS and cuDNN, all loaded at run time), ONNX on the GPU.
//! tract checks the driver and every library before use; its reasons are passed on, with ours.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::runtime::{runtime_for_name, Runnable, Runtime, State};

use super::tract_model::{self, invalid, TractModel};
use super::{Backend, PrepareOptions, Prepared, Session};
use crate::error::one_line;
use crate::model::Model;
use crate::tensor::{HostTensor, TensorSpec};
use crate::{Error, Result};

// tract-cuda registers its runtime when linked; nothing else of it is named here.
use tract_cuda as _;

pub struct CudaBackend;

/// tract's CUDA runtime, usable here or why not: the driver first (our check, with its CUDA
/// version against the one this binary is built for), then tract's own (cuBLAS, cuDNN, ...).
fn runtime() -> Result<&'static dyn Runtime, String> {
    let driver = crate::cuda::device::driver_version().map_err(|e| e.to_string())?;
    if driver < crate::cuda::BUILT_FOR {
        return Err(crate::cuda::GpuError::DriverTooOld {
            driver: crate::cuda::version_text(driver),
            built: crate::cuda::version_text(crate::cuda::BUILT_FOR),
            built_code: crate::cuda::BUILT_FOR,
        }
        .to_string());
    }
    let runtime = runtime_for_name("cuda")
        .map_err(|e| one_line(&e))?
        .ok_or("tract's CUDA runtime is not linked into this binary")?;
    runtime.check().map_err(|e| one_line(&e))?;
    Ok(runtime)
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn check(&self) -> Result<(), String> {
        runtime().map(|_| ())
    }

    fn version(&self) -> Option<String> {
        let driver = crate::cuda::device::driver_version().ok()?;
        Some(format!(
            "tract-cuda {} (CUDA API {}, driver {})",
            env!("EDGERT_TRACT_VERSION"),
            crate::cuda::version_text(crate::cuda::BUILT_FOR),
            crate::cuda::version_text(driver)
        ))
    }

    fn supports(&self, precision: &str) -> Result<(), String> {
        match precision {
            "fp32" | "fp16" | "int8-qdq" => Ok(()),
            "fp8" => Err("tract's CUDA runtime has no FP8 kernels".into()),
            "engine" => Err(super::ENGINE_NEEDS_TENSORRT.into()),
            other => Err(format!("unknown precision '{other}'")),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let runtime =
            runtime().map_err(|reason| Error::BackendUnavailable { name: "cuda".into(), reason })?;
        let path = &model.onnx_path;
        let TractModel { typed, input, outputs } =
            tract_model::decluttered(model, options.batch, self.name())?;
        let plan = runtime.prepare(typed).map_err(|e| invalid(path, "CUDA plan", e))?;
        Ok(Box::new(CudaPrepared { plan, inputs: vec![input], outputs, path: path.clone() }))
    }
}

struct CudaPrepared {
    plan: Box<dyn Runnable>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    path: std::path::PathBuf,
}

impl Prepared for CudaPrepared {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn spawn(&self) -> Result<Box<dyn Session>> {
        let failed = |e: TractError| Error::Inference { path: self.path.clone(), reason: one_line(&e) };
        let state = self.plan.spawn().map_err(failed)?;
        let expected = self.inputs[0].shape.iter().map(|d| d.unwrap_or(0)).collect();
        Ok(Box::new(CudaSession { state, expected, path: self.path.clone() }))
    }
}

struct CudaSession {
    state: Box<dyn State>,
    expected: Vec<usize>,
    path: std::path::PathBuf,
}

impl Session for CudaSession {
    fn run(&mut self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        let failed = |e: TractError| Error::Inference { path: self.path.clone(), reason: one_line(&e) };
        tract_model::check_shape(&self.path, input, &self.expected)?;
        let outputs = self.state.run(tvec!(tract_model::to_tract(input).map_err(failed)?)).map_err(failed)?;
        tract_model::to_host(&outputs).map_err(failed)
    }
}
