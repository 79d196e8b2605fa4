//! `MaxPool`: tract's f32 2-D max pooling over channel-first planes (YOLO's downsampling), one
//! output row at a time from the input rows its windows cover, each a run the compiler
//! vectorizes; split between the pool's threads by planes. tract's own was a large share of
//! YOLOv3-tiny's time, and runs on one thread without `tract-threads` (benches/RESULTS.md).

use std::ops::Range;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::MaxPool as TractMaxPool;
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::planes::{new_planes, plane_geometry, PlaneGeometry};
use super::threads;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MaxPool {
    geometry: PlaneGeometry,
    output_shape: TVec<usize>,
}

impl Op for MaxPool {
    fn name(&self) -> StaticName {
        "EdgertMaxPool".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("{:?}", self.geometry)])
    }

    op_as_typed_op!();
}

impl EvalOp for MaxPool {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let g = &self.geometry;
        let (plane_in, plane_out) = (g.input[0] * g.input[1], g.output[0] * g.output[1]);
        let columns = tap_columns(g);
        // Each plane is written by `pool_plane`.
        let output = new_planes(&inputs[0], &self.output_shape, [plane_in, plane_out], |input, out| {
            let cost = out.len() * g.kernel[0] * g.kernel[1];
            threads::on_rows(out, plane_out, cost, |first, planes| {
                for (i, out) in planes.chunks_exact_mut(plane_out).enumerate() {
                    pool_plane(g, &columns, &input[(first + i) * plane_in..][..plane_in], out);
                }
                Ok(())
            })
        })?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for MaxPool {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    as_op!();
}

/// Where one column of the window reads: outputs `outputs` take input columns `first_input`,
/// `first_input + stride`, …, none of them in the padding.
struct TapColumns {
    outputs: Range<usize>,
    first_input: usize,
}

/// The window's columns that read anything, for every output row alike.
fn tap_columns(g: &PlaneGeometry) -> Vec<TapColumns> {
    let (iw, ow) = (g.input[1] as isize, g.output[1] as isize);
    let sx = g.stride[1] as isize;
    (0..g.kernel[1] as isize)
        .filter_map(|kx| {
            // Output x reads input column x·sx + offset: the x for which that is inside.
            let offset = kx * g.dilation[1] as isize - g.pad_before[1] as isize;
            let first = (((-offset).max(0) + sx - 1) / sx).min(ow);
            let end = ((iw - offset + sx - 1) / sx).clamp(first, ow);
            let first_input = (first * sx + offset) as usize;
            (first < end).then_some(TapColumns { outputs: first as usize..end as usize, first_input })
        })
        .collect()
}

/// The maximum of each window of `plane` that lies inside it (padding is never a maximum), and at
/// least f32::MIN: a window wholly in the padding gives f32::MIN, as tract's and onnxruntime's do.
fn pool_plane(g: &PlaneGeometry, columns: &[TapColumns], plane: &[f32], out: &mut [f32]) {
    let (ih, iw, sx) = (g.input[0] as isize, g.input[1], g.stride[1]);
    // YOLO's 2 × 2 by 2: windows side by side, none in the padding.
    let pairs =
        g.kernel[1] == 2 && sx == 2 && g.dilation[1] == 1 && g.pad_before[1] == 0 && g.output[1] * 2 <= iw;
    for (y, row) in out.chunks_exact_mut(g.output[1]).enumerate() {
        row.fill(f32::MIN);
        for ky in 0..g.kernel[0] {
            let iy = (y * g.stride[0] + ky * g.dilation[0]) as isize - g.pad_before[0] as isize;
            if !(0..ih).contains(&iy) {
                continue;
            }
            let input = &plane[iy as usize * iw..][..iw];
            if pairs {
                for (o, [a, b]) in row.iter_mut().zip(input.as_chunks::<2>().0) {
                    keep_max(o, *a);
                    keep_max(o, *b);
                }
            } else if sx == 1 {
                for c in columns {
                    row[c.outputs.clone()]
                        .iter_mut()
                        .zip(&input[c.first_input..])
                        .for_each(|(o, &v)| keep_max(o, v));
                }
            } else {
                for c in columns {
                    let taps = input[c.first_input..].iter().step_by(sx);
                    row[c.outputs.clone()].iter_mut().zip(taps).for_each(|(o, &v)| keep_max(o, v));
                }
            }
        }
    }
}

/// A comparison and a select, which vectorizes (a NaN is passed over, as `f32::max` does).
#[inline(always)]
fn keep_max(max: &mut f32, v: f32) {
    *max = if v > *max { v } else { *max };
}

/// Replaces an f32 2-D channel-first `MaxPool` with concrete shapes (and no index output) by
/// edgert's; leaves any other to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    pool: &TractMaxPool,
) -> TractResult<Option<TypedModelPatch>> {
    let spec = &pool.pool_spec;
    rule_if!(pool.with_index_outputs.is_none() && spec.rank() == 2 && !spec.data_format.c_is_last());
    let fact = model.outlet_fact(node.inputs[0])?;
    rule_if!(fact.datum_type == f32::datum_type());
    rule_if_some!(input_shape = fact.shape.as_concrete());
    rule_if_some!(output_shape = model.outlet_fact(node.id.into())?.shape.as_concrete());
    rule_if_some!((geometry, _) = plane_geometry(spec, input_shape)?);
    let planes = input_shape.iter().product::<usize>() / (geometry.input[0] * geometry.input[1]);
    rule_if!(output_shape.iter().product::<usize>() == planes * geometry.output[0] * geometry.output[1]);
    let op = MaxPool { geometry, output_shape: output_shape.into() };
    super::replacing(model, node.inputs[0], name, op, node.id.into())
}

