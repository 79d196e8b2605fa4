//! edgert's own tract operators for the `cpu` backend, where tract's are slow on the models edge
//! users run: depthwise convolutions (MobileNet's half of the time), 1×1 convolutions (a matrix
//! product each), dense convolutions with a shallow product (a network's first) and the
//! QuantizeLinear → DequantizeLinear pairs of INT8 QDQ models, each with the ReLU, ReLU6 or SiLU
//! next to it folded in; max pooling (YOLO's downsampling); and softmaxes over an inner axis (YOLOv8's
//! box decoding). Products tract's declutter split over a concatenation are joined again
//! (`concat_product`).
//! `rewrite` swaps them into a decluttered model before tract optimizes it, moving the channels
//! last around the depthwise and 1×1 convolutions on the way (`channel_order`); anything they do
//! not cover stays tract's.

mod channel_order;
mod clip;
mod concat_product;
mod conv;
mod depthwise;
mod depthwise_channel_last;
mod depthwise_kernel;
mod fake_quantize;
mod finish;
mod fold;
mod im2col;
mod int8_product;
#[cfg(test)]
mod int8_tests;
mod maxpool;
pub(crate) mod pin;
mod planes;
mod pointwise;
mod pointwise_narrow;
#[cfg(test)]
mod pointwise_tests;
mod quantize_table;
mod softmax;
#[cfg(test)]
pub(super) mod tests;
pub mod threads;

pub use int8_product::has_dot_product;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::model::Rewriter;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::cnn::{Conv, MaxPool};
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::Softmax;

/// Replaces what edgert's operators cover in a decluttered model; with `integers`, puts the
/// convolutions of INT8 QDQ models on integer products (`int8_product::has_dot_product` says
/// where they are faster).
pub fn rewrite(model: &mut TypedModel, integers: bool) -> TractResult<()> {
    Rewriter::<()>::default()
        .with_rule_for::<Conv>("edgert-depthwise", depthwise::rule)
        .with_rule_for::<Conv>("edgert-conv", conv::rule)
        .with_rule_for::<MaxPool>("edgert-maxpool", maxpool::rule)
        .with_rule_for::<Softmax>("edgert-softmax", softmax::rule)
        .rewrite(&(), model)?;
    channel_order::channels_last(model)?;
    // After `channels_last`, whose declutter would split them again.
    Rewriter::<()>::default()
        .with_rule_for::<TypedBinOp>("edgert-concat-product", concat_product::rule)
        .rewrite(&(), model)?;
    Rewriter::<()>::default()
        .with_rule_for::<EinSum>("edgert-pointwise", pointwise::rule)
        .with_rule_for::<ElementWiseOp>("edgert-fake-quantize", fake_quantize::rule)
        .with_rule_for::<ElementWiseOp>("edgert-fold-silu", fold::fold_silu)
        .with_rule_for::<ElementWiseOp>("edgert-quantize-table", quantize_table::rule)
        .with_rule_for::<quantize_table::QuantizeTable>("edgert-fold-quantize-table", fold::fold_table)
        .with_rule_for::<fake_quantize::FakeQuantize>(
            "edgert-fold-fake-quantize",
            fold::fold_into_convolution,
        )
        .rewrite(&(), model)?;
    // After the folds, which decide where the fake-quantize steps end up.
    if integers {
        Rewriter::<()>::default()
            .with_rule_for::<pointwise::PointwiseConv>("edgert-onto-integers", fold::onto_integers)
            .rewrite(&(), model)?;
    }
    Ok(())
}

/// The patch that feeds `input` through `op`, named `name`, in place of what `replaced` gave.
fn replacing(
    model: &TypedModel,
    input: OutletId,
    name: &str,
    op: impl Into<Box<dyn TypedOp>>,
    replaced: OutletId,
) -> TractResult<Option<TypedModelPatch>> {
    let mut patch = TypedModelPatch::default();
    let input = patch.tap_model(model, input)?;
    let output = patch.wire_node(name, op, &[input])?[0];
    patch.shunt_outside(model, replaced, output)?;
    Ok(Some(patch))
}
