//! edgert's operators against tract's own, on small graphs built here and on the shipped models:
//! what `rewrite` replaces, what it leaves, and that the outputs stay tract's.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, PaddingSpec, PoolSpec};
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_core::ops::quant::{quantize_linear_i8, quantize_linear_u8, DequantizeLinearF32};

use super::rewrite;
use crate::validate::compare::cosine;

pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 4001) as f32 / 1000.0 - 2.0
        })
        .collect()
}

pub(super) fn run(model: &TypedModel, input: &Tensor) -> Vec<Vec<f32>> {
    let plan = model.clone().into_optimized().unwrap().into_runnable().unwrap();
    let outputs = plan.run(tvec!(input.clone().into_tvalue())).unwrap();
    outputs.iter().map(|o| o.to_plain_array_view::<f32>().unwrap().iter().copied().collect()).collect()
}

pub(super) fn op_names(model: &TypedModel) -> Vec<String> {
    model.nodes().iter().map(|n| n.op.name().to_string()).collect()
}

pub(super) fn count(model: &TypedModel, name: &str) -> usize {
    op_names(model).iter().filter(|n| *n == name).count()
}

/// Runs `model` as tract does and rewritten, and requires the same outputs within `tolerance`
/// (relative); returns the rewritten model.
pub(super) fn rewritten_agrees(model: &TypedModel, input_shape: &[usize], tolerance: f32) -> TypedModel {
    rewritten_agrees_on(model, input_shape, tolerance, false)
}

/// `rewritten_agrees`, with INT8 QDQ convolutions on integer products where `integers`.
pub(super) fn rewritten_agrees_on(
    model: &TypedModel,
    input_shape: &[usize],
    tolerance: f32,
    integers: bool,
) -> TypedModel {
    let input = Tensor::from_shape(input_shape, &values(input_shape.iter().product(), 7)).unwrap();
    let mut ours = model.clone();
    rewrite(&mut ours, integers).unwrap();
    let (expected, got) = (run(model, &input), run(&ours, &input));
    assert_eq!(expected.len(), got.len());
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e.len(), g.len());
        for (i, (a, b)) in e.iter().zip(g).enumerate() {
            assert!((a - b).abs() <= tolerance * (1.0 + a.abs()), "output {i}: tract {a}, edgert {b}");
        }
    }
    ours
}

/// `f` on a pool of `threads` threads, as an inference with `--threads` runs.
pub(super) fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    match super::threads::pool(
        threads,
        crate::backend::Pinning::From(0),
        crate::backend::tract_model::inference_panic("test.onnx".as_ref()),
    )
    .unwrap()
    {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// MobileNet's ReLU6 as tract declutters it: Max 0, then Min 6.
pub(super) const RELU6: [(&str, f32); 2] = [("Max", 0.0), ("Min", 6.0)];

/// Each of `steps` (Max or Min against a constant) after `wire` in turn, as nodes `{name}{i}`;
/// the bounds have rank `rank`, as typed binary ops broadcast between tensors of one rank (as
/// decluttered ONNX has them).
pub(super) fn add_clip(
    model: &mut TypedModel,
    mut wire: OutletId,
    rank: usize,
    steps: &[(&str, f32)],
    name: &str,
) -> OutletId {
    for (i, &(op, bound)) in steps.iter().enumerate() {
        let bound = Tensor::from_shape(&vec![1; rank], &[bound]).unwrap();
        let bound = model.add_const(format!("{name}{i}.bound"), bound).unwrap();
        let op = if op == "Max" { math::max() } else { math::min() };
        wire = model.wire_node(format!("{name}{i}"), op, &[wire, bound]).unwrap()[0];
    }
    wire
}

struct Depthwise {
    format: DataFormat,
    input: Vec<usize>,
    kernel_fmt: KernelFormat,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    padding: PaddingSpec,
}

impl Depthwise {
    fn channels(&self) -> usize {
        self.input[self.format.shape(&self.input).unwrap().c_axis()]
    }

    /// Source → depthwise Conv, then each of `after` (Max or Min against a constant) in turn;
    /// the model's outputs are the last node's and `extra_outputs`' (by node name).
    fn model(&self, after: &[(&str, f32)], extra_outputs: &[&str]) -> TypedModel {
        self.clipped_model(&[], after, extra_outputs)
    }

    /// The same, with each of `before` (Max or Min against a constant) between the source and
    /// the convolution.
    fn clipped_model(
        &self,
        before: &[(&str, f32)],
        after: &[(&str, f32)],
        extra_outputs: &[&str],
    ) -> TypedModel {
        let c = self.channels();
        let [kh, kw] = self.kernel;
        let kernel_shape = match self.kernel_fmt {
            KernelFormat::OIHW => vec![c, 1, kh, kw],
            // tract's grouped HWIO and OHWI: I is every input channel, O one group's.
            KernelFormat::HWIO => vec![kh, kw, c, 1],
            KernelFormat::OHWI => vec![1, kh, kw, c],
        };
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact(&self.input)).unwrap();
        let x = add_clip(&mut model, x, self.input.len(), before, "before");
        let kernel = Tensor::from_shape(&kernel_shape, &values(c * kh * kw, 3)).unwrap();
        let kernel = model.add_const("kernel", kernel).unwrap();
        let bias = model.add_const("bias", Tensor::from_shape(&[c], &values(c, 5)).unwrap()).unwrap();
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: self.format,
                kernel_shape: tvec!(kh, kw),
                padding: self.padding.clone(),
                dilations: Some(self.dilations[..].into()),
                strides: Some(self.strides[..].into()),
                input_channels: c,
                output_channels: c,
            },
            kernel_fmt: self.kernel_fmt,
            group: c,
            q_params: None,
        };
        let wire = model.wire_node("conv", conv, &[x, kernel, bias]).unwrap()[0];
        let wire = add_clip(&mut model, wire, self.input.len(), after, "clip");
        let mut outputs = vec![wire];
        for name in extra_outputs {
            outputs.push(OutletId::new(model.node_by_name(name).unwrap().id, 0));
        }
        model.select_output_outlets(&outputs).unwrap();
        model
    }
}

