//! INT8 QDQ convolutions on integer products against tract's own f32 ones, on graphs built here
//! as an INT8 QDQ model declutters: a fake-quantized input, weights that are integers times a
//! scale per output channel.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::{MaxPool, PaddingSpec, PoolSpec};
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_core::ops::quant::{quantize_linear_i8, quantize_linear_u8, DequantizeLinearF32};

use super::tests::{on_threads, rewritten_agrees_on, values, wire_conv};

/// The input's grid: its scale, and zero points for i8 and u8.
const SCALE: f32 = 0.0213;

/// The output's grid, where the graph ends in a quantize-dequantize pair.
const OUT_SCALE: f32 = 0.05;

/// Weights `cout` × `cin` × `kernel`², integers in ±127 (each channel reaching 127) times a scale
/// per output channel, as a dequantized INT8 QDQ constant; one of them moved off that grid unless
/// `on_grid`.
fn grid_weights(cout: usize, cin: usize, kernel: usize, on_grid: bool) -> Tensor {
    let depth = cin * kernel * kernel;
    let values = values(cout * depth, 3);
    let weights: Vec<f32> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let q = if i % depth == 0 { 127.0 } else { (v * 63.0).round() };
            q * 0.004 * (1 + i / depth % 5) as f32
        })
        .collect();
    let mut weights = weights;
    if !on_grid {
        weights[1] *= 1.01;
    }
    Tensor::from_shape(&[cout, cin, kernel, kernel], &weights).unwrap()
}

/// Source → QuantizeLinear → DequantizeLinear where `input_grid` says (u8 where its first is
/// true, else i8; its zero point) →
/// a `kernel` × `kernel` convolution (stride `stride`, padded to keep the size at stride 1) with
/// `grid_weights` and a bias → a quantize-dequantize pair where `quantized_output`; decluttered.
fn quantized_conv(
    input: &[usize],
    cout: usize,
    kernel: usize,
    stride: usize,
    input_grid: Option<(bool, i32)>,
    quantized_output: bool,
    weights_on_grid: bool,
) -> TypedModel {
    let cin = input[1];
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact(input)).unwrap();
    let mut wire = x;
    if let Some((unsigned, zero_point)) = input_grid {
        let quantize = match unsigned {
            true => quantize_linear_u8(SCALE.recip(), zero_point as u8),
            false => quantize_linear_i8(SCALE.recip(), zero_point as i8),
        };
        let q = model.wire_node("q", quantize, &[x]).unwrap()[0];
        wire = model.wire_node("dq", DequantizeLinearF32::new(SCALE, zero_point), &[q]).unwrap()[0];
    }
    let weights = grid_weights(cout, cin, kernel, weights_on_grid);
    wire = wire_conv(&mut model, "conv", wire, weights, [cin, cout, 1, kernel, stride]);
    if quantized_output {
        wire = model.wire_node("q_out", quantize_linear_i8(OUT_SCALE.recip(), 3), &[wire]).unwrap()[0];
        wire = model.wire_node("dq_out", DequantizeLinearF32::new(OUT_SCALE, 3), &[wire]).unwrap()[0];
    }
    model.select_output_outlets(&[wire]).unwrap();
    model.into_decluttered().unwrap()
}

/// The convolutions of `model` that run on integer products, and all of edgert's.
fn on_integers(model: &TypedModel) -> (usize, usize) {
    let convs: Vec<String> = model
        .nodes()
        .iter()
        .filter(|n| n.op.name() == "EdgertPointwiseConv")
        .map(|n| n.op.info().unwrap().join(" "))
        .collect();
    (convs.iter().filter(|info| info.contains("on integers")).count(), convs.len())
}

/// The integer sums are exact where tract's f32 ones round: the products match tract's to f32
/// rounding, for 1×1 and 3×3 convolutions, strided, with signed and unsigned inputs around any
/// zero point, on one thread and two (chunks of columns split between them).
#[test]
fn integer_products_match_tracts_f32_ones() {
    let cases = [
        ([1, 16, 20, 24], 24, 1, 1, Some((false, 0))),
        ([1, 3, 33, 31], 16, 3, 2, Some((true, 128))),
        ([1, 12, 17, 9], 9, 3, 1, Some((false, -37))),
        ([2, 40, 12, 12], 32, 3, 2, Some((true, 0))),
        ([1, 64, 40, 40], 64, 1, 1, Some((true, 255))),
    ];
    for (input, cout, kernel, stride, zero_point) in cases {
        let model = quantized_conv(&input, cout, kernel, stride, zero_point, false, true);
        for threads in [1, 2] {
            let ours = on_threads(threads, || rewritten_agrees_on(&model, &input, 1e-5, true));
            assert_eq!(on_integers(&ours), (1, 1), "{input:?} {zero_point:?} on {threads}");
        }
        let floats = rewritten_agrees_on(&model, &input, 1e-5, false);
        assert_eq!(on_integers(&floats), (0, 1), "without integers, {input:?}");
    }
}

