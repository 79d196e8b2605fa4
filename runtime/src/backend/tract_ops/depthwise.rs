//! `DepthwiseConv`: tract's depthwise f32 convolutions over channel-first planes (NCHW or CHW,
//! one filter per channel), run by edgert's kernel (`depthwise_kernel`), with a ReLU or ReLU6
//! that follows folded in.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::depthwise_kernel::Filter;
use super::fake_quantize::FakeQuantize;
use super::planes::{bias_per_channel, conv_parts, new_planes, ConvParts, PlaneGeometry};
use super::threads;

#[derive(Debug, Clone, PartialEq)]
pub struct DepthwiseConv {
    geometry: PlaneGeometry,
    output_shape: TVec<usize>,
    /// Taps of each channel, row-major: channels × kernel height × kernel width.
    kernel: Vec<f32>,
    bias: Vec<f32>,
    /// Bounds of a folded ReLU or ReLU6 before it (applied as each plane is read) and after it;
    /// infinite without one.
    input_clip: (f32, f32),
    clip: (f32, f32),
    /// QuantizeLinear → DequantizeLinear pairs after it (with the clips between), folded in:
    /// applied to each plane last, in order.
    quantize: Vec<FakeQuantize>,
    tap_offsets: Vec<usize>,
}

// Weights are compared bit for bit; a NaN weight makes two ops unequal, which only costs tract a
// missed deduplication.
impl Eq for DepthwiseConv {}

impl Op for DepthwiseConv {
    fn name(&self) -> StaticName {
        "EdgertDepthwiseConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let clips = format!("clips {:?} before, {:?} after", self.input_clip, self.clip);
        Ok(vec![format!("{:?}, {clips}, {:?}", self.geometry, self.quantize)])
    }

    fn validation(&self) -> Validation {
        Validation::Rounding
    }

    op_as_typed_op!();
}

impl EvalOp for DepthwiseConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, mut inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let g = &self.geometry;
        let (plane_in, plane_out) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
        let input = inputs.remove(0);
        if plane_in == plane_out {
            // A plane is in the scratch before its outputs are written, so they can take its
            // place: no output tensor to allocate (in place when nothing else reads the input).
            let mut tensor = input.into_tensor();
            let mut view = tensor.try_as_plain_ram_mut()?;
            self.planes(view.as_slice_mut::<f32>()?, |plane, out, scratch| {
                g.fill(out, self.input_clip, scratch);
                self.convolve(plane, scratch, out)
            })?;
            return Ok(tvec!(tensor.into_shape(&self.output_shape)?.into_tvalue()));
        }
        // Each plane is written by `convolve`.
        let output = new_planes(&input, &self.output_shape, [plane_in, plane_out], |input, out| {
            self.planes(out, |plane, out, scratch| {
                g.fill(&input[plane * plane_in..][..plane_in], self.input_clip, scratch);
                self.convolve(plane, scratch, out)
            })
        })?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl DepthwiseConv {
    /// Calls `each(plane index, its output, scratch)` for every output plane, split between
    /// the pool's threads when the inference runs on one (`--threads`).
    fn planes(
        &self,
        out: &mut [f32],
        each: impl Fn(usize, &mut [f32], &mut [f32]) + Send + Sync,
    ) -> TractResult<()> {
        let g = &self.geometry;
        let plane_out = g.output[0] * g.output[1];
        let cost = out.len() * g.kernel[0] * g.kernel[1];
        threads::on_rows(out, plane_out, cost, |first, planes| {
            let mut scratch = vec![0.0; g.scratch_len()];
            for (i, out) in planes.chunks_exact_mut(plane_out).enumerate() {
                each(first + i, out, &mut scratch);
            }
            Ok(())
        })
    }

    /// Convolves the plane `plane` (batch item × channels + channel) that is in `scratch`.
    fn convolve(&self, plane: usize, scratch: &mut [f32], out: &mut [f32]) {
        let taps = self.geometry.kernel[0] * self.geometry.kernel[1];
        let channel = plane % self.bias.len();
        let kernel = &self.kernel[channel * taps..][..taps];
        let filter = Filter { kernel, taps: &self.tap_offsets, bias: self.bias[channel], clip: self.clip };
        self.geometry.convolve(&filter, scratch, out);
        for quantize in &self.quantize {
            quantize.apply(out);
        }
    }

    /// This convolution with `quantize` as its last step.
    pub fn then_quantized(&self, quantize: &FakeQuantize) -> DepthwiseConv {
        let mut op = self.clone();
        op.quantize.push(quantize.clone());
        op
    }
}

impl TypedOp for DepthwiseConv {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    as_op!();
}

/// Replaces a depthwise `Conv` the kernel handles, and the Max and Min of a ReLU or ReLU6 right
/// after it, by one `DepthwiseConv`; leaves any other convolution to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    conv: &Conv,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(conv.group > 1 && conv.group == conv.input_channels() && conv.group == conv.output_channels());
    rule_if_some!(ConvParts { geometry, output_shape, kernel, bias, .. } = conv_parts(model, node, conv)?);
    let channels = conv.group;
    let [kh, kw] = geometry.kernel;
    let taps = kh * kw;
    // With groups, tract's I is every input channel in HWIO and OHWI and one group's in OIHW, and
    // its O one group's in HWIO and OHWI: OIHW is channel-major, the other two tap-major.
    let (expected, tap_major) = match conv.kernel_fmt {
        KernelFormat::OIHW => ([channels, 1, kh, kw], false),
        KernelFormat::HWIO => ([kh, kw, channels, 1], true),
        KernelFormat::OHWI => ([1, kh, kw, channels], true),
    };
    rule_if!(kernel.shape() == expected);
    let weights = kernel.try_as_plain_ram()?;
    let weights = weights.as_slice::<f32>()?;
    let kernel = if tap_major {
        (0..channels * taps).map(|i| weights[(i % taps) * channels + i / taps]).collect()
    } else {
        weights.to_vec()
    };
    rule_if_some!(bias = bias_per_channel(bias, channels)?);

    let (input_clip, input) = clip::before(model, node)?;
    let (clip, last) = clip::after(model, node)?;
    let tap_offsets = geometry.tap_offsets();
    let op = DepthwiseConv {
        geometry,
        output_shape: output_shape.into(),
        kernel,
        bias,
        input_clip,
        clip,
        quantize: vec![],
        tap_offsets,
    };
    let mut patch = TypedModelPatch::default();
    let input = patch.tap_model(model, input)?;
    let output = patch.wire_node(name, op, &[input])?[0];
    patch.shunt_outside(model, last.into(), output)?;
    Ok(Some(patch))
}