fn mobilenet_like() -> Depthwise {
    Depthwise {
        format: DataFormat::NCHW,
        input: vec![2, 5, 9, 13],
        kernel_fmt: KernelFormat::OIHW,
        kernel: [3, 3],
        strides: [1, 1],
        dilations: [1, 1],
        padding: PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1)),
    }
}

#[test]
fn a_depthwise_conv_and_its_relu6_become_one_op() {
    let conv = mobilenet_like();
    let ours = rewritten_agrees(&conv.model(&RELU6, &[]), &conv.input, 1e-5);
    assert_eq!(count(&ours, "EdgertDepthwiseConv"), 1, "{:?}", op_names(&ours));
    assert_eq!(count(&ours, "Max") + count(&ours, "Min") + count(&ours, "Conv"), 0, "{:?}", op_names(&ours));
}

/// Split between threads by planes (channel-first: 3 threads take its 40 planes in blocks of 4)
/// or by output rows (channel-last: 8 images of 28).
#[test]
fn a_depthwise_conv_split_between_threads_matches_tract() {
    for format in [DataFormat::NCHW, DataFormat::NHWC] {
        let input = if format == DataFormat::NCHW { vec![8, 5, 28, 28] } else { vec![8, 28, 28, 24] };
        let conv = Depthwise { format, input, ..mobilenet_like() };
        let ours = on_threads(3, || rewritten_agrees(&conv.model(&RELU6, &[]), &conv.input, 1e-5));
        assert_eq!(count(&ours, "EdgertDepthwiseConv"), 1, "{:?}", op_names(&ours));
    }
}

/// A channel-first 2-D `Conv` (`group` groups, OIHW weights, a bias, stride `stride`, padding
/// that keeps the size at stride 1) of `input` into `cout` channels, then a ReLU6.
fn conv_relu6(
    model: &mut TypedModel,
    name: &str,
    input: OutletId,
    [cin, cout, group, kernel, stride]: [usize; 5],
) -> OutletId {
    let weights = Tensor::from_shape(
        &[cout, cin / group, kernel, kernel],
        &values(cout * cin / group * kernel * kernel, 3),
    );
    let wire = wire_conv(model, name, input, weights.unwrap(), [cin, cout, group, kernel, stride]);
    add_clip(model, wire, 4, &RELU6, &format!("{name}.relu6."))
}

