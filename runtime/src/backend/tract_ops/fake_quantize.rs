//! `FakeQuantize`: an INT8 QDQ model's QuantizeLinear → DequantizeLinear pair on an f32
//! activation as one f32 → f32 pass, where tract runs the two ops (its QuantizeLinear alone was
//! most of MobileNetV2 INT8 QDQ's time), with a ReLU or ReLU6 right before it folded in. The values are ONNX's for the pair:
//! `(saturate(round_half_even(x / scale) + zero_point) - zero_point) * scale`.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::quant::{DequantizeLinearF32, QuantizeLinearI8, QuantizeLinearU8};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::int8_product::Grid;
use super::threads;

#[derive(Debug, Clone, PartialEq)]
pub struct FakeQuantize {
    /// Bounds of a folded ReLU or ReLU6 (infinite without one), shown by `info`; `lo` and `hi`
    /// apply them.
    clip: (f32, f32),
    scale: f32,
    /// Where `x / scale` saturates: the integer range less the zero point, narrowed by the clip.
    lo: f32,
    hi: f32,
}

impl Eq for FakeQuantize {}

impl FakeQuantize {
    pub fn new(clip: (f32, f32), scale: f32, zero_point: i32, range: (i32, i32)) -> FakeQuantize {
        let range = ((range.0 - zero_point) as f32, (range.1 - zero_point) as f32);
        // Dividing by a positive scale, rounded, is monotonic: clipping `x` to [a, b] then
        // saturating `x / scale` is saturating it to [a / scale, b / scale] within the range.
        let bound = |c: f32| clip::clamp(c / scale, range);
        FakeQuantize { clip, scale, lo: bound(clip.0), hi: bound(clip.1) }
    }

    /// Quantizes and dequantizes `values` in place, on the widest vectors the CPU has: the
    /// division by the scale (which ONNX's rounding needs exactly) is most of the time.
    pub fn apply(&self, values: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked just above.
                unsafe { self.apply_avx512(values) };
                return;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above.
                unsafe { self.apply_avx2(values) };
                return;
            }
        }
        self.apply_with(values)
    }

    /// The same operations on twice SSE2's vector width, so the same values.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn apply_avx2(&self, values: &mut [f32]) {
        self.apply_with(values)
    }

    /// The same operations on four times SSE2's vector width.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn apply_avx512(&self, values: &mut [f32]) {
        self.apply_with(values)
    }

    #[inline(always)]
    fn apply_with(&self, values: &mut [f32]) {
        for x in values {
            *x = self.value(*x);
        }
    }

    /// The grid its outputs lie on, as integer products take it; None where its levels span
    /// more than an i8 holds.
    pub fn grid(&self) -> Option<Grid> {
        let (lo, hi) = (round(self.lo), round(self.hi));
        let usable = self.scale > 0.0 && self.scale.is_finite() && hi - lo <= 255.0;
        usable.then(|| Grid { scale: self.scale, offset: -128 - lo as i32 })
    }

    /// One value quantized and dequantized; inlined into the caller's loop, to be vectorized.
    #[inline(always)]
    pub(super) fn value(&self, x: f32) -> f32 {
        self.level(x) * self.scale
    }

    /// One value quantized, less the zero point: an integer, as an f32.
    #[inline(always)]
    pub(super) fn level(&self, x: f32) -> f32 {
        // The clip is in `lo` and `hi`; a NaN saturates to the low bound.
        round(clip::clamp(x / self.scale, (self.lo, self.hi)))
    }
}

/// 1.5 × 2^23: added to an f32 of magnitude under 2^22, it leaves the value rounded to the
/// nearest integer, ties to even, in the low bits of the sum (two's complement), which taking it
/// away again turns back into a rounded f32. Vectorizes where `round` and casts to integers do not.
pub(super) const ROUND: f32 = 12_582_912.0;

