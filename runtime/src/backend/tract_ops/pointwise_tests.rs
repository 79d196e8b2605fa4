//! `PointwiseConv` against tract's own EinSum, on 1×1 convolutions and fully connected layers
//! built here and decluttered as the `cpu` backend does.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::TypedConcat;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, PaddingSpec, PoolSpec};
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_core::ops::quant::{quantize_linear_i8, DequantizeLinearF32};

use super::tests::{add_clip, count, on_threads, op_names, rewritten_agrees, values, RELU6};

/// Source → 1×1 Conv (one group, with a bias) → ReLU6 when `relu6`, decluttered.
fn conv_1x1(
    format: DataFormat,
    input: &[usize],
    kernel_fmt: KernelFormat,
    cout: usize,
    relu6: bool,
) -> TypedModel {
    conv_1x1_quantized(format, input, kernel_fmt, cout, relu6, 0)
}

/// The same, then `pairs` QuantizeLinear → DequantizeLinear pairs (i8, scale `SCALE`), a ReLU6
/// between each two.
fn conv_1x1_quantized(
    format: DataFormat,
    input: &[usize],
    kernel_fmt: KernelFormat,
    cout: usize,
    relu6: bool,
    pairs: usize,
) -> TypedModel {
    let shape = format.shape(input).unwrap();
    let (cin, rank) = (*shape.c(), shape.hw_rank());
    let kernel_shape: Vec<usize> = match kernel_fmt {
        KernelFormat::OIHW => [cout, cin].into_iter().chain(vec![1; rank]).collect(),
        KernelFormat::HWIO => vec![1; rank].into_iter().chain([cin, cout]).collect(),
        KernelFormat::OHWI => [cout].into_iter().chain(vec![1; rank]).chain([cin]).collect(),
    };
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact(input)).unwrap();
    let kernel = Tensor::from_shape(&kernel_shape, &values(cin * cout, 3)).unwrap();
    let kernel = model.add_const("kernel", kernel).unwrap();
    let bias = model.add_const("bias", Tensor::from_shape(&[cout], &values(cout, 5)).unwrap()).unwrap();
    let conv = Conv {
        pool_spec: PoolSpec {
            data_format: format,
            kernel_shape: vec![1; rank].into(),
            padding: PaddingSpec::Valid,
            dilations: None,
            strides: None,
            input_channels: cin,
            output_channels: cout,
        },
        kernel_fmt,
        group: 1,
        q_params: None,
    };
    let mut wire = model.wire_node("conv", conv, &[x, kernel, bias]).unwrap()[0];
    if relu6 {
        wire = add_clip(&mut model, wire, input.len(), &RELU6, "relu6");
    }
    for i in 0..pairs {
        if i > 0 {
            wire = add_clip(&mut model, wire, input.len(), &RELU6, &format!("relu6.{i}."));
        }
        wire = model.wire_node(format!("q{i}"), quantize_linear_i8(SCALE.recip(), 0), &[wire]).unwrap()[0];
        wire = model.wire_node(format!("dq{i}"), DequantizeLinearF32::new(SCALE, 0), &[wire]).unwrap()[0];
    }
    model.select_output_outlets(&[wire]).unwrap();
    model.into_decluttered().unwrap()
}

const SCALE: f32 = 0.0472;