/// A channel-first 2-D `Conv` (`group` groups, the OIHW `weights`, a bias, stride `stride`,
/// padding that keeps the size at stride 1) of `input` into `cout` channels.
pub(super) fn wire_conv(
    model: &mut TypedModel,
    name: &str,
    input: OutletId,
    weights: Tensor,
    [cin, cout, group, kernel, stride]: [usize; 5],
) -> OutletId {
    let weights = model.add_const(format!("{name}.weights"), weights).unwrap();
    let bias = model
        .add_const(format!("{name}.bias"), Tensor::from_shape(&[cout], &values(cout, 5)).unwrap())
        .unwrap();
    let pad = kernel / 2;
    let conv = Conv {
        pool_spec: PoolSpec {
            data_format: DataFormat::NCHW,
            kernel_shape: tvec!(kernel, kernel),
            padding: PaddingSpec::Explicit(tvec!(pad, pad), tvec!(pad, pad)),
            dilations: None,
            strides: Some(tvec!(stride, stride)),
            input_channels: cin,
            output_channels: cout,
        },
        kernel_fmt: KernelFormat::OIHW,
        group,
        q_params: None,
    };
    model.wire_node(name, conv, &[input, weights, bias]).unwrap()[0]
}

/// MobileNetV2's shape in small, channel-first as ONNX has it: a 1×1 convolution, then a
/// residual block (1×1 expansion to `wide` channels, depthwise 3×3, 1×1 projection, added to the
/// block's input), then a 1×1 convolution.
fn inverted_residual(wide: usize) -> TypedModel {
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact([1, 8, 12, 12])).unwrap();
    let first = conv_relu6(&mut model, "first", x, [8, 16, 1, 1, 1]);
    let expand = conv_relu6(&mut model, "expand", first, [16, wide, 1, 1, 1]);
    let dw = conv_relu6(&mut model, "dw", expand, [wide, wide, wide, 3, 1]);
    let project = conv_relu6(&mut model, "project", dw, [wide, 16, 1, 1, 1]);
    let sum = model.wire_node("add", math::add(), &[first, project]).unwrap()[0];
    let last = conv_relu6(&mut model, "last", sum, [16, 10, 1, 1, 1]);
    model.select_output_outlets(&[last]).unwrap();
    model.into_decluttered().unwrap()
}

/// `model`'s edgert depthwise convolutions: each one's name and whether it is channel-last.
fn depthwise_layouts(model: &TypedModel) -> Vec<(String, bool)> {
    let depthwise = model.nodes().iter().filter(|n| n.op.name() == "EdgertDepthwiseConv");
    depthwise.map(|n| (n.name.clone(), n.op.info().unwrap()[0].starts_with("channel-last"))).collect()
}

/// From 16 channels the depthwise convolution runs channel-last, and the 1×1 convolutions and
/// the residual addition around it follow, with the model's input and output as they were; below
/// 16 it stays channel-first. Either way every convolution is edgert's and the outputs tract's.
#[test]
fn depthwise_convolutions_of_16_channels_or_more_run_channel_last_within_the_model() {
    for (wide, channel_last) in [(24, true), (12, false)] {
        let model = inverted_residual(wide);
        let ours = rewritten_agrees(&model, &[1, 8, 12, 12], 1e-4);
        assert_eq!(depthwise_layouts(&ours), [("dw".to_string(), channel_last)], "{:?}", op_names(&ours));
        let pointwise = ours.nodes().iter().filter(|n| n.op.name() == "EdgertPointwiseConv");
        let first_to_first =
            pointwise.filter(|n| n.op.info().unwrap()[0].contains("channel-first → channel-first"));
        // Channel-last: the first makes its output so, the last takes it back, the block's
        // two and the addition are channel-last throughout.
        assert_eq!(first_to_first.count(), if channel_last { 0 } else { 4 }, "{ours}");
        assert_eq!(count(&ours, "EdgertPointwiseConv"), 4, "{:?}", op_names(&ours));
        assert_eq!(count(&ours, "EinSum") + count(&ours, "Conv"), 0, "{:?}", op_names(&ours));
        assert_eq!(ours.output_fact(0).unwrap().shape.as_concrete(), Some(&[1, 10, 12, 12][..]));
    }
}

