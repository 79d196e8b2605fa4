//! Folding a `FakeQuantize`, a `QuantizeTable` or a SiLU into the edgert convolution before it,
//! and a convolution onto integers where its input is a fake-quantize step's output.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::Silu;

use super::clip;
use super::depthwise::DepthwiseConv;
use super::fake_quantize::FakeQuantize;
use super::int8_product::Grid;
use super::maxpool::MaxPool;
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

/// Puts a 1×1 or dense convolution on integers (`PointwiseConv::on_integers`) where its input is
/// the output of a fake-quantize step or an 8-bit activation, on its own or folded into the
/// convolution before, max pooled or not: the values are then integers times that step's scale.
pub fn onto_integers(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    _: &str,
    op: &PointwiseConv,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if_some!(grid = input_grid(model, node.inputs[0]));
    rule_if_some!(integer = op.on_integers(grid));
    Ok(Some(TypedModelPatch::replace_single_op(model, node, &node.inputs, integer)?))
}

/// The grid the values at `outlet` lie on, where the last step that made them is a fake-quantize
/// one or an 8-bit activation (a max pooling picks values, so it keeps their grid).
fn input_grid(model: &TypedModel, outlet: OutletId) -> Option<Grid> {
    let producer = model.node(outlet.node);
    if let Some(op) = producer.op_as::<FakeQuantize>() {
        op.grid()
    } else if let Some(op) = producer.op_as::<QuantizeTable>() {
        op.grid()
    } else if let Some(op) = producer.op_as::<PointwiseConv>() {
        op.output_grid()
    } else if let Some(op) = producer.op_as::<DepthwiseConv>() {
        op.output_grid()
    } else if producer.op_is::<MaxPool>() {
        input_grid(model, producer.inputs[0])
    } else {
        None
    }
}
