//! The `cpu` backend: tract-onnx on the host's cores (x86_64, or a Jetson's ARM cores).

use std::sync::Arc;

use tract_linalg::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::runtime::RunOptions;
use tract_onnx::tract_hir::internal::DimLike;

use super::{Backend, PrepareOptions, Prepared, Session};
use crate::error::one_line;
use crate::model::{onnx, Model};
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
            other => Err(format!("unknown precision '{other}'")),
        }
    }

    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let path = &model.onnx_path;
        onnx::check_operators(path, &model.proto, self.name())?;
        let invalid = |stage: &str, e: TractError| Error::InvalidModel {
            path: path.clone(),
            reason: format!("{stage}: {}", one_line(&e)),
        };
        let dir = path.parent().and_then(|d| d.to_str());
        let mut graph = onnx::framework().parse(&model.proto, dir).map_err(|e| invalid("parse", e))?.model;
        let input_index = graph
            .input_outlets()
            .map_err(|e| invalid("inputs", e))?
            .iter()
            .position(|o| graph.node(o.node).name == model.manifest.input.name)
            .unwrap_or(0);
        let shape = model.input_shape(options.batch);
        graph.set_input_fact(input_index, f32::fact(&shape).into()).map_err(|e| invalid("input shape", e))?;
        let typed = graph.into_optimized().map_err(|e| invalid("analysis", e))?;
        let outputs = typed
            .output_outlets()
            .map_err(|e| invalid("outputs", e))?
            .iter()
            .enumerate()
            .map(|(i, &o)| {
                let fact = typed.outlet_fact(o)?;
                // tract keeps the ONNX output order; its node names may differ from the tensor names.
                let onnx_name = model.outputs.get(i).map(|spec| spec.name.clone());
                Ok(TensorSpec {
                    name: onnx_name.unwrap_or_else(|| typed.node(o.node).name.clone()),
                    shape: fact.shape.iter().map(|d| d.to_usize().ok()).collect(),
                    dtype: format!("{:?}", fact.datum_type).to_lowercase(),
                })
            })
            .collect::<TractResult<Vec<_>>>()
            .map_err(|e| invalid("outputs", e))?;
        let executor = if options.threads > 1 { Some(Executor::multithread(options.threads)) } else { None };
        let run_options = RunOptions { executor, ..Default::default() };
        let plan = typed.into_runnable_with_options(&run_options).map_err(|e| invalid("plan", e))?;
        let input = TensorSpec {
            name: model.manifest.input.name.clone(),
            shape: shape.iter().map(|&d| Some(d)).collect(),
            dtype: "f32".into(),
        };
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
        if input.shape != self.expected {
            return Err(Error::Inference {
                path: self.path.clone(),
                reason: format!("input shape {:?}, plan compiled for {:?}", input.shape, self.expected),
            });
        }
        // tract wants its input owned: one copy, small next to the model's own run.
        let tensor = Tensor::from_shape(&input.shape, &input.data).map_err(failed)?;
        let outputs = self.state.run(tvec!(tensor.into_tvalue())).map_err(failed)?;
        outputs
            .iter()
            .map(|value| {
                let values = value.cast_to::<f32>()?;
                let view = values.to_plain_array_view::<f32>()?;
                Ok(HostTensor::new(view.shape().to_vec(), view.iter().copied().collect()))
            })
            .collect::<TractResult<Vec<_>>>()
            .map_err(failed)
    }
}
