//! `--backend cuda` (features `cuda-12020`, `cuda-12060`, `cuda-13000`): tract's CUDA runtime
//! (`tract-cuda`: its own kernels, cuBLAS and cuDNN, all loaded at run time), ONNX on the GPU.
//! tract checks the driver and every library before use; its reasons are passed on, with ours.

use tract_onnx::tract_core::runtime::{runtime_for_name, Runtime};

use super::cannot_run;
use super::tract_model::{self, TractModel, TractPrepared};
use super::{Backend, PrepareOptions, Prepared, Unavailable, Unsupported};
use crate::error::one_line;
use crate::model::Model;
use crate::panics::contained;
use crate::precision::Precision;
use crate::{Error, Result};

// tract-cuda registers its runtime when linked; nothing else of it is named here.
use tract_cuda as _;

pub struct CudaBackend;

/// tract's CUDA runtime, usable here or why not: the driver first (our check, with its CUDA
/// version against the one this binary is built for), then tract's own (cuBLAS, cuDNN, ...).
fn runtime() -> Result<&'static dyn Runtime, Unavailable> {
    let tract = |e: &dyn std::fmt::Display| Unavailable::Cuda(one_line(&e));
    crate::cuda::device::compatible_driver().map_err(|e| Unavailable::Cuda(e.to_string()))?;
    let runtime = runtime_for_name("cuda")
        .map_err(|e| tract(&e))?
        .ok_or(Unavailable::Cuda("tract's CUDA runtime is not linked into this binary".into()))?;
    runtime.check().map_err(|e| tract(&e))?;
    Ok(runtime)
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn check(&self) -> Result<(), Unavailable> {
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

    fn supports(&self, precision: Precision) -> Result<(), Unsupported> {
        match precision {
            Precision::Fp32 | Precision::Fp16 | Precision::Int8Qdq => Ok(()),
            Precision::Fp8 => Err(Unsupported::NoFp8Kernels { runtime: "tract's CUDA runtime", hint: "" }),
            Precision::Engine => Err(Unsupported::EngineNeedsTensorrt),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let runtime = runtime().map_err(|reason| Error::unavailable("cuda", reason))?;
        // tract runs in the primary context, whose waits follow --gpu-sync from here on.
        crate::cuda::device::schedule(0, options.gpu_sync)?;
        let TractModel { typed, input, outputs } = tract_model::decluttered(model, options, self.name())?;
        let plan = contained(
            || {
                runtime
                    .prepare(typed)
                    .map_err(|e| cannot_run::tract(&model.file, self.name(), "CUDA plan", &e))
            },
            cannot_run::tract_panic(&model.file, self.name(), "CUDA plan"),
        )?;
        Ok(Box::new(TractPrepared::new(plan, input, outputs, model)))
    }
}
