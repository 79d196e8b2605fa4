//! `Softmax` (and `LogSoftmax`) in f32 over one axis that is not the last: tract walks such a
//! softmax lane by lane through ndarray views, and YOLOv8's box decoding (a softmax over 16 bins
//! for each side of each of 8400 boxes) spent more time there than in any layer but the
//! convolutions (benches/RESULTS.md). Here the lanes are worked on side by side: each of the
//! axis's rows is contiguous, so the maximum, the exponentials and their sum, and the scaling
//! each go along rows, a chunk of lanes at a time so that the chunk stays in cache.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::{Softmax as TractSoftmax, SoftmaxKind};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::threads;

/// Lanes worked on together: their running maxima and sums, and the axis's rows of them, stay in
/// the first-level cache for the axis lengths classifiers and detectors have.
const LANES: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AxisSoftmax {
    shape: TVec<usize>,
    axis: usize,
    log: bool,
}

impl AxisSoftmax {
    /// The axis's length, and how many lanes each block of it has (the values after the axis).
    fn geometry(&self) -> (usize, usize) {
        (self.shape[self.axis], self.shape[self.axis + 1..].iter().product())
    }
}

impl Op for AxisSoftmax {
    fn name(&self) -> StaticName {
        "EdgertSoftmax".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axis {} of {:?}{}", self.axis, self.shape, if self.log { ", log" } else { "" })])
    }

    op_as_typed_op!();
}

impl EvalOp for AxisSoftmax {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut output = args_1!(inputs).into_tensor();
        let (length, lanes) = self.geometry();
        let block = length * lanes;
        let log = self.log;
        let mut plain = output.try_as_plain_ram_mut()?;
        let values = plain.as_slice_mut::<f32>()?;
        let work = values.len();
        threads::on_rows(values, block, work, |_, blocks| {
            for block in blocks.chunks_exact_mut(block) {
                softmax_block(block, lanes, log);
            }
            Ok(())
        })?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for AxisSoftmax {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.shape)))
    }

    as_op!();
}

/// The softmax of each lane of `block`, in place: `block` is the axis's rows one after another,
/// `lanes` values each.
fn softmax_block(block: &mut [f32], lanes: usize, log: bool) {
    let mut max = [0f32; LANES];
    let mut sum = [0f32; LANES];
    for first in (0..lanes).step_by(LANES) {
        let width = LANES.min(lanes - first);
        let (max, sum) = (&mut max[..width], &mut sum[..width]);
        let rows = || block.chunks_exact(lanes).map(|row| &row[first..][..width]);
        max.fill(f32::NEG_INFINITY);
        for row in rows() {
            // A comparison and a select, which vectorizes (a NaN is passed over, as f32::max does).
            max.iter_mut().zip(row).for_each(|(m, &v)| *m = if v > *m { v } else { *m });
        }
        sum.fill(0.0);
        if log {
            for row in rows() {
                sum.iter_mut().zip(max.iter()).zip(row).for_each(|((s, m), v)| *s += (v - m).exp());
            }
            // log(e^(v - max) / sum) = v - (max + ln sum)
            max.iter_mut().zip(sum.iter()).for_each(|(m, s)| *m += s.ln());
            for row in block.chunks_exact_mut(lanes) {
                row[first..][..width].iter_mut().zip(max.iter()).for_each(|(v, m)| *v -= m);
            }
        } else {
            for row in block.chunks_exact_mut(lanes) {
                let row = &mut row[first..][..width];
                row.iter_mut().zip(max.iter()).zip(sum.iter_mut()).for_each(|((v, m), s)| {
                    *v = (*v - m).exp();
                    *s += *v;
                });
            }
            sum.iter_mut().for_each(|s| *s = s.recip());
            for row in block.chunks_exact_mut(lanes) {
                row[first..][..width].iter_mut().zip(sum.iter()).for_each(|(v, s)| *v *= s);
            }
        }
    }
}

/// Replaces an f32 softmax over one axis that is not the last (with values after it), in a
/// model of concrete shapes, by edgert's; leaves any other to tract, whose own is quick along
/// the last axis.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    softmax: &TractSoftmax,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(softmax.quant_output_dt.is_none() && softmax.axes.len() == 1);
    let fact = model.outlet_fact(node.inputs[0])?;
    rule_if!(fact.datum_type == f32::datum_type());
    rule_if_some!(shape = fact.shape.as_concrete());
    let axis = softmax.axes[0];
    rule_if!(axis + 1 < shape.len() && shape[axis + 1..].iter().product::<usize>() > 1);
    let log = softmax.kind == SoftmaxKind::LogSoftmax;
    let op = AxisSoftmax { shape: shape.into(), axis, log };
    super::replacing(model, node.inputs[0], name, op, node.id.into())
}

#[cfg(test)]
mod tests {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

    use super::super::tests::{count, on_threads, op_names, rewritten_agrees};

    fn model(shape: &[usize], axis: usize, kind: SoftmaxKind) -> TypedModel {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact(shape)).unwrap();
        let op = Softmax { axes: tvec!(axis), quant_output_dt: None, kind };
        let y = model.wire_node("softmax", op, &[x]).unwrap();
        model.select_output_outlets(&y).unwrap();
        model
    }

    /// YOLOv8's box decoding (16 bins by 4 sides by boxes, the lanes more than one chunk and not
    /// a whole number of them), a class axis in the middle, the first axis, a block of one row.
    #[test]
    fn softmaxes_over_an_inner_axis_match_tract_on_one_thread_and_on_three() {
        let cases: [(&[usize], usize); 5] = [
            (&[1, 4, 16, 700], 2),
            (&[2, 5, 3, 7], 1),
            (&[6, 9, 4], 0),
            (&[3, 1, 40], 1),
            (&[1, 16, 4, 300], 1),
        ];
        for (shape, axis) in cases {
            for kind in [SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax] {
                for threads in [1, 3] {
                    let model = model(shape, axis, kind);
                    let ours = on_threads(threads, || rewritten_agrees(&model, shape, 1e-5));
                    assert_eq!(op_names(&ours), ["Source", "EdgertSoftmax"], "{shape:?} {axis} {kind:?}");
                }
            }
        }
    }

    #[test]
    fn a_softmax_along_the_last_axis_is_left_to_tract() {
        for (shape, axis) in [(&[2usize, 3, 8][..], 2), (&[4, 6, 1][..], 1)] {
            let ours = rewritten_agrees(&model(shape, axis, SoftmaxKind::Softmax), shape, 0.0);
            assert_eq!(count(&ours, "EdgertSoftmax"), 0, "{shape:?} {axis}: {:?}", op_names(&ours));
        }
    }

    /// Large inputs, which the exponentials would overflow without the maximum taken off first.
    #[test]
    fn large_values_give_finite_probabilities_summing_to_one() {
        let values: Vec<f32> = (0..48).map(|i| 1000.0 + (i % 7) as f32 * 30.0).collect();
        let input = Tensor::from_shape(&[3, 16], &values).unwrap();
        let mut model = model(&[3, 16], 0, SoftmaxKind::Softmax);
        super::super::rewrite(&mut model, false).unwrap();
        let got = &super::super::tests::run(&model, &input)[0];
        for lane in 0..16 {
            let column: Vec<f32> = (0..3).map(|r| got[r * 16 + lane]).collect();
            assert!(column.iter().all(|p| p.is_finite()), "{column:?}");
            assert!((column.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{column:?}");
        }
    }
}