/// The nearest integer, ties to even, for |v| < 2^22 (here |v| <= 255).
#[inline(always)]
fn round(v: f32) -> f32 {
    (v + ROUND) - ROUND
}

impl Op for FakeQuantize {
    fn name(&self) -> StaticName {
        "EdgertFakeQuantize".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "clip {:?}, scale {}, saturating at {}..={} around the zero point",
            self.clip, self.scale, self.lo, self.hi
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for FakeQuantize {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        in_place(inputs, |values| self.apply(values))
    }
}

impl TypedOp for FakeQuantize {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        same_f32(inputs)
    }

    as_op!();
}

/// An element-wise f32 op's evaluation: `apply` on its input's values, in place when nothing else
/// holds them (as is usual between two convolutions), in rows split between the pool's threads.
pub(super) fn in_place(
    mut inputs: TVec<TValue>,
    apply: impl Fn(&mut [f32]) + Send + Sync,
) -> TractResult<TVec<TValue>> {
    let mut tensor = inputs.remove(0).into_tensor();
    let mut view = tensor.try_as_plain_ram_mut()?;
    let values = view.as_slice_mut::<f32>()?;
    let row = values.len().clamp(1, 4096);
    if values.len() % row == 0 {
        let cost = values.len();
        threads::on_rows(values, row, cost, |_, chunk| {
            apply(chunk);
            Ok(())
        })?;
    } else {
        apply(values);
    }
    Ok(tvec!(tensor.into_tvalue()))
}

/// An element-wise f32 op's output: f32, of its input's shape.
pub(super) fn same_f32(inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
    ensure!(inputs[0].datum_type == f32::datum_type());
    Ok(tvec!(f32::fact(inputs[0].shape.clone())))
}

/// A per-tensor QuantizeLinear's 1 / scale (what tract keeps), zero point and integer range.
pub(super) fn quantize_linear(op: &ElementWiseOp) -> Option<(f32, i32, (i32, i32))> {
    if let Some(q) = op.0.downcast_ref::<QuantizeLinearI8>() {
        Some((q.scale, q.zero_point as i32, (i8::MIN as i32, i8::MAX as i32)))
    } else {
        op.0.downcast_ref::<QuantizeLinearU8>()
            .map(|q| (q.scale, q.zero_point as i32, (u8::MIN as i32, u8::MAX as i32)))
    }
}

