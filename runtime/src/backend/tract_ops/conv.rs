//! Dense 2-D convolutions (3×3 and larger, one group, channel-first input): run as a
//! `PointwiseConv` over an im2col matrix (`im2col::Im2col`), built band by band of output rows,
//! writing channel-first or, where the next operator asks, channel-last; the bias, a ReLU or
//! ReLU6 and any quantization are folded in as for a 1×1 convolution. Faster than tract's own
//! on YOLOv3-tiny's 3×3 convolutions (benches/RESULTS.md).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};

use super::clip;
use super::im2col::Im2col;
use super::planes::{bias_per_channel, conv_parts, ConvParts};
use super::pointwise::PointwiseConv;

/// Replaces a dense (one group) f32 `Conv` with OIHW weights and the ReLU or ReLU6 right after
/// it by a `PointwiseConv` over its `Im2col`; leaves 1×1 convolutions (tract's EinSum, edgert's
/// `pointwise::rule`) and any other to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    conv: &Conv,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(conv.group == 1 && conv.kernel_fmt == KernelFormat::OIHW);
    rule_if!(!conv.pool_spec.data_format.c_is_last());
    rule_if_some!(ConvParts { geometry, batch, output_shape, kernel, bias } = conv_parts(model, node, conv)?);
    let (cin, cout) = (conv.input_channels(), conv.output_channels());
    let [kh, kw] = geometry.kernel;
    rule_if!(kh * kw > 1 && kernel.shape() == [cout, cin, kh, kw]);
    rule_if_some!(bias = bias_per_channel(bias, cout)?);
    let weights = kernel.try_as_plain_ram()?.as_slice::<f32>()?.to_vec();

    let (clip, last) = clip::after(model, node)?;
    let im2col = Im2col::new(geometry, cin);
    let product = PointwiseConv::over_im2col(batch, im2col, weights, bias, clip, output_shape);
    super::replacing(model, node.inputs[0], name, product, last.into())
}
