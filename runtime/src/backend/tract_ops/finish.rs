//! The last steps of an edgert product, on its values while they are in cache: the bias, a ReLU,
//! ReLU6 or SiLU, then the QuantizeLinear → DequantizeLinear pairs folded in after it, as one pass
//! on the widest vectors the CPU has. Done row by row in the baseline build, these steps took three
//! times as long as the fused pass (benches/RESULTS.md).

use super::clip;
use super::fake_quantize::{FakeQuantize, ROUND};

/// What is added to each value before the clip.
#[derive(Debug, Clone, Copy)]
pub enum Bias<'a> {
    /// One per channel: the values are channel-last rows of as many channels.
    PerChannel(&'a [f32]),
    /// One for all the values (one channel's).
    Same(f32),
}

/// What follows the bias, in order: a clip (a ReLU or ReLU6; `clip::NONE` for none), a SiLU
/// (x · sigmoid(x)) or not, then each QuantizeLinear → DequantizeLinear pair.
#[derive(Debug, Clone, Copy)]
pub struct Steps<'a> {
    pub clip: (f32, f32),
    pub silu: bool,
    pub quantize: &'a [FakeQuantize],
}

/// Adds `bias` to `values` and takes them through `steps`. With `Bias::PerChannel`, `values`
/// holds whole rows.
pub fn finish(values: &mut [f32], bias: Bias, steps: Steps) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked just above.
            return unsafe { finish_avx512(values, bias, steps) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { finish_avx2(values, bias, steps) };
        }
    }
    finish_with(values, bias, steps)
}

/// The same operations on twice SSE2's vector width, so the same values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn finish_avx2(values: &mut [f32], bias: Bias, steps: Steps) {
    finish_with(values, bias, steps)
}

/// The same operations on four times SSE2's vector width.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn finish_avx512(values: &mut [f32], bias: Bias, steps: Steps) {
    finish_with(values, bias, steps)
}

#[inline(always)]
fn finish_with(values: &mut [f32], bias: Bias, Steps { clip, silu, quantize }: Steps) {
    // No quantize and one are what convolutions have: one loop each, the quantize inlined. A
    // loop folding any number of quantizes per value made the compiler leave the one-quantize
    // case unvectorized too, so more than one take a pass each.
    let clipped = |v: f32| clip::clamp(v, clip);
    let activated = |v: f32| self::silu(clip::clamp(v, clip));
    match (silu, quantize) {
        (false, []) => each(values, bias, clipped),
        (false, [q]) => each(values, bias, |v| q.value(clipped(v))),
        (true, []) => each(values, bias, activated),
        (true, [q]) => each(values, bias, |v| q.value(activated(v))),
        (_, [first, rest @ ..]) => {
            match silu {
                true => each(values, bias, |v| first.value(activated(v))),
                false => each(values, bias, |v| first.value(clipped(v))),
            }
            for q in rest {
                values.iter_mut().for_each(|v| *v = q.value(*v));
            }
        }
    }
}

/// x · sigmoid(x), as x / (1 + e⁻ˣ): branch-free, so that the pass around it stays vectorized
/// (tract's own `Silu` is a pass of its own). Within a few units in the last place of f32.
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// eˣ as 2ᵏ · eʳ, k = round(x / ln 2) and |r| ≤ ln 2 / 2, eʳ by its Taylor series to the 7th
/// power (a relative error under 2e-8 there). x is taken into [−87, 88] first, where 2ᵏ is a
/// normal f32: e⁻⁸⁷ is as good as 0 and e⁸⁸ as good as infinity beside the 1 `silu` adds. k is
/// rounded by adding 1.5 · 2²³, whose sum keeps k in its low bits, so 2ᵏ is made with integer
/// operations: `round` and a cast to i32 kept the compiler from vectorizing the pass (four times
/// slower).
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = clip::clamp(x, (-87.0, 88.0));
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let k = shifted - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * r + c;
    }
    // k + 127 in the exponent's bits: 2ᵏ.
    p * f32::from_bits(shifted.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23)
}