/// Replaces a per-tensor QuantizeLinear whose every reader is a DequantizeLinear of the same
/// scale and zero point, and the clip before it, by one `FakeQuantize`, which those readers'
/// readers then read.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    op: &ElementWiseOp,
) -> TractResult<Option<TypedModelPatch>> {
    // tract's QuantizeLinear keeps 1 / scale; DequantizeLinear keeps the scale.
    rule_if_some!((inverse_scale, zero_point, range) = quantize_linear(op));
    rule_if!(model.outlet_fact(node.inputs[0])?.datum_type == f32::datum_type());
    rule_if!(!model.outputs.contains(&node.id.into()));
    let readers = &node.outputs[0].successors;
    rule_if!(!readers.is_empty());
    let mut scale = None;
    for reader in readers {
        rule_if_some!(dq = model.node(reader.node).op_as::<DequantizeLinearF32>());
        rule_if!(dq.zero_point == zero_point && dq.scale.recip() == inverse_scale);
        rule_if!(scale.is_none_or(|s| s == dq.scale));
        scale = Some(dq.scale);
    }
    rule_if_some!(scale = scale);
    // ONNX wants a positive scale; anything else stays tract's to refuse or run.
    rule_if!(scale > 0.0 && scale.is_finite());
    let (clip, input) = clip::before(model, node)?;
    let mut patch = TypedModelPatch::default();
    let input = patch.tap_model(model, input)?;
    let output = patch.wire_node(name, FakeQuantize::new(clip, scale, zero_point, range), &[input])?[0];
    for reader in readers {
        patch.shunt_outside(model, reader.node.into(), output)?;
    }
    Ok(Some(patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ONNX's QuantizeLinear then DequantizeLinear, written as the spec says.
    fn reference(x: f32, scale: f32, zero_point: i32, (lo, hi): (i32, i32)) -> f32 {
        let q = ((x / scale).round_ties_even() as i32).saturating_add(zero_point).clamp(lo, hi);
        (q - zero_point) as f32 * scale
    }

    /// `values` through every build of `apply` this CPU runs, and the one `apply` picks.
    fn every_build(op: &FakeQuantize, values: &[f32]) -> Vec<(&'static str, Vec<f32>)> {
        let run = |f: &dyn Fn(&mut [f32])| {
            let mut v = values.to_vec();
            f(&mut v);
            v
        };
        // Only x86_64 has builds of its own to add.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut builds = vec![("picked", run(&|v| op.apply(v))), ("portable", run(&|v| op.apply_with(v)))];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                builds.push(("avx2", run(&|v| unsafe { op.apply_avx2(v) })));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                builds.push(("avx512", run(&|v| unsafe { op.apply_avx512(v) })));
            }
        }
        builds
    }

    #[test]
    fn matches_quantize_then_dequantize() {
        for (scale, zero_point, range) in
            [(0.047244094, 0, (-128, 127)), (0.02, -5, (-128, 127)), (0.1, 128, (0, 255)), (1.0, 3, (0, 255))]
        {
            let op = FakeQuantize::new(clip::NONE, scale, zero_point, range);
            // Every half step (the ties), the values a few ulps either side, and beyond the range.
            let half_steps = (-700..=700).map(|i| i as f32 * scale / 2.0);
            let mut values: Vec<f32> = half_steps
                .flat_map(|x| (-3..=3).map(move |ulps| f32::from_bits(x.to_bits().wrapping_add_signed(ulps))))
                .filter(|x| !x.is_nan()) // below 0.0's bits
                .collect();
            values.extend([f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, 0.0, -0.0]);
            for (build, got) in every_build(&op, &values) {
                for (x, got) in values.iter().zip(got) {
                    let expected = reference(*x, scale, zero_point, range).to_bits();
                    assert_eq!(got.to_bits(), expected, "{build}: x = {x}, scale {scale}");
                }
            }
        }
    }

    proptest::proptest! {
        /// Any value, scale and zero point, with and without a ReLU6 before.
        #[test]
        fn matches_on_any_values(
            scale in 1e-6f32..10.0,
            zero_point in -128i32..=127,
            clip in proptest::sample::select(vec![clip::NONE, (0.0, 6.0)]),
            values in proptest::collection::vec(-3000f32..3000.0, 1..100),
        ) {
            let op = FakeQuantize::new(clip, scale, zero_point, (-128, 127));
            for (build, got) in every_build(&op, &values) {
                for (x, got) in values.iter().zip(got) {
                    let expected = reference(x.max(clip.0).min(clip.1), scale, zero_point, (-128, 127));
                    proptest::prop_assert_eq!(got.to_bits(), expected.to_bits(), "{}: x = {}", build, x);
                }
            }
        }
    }

    #[test]
    fn an_empty_tensor_passes_through() {
        let op = FakeQuantize::new(clip::NONE, 0.5, 0, (-128, 127));
        let empty = Tensor::zero::<f32>(&[0, 3]).unwrap().into_tvalue();
        let out = op.eval(&EvalContext::out_of_plan(), tvec!(empty)).unwrap();
        assert_eq!(out[0].shape(), &[0, 3]);
    }

    #[test]
    fn ties_round_to_even() {
        let op = FakeQuantize::new(clip::NONE, 1.0, 0, (-128, 127));
        let mut values = [0.5, 1.5, 2.5, -0.5, -1.5, 126.5, 127.5, -128.5];
        op.apply(&mut values);
        assert_eq!(values, [0.0, 2.0, 2.0, -0.0, -2.0, 126.0, 127.0, -128.0]);
    }
}