#[test]
fn a_1x1_convolution_its_bias_and_relu6_become_one_op() {
    let input = [2, 6, 5, 7];
    let model = conv_1x1(DataFormat::NCHW, &input, KernelFormat::OIHW, 10, true);
    assert_eq!(count(&model, "EinSum"), 1, "{:?}", op_names(&model));
    let ours = rewritten_agrees(&model, &input, 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"]);
}

/// Values on the INT8 grid may land one step apart where the sums, added in another order, sit
/// on a rounding boundary: the tolerance is one step.
#[test]
fn quantize_dequantize_pairs_after_a_1x1_convolution_are_folded_into_it() {
    let input = [1, 8, 6, 5];
    for pairs in [1, 2] {
        let model = conv_1x1_quantized(DataFormat::NCHW, &input, KernelFormat::OIHW, 12, true, pairs);
        let ours = rewritten_agrees(&model, &input, SCALE);
        assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{pairs} pairs");
    }
}

#[test]
fn channel_last_and_channel_first_layouts_and_every_kernel_format_match_tract() {
    let cases = [
        (DataFormat::NHWC, vec![2, 5, 7, 6], KernelFormat::HWIO),
        (DataFormat::NHWC, vec![1, 4, 4, 3], KernelFormat::OHWI),
        (DataFormat::HWC, vec![9, 3, 20], KernelFormat::OIHW),
        (DataFormat::CHW, vec![20, 9, 3], KernelFormat::HWIO),
        (DataFormat::NCHW, vec![3, 7, 1, 1], KernelFormat::OHWI),
    ];
    for (format, input, kernel_fmt) in cases {
        for relu6 in [false, true] {
            let model = conv_1x1(format, &input, kernel_fmt, 11, relu6);
            let ours = rewritten_agrees(&model, &input, 1e-5);
            let what = format!("{format:?} {input:?} {kernel_fmt:?}: {:?}", op_names(&ours));
            assert_eq!(count(&ours, "EdgertPointwiseConv"), 1, "{what}");
            assert_eq!(count(&ours, "EinSum") + count(&ours, "Add") + count(&ours, "Max"), 0, "{what}");
        }
    }
}

/// Source (batch × features) → EinSum with a constant (out × features) matrix → + bias, as
/// tract declutters an ONNX Gemm with transB.
fn fully_connected(extra_output: bool) -> TypedModel {
    fully_connected_of(3, 40, 15, extra_output)
}

fn fully_connected_of(batch: usize, features: usize, out: usize, extra_output: bool) -> TypedModel {
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact([batch, features])).unwrap();
    let weights = Tensor::from_shape(&[out, features], &values(out * features, 3)).unwrap();
    let weights = model.add_const("weights", weights).unwrap();
    let einsum = EinSum::new("mk,nk->mn".parse().unwrap(), f32::datum_type());
    let product = model.wire_node("fc", einsum, &[x, weights]).unwrap()[0];
    let bias = model.add_const("bias", Tensor::from_shape(&[1, out], &values(out, 5)).unwrap()).unwrap();
    let sum = model.wire_node("add_bias", math::add(), &[product, bias]).unwrap()[0];
    let outputs = if extra_output { vec![sum, product] } else { vec![sum] };
    model.select_output_outlets(&outputs).unwrap();
    model
}

#[test]
fn a_fully_connected_layer_and_its_bias_become_one_op() {
    let ours = rewritten_agrees(&fully_connected(false), &[3, 40], 1e-5);
    assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"]);
}

/// A classifier's head: one vector, so its output channels are what the threads split (1.28 M
/// multiply-adds, above the threshold; 1000 channels in uneven blocks of 336, 336 and 328).
#[test]
fn a_fully_connected_layer_on_one_vector_splits_its_outputs_between_threads() {
    let model = fully_connected_of(1, 1280, 1000, false);
    for threads in [1, 3] {
        let ours = on_threads(threads, || rewritten_agrees(&model, &[1, 1280], 1e-4));
        assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{threads} threads");
    }
}

#[test]
fn a_bias_is_not_folded_where_something_else_reads_the_product() {
    let ours = rewritten_agrees(&fully_connected(true), &[3, 40], 1e-5);
    assert_eq!(count(&ours, "EdgertPointwiseConv"), 1, "{:?}", op_names(&ours));
    assert_eq!(count(&ours, "Add"), 1, "{:?}", op_names(&ours));
}

