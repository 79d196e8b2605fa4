//! The `cpu` backend: tract-onnx on the host's cores (x86_64, or a Jetson's ARM cores).

use super::cannot_run;
use super::tract_model::{self, TractModel, TractPrepared};
use super::{tract_ops, Backend, PrepareOptions, Prepared, Unavailable, Unsupported};
use crate::model::Model;
use crate::panics::contained;
use crate::precision::Precision;
use crate::{Error, Result};

/// The `cpu` backend, with the kernels `EDGERT_CPU_KERNELS` names unless chosen here.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend {
    kernels: Option<CpuKernels>,
}

/// Whose kernels run the convolutions, max pooling and fake-quantize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuKernels {
    /// edgert's own operators (`tract_ops`) where they apply, tract's elsewhere: the default.
    Edgert,
    /// tract's alone, to compare the two or to step around a suspected fault in edgert's.
    Tract,
}

impl CpuBackend {
    pub fn with_kernels(kernels: CpuKernels) -> CpuBackend {
        CpuBackend { kernels: Some(kernels) }
    }

    fn kernels(&self) -> Result<CpuKernels, Unavailable> {
        self.kernels.map_or_else(kernels_from_env, Ok)
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn check(&self) -> Result<(), Unavailable> {
        self.kernels().map(|_| ())
    }

    fn version(&self) -> Option<String> {
        let tract = concat!("tract-onnx ", env!("EDGERT_TRACT_VERSION"));
        Some(match self.kernels() {
            Ok(CpuKernels::Edgert) => {
                let integers =
                    if tract_ops::has_dot_product() { ", INT8 convolutions on integers (SDOT)" } else { "" };
                format!("{tract}, edgert's convolution and fake-quantize kernels{integers}")
            }
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
        let invalid = |stage: &str, e| cannot_run::tract(&model.file, self.name(), stage, &e);
        let unusable = |reason| Error::unavailable(self.name(), reason);
        let panicked = tract_model::inference_panic(&model.file);
        let pool = tract_ops::threads::pool(options.threads, options.pinning, panicked).map_err(unusable)?;
        let run_options = tract_ops::threads::run_options(&pool);
        let TractModel { typed, input, outputs } = self.optimized(model, options)?;
        let plan = contained(
            || typed.into_runnable_with_options(&run_options).map_err(|e| invalid("plan", e)),
            cannot_run::tract_panic(&model.file, self.name(), "plan"),
        )?;
        Ok(Box::new(TractPrepared::new(Box::new(plan), input, outputs, model).on_pool(pool)))
    }
}

impl CpuBackend {
    /// The model as this backend runs it: decluttered, edgert's operators in where its kernels
    /// are chosen, optimized. Public so that `examples/tract_profile` times this very graph.
    pub fn optimized(&self, model: &Model, options: &PrepareOptions) -> Result<TractModel> {
        let invalid = |stage: &str, e| cannot_run::tract(&model.file, self.name(), stage, &e);
        let unusable = |reason| Error::unavailable(self.name(), reason);
        let edgert_kernels = self.kernels().map_err(unusable)? == CpuKernels::Edgert;
        let mut decluttered = tract_model::decluttered(model, options, self.name())?;
        let typed = &mut decluttered.typed;
        contained(
            || {
                if edgert_kernels {
                    tract_ops::rewrite(typed, tract_ops::has_dot_product())
                        .map_err(|e| invalid("edgert operators", e))?;
                }
                typed.optimize().map_err(|e| invalid("optimization", e))
            },
            cannot_run::tract_panic(&model.file, self.name(), "optimization"),
        )?;
        Ok(decluttered)
    }
}

/// `EDGERT_CPU_KERNELS`: `edgert` (or unset) or `tract`.
fn kernels_from_env() -> Result<CpuKernels, Unavailable> {
    match std::env::var("EDGERT_CPU_KERNELS").as_deref() {
        Err(_) | Ok("") | Ok("edgert") => Ok(CpuKernels::Edgert),
        Ok("tract") => Ok(CpuKernels::Tract),
        Ok(other) => Err(Unavailable::CpuKernels(other.into())),
    }
}
