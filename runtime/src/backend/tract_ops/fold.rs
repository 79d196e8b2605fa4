//! Folding a `FakeQuantize`, a `QuantizeTable` or a SiLU into the edgert convolution before it.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::Silu;

use super::clip;
use super::depthwise::DepthwiseConv;
use super::fake_quantize::FakeQuantize;
use super::pointwise::PointwiseConv;
use super::quantize_table::QuantizeTable;

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
        rule_if_some!(conv = conv.then_quantized(op));
        Box::new(conv)
    } else if let Some(conv) = producer.op_as::<DepthwiseConv>() {
        Box::new(conv.then_quantized(op))
    } else {
        return Ok(None);
    };
    super::replacing(model, producer.inputs[0], name, folded, node.id.into())
}

/// Folds a SiLU (`x · sigmoid(x)`, which tract makes one `Silu`: YOLO's activation after every
/// convolution) into the edgert convolution that writes its input, when nothing else reads that
/// output: computed by the thread that made the values, while they are in cache, instead of in a
/// pass of its own on one thread.
pub fn fold_silu(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    op: &ElementWiseOp,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(op.0.is::<Silu>());
    let producer = model.node(node.inputs[0].node);
    rule_if!(clip::only_feeds(model, producer.id, node.id)?);
    rule_if_some!(folded = producer.op_as::<PointwiseConv>().and_then(PointwiseConv::then_silu));
    super::replacing(model, producer.inputs[0], name, folded, node.id.into())
}

/// Folds a `QuantizeTable` (an 8-bit activation) into the edgert 1×1 or dense convolution that
/// writes its input, when nothing else reads that output.
pub fn fold_table(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    op: &QuantizeTable,
) -> TractResult<Option<TypedModelPatch>> {
    let producer = model.node(node.inputs[0].node);
    rule_if!(clip::only_feeds(model, producer.id, node.id)?);
    rule_if_some!(folded = producer.op_as::<PointwiseConv>().and_then(|conv| conv.then_tabled(op)));
    super::replacing(model, producer.inputs[0], name, folded, node.id.into())
}
