//! Where a model's channels go, before edgert's operators replace tract's: last (NHWC) around
//! the depthwise and 1×1 convolutions, where both of edgert's kernels are the faster ones
//! (benches/RESULTS.md, channels last). The depthwise convolutions ask for it themselves
//! (`DepthwiseConv::suggested_axis_changes`), and tract's own pass grants it where every
//! operator it reaches can follow; a 1×1 convolution (still tract's EinSum here) takes either
//! layout on either side, so each whose data is then channel-last is asked to make its output
//! channel-last too, which the additions of residual blocks and the next convolutions follow:
//! gemm's kernels read channel-last data in order for a channel-last output, and would gather it
//! for a channel-first one. Operators that cannot follow stop a change: edgert's max pooling, and
//! its dense convolutions on their input side (already swapped in; their output takes the move,
//! `PointwiseConv::change_axes`); a change that would reach the model's inputs or outputs is not
//! made.

use std::collections::HashSet;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::AxisChange;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::optim::change_axes::change_axes;

use super::pointwise;

/// Moves the channels last where the operators allow, as above.
pub fn channels_last(model: &mut TypedModel) -> TractResult<()> {
    model.declutter()?;
    let mut tried = HashSet::new();
    while let Some(patch) = next_output_change(model, &mut tried)? {
        patch.apply(model)?;
    }
    Ok(())
}

/// The change that makes the next 1×1 convolution's output channel-last, not tried before.
fn next_output_change(
    model: &TypedModel,
    tried: &mut HashSet<String>,
) -> TractResult<Option<TypedModelPatch>> {
    let mut interfaces = model.output_outlets()?.to_vec();
    interfaces.extend(model.input_outlets()?);
    for node in model.nodes() {
        let Some(einsum) = node.op_as::<EinSum>() else { continue };
        let Some(op) = pointwise::channel_last_output(model, node, einsum)? else { continue };
        if !tried.insert(node.name.clone()) {
            continue;
        }
        let change = AxisChange { outlet: node.id.into(), op };
        if let Some((patch, _)) = change_axes(model, &change, &interfaces, &[], &mut HashSet::new())? {
            return Ok(Some(patch));
        }
    }
    Ok(None)
}
