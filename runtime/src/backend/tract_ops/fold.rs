//! Folding a `FakeQuantize` into the edgert convolution before it.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

use super::clip;
use super::depthwise::DepthwiseConv;
use super::fake_quantize::FakeQuantize;
use super::pointwise::PointwiseConv;

/// Folds a `FakeQuantize` into the edgert convolution that writes its input, when nothing else
/// reads that output: the values are quantized while they are still in cache, not in a pass of
/// their own over the whole tensor.
pub fn fold_into_convolution(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    op: &FakeQuantize,
) -> TractResult<Option<TypedModelPatch>> {
    let producer = model.node(node.inputs[0].node);
    rule_if!(clip::only_feeds(model, producer.id, node.id)?);
    let folded: Box<dyn TypedOp> = if let Some(conv) = producer.op_as::<PointwiseConv>() {
        Box::new(conv.then_quantized(op))
    } else if let Some(conv) = producer.op_as::<DepthwiseConv>() {
        Box::new(conv.then_quantized(op))
    } else {
        return Ok(None);
    };
    super::replacing(model, producer.inputs[0], name, folded, node.id.into())
}