/// Where its output goes to a depthwise convolution that runs channel-last, a dense convolution
/// writes it channel-last (as MobileNetV2's first one), a block of rows per thread and chunk by
/// chunk (27 deep × 35 wide: 69 rows a chunk, so 70 rows take two), over two images; the 1×1
/// convolution after the depthwise one makes 16 channels from channel-last data with the narrow
/// kernel (`pointwise_narrow`), and the last takes the channels back first for the model's output.
#[test]
fn a_dense_convolution_before_a_channel_last_depthwise_one_writes_channel_last() {
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact([2, 3, 140, 70])).unwrap();
    let first = conv_relu6(&mut model, "first", x, [3, 32, 1, 3, 2]);
    let dw = conv_relu6(&mut model, "dw", first, [32, 32, 32, 3, 1]);
    let project = conv_relu6(&mut model, "project", dw, [32, 16, 1, 1, 1]);
    let last = conv_relu6(&mut model, "last", project, [16, 10, 1, 1, 1]);
    model.select_output_outlets(&[last]).unwrap();
    let model = model.into_decluttered().unwrap();
    for threads in [1, 3] {
        let ours = on_threads(threads, || rewritten_agrees(&model, &[2, 3, 140, 70], 1e-4));
        assert_eq!(depthwise_layouts(&ours), [("dw".to_string(), true)], "{:?}", op_names(&ours));
        let layouts: Vec<(String, String)> = ours
            .nodes()
            .iter()
            .filter(|n| n.op.name() == "EdgertPointwiseConv")
            .map(|n| (n.name.clone(), n.op.info().unwrap()[0].clone()))
            .collect();
        let layout = |name: &str| &layouts.iter().find(|(n, _)| n.starts_with(name)).unwrap().1;
        assert!(layout("first").contains("over im2col, channel-first → channel-last"), "{layouts:?}");
        assert!(layout("project").contains("32 → 16 channels, channel-last → channel-last"), "{layouts:?}");
        assert!(layout("last").contains("channel-last → channel-first"), "{layouts:?}");
        assert_eq!(ours.output_fact(0).unwrap().shape.as_concrete(), Some(&[2, 10, 70, 35][..]));
    }
}

#[test]
fn strides_dilations_uneven_padding_and_other_layouts_match_tract() {
    let cases = [
        Depthwise {
            format: DataFormat::NCHW,
            input: vec![1, 4, 10, 11],
            kernel_fmt: KernelFormat::HWIO,
            kernel: [3, 5],
            strides: [2, 3],
            dilations: [1, 2],
            padding: PaddingSpec::Explicit(tvec!(0, 2), tvec!(1, 1)),
        },
        Depthwise {
            format: DataFormat::CHW,
            input: vec![6, 17, 15],
            kernel_fmt: KernelFormat::OHWI,
            kernel: [5, 5],
            strides: [2, 2],
            dilations: [1, 1],
            padding: PaddingSpec::SameUpper,
        },
        Depthwise {
            format: DataFormat::NCHW,
            input: vec![3, 3, 7, 40],
            kernel_fmt: KernelFormat::OIHW,
            kernel: [3, 3],
            strides: [1, 1],
            dilations: [2, 2],
            padding: PaddingSpec::Valid,
        },
        // Channel-last: 16-channel blocks and the channels left over, interior columns four at
        // a time and the border's one by one.
        Depthwise {
            format: DataFormat::NHWC,
            input: vec![2, 9, 14, 19],
            kernel_fmt: KernelFormat::HWIO,
            kernel: [3, 3],
            strides: [2, 1],
            dilations: [1, 1],
            padding: PaddingSpec::Explicit(tvec!(1, 0), tvec!(2, 1)),
        },
        Depthwise {
            format: DataFormat::HWC,
            input: vec![13, 12, 35],
            kernel_fmt: KernelFormat::OIHW,
            kernel: [5, 3],
            strides: [1, 2],
            dilations: [2, 1],
            padding: PaddingSpec::SameUpper,
        },
        Depthwise {
            format: DataFormat::NHWC,
            input: vec![1, 7, 7, 64],
            kernel_fmt: KernelFormat::OHWI,
            kernel: [3, 3],
            strides: [1, 1],
            dilations: [1, 1],
            padding: PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1)),
        },
    ];
    for conv in cases {
        let ours = rewritten_agrees(&conv.model(&[("Max", 0.0)], &[]), &conv.input, 1e-5);
        assert_eq!(op_names(&ours).iter().filter(|n| *n == "EdgertDepthwiseConv" || *n == "Conv").count(), 1);
        assert_eq!(count(&ours, "EdgertDepthwiseConv"), 1, "{:?}: {:?}", conv.input, op_names(&ours));
    }
}