#[inline(always)]
fn each(values: &mut [f32], bias: Bias, step: impl Fn(f32) -> f32) {
    match bias {
        Bias::PerChannel(bias) => {
            debug_assert!(
                !bias.is_empty() && values.len().is_multiple_of(bias.len()),
                "rows of {} values",
                bias.len()
            );
            for row in values.chunks_exact_mut(bias.len().max(1)) {
                for (v, b) in row.iter_mut().zip(bias) {
                    *v = step(*v + b);
                }
            }
        }
        Bias::Same(b) => values.iter_mut().for_each(|v| *v = step(*v + b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The steps one value at a time, as the operators define them.
    fn reference(values: &[f32], bias: &[f32], clip: (f32, f32), quantize: &[FakeQuantize]) -> Vec<f32> {
        let mut out: Vec<f32> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (v + bias[i % bias.len()]).max(clip.0).min(clip.1))
            .collect();
        for q in quantize {
            q.apply(&mut out);
        }
        out
    }

    /// Every build of `finish` this CPU runs, and the one `finish` picks.
    fn every_build(values: &[f32], bias: Bias, steps: Steps) -> Vec<(&'static str, Vec<f32>)> {
        let run = |f: &dyn Fn(&mut [f32])| {
            let mut v = values.to_vec();
            f(&mut v);
            v
        };
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut builds = vec![
            ("picked", run(&|v| finish(v, bias, steps))),
            ("portable", run(&|v| finish_with(v, bias, steps))),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                builds.push(("avx2", run(&|v| unsafe { finish_avx2(v, bias, steps) })));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                builds.push(("avx512", run(&|v| unsafe { finish_avx512(v, bias, steps) })));
            }
        }
        builds
    }

    proptest! {
        /// Rows of any width (per-channel bias) or one channel's values (one bias), any clip,
        /// none, one or two quantize steps: every build gives the steps' values bit for bit.
        #[test]
        fn matches_the_steps_one_by_one(
            channels in 1usize..40,
            rows in 1usize..6,
            per_channel in any::<bool>(),
            seed in proptest::collection::vec(-50f32..50.0, 240),
            clip in proptest::sample::select(vec![clip::NONE, (0.0, 6.0), (0.0, f32::INFINITY)]),
            quantizes in 0usize..3,
            scale in 0.001f32..2.0,
            zero_point in -20i32..20,
        ) {
            let values = &seed[..channels * rows];
            let bias: Vec<f32> = seed[120..][..channels].iter().map(|b| b / 10.0).collect();
            let quantize: Vec<FakeQuantize> = (0..quantizes)
                .map(|i| FakeQuantize::new(clip::NONE, scale * (i + 1) as f32, zero_point, (-128, 127)))
                .collect();
            let (bias_arg, bias_values) = match per_channel {
                true => (Bias::PerChannel(&bias), &bias[..]),
                false => (Bias::Same(bias[0]), &bias[..1]),
            };
            let expected = reference(values, bias_values, clip, &quantize);
            let steps = Steps { clip, silu: false, quantize: &quantize };
            for (build, got) in every_build(values, bias_arg, steps) {
                let (got, expected): (Vec<u32>, Vec<u32>) =
                    (got.iter().map(|v| v.to_bits()).collect(), expected.iter().map(|v| v.to_bits()).collect());
                prop_assert_eq!(got, expected, "{}", build);
            }
        }
    }

    #[test]
    fn a_nan_saturates_to_the_clip_low_bound_as_the_steps_do() {
        let q = [FakeQuantize::new(clip::NONE, 0.5, 0, (-128, 127))];
        let mut values = [f32::NAN, 1.0];
        finish(
            &mut values,
            Bias::PerChannel(&[0.0, 0.25]),
            Steps { clip: (0.0, 6.0), silu: false, quantize: &q },
        );
        assert_eq!(values, [0.0, 1.0]);
    }

    /// SiLU against x / (1 + e⁻ˣ) in f64, over the range activations take and past both ends
    /// of `exp`'s: within 4e-7 of the value's size (a few units in the last place), on every
    /// build, and the same on each.
    #[test]
    fn silu_is_x_times_its_sigmoid_within_a_few_units_in_the_last_place() {
        let values: Vec<f32> =
            (-20_000..=20_000).map(|i| i as f32 * 0.01).chain([-150.0, -90.0, 95.0, 1e30]).collect();
        let steps = Steps { clip: clip::NONE, silu: true, quantize: &[] };
        let builds = every_build(&values, Bias::Same(0.0), steps);
        for (x, got) in values.iter().zip(&builds[0].1) {
            let want = *x as f64 / (1.0 + (-*x as f64).exp());
            // Below x = −87 both are under 1e-35 in size (`exp` stops at e⁸⁸).
            let tiny = got.abs() < 1e-35 && want.abs() < 1e-35;
            assert!((*got as f64 - want).abs() <= 4e-7 * want.abs() || tiny, "silu({x}) = {got}, not {want}");
        }
        for (build, got) in &builds {
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                builds[0].1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{build}"
            );
        }
        // As with a clip: the unbounded clip makes a NaN −∞, which stays out of range, and the
        // backend's check of the outputs reports it as it does a NaN.
        let mut nan = [f32::NAN];
        finish(&mut nan, Bias::Same(0.0), steps);
        assert!(!nan[0].is_finite(), "{}", nan[0]);
    }
}