/// With the output quantized again (folded into the convolution), values land on the output's
/// grid, where an exact sum and a rounded one may sit either side of a rounding tie: one step.
#[test]
fn a_quantized_convolution_on_integers_lands_on_tracts_grid() {
    let input = [1, 8, 14, 14];
    let model = quantized_conv(&input, 16, 3, 1, Some((false, 5)), true, true);
    let ours = rewritten_agrees_on(&model, &input, OUT_SCALE, true);
    assert_eq!(on_integers(&ours), (1, 1));
}

/// Weights off any grid (an f32 model's), or an input that is not a fake-quantize step's output,
/// keep their f32 products.
#[test]
fn convolutions_without_integer_operands_stay_f32() {
    let input = [1, 4, 10, 10];
    let off_grid = quantized_conv(&input, 8, 3, 1, Some((false, 0)), false, false);
    let ours = rewritten_agrees_on(&off_grid, &input, 1e-5, true);
    assert_eq!(on_integers(&ours), (0, 1), "weights off the grid");
    let model = quantized_conv(&input, 8, 3, 1, None, false, true);
    let ours = rewritten_agrees_on(&model, &input, 1e-5, true);
    assert_eq!(on_integers(&ours), (0, 1), "an f32 input");
}

/// YOLOv3-tiny INT8's way: a convolution, its 8-bit LeakyReLU (QuantizeLinear → DequantizeLinear
/// → LeakyReLU → QuantizeLinear → DequantizeLinear, which tract makes a table), a max pooling,
/// then a convolution: the second takes its integers from the table's grid, through the pooling.
/// The first's exact sums may land a level away from tract's at a rounding tie, and the second
/// carries that step: a tolerance of a few steps, where a wrong grid would be off by far more.
#[test]
fn a_convolution_after_an_8bit_activation_and_a_max_pooling_is_on_integers_too() {
    let input = [1, 8, 16, 16];
    for (signed, zero_point) in [(true, -3), (false, 100)] {
        let mut model = quantized_conv(&input, 16, 3, 1, Some((false, 0)), false, true);
        let mut wire = model.output_outlets().unwrap()[0];
        let (first, second) = (0.06, 0.04);
        let quantize = |scale: f32| match signed {
            true => quantize_linear_i8(scale.recip(), zero_point as i8),
            false => quantize_linear_u8(scale.recip(), zero_point as u8),
        };
        wire = model.wire_node("q0", quantize(first), &[wire]).unwrap()[0];
        wire = model.wire_node("dq0", DequantizeLinearF32::new(first, zero_point), &[wire]).unwrap()[0];
        wire =
            model.wire_node("leaky", tract_onnx::tract_core::ops::nn::leaky_relu(0.1), &[wire]).unwrap()[0];
        wire = model.wire_node("q1", quantize(second), &[wire]).unwrap()[0];
        wire = model.wire_node("dq1", DequantizeLinearF32::new(second, zero_point), &[wire]).unwrap()[0];
        let pool = PoolSpec {
            data_format: DataFormat::NCHW,
            kernel_shape: tvec!(2, 2),
            padding: PaddingSpec::Valid,
            dilations: None,
            strides: Some(tvec!(2, 2)),
            input_channels: 16,
            output_channels: 16,
        };
        wire = model.wire_node("pool", MaxPool::new(pool, None), &[wire]).unwrap()[0];
        wire = wire_conv(&mut model, "conv2", wire, grid_weights(24, 16, 1, true), [16, 24, 1, 1, 1]);
        model.select_output_outlets(&[wire]).unwrap();
        let model = model.into_decluttered().unwrap();
        let ours = rewritten_agrees_on(&model, &input, 0.05, true);
        assert_eq!(on_integers(&ours), (2, 2), "signed {signed}: {:?}", super::tests::op_names(&ours));
        assert_eq!(super::tests::count(&ours, "EdgertMaxPool"), 1);
    }
}

/// Every convolution of the shipped YOLOv3-tiny INT8 QDQ model (made by onnxruntime's static
/// quantization: per-channel weights, each channel's largest at 127 or -128) goes onto integers:
/// the first takes the input's fake-quantize step, the others the 8-bit activation folded into
/// the convolution before, through the max poolings. (Its answers on integers are checked where
/// they run, on ARM: `tests/quality.rs` and `tests/detectors.rs` under qemu.)
#[test]
fn every_convolution_of_yolov3_tiny_int8_goes_onto_integers() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/yolov3_tiny_coco_int8_qdq.toml");
    let model = crate::model::Model::load(path.as_ref(), &Default::default()).unwrap();
    let typed = super::super::tract_model::decluttered(&model, &Default::default(), "cpu").unwrap().typed;
    let mut ours = typed.clone();
    super::rewrite(&mut ours, true).unwrap();
    assert_eq!(on_integers(&ours), (13, 13));
    let mut floats = typed;
    super::rewrite(&mut floats, false).unwrap();
    assert_eq!(on_integers(&floats), (0, 13));
}