#[cfg(test)]
mod tests {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::cnn::{MaxPool, PaddingSpec, PoolSpec};
    use tract_onnx::tract_core::ops::nn::DataFormat;

    use super::super::tests::{count, on_threads, op_names, rewritten_agrees};

    struct Pool {
        format: DataFormat,
        input: Vec<usize>,
        kernel: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
        padding: PaddingSpec,
    }

    impl Pool {
        fn model(&self) -> TypedModel {
            let channels = self.input[self.format.shape(&self.input).unwrap().c_axis()];
            let pool_spec = PoolSpec {
                data_format: self.format,
                kernel_shape: self.kernel[..].into(),
                padding: self.padding.clone(),
                dilations: Some(self.dilations[..].into()),
                strides: Some(self.strides[..].into()),
                input_channels: channels,
                output_channels: channels,
            };
            let mut model = TypedModel::default();
            let x = model.add_source("x", f32::fact(&self.input)).unwrap();
            let y = model.wire_node("pool", MaxPool::new(pool_spec, None), &[x]).unwrap();
            model.select_output_outlets(&y).unwrap();
            model
        }
    }

    fn yolo() -> Pool {
        Pool {
            format: DataFormat::NCHW,
            input: vec![2, 16, 26, 26],
            kernel: [2, 2],
            strides: [2, 2],
            dilations: [1, 1],
            padding: PaddingSpec::Valid,
        }
    }

    /// YOLOv3-tiny's (2 × 2 by 2, and by 1 with the right and bottom padded), windows larger
    /// than their stride with padding on both sides, windows wholly in the padding, dilations, a
    /// plane with no batch axis. The test inputs are negative as often as not, so a padded zero
    /// would show as a maximum.
    #[test]
    fn max_pools_match_tract_bit_for_bit_on_one_thread_and_on_three() {
        let explicit = |before, after| PaddingSpec::Explicit(tvec!(before, before), tvec!(after, after));
        let cases = [
            yolo(),
            Pool { input: vec![1, 8, 13, 13], strides: [1, 1], padding: PaddingSpec::SameUpper, ..yolo() },
            Pool { input: vec![1, 4, 15, 17], kernel: [3, 3], padding: explicit(1, 1), ..yolo() },
            Pool {
                input: vec![1, 3, 9, 10],
                kernel: [3, 2],
                strides: [1, 3],
                padding: explicit(2, 0),
                ..yolo()
            },
            Pool { input: vec![1, 2, 12, 12], kernel: [3, 3], strides: [1, 1], dilations: [2, 3], ..yolo() },
            Pool {
                format: DataFormat::CHW,
                input: vec![6, 11, 7],
                kernel: [3, 3],
                strides: [2, 1],
                padding: PaddingSpec::SameLower,
                ..yolo()
            },
        ];
        for pool in cases {
            for threads in [1, 3] {
                let ours = on_threads(threads, || rewritten_agrees(&pool.model(), &pool.input, 0.0));
                assert_eq!(
                    op_names(&ours),
                    ["Source", "EdgertMaxPool"],
                    "{:?} {:?}",
                    pool.input,
                    pool.padding
                );
            }
        }
    }

    #[test]
    fn channel_last_max_pools_are_left_to_tract() {
        let pool = Pool { format: DataFormat::NHWC, input: vec![1, 8, 8, 4], ..yolo() };
        let ours = rewritten_agrees(&pool.model(), &pool.input, 0.0);
        assert_eq!(count(&ours, "EdgertMaxPool"), 0, "{:?}", op_names(&ours));
    }
}