#[test]
fn a_relu6_before_a_depthwise_conv_is_folded_into_it() {
    let conv = mobilenet_like();
    // The inputs reach ±2: the clip changes some.
    let ours =
        rewritten_agrees(&conv.clipped_model(&[("Max", 0.5), ("Min", 1.0)], &RELU6, &[]), &conv.input, 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertDepthwiseConv"]);
    // Strided, so the clip is applied on the padded row before it is dealt out to the phases.
    let strided = Depthwise { strides: [2, 3], ..mobilenet_like() };
    let ours = rewritten_agrees(&strided.clipped_model(&RELU6, &[], &[]), &strided.input, 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertDepthwiseConv"]);
    // Channel-last, the clip is applied to each value read.
    let last = Depthwise { format: DataFormat::NHWC, input: vec![2, 9, 13, 21], ..mobilenet_like() };
    let ours =
        rewritten_agrees(&last.clipped_model(&[("Max", 0.5), ("Min", 1.0)], &RELU6, &[]), &last.input, 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertDepthwiseConv"]);
}

#[test]
fn a_clip_is_not_folded_where_something_else_reads_the_values_before_it() {
    let conv = mobilenet_like();
    // The convolution's own output is also a model output: the Max must stay.
    let ours = rewritten_agrees(&conv.model(&RELU6, &["conv"]), &conv.input, 1e-5);
    assert_eq!(count(&ours, "EdgertDepthwiseConv"), 1);
    assert_eq!(count(&ours, "Max"), 1, "{:?}", op_names(&ours));
    // Min then Max is the same clip, folded too; bounds that cross (a Max above the Min) are not
    // a clip, and the second op stays tract's.
    let ours = rewritten_agrees(&conv.model(&[("Min", 6.0), ("Max", 0.0)], &[]), &conv.input, 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertDepthwiseConv"]);
    let ours = rewritten_agrees(&conv.model(&[("Max", 0.5), ("Min", 0.25)], &[]), &conv.input, 1e-5);
    assert_eq!(count(&ours, "Min"), 1, "{:?}", op_names(&ours));
}

/// Source (`input`, NCHW or NHWC) → a dense Conv of `out_channels` with OIHW weights, then
/// each of `after` (Max or Min against a constant).
pub(super) fn dense_conv(
    format: DataFormat,
    input: &[usize],
    out_channels: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    padding: PaddingSpec,
    after: &[(&str, f32)],
) -> TypedModel {
    let c = input[format.shape(input).unwrap().c_axis()];
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact(input)).unwrap();
    let taps = kernel[0] * kernel[1];
    let weights =
        Tensor::from_shape(&[out_channels, c, kernel[0], kernel[1]], &values(out_channels * c * taps, 3));
    let weights = model.add_const("kernel", weights.unwrap()).unwrap();
    let bias = Tensor::from_shape(&[out_channels], &values(out_channels, 5)).unwrap();
    let bias = model.add_const("bias", bias).unwrap();
    let conv = Conv {
        pool_spec: PoolSpec {
            data_format: format,
            kernel_shape: kernel[..].into(),
            padding,
            dilations: None,
            strides: Some(strides[..].into()),
            input_channels: c,
            output_channels: out_channels,
        },
        kernel_fmt: KernelFormat::OIHW,
        group: 1,
        q_params: None,
    };
    let wire = model.wire_node("conv", conv, &[x, weights, bias]).unwrap()[0];
    let wire = add_clip(&mut model, wire, input.len(), after, "clip");
    model.select_output_outlets(&[wire]).unwrap();
    model
}

#[test]
fn a_dense_convolution_and_its_relu6_become_a_product_over_im2col() {
    let same = |p: usize| PaddingSpec::Explicit(tvec!(p, p), tvec!(p, p));
    // MobileNet's first convolution, smaller; no padding; uneven padding, two images, 5 × 3; a
    // deep product (32 channels × 3 × 3).
    let cases = [
        ([1, 3, 17, 19], 8, [3, 3], [2, 2], same(1)),
        ([1, 2, 6, 6], 3, [3, 3], [1, 1], PaddingSpec::Valid),
        ([2, 4, 9, 11], 5, [5, 3], [1, 2], PaddingSpec::Explicit(tvec!(2, 0), tvec!(1, 2))),
        ([1, 32, 7, 6], 9, [3, 3], [1, 1], same(1)),
    ];
    for (input, out_channels, kernel, strides, padding) in cases {
        let model = dense_conv(DataFormat::NCHW, &input, out_channels, kernel, strides, padding, &RELU6);
        let ours = rewritten_agrees(&model, &input, 1e-5);
        assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{input:?}");
    }
    // Without a batch axis, as tract declutters a batch of one in YOLOv3-tiny.
    let model = dense_conv(DataFormat::CHW, &[6, 9, 8], 5, [3, 3], [1, 1], same(1), &RELU6);
    let ours = rewritten_agrees(&model, &[6, 9, 8], 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"]);
}

/// The im2col matrix is made a chunk of output rows at a time, within 64 Ki values, which the
/// threads claim: 144 deep × 64 wide takes 7 rows a chunk (19 chunks, the last short), 576 deep ×
/// 2048 wide one row (four), 27 deep × 160 wide (YOLO's first layer, smaller) 15 rows (two). With
/// fewer positions than output channels (36 for 128) the threads split the channels instead.
#[test]
fn a_convolution_whose_im2col_matrix_takes_several_chunks_matches_tract_on_any_threads() {
    let same = PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1));
    let cases = [([1, 16, 128, 64], 8), ([1, 64, 4, 2048], 2), ([1, 3, 20, 160], 16), ([1, 64, 6, 6], 128)];
    for (input, out_channels) in cases {
        let model = dense_conv(DataFormat::NCHW, &input, out_channels, [3, 3], [1, 1], same.clone(), &RELU6);
        for threads in [1, 2, 3] {
            let ours = on_threads(threads, || rewritten_agrees(&model, &input, 1e-4));
            assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{input:?} on {threads}");
        }
    }
}

#[test]
fn a_channel_last_dense_convolution_is_left_to_tract() {
    let same = PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1));
    let model = dense_conv(DataFormat::NHWC, &[1, 6, 6, 3], 4, [3, 3], [1, 1], same, &[]);
    let mut ours = model.clone();
    rewrite(&mut ours, false).unwrap();
    assert_eq!(op_names(&ours), op_names(&model));
}

