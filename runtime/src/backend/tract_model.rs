//! A model as tract's typed graph at one batch size, with its input and output specs, and the
//! conversions between `HostTensor` and tract's tensors: what the `cpu` and `cuda` backends share.

use std::path::Path;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::DimLike;

use crate::error::one_line;
use crate::model::{onnx, Model};
use crate::tensor::{HostTensor, TensorSpec};
use crate::{Error, Result};

pub struct TractModel {
    /// Decluttered, not yet optimized for a runtime.
    pub typed: TypedModel,
    pub input: TensorSpec,
    pub outputs: Vec<TensorSpec>,
}

/// A tract failure while loading `path`, at `stage`.
pub fn invalid(path: &Path, stage: &str, e: TractError) -> Error {
    Error::InvalidModel { path: path.to_owned(), reason: format!("{stage}: {}", one_line(&e)) }
}

/// Parses the model, pins its input to `batch` and declutters it.
pub fn decluttered(model: &Model, batch: usize, backend: &str) -> Result<TractModel> {
    let path = &model.onnx_path;
    let proto = model.onnx(&format!("the {backend} backend"))?;
    onnx::check_operators(path, proto, backend)?;
    let invalid = |stage: &str, e: TractError| invalid(path, stage, e);
    let dir = path.parent().and_then(|d| d.to_str());
    let mut graph = onnx::framework().parse(proto, dir).map_err(|e| invalid("parse", e))?.model;
    let input_index = graph
        .input_outlets()
        .map_err(|e| invalid("inputs", e))?
        .iter()
        .position(|o| graph.node(o.node).name == model.manifest.input.name)
        .unwrap_or(0);
    let shape = model.input_shape(batch);
    graph.set_input_fact(input_index, f32::fact(&shape).into()).map_err(|e| invalid("input shape", e))?;
    let typed = graph.into_typed().and_then(|t| t.into_decluttered()).map_err(|e| invalid("analysis", e))?;
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
    let input = TensorSpec {
        name: model.manifest.input.name.clone(),
        shape: shape.iter().map(|&d| Some(d)).collect(),
        dtype: "f32".into(),
    };
    Ok(TractModel { typed, input, outputs })
}

/// The input as tract wants it: owned, so one copy (small next to the model's own run).
pub fn to_tract(input: &HostTensor) -> TractResult<TValue> {
    Ok(Tensor::from_shape(&input.shape, &input.data)?.into_tvalue())
}

/// tract's outputs as f32 host tensors.
pub fn to_host(outputs: &[TValue]) -> TractResult<Vec<HostTensor>> {
    outputs
        .iter()
        .map(|value| {
            let values = value.cast_to::<f32>()?;
            let view = values.to_plain_array_view::<f32>()?;
            Ok(HostTensor::new(view.shape().to_vec(), view.iter().copied().collect()))
        })
        .collect()
}

/// The error of a session whose input does not have the shape its plan was made for.
pub fn check_shape(path: &Path, input: &HostTensor, expected: &[usize]) -> Result<()> {
    if input.shape != expected {
        return Err(Error::Inference {
            path: path.to_owned(),
            reason: format!("input shape {:?}, plan compiled for {expected:?}", input.shape),
        });
    }
    Ok(())
}
