//! `DepthwiseConv`: tract's depthwise f32 convolutions (one filter per channel), channel-first
//! (NCHW, CHW: edgert's plane kernel, `depthwise_kernel`) or channel-last (NHWC, HWC:
//! `depthwise_channel_last`), with a ReLU or ReLU6 on either side folded in. A channel-first one
//! of 16 channels or more asks tract to move its channels last (`suggested_axis_changes`), as
//! tract's own depthwise convolution does where it has a channel-inner kernel: the 1×1
//! convolutions around it follow (`channel_order`), and the channel-last kernel was the faster
//! on every such convolution of MobileNetV2 (benches/RESULTS.md, channels last).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::depthwise_channel_last::ChannelLast;
use super::depthwise_kernel::Filter;
use super::fake_quantize::FakeQuantize;
use super::int8_product::Grid;
use super::planes::{bias_per_channel, conv_parts, new_planes, transpose, ConvParts, PlaneGeometry};
use super::threads;

/// Channels from which a channel-first convolution asks to be channel-last: below, a pixel's
/// channels fill less than one AVX-512 vector.
const CHANNEL_LAST_FROM: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct DepthwiseConv {
    geometry: PlaneGeometry,
    output_shape: TVec<usize>,
    layout: Layout,
    bias: Vec<f32>,
    /// Bounds of a folded ReLU or ReLU6 before it (applied as each value is read) and after it;
    /// infinite without one.
    input_clip: (f32, f32),
    clip: (f32, f32),
    /// QuantizeLinear → DequantizeLinear pairs after it (with the clips between), folded in:
    /// applied to each plane or row last, in order.
    quantize: Vec<FakeQuantize>,
}

/// Where the channels are, and the weights laid out for that layout's kernel.
#[derive(Debug, Clone, PartialEq)]
enum Layout {
    /// Each channel a plane: taps channel-major (channels × kernel height × kernel width), and
    /// their offsets in a plane's scratch.
    ChannelFirst { kernel: Vec<f32>, tap_offsets: Vec<usize> },
    /// Each pixel its channels: taps tap-major (kernel height × kernel width × channels).
    ChannelLast { kernel: Vec<f32> },
}

// Weights are compared bit for bit; a NaN weight makes two ops unequal, which only costs tract a
// missed deduplication.
impl Eq for DepthwiseConv {}

impl Op for DepthwiseConv {
    fn name(&self) -> StaticName {
        "EdgertDepthwiseConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let layout = if self.channel_last() { "channel-last" } else { "channel-first" };
        let clips = format!("clips {:?} before, {:?} after", self.input_clip, self.clip);
        Ok(vec![format!("{layout}, {:?}, {clips}, {:?}", self.geometry, self.quantize)])
    }

    fn validation(&self) -> Validation {
        Validation::Rounding
    }

    op_as_typed_op!();
}

impl EvalOp for DepthwiseConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, mut inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = inputs.remove(0);
        match &self.layout {
            Layout::ChannelFirst { kernel, tap_offsets } => self.eval_planes(input, kernel, tap_offsets),
            Layout::ChannelLast { kernel } => self.eval_rows(input, kernel),
        }
    }
}

impl DepthwiseConv {
    fn channel_last(&self) -> bool {
        matches!(self.layout, Layout::ChannelLast { .. })
    }

    /// Channel-first: plane by plane.
    fn eval_planes(&self, input: TValue, kernel: &[f32], tap_offsets: &[usize]) -> TractResult<TVec<TValue>> {
        let g = &self.geometry;
        let (plane_in, plane_out) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
        let filter = |plane: usize| {
            let (channel, taps) = (plane % self.bias.len(), g.kernel[0] * g.kernel[1]);
            let kernel = &kernel[channel * taps..][..taps];
            Filter { kernel, taps: tap_offsets, bias: self.bias[channel], clip: self.clip }
        };
        if plane_in == plane_out {
            // A plane is in the scratch before its outputs are written, so they can take its
            // place: no output tensor to allocate (in place when nothing else reads the input).
            let mut tensor = input.into_tensor();
            let mut view = tensor.try_as_plain_ram_mut()?;
            self.planes(view.as_slice_mut::<f32>()?, |plane, out, scratch| {
                g.fill(out, self.input_clip, scratch);
                g.convolve(&filter(plane), scratch, out);
                self.quantize(out);
            })?;
            return Ok(tvec!(tensor.into_shape(&self.output_shape)?.into_tvalue()));
        }
        // Each plane is written by `convolve`.
        let output = new_planes(&input, &self.output_shape, [plane_in, plane_out], |input, out| {
            self.planes(out, |plane, out, scratch| {
                g.fill(&input[plane * plane_in..][..plane_in], self.input_clip, scratch);
                g.convolve(&filter(plane), scratch, out);
                self.quantize(out);
            })
        })?;
        Ok(tvec!(output.into_tvalue()))
    }

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