/// Source → (`clip`: Max 0, Min 6) → QuantizeLinear (i8 or u8) read by `readers`
/// DequantizeLinear, each a model output.
fn quantize_model(
    unsigned: bool,
    zero_point: i32,
    readers: usize,
    also_output_quantized: bool,
) -> TypedModel {
    clipped_quantize_model(false, unsigned, zero_point, readers, also_output_quantized, &[4, 300])
}

fn clipped_quantize_model(
    clip: bool,
    unsigned: bool,
    zero_point: i32,
    readers: usize,
    also_output_quantized: bool,
    shape: &[usize],
) -> TypedModel {
    let scale = 0.0472_f32;
    let mut model = TypedModel::default();
    let mut x = model.add_source("x", f32::fact(shape)).unwrap();
    if clip {
        x = add_clip(&mut model, x, 2, &RELU6, "relu6");
    }
    let q = if unsigned {
        quantize_linear_u8(scale.recip(), zero_point as u8)
    } else {
        quantize_linear_i8(scale.recip(), zero_point as i8)
    };
    let q = model.wire_node("q", q, &[x]).unwrap()[0];
    let mut outputs = vec![];
    for i in 0..readers {
        outputs.push(
            model.wire_node(format!("dq{i}"), DequantizeLinearF32::new(scale, zero_point), &[q]).unwrap()[0],
        );
    }
    if also_output_quantized {
        outputs.push(q);
    }
    model.select_output_outlets(&outputs).unwrap();
    model
}

#[test]
fn quantize_dequantize_pairs_become_one_fake_quantize() {
    for (unsigned, zero_point) in [(false, 0), (false, -7), (true, 128)] {
        // Two readers of one QuantizeLinear share one FakeQuantize. tract multiplies by 1 / scale
        // where ONNX divides, so a value on a tie may land one step away: within a scale.
        let model = quantize_model(unsigned, zero_point, 2, false);
        let ours = rewritten_agrees(&model, &[4, 300], 0.0472);
        assert_eq!(count(&ours, "EdgertFakeQuantize"), 1, "{:?}", op_names(&ours));
        assert!(!op_names(&ours).iter().any(|n| n.contains("Quantize") && !n.starts_with("Edgert")));
        assert!(!op_names(&ours).iter().any(|n| n.contains("Dequantize")));
    }
}

/// Split between threads in rows of 4,096 values: 40,960 values, 10 rows, 3 threads.
#[test]
fn a_fake_quantize_split_between_threads_matches_tract() {
    let model = clipped_quantize_model(false, false, -7, 1, false, &[10, 4096]);
    let ours = on_threads(3, || rewritten_agrees(&model, &[10, 4096], 0.0472));
    assert_eq!(count(&ours, "EdgertFakeQuantize"), 1, "{:?}", op_names(&ours));
}