#[test]
fn a_product_of_two_activations_is_left_to_tract() {
    let mut model = TypedModel::default();
    let a = model.add_source("a", f32::fact([4, 6])).unwrap();
    let b = model.add_source("b", f32::fact([5, 6])).unwrap();
    let einsum = EinSum::new("mk,nk->mn".parse().unwrap(), f32::datum_type());
    let y = model.wire_node("product", einsum, &[a, b]).unwrap();
    model.select_output_outlets(&y).unwrap();
    let mut ours = model.clone();
    super::rewrite(&mut ours, false).unwrap();
    assert_eq!(op_names(&ours), op_names(&model));
}

/// On a pool of threads (`--threads`) each thread takes a block of rows: output
/// channels (channel-first) or positions (channel-last), here in uneven blocks.
#[test]
fn products_split_between_threads_match_tract() {
    let cases = [
        (DataFormat::NCHW, vec![2, 64, 24, 24], KernelFormat::OIHW),
        (DataFormat::NHWC, vec![2, 24, 24, 64], KernelFormat::HWIO),
    ];
    for (format, input, kernel_fmt) in cases {
        let model = conv_1x1_quantized(format, &input, kernel_fmt, 40, true, 1);
        let ours = on_threads(3, || rewritten_agrees(&model, &input, SCALE));
        assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{format:?}");
    }
}

/// tract on aarch64 lays some 1×1 convolutions out to switch between channel-first and
/// channel-last: EinSums like "IHW,OI->HWO". Each with its bias (along the output channels) and
/// a ReLU6, on one thread and on three (the first two large enough to be split).
#[test]
fn products_that_switch_between_channel_first_and_channel_last_match_tract() {
    let (cin, cout) = (64, 16);
    let cases: [(&str, &[usize], &[usize]); 4] = [
        ("IHW,OI->HWO", &[cin, 24, 30], &[1, 1, cout]),
        ("HWI,OI->OHW", &[24, 30, cin], &[cout, 1, 1]),
        ("NIHW,OI->NHWO", &[2, cin, 3, 4], &[1, 1, 1, cout]),
        ("NHWI,IO->NOHW", &[2, 3, 4, cin], &[1, cout, 1, 1]),
    ];
    for (expr, input, bias_shape) in cases {
        let model = einsum_model(expr, input, bias_shape, cin, cout);
        for threads in [1, 3] {
            let ours = on_threads(threads, || rewritten_agrees(&model, input, 1e-5));
            assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{expr}, {threads} threads");
        }
    }
}

/// Products over more positions than one chunk of the scratch a channel-last to channel-first
/// product goes through, into 20 output channels (a 16-channel block and 4 more, as it finishes
/// them), and the same product in the other layouts.
#[test]
fn products_of_several_chunks_match_tract() {
    let (cin, cout) = (8, 20);
    let cases: [(&str, &[usize], &[usize]); 4] = [
        ("IHW,OI->OHW", &[cin, 60, 61], &[cout, 1, 1]),
        ("IHW,OI->HWO", &[cin, 60, 61], &[1, 1, cout]),
        ("HWI,OI->OHW", &[60, 61, cin], &[cout, 1, 1]),
        ("HWI,IO->HWO", &[60, 61, cin], &[1, 1, cout]),
    ];
    for (expr, input, bias_shape) in cases {
        let model = einsum_model(expr, input, bias_shape, cin, cout);
        let ours = rewritten_agrees(&model, input, 1e-5);
        assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{expr}");
    }
}

/// Source (`input`) → EinSum `expr` with a constant weight matrix (OI or IO, as `expr` says)
/// → + bias (`bias_shape`) → ReLU6.
fn einsum_model(expr: &str, input: &[usize], bias_shape: &[usize], cin: usize, cout: usize) -> TypedModel {
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact(input)).unwrap();
    let weights_shape = if expr.contains(",OI") { [cout, cin] } else { [cin, cout] };
    let weights = Tensor::from_shape(&weights_shape, &values(cin * cout, 3)).unwrap();
    let weights = model.add_const("weights", weights).unwrap();
    let einsum = EinSum::new(expr.parse().unwrap(), f32::datum_type());
    let product = model.wire_node("product", einsum, &[x, weights]).unwrap()[0];
    let bias = model.add_const("bias", Tensor::from_shape(bias_shape, &values(cout, 5)).unwrap()).unwrap();
    let sum = model.wire_node("add_bias", math::add(), &[product, bias]).unwrap()[0];
    let y = add_clip(&mut model, sum, input.len(), &RELU6, "relu6");
    model.select_output_outlets(&[y]).unwrap();
    model
}

