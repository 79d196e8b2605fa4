//! `--backend cuda` (features `cuda-12020`, `cuda-12060`, `cuda-13000`): tract's CUDA runtime
//! (`tract-cuda`: its own kernels, cuBLAS and cuDNN, all loaded at run time), ONNX on the GPU.
//! tract checks the driver and every library before use; its reasons are passed on, with ours.

use tract_onnx::tract_core::runtime::{runtime_for_name, Runtime};

use super::tract_model::{self, invalid, TractModel, TractPrepared};
use super::{Backend, PrepareOptions, Prepared};
use crate::error::one_line;
use crate::model::Model;
use crate::precision::Precision;
use crate::{Error, Result};

// tract-cuda registers its runtime when linked; nothing else of it is named here.
use tract_cuda as _;

pub struct CudaBackend;

/// tract's CUDA runtime, usable here or why not: the driver first (our check, with its CUDA
/// version against the one this binary is built for), then tract's own (cuBLAS, cuDNN, ...).
fn runtime() -> Result<&'static dyn Runtime, String> {
    crate::cuda::device::compatible_driver().map_err(|e| e.to_string())?;
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

    fn supports(&self, precision: Precision) -> Result<(), String> {
        match precision {
            Precision::Fp32 | Precision::Fp16 | Precision::Int8Qdq => Ok(()),
            Precision::Fp8 => Err("tract's CUDA runtime has no FP8 kernels".into()),
            Precision::Engine => Err(super::ENGINE_NEEDS_TENSORRT.into()),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let runtime =
            runtime().map_err(|reason| Error::BackendUnavailable { name: "cuda".into(), reason })?;
        let path = &model.onnx_path;
        let TractModel { typed, input, outputs } =
            tract_model::decluttered(model, options.batch, self.name())?;
        let plan = runtime.prepare(typed).map_err(|e| invalid(path, "CUDA plan", e))?;
        Ok(Box::new(TractPrepared::new(plan, input, outputs, model)))
    }
}