    /// Channel-last: output row by output row, split between the pool's threads as planes are.
    fn eval_rows(&self, input: TValue, kernel: &[f32]) -> TractResult<TVec<TValue>> {
        let g = &self.geometry;
        let c = self.bias.len();
        let (image_in, row_out) = (g.input[0] * g.input[1] * c, g.output[1] * c);
        let op = ChannelLast {
            geometry: g,
            kernel,
            bias: &self.bias,
            input_clip: self.input_clip,
            clip: self.clip,
        };
        let image_out = g.output[0] * row_out;
        let output = new_planes(&input, &self.output_shape, [image_in, image_out], |input, out| {
            let work = out.len() * g.kernel[0] * g.kernel[1];
            threads::on_rows(out, row_out, work, |first, rows| {
                let mut taps = Vec::new();
                for (i, row) in rows.chunks_exact_mut(row_out).enumerate() {
                    let (image, y) = ((first + i) / g.output[0], (first + i) % g.output[0]);
                    op.row(&input[image * image_in..][..image_in], y, &mut taps, row);
                    self.quantize(row);
                }
                Ok(())
            })
        })?;
        Ok(tvec!(output.into_tvalue()))
    }

    fn quantize(&self, values: &mut [f32]) {
        for quantize in &self.quantize {
            quantize.apply(values);
        }
    }

    /// The grid its outputs lie on: that of the fake-quantize step it ends with, if any.
    pub fn output_grid(&self) -> Option<Grid> {
        self.quantize.last()?.grid()
    }

    /// This convolution with `quantize` as its last step.
    pub fn then_quantized(&self, quantize: &FakeQuantize) -> DepthwiseConv {
        let mut op = self.clone();
        op.quantize.push(quantize.clone());
        op
    }

    /// The move of the channels' axis that swaps this convolution's layout, on its input and its
    /// output alike (both have its rank).
    fn swap(&self) -> AxisOp {
        let rank = self.output_shape.len();
        if self.channel_last() {
            AxisOp::Move(rank - 1, rank - 3)
        } else {
            AxisOp::Move(rank - 3, rank - 1)
        }
    }

    /// This convolution in the other layout.
    fn swapped(&self) -> TractResult<DepthwiseConv> {
        let mut output_shape = self.output_shape.clone();
        self.swap().change_shape_array(&mut output_shape, false)?;
        let c = self.bias.len();
        let taps = self.geometry.kernel[0] * self.geometry.kernel[1];
        let layout = match &self.layout {
            Layout::ChannelFirst { kernel, .. } => Layout::ChannelLast { kernel: transpose(kernel, c, taps) },
            Layout::ChannelLast { kernel } => Layout::ChannelFirst {
                kernel: transpose(kernel, taps, c),
                tap_offsets: self.geometry.tap_offsets(),
            },
        };
        Ok(DepthwiseConv { output_shape, layout, ..self.clone() })
    }
}

impl TypedOp for DepthwiseConv {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    fn suggested_axis_changes(&self) -> TractResult<TVec<(InOut, AxisOp)>> {
        if self.channel_last() || self.bias.len() < CHANNEL_LAST_FROM {
            return Ok(tvec!());
        }
        Ok(tvec!((InOut::In(0), self.swap())))
    }

    /// Takes the move of its channels' axis that swaps its layout, on its input or its output;
    /// blocks any other change.
    fn change_axes(
        &self,
        _model: &TypedModel,
        _node: &TypedNode,
        io: InOut,
        change: &AxisOp,
    ) -> TractResult<Option<AxisChangeConsequence>> {
        rule_if!(matches!(io, InOut::In(0) | InOut::Out(0)) && *change == self.swap());
        Ok(Some(AxisChangeConsequence {
            substitute_op: Some(Box::new(self.swapped()?)),
            wire_changes: tvec!((InOut::In(0), change.clone()), (InOut::Out(0), change.clone())),
        }))
    }

    as_op!();
}

/// Replaces a depthwise `Conv` the kernels handle, and the Max and Min of a ReLU or ReLU6 right
/// before and after it, by one `DepthwiseConv`; leaves any other convolution to tract.
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
    rule_if_some!(bias = bias_per_channel(bias, channels)?);
    // Channel-major, then tap-major for a channel-last convolution.
    let kernel = if tap_major { transpose(weights, taps, channels) } else { weights.to_vec() };
    let layout = if conv.pool_spec.data_format.c_is_last() {
        Layout::ChannelLast { kernel: transpose(&kernel, channels, taps) }
    } else {
        Layout::ChannelFirst { kernel, tap_offsets: geometry.tap_offsets() }
    };

    let (input_clip, input) = clip::before(model, node)?;
    let (clip, last) = clip::after(model, node)?;
    let op = DepthwiseConv {
        geometry,
        output_shape: output_shape.into(),
        layout,
        bias,
        input_clip,
        clip,
        quantize: vec![],
    };
    super::replacing(model, input, name, op, last.into())
}