#[test]
fn a_relu6_before_a_quantize_dequantize_pair_is_folded_into_it() {
    let model = clipped_quantize_model(true, false, 0, 1, false, &[4, 300]);
    let ours = rewritten_agrees(&model, &[4, 300], 0.0472);
    assert_eq!(op_names(&ours), ["Source", "EdgertFakeQuantize"]);
    // Read by something else as well, the clipped values stay tract's to make.
    let mut model = clipped_quantize_model(true, false, 0, 1, false, &[4, 300]);
    // The clip's second step, its Min.
    let min = OutletId::new(model.node_by_name("relu61").unwrap().id, 0);
    let outputs = [model.output_outlets().unwrap().to_vec(), vec![min]].concat();
    model.select_output_outlets(&outputs).unwrap();
    let ours = rewritten_agrees(&model, &[4, 300], 0.0472);
    assert_eq!(count(&ours, "EdgertFakeQuantize"), 1);
    assert_eq!(count(&ours, "Max") + count(&ours, "Min"), 2, "{:?}", op_names(&ours));
}

#[test]
fn a_quantized_tensor_read_as_integers_is_left_to_tract() {
    let model = quantize_model(false, 0, 1, true);
    let mut ours = model.clone();
    rewrite(&mut ours, false).unwrap();
    assert_eq!(op_names(&ours), op_names(&model));
}

const PHOTOS: &[&str] = &[
    "astronaut.png",
    "bus.jpg",
    "chelsea.png",
    "coffee.png",
    "motorcycle_left.png",
    "page.png",
    "zidane.jpg",
];

/// A shipped model decluttered as the `cpu` backend loads it, and rewritten; and a pipeline that
/// preprocesses photos for it.
fn shipped(name: &str) -> (TypedModel, TypedModel, crate::pipeline::Pipeline) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let model = crate::model::Model::load(format!("{root}/models/{name}.toml").as_ref(), &Default::default())
        .unwrap();
    let plain = super::super::tract_model::decluttered(&model, &Default::default(), "cpu").unwrap().typed;
    let mut ours = plain.clone();
    // As the `cpu` backend does on this processor.
    rewrite(&mut ours, super::has_dot_product()).unwrap();
    let pipeline =
        crate::pipeline::Pipeline::open(model, super::super::select("cpu").unwrap(), Default::default());
    (plain, ours, pipeline.unwrap())
}

fn photo(pipeline: &crate::pipeline::Pipeline, name: &str) -> Tensor {
    let path = format!("{}/../models/images/{name}", env!("CARGO_MANIFEST_DIR"));
    let image = crate::capture::load_image(path.as_ref()).unwrap();
    let (input, _) = pipeline.preprocess(&[crate::pipeline::Sample::Image(&image)]).unwrap();
    Tensor::from_shape(&input.shape, &input.data).unwrap()
}

/// MobileNetV2 has 17 depthwise convolutions, all edgert's and channel-last: the first because
/// the model's first (dense) convolution writes its output so (on aarch64 tract itself lays that
/// convolution out channel-last, for its channel-inner kernel).
fn assert_takes_every_depthwise_conv(plain: &TypedModel, ours: &TypedModel) {
    let depthwise = plain.nodes().iter().filter_map(|n| n.op_as::<Conv>());
    assert_eq!(depthwise.filter(|c| c.group > 1 && c.group == c.input_channels()).count(), 17);
    let layouts = depthwise_layouts(ours);
    assert_eq!(layouts.len(), 17, "{:?}", op_names(ours));
    assert!(layouts.iter().all(|(_, last)| *last), "{layouts:?}");
    // And the convolutions around them follow, to the classifier: all but the first, which takes
    // the model's input channel-first (where it is edgert's).
    let not_channel_last: Vec<_> = ours
        .nodes()
        .iter()
        .filter(|n| n.op.name() == "EdgertPointwiseConv")
        .filter(|n| !n.op.info().unwrap()[0].contains("channel-last → channel-last"))
        .map(|n| n.name.as_str())
        .collect();
    let expected = if cfg!(target_arch = "x86_64") { 1 } else { not_channel_last.len().min(1) };
    assert!(
        not_channel_last.len() == expected && not_channel_last.iter().all(|n| n.starts_with("features.0")),
        "{not_channel_last:?}"
    );
}

