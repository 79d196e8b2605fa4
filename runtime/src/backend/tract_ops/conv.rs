//! Dense 2-D convolutions with a shallow product (MobileNet's first one: 3 input channels × 3 × 3
//! taps into 32 channels): `Im2col` copies what each output reads at each tap into the rows of a
//! matrix, and a `PointwiseConv` multiplies it by the weights, with the bias, a ReLU or ReLU6 and
//! any quantization folded in as for a 1×1 convolution. tract ran MobileNetV2's first convolution
//! as a padding pass, its own im2col and product, 0.9 ms of 11 (benches/RESULTS.md).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::depthwise::{bias_per_channel, conv_parts, ConvParts};
use super::depthwise_kernel::PlaneGeometry;
use super::pointwise::PointwiseConv;

/// The deepest product taken (input channels × taps): deeper ones are tract's, whose lazy
/// im2col does not copy the input once per tap.
const MAX_DEPTH: usize = 64;

/// The largest im2col matrix made, in values (16 MiB): a board's memory is not spent on it.
const MAX_MATRIX: usize = 1 << 22;

/// For each image (channel-first planes) the im2col matrix: one row per input channel and tap
/// (channel-major, as OIHW weights are), one column per output position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Im2col {
    geometry: PlaneGeometry,
    output_shape: TVec<usize>,
    tap_offsets: Vec<usize>,
}

impl Op for Im2col {
    fn name(&self) -> StaticName {
        "EdgertIm2col".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let channels = self.output_shape[1] / self.tap_offsets.len();
        Ok(vec![format!("{channels} channels, {:?}", self.geometry)])
    }

    op_as_typed_op!();
}

impl EvalOp for Im2col {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let g = &self.geometry;
        let (plane_in, plane_out) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
        let view = inputs[0].try_as_plain_ram()?;
        let input = view.as_slice::<f32>()?;
        // SAFETY: `gather` writes every value below: one row of `plane_out` per plane and tap.
        let mut output = unsafe { Tensor::uninitialized::<f32>(&self.output_shape)? };
        let mut out = output.try_as_plain_ram_mut()?;
        let out = out.as_slice_mut::<f32>()?;
        let rows_per_plane = self.tap_offsets.len() * plane_out;
        ensure!(
            input.len() / plane_in == out.len() / rows_per_plane && input.len() % plane_in == 0,
            "input and output hold different plane counts"
        );
        // Zeroed once: `fill` leaves the padding as it is from one plane to the next.
        let mut scratch = vec![0.0; g.scratch_len()];
        for (plane, rows) in input.chunks_exact(plane_in).zip(out.chunks_exact_mut(rows_per_plane)) {
            g.fill(plane, clip::NONE, &mut scratch);
            for (&offset, row) in self.tap_offsets.iter().zip(rows.chunks_exact_mut(plane_out)) {
                g.gather(&scratch, offset, row);
            }
        }
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for Im2col {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    as_op!();
}

/// Replaces a dense (one group) f32 `Conv` with OIHW weights and a product at most `MAX_DEPTH`
/// deep, and the ReLU or ReLU6 right after it, by `Im2col` then `PointwiseConv`; leaves 1×1
/// convolutions (tract's EinSum, edgert's `pointwise::rule`) and any other to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    conv: &Conv,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(conv.group == 1 && conv.kernel_fmt == KernelFormat::OIHW);
    rule_if_some!(ConvParts { geometry, batch, output_shape, kernel, bias } = conv_parts(model, node, conv)?);
    let (cin, cout) = (conv.input_channels(), conv.output_channels());
    let [kh, kw] = geometry.kernel;
    let (depth, positions) = (cin * kh * kw, geometry.output[0] * geometry.output[1]);
    rule_if!(kh * kw > 1 && depth <= MAX_DEPTH && batch * depth * positions <= MAX_MATRIX);
    rule_if!(kernel.shape() == [cout, cin, kh, kw]);
    rule_if_some!(bias = bias_per_channel(bias, cout)?);
    let weights = kernel.try_as_plain_ram()?.as_slice::<f32>()?.to_vec();

    let (clip, last) = clip::after(model, node)?;
    let tap_offsets = geometry.tap_offsets();
    let im2col = Im2col { geometry, output_shape: tvec!(batch, depth, positions), tap_offsets };
    let product = PointwiseConv::channel_first(batch, positions, depth, weights, bias, clip, output_shape);
    let mut patch = TypedModelPatch::default();
    let input = patch.tap_model(model, node.inputs[0])?;
    let matrix = patch.wire_node(format!("{name}.im2col"), im2col, &[input])?[0];
    let output = patch.wire_node(name, product, &[matrix])?[0];
    patch.shunt_outside(model, last.into(), output)?;
    Ok(Some(patch))
}