/// `model` with a SiLU after its output as ONNX writes it (x · Sigmoid(x), which tract makes one
/// `Silu`), then `pairs` QuantizeLinear → DequantizeLinear pairs, decluttered.
fn then_silu(mut model: TypedModel, pairs: usize) -> TypedModel {
    let x = model.output_outlets().unwrap()[0];
    let sigmoid = model.wire_node("sigmoid", tract_onnx::tract_core::ops::nn::sigmoid(), &[x]).unwrap()[0];
    let mut wire = model.wire_node("mul", math::mul(), &[x, sigmoid]).unwrap()[0];
    for i in 0..pairs {
        wire = model.wire_node(format!("q{i}"), quantize_linear_i8(SCALE.recip(), 0), &[wire]).unwrap()[0];
        wire = model.wire_node(format!("dq{i}"), DequantizeLinearF32::new(SCALE, 0), &[wire]).unwrap()[0];
    }
    model.select_output_outlets(&[wire]).unwrap();
    model.into_decluttered().unwrap()
}

/// YOLO's activation, folded into the 1×1 and dense convolutions before it (then quantized, as
/// in an INT8 QDQ export), on one thread and on two.
#[test]
fn a_silu_after_a_convolution_is_folded_into_it() {
    let same = PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1));
    let dense = super::tests::dense_conv(DataFormat::NCHW, &[1, 8, 20, 24], 16, [3, 3], [1, 1], same, &[]);
    let pointwise = conv_1x1(DataFormat::NCHW, &[1, 16, 20, 24], KernelFormat::OIHW, 24, false);
    let cases = [
        (then_silu(dense.clone(), 0), [1, 8, 20, 24], 1e-5),
        (then_silu(pointwise.clone(), 0), [1, 16, 20, 24], 1e-5),
        (then_silu(dense, 1), [1, 8, 20, 24], SCALE),
        (then_silu(pointwise, 1), [1, 16, 20, 24], SCALE),
    ];
    for (i, (model, input, tolerance)) in cases.iter().enumerate() {
        assert_eq!(count(model, "Silu"), 1, "case {i}: {:?}", op_names(model));
        for threads in [1, 2] {
            let ours = on_threads(threads, || rewritten_agrees(model, input, *tolerance));
            assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "case {i}, {threads} threads");
        }
    }
}

/// A SiLU whose input something else reads too stays tract's: the convolution's output is needed
/// as it is.
#[test]
fn a_silu_is_not_folded_where_something_else_reads_the_convolution() {
    let mut model = conv_1x1(DataFormat::NCHW, &[1, 16, 20, 24], KernelFormat::OIHW, 24, false);
    let conv = model.output_outlets().unwrap()[0];
    let model = {
        let silu =
            model.wire_node("silu", tract_onnx::tract_core::ops::nn::silu::silu(), &[conv]).unwrap()[0];
        model.select_output_outlets(&[silu, conv]).unwrap();
        model
    };
    let ours = rewritten_agrees(&model, &[1, 16, 20, 24], 1e-5);
    assert_eq!(count(&ours, "Silu"), 1, "{:?}", op_names(&ours));
}