/// MobileNetV2's 34 1×1 convolutions and its classifier, every matrix product with a constant,
/// and its first convolution (3 × 3 over 3 channels) where tract leaves that channel-first.
fn assert_takes_every_matrix_product(plain: &TypedModel, ours: &TypedModel) {
    let first = |model: &TypedModel| {
        let convs = model.nodes().iter().filter_map(|n| n.op_as::<Conv>());
        convs.filter(|c| c.group == 1 && !c.pool_spec.data_format.c_is_last()).count()
    };
    // Every one taken: each a product over its im2col matrix.
    let taken = first(plain);
    assert_eq!(first(ours), 0, "{:?}", op_names(ours));
    if cfg!(target_arch = "x86_64") {
        assert_eq!(taken, 1);
    }
    assert_eq!(count(ours, "EdgertPointwiseConv"), 35 + taken, "{:?}", op_names(ours));
    assert_eq!(count(ours, "EinSum"), 0, "{:?}", op_names(ours));
}

fn top1(values: &[f32]) -> usize {
    values.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0
}

#[test]
fn mobilenet_v2_runs_its_depthwise_and_1x1_convolutions_on_edgert_kernels_with_tracts_results() {
    let (plain, ours, pipeline) = shipped("mobilenetv2_fp32");
    assert_takes_every_depthwise_conv(&plain, &ours);
    assert_takes_every_matrix_product(&plain, &ours);
    for name in PHOTOS {
        let input = photo(&pipeline, name);
        let (tract, ours) = (run(&plain, &input).remove(0), run(&ours, &input).remove(0));
        let worst = tract.iter().zip(&ours).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-3, "{name}: largest difference {worst}");
        assert_eq!(top1(&tract), top1(&ours), "{name}");
    }
}

/// INT8 QDQ has no one right answer in float: its values sit on grids, so a convolution's sum
/// often lands on a rounding tie, where a sum added in another order (tract's kernel against
/// edgert's) rounds one step the other way, and the step travels (on MobileNetV2: one step after
/// the first depthwise convolution). So edgert's INT8 run is held to the accuracy that matters,
/// against the FP32 model, next to tract's own INT8 run: the mean cosine to FP32 over the photos
/// (measured on x86_64: 0.9506 against tract's 0.9501; per photo within 0.006). Top-1 against
/// FP32 is `tests/models.rs`'s.
#[test]
fn mobilenet_v2_int8_qdq_runs_its_quantize_dequantize_pairs_as_fake_quantize_as_accurately_as_tract() {
    let (plain, ours, pipeline) = shipped("mobilenetv2_int8_qdq");
    assert_takes_every_depthwise_conv(&plain, &ours);
    assert_takes_every_matrix_product(&plain, &ours);
    // Every activation's pair is edgert's: folded into the convolution before it where that is
    // edgert's and read by nothing else, or on its own; the head's, which tract makes a lookup
    // table of (QuantizeLinear, LookupTable, DequantizeLinear around the average pooling), one
    // `EdgertQuantizeTable` after the pooling's Mul.
    assert_eq!(count(&ours, "QuantizeLinearI8"), 0, "{:?}", op_names(&ours));
    assert_eq!(count(&ours, "DequantizeLinearF32"), 0, "{:?}", op_names(&ours));
    assert_eq!(count(&ours, "LookupTable"), 0, "{:?}", op_names(&ours));
    assert_eq!(count(&ours, "EdgertQuantizeTable"), 1, "{:?}", op_names(&ours));
    for node in ours.nodes().iter().filter(|n| n.op.name() == "EdgertFakeQuantize") {
        let producer = ours.node(node.inputs[0].node);
        let folds = ["EdgertPointwiseConv", "EdgertDepthwiseConv"].contains(&&*producer.op.name());
        assert!(!folds || producer.outputs[0].successors.len() > 1, "not folded after {producer}");
    }
    let (fp32, _, _) = shipped("mobilenetv2_fp32");
    let (mut theirs, mut mine) = (0.0, 0.0);
    for name in PHOTOS {
        let input = photo(&pipeline, name);
        let reference = run(&fp32, &input).remove(0);
        theirs += cosine(&reference, &run(&plain, &input).remove(0)) / PHOTOS.len() as f64;
        mine += cosine(&reference, &run(&ours, &input).remove(0)) / PHOTOS.len() as f64;
    }
    eprintln!("mean cosine to FP32: edgert's operators {mine:.4}, tract's {theirs:.4}");
    assert!(mine > theirs - 0.01, "mean cosine to FP32: edgert's operators {mine:.4}, tract's {theirs:.4}");
}
