//! The `cpu` backend: tract-onnx on the host's cores (x86_64, or a Jetson's ARM cores).

use super::tract_model::{self, invalid, TractModel, TractPrepared};
use super::{tract_ops, Backend, PrepareOptions, Prepared, Unavailable, Unsupported};
use crate::model::Model;
use crate::precision::Precision;
use crate::{Error, Result};

pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn check(&self) -> Result<(), Unavailable> {
        edgert_kernels().map(|_| ())
    }

    fn version(&self) -> Option<String> {
        let tract = concat!("tract-onnx ", env!("EDGERT_TRACT_VERSION"));
        Some(match edgert_kernels() {
            Ok(true) => format!("{tract}, edgert's convolution and fake-quantize kernels"),
            _ => tract.into(),
        })
    }

    fn supports(&self, precision: Precision) -> Result<(), Unsupported> {
        match precision {
            Precision::Fp32 | Precision::Fp16 | Precision::Int8Qdq => Ok(()),
            Precision::Fp8 => Err(Unsupported::NoFp8Kernels {
                runtime: "tract",
                hint: "; FP8 needs a GPU of compute capability >= 8.9 (Orin is 8.7)",
            }),
            Precision::Engine => Err(Unsupported::EngineNeedsTensorrt),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let path = &model.onnx_path;
        let TractModel { mut typed, input, outputs } = tract_model::decluttered(model, options, self.name())?;
        let unusable = |reason| Error::unavailable(self.name(), reason);
        if edgert_kernels().map_err(unusable)? {
            tract_ops::rewrite(&mut typed).map_err(|e| invalid(path, "edgert operators", e))?;
        }
        typed.optimize().map_err(|e| invalid(path, "optimization", e))?;
        let pool = tract_ops::threads::pool(options.threads).map_err(unusable)?;
        let run_options = tract_ops::threads::run_options(&pool);
        let plan = typed.into_runnable_with_options(&run_options).map_err(|e| invalid(path, "plan", e))?;
        Ok(Box::new(TractPrepared::new(Box::new(plan), input, outputs, model).on_pool(pool)))
    }
}

/// Whether edgert's own operators replace tract's where they can (`tract_ops`): yes unless
/// `EDGERT_CPU_KERNELS=tract`, which runs tract's alone, to compare the two or to step around a
/// suspected fault in edgert's.
fn edgert_kernels() -> Result<bool, Unavailable> {
    match std::env::var("EDGERT_CPU_KERNELS").as_deref() {
        Err(_) | Ok("") | Ok("edgert") => Ok(true),
        Ok("tract") => Ok(false),
        Ok(other) => Err(Unavailable::CpuKernels(other.into())),
    }
}