/// Channel-first 1×1 convolutions split between threads by positions (more positions than
/// output channels) and by output channels (fewer), on one, two and three threads.
#[test]
fn channel_first_products_split_by_columns_or_by_channels_match_tract() {
    for (input, cout) in [([1, 16, 40, 30], 24), ([1, 256, 5, 5], 300)] {
        let model = conv_1x1(DataFormat::NCHW, &input, KernelFormat::OIHW, cout, false);
        for threads in [1, 2, 3] {
            let ours = on_threads(threads, || rewritten_agrees(&model, &input, 1e-4));
            assert_eq!(op_names(&ours), ["Source", "EdgertPointwiseConv"], "{input:?} on {threads}");
            let info = ours.nodes()[1].op.info().unwrap().join(" ");
            assert!(info.contains("channel-first → channel-first"), "{info}");
        }
    }
}

/// `model`'s output through an INT8 QDQ model's 8-bit LeakyReLU: QuantizeLinear → DequantizeLinear
/// → LeakyReLU → QuantizeLinear → DequantizeLinear (`signed`: i8, else u8 with a zero point),
/// decluttered, which tract makes QuantizeLinear → LookupTable → DequantizeLinear.
fn then_leaky_relu_8bit(mut model: TypedModel, signed: bool) -> TypedModel {
    use tract_onnx::tract_core::ops::quant::quantize_linear_u8;
    let mut wire = model.output_outlets().unwrap()[0];
    let (first, second) = (SCALE, SCALE * 0.7);
    let quantize = |scale: f32| match signed {
        true => quantize_linear_i8(scale.recip(), 0),
        false => quantize_linear_u8(scale.recip(), 100),
    };
    let zero_point = if signed { 0 } else { 100 };
    wire = model.wire_node("q0", quantize(first), &[wire]).unwrap()[0];
    wire = model.wire_node("dq0", DequantizeLinearF32::new(first, zero_point), &[wire]).unwrap()[0];
    wire = model.wire_node("leaky", tract_onnx::tract_core::ops::nn::leaky_relu(0.1), &[wire]).unwrap()[0];
    wire = model.wire_node("q1", quantize(second), &[wire]).unwrap()[0];
    wire = model.wire_node("dq1", DequantizeLinearF32::new(second, zero_point), &[wire]).unwrap()[0];
    model.select_output_outlets(&[wire]).unwrap();
    model.into_decluttered().unwrap()
}

/// YOLOv3-tiny INT8's activation, folded into the convolution before it (1×1 and dense, i8 and
/// u8), and as an op of its own where the convolution's output is read elsewhere too. Within one
/// step of the output's grid, as for Q/DQ pairs.
#[test]
fn an_8bit_activation_after_a_convolution_is_one_table_folded_into_it() {
    let same = PaddingSpec::Explicit(tvec!(1, 1), tvec!(1, 1));
    let dense = super::tests::dense_conv(DataFormat::NCHW, &[1, 8, 20, 24], 16, [3, 3], [1, 1], same, &[]);
    let pointwise = conv_1x1(DataFormat::NCHW, &[1, 16, 20, 24], KernelFormat::OIHW, 24, false);
    for signed in [true, false] {
        for (model, input) in [(dense.clone(), [1, 8, 20, 24]), (pointwise.clone(), [1, 16, 20, 24])] {
            let model = then_leaky_relu_8bit(model, signed);
            assert_eq!(count(&model, "LookupTable"), 1, "{:?}", op_names(&model));
            for threads in [1, 2] {
                let ours = on_threads(threads, || rewritten_agrees(&model, &input, SCALE));
                assert_eq!(
                    op_names(&ours),
                    ["Source", "EdgertPointwiseConv"],
                    "signed {signed}, {threads} threads"
                );
            }
        }
    }
    // The convolution's output also a model output: the table stays an op of its own.
    let mut model = then_leaky_relu_8bit(pointwise, true);
    let conv = model.nodes().iter().find(|n| n.op.name() == "EinSum").unwrap().id;
    let outputs = [model.output_outlets().unwrap()[0], conv.into()];
    model.select_output_outlets(&outputs).unwrap();
    let ours = rewritten_agrees(&model, &[1, 16, 20, 24], SCALE);
    assert_eq!(count(&ours, "EdgertQuantizeTable"), 1, "{:?}", op_names(&ours));
}

