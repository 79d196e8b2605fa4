//! What tract accepts in a graph and ONNX forbids, where tract's answer would be silently wrong
//! rather than an error: checked on the analysed graph, each refused as a model the backend
//! cannot run.

use std::path::Path;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::Topk;
use tract_onnx::tract_hir::internal::DimLike;

use super::cannot_run;
use crate::Error;

/// Refuses the first node of `typed` that ONNX forbids and tract would run.
pub fn check(path: &Path, backend: &str, typed: &TypedModel) -> Result<(), Error> {
    for node in typed.nodes() {
        if let Some(reason) = topk_beyond_its_axis(typed, node) {
            return Err(cannot_run::cannot_run(
                path,
                backend,
                format!("node '{}' (TopK): {reason}", node.name),
            ));
        }
    }
    Ok(())
}

/// A TopK asking for more values than its axis holds (or fewer than none): ONNX Runtime refuses
/// it, tract pads the answer with zeros.
fn topk_beyond_its_axis(typed: &TypedModel, node: &TypedNode) -> Option<String> {
    let topk = node.op_as::<Topk>()?;
    let (input, k) = (typed.outlet_fact(node.inputs[0]).ok()?, typed.outlet_fact(*node.inputs.get(1)?).ok()?);
    let k = k.konst.as_ref()?.cast_to_scalar::<i64>().ok()?;
    let length = input.shape.get(topk.axis)?.to_usize().ok()?;
    let axis = topk.axis;
    match usize::try_from(k) {
        Ok(k) if k <= length => None,
        _ => Some(format!("k is {k}, and its axis {axis} holds {length} values (ONNX allows 0 to {length})")),
    }
}