/// x → a 1×1 convolution (`cin` → 6) and a ReLU6 of x, the three concatenated along the
/// channels, a 1×1 convolution over that (→ 10, with a bias) and a SiLU: a YOLOv8 C2f block's
/// end, which tract's declutter splits into one product per concatenated input.
fn convolution_over_a_concat(format: DataFormat, input: &[usize]) -> TypedModel {
    let shape = format.shape(input).unwrap();
    let (cin, axis) = (*shape.c(), shape.c_axis());
    let mut model = conv_1x1(format, input, KernelFormat::OIHW, 6, false);
    let x = model.input_outlets().unwrap()[0];
    let branch = model.output_outlets().unwrap()[0];
    let clipped = add_clip(&mut model, x, input.len(), &RELU6, "relu6");
    let concat = TypedConcat { axis };
    let joined = model.wire_node("concat", concat, &[x, branch, clipped]).unwrap()[0];
    let (joined_c, cout) = (2 * cin + 6, 10);
    let kernel = Tensor::from_shape(&[cout, joined_c, 1, 1], &values(joined_c * cout, 11)).unwrap();
    let kernel = model.add_const("kernel2", kernel).unwrap();
    let bias = model.add_const("bias2", Tensor::from_shape(&[cout], &values(cout, 13)).unwrap()).unwrap();
    let conv = Conv {
        pool_spec: PoolSpec {
            data_format: format,
            kernel_shape: tvec!(1, 1),
            padding: PaddingSpec::Valid,
            dilations: None,
            strides: None,
            input_channels: joined_c,
            output_channels: cout,
        },
        kernel_fmt: KernelFormat::OIHW,
        group: 1,
        q_params: None,
    };
    let out = model.wire_node("conv2", conv, &[joined, kernel, bias]).unwrap()[0];
    model.select_output_outlets(&[out]).unwrap();
    then_silu(model, 0)
}

/// The products tract split apart over a concatenation are one 1×1 convolution again, with its
/// bias and SiLU, in either layout and on one thread or two.
#[test]
fn a_convolution_over_a_concatenation_is_one_product_with_tracts_results() {
    for (format, input) in [(DataFormat::NCHW, [1, 8, 12, 10]), (DataFormat::NHWC, [1, 12, 10, 8])] {
        let model = convolution_over_a_concat(format, &input);
        // What tract's declutter made of it: one product per concatenated input, added up.
        assert_eq!(count(&model, "EinSum"), 4, "{format:?}: {:?}", op_names(&model));
        for threads in [1, 2] {
            let ours = on_threads(threads, || rewritten_agrees(&model, &input, 1e-5));
            let names = op_names(&ours);
            assert_eq!(count(&ours, "EdgertPointwiseConv"), 2, "{format:?}, {threads} threads: {names:?}");
            assert_eq!(count(&ours, "Add"), 0, "{format:?}, {threads} threads: {names:?}");
            assert_eq!(count(&ours, "Silu"), 0, "{format:?}, {threads} threads: {names:?}");
        }
    }
}

/// Products summed where one of them is read elsewhere too stay as tract made them.
#[test]
fn products_over_a_concatenation_stay_apart_where_one_is_read_elsewhere() {
    let input = [1, 8, 12, 10];
    let mut model = convolution_over_a_concat(DataFormat::NCHW, &input);
    let product =
        model.nodes().iter().find(|n| n.op_is::<EinSum>() && n.name.contains("concat-einsum")).unwrap().id;
    let mut outputs = model.output_outlets().unwrap().to_vec();
    outputs.push(product.into());
    model.select_output_outlets(&outputs).unwrap();
    let ours = rewritten_agrees(&model, &input, 1e-5);
    assert!(count(&ours, "Add") >= 1, "{:?}", op_names(&ours));
}
