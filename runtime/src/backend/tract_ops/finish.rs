//! The last steps of an edgert product, on its values while they are in cache: the bias, a ReLU
//! or ReLU6, then the QuantizeLinear → DequantizeLinear pairs folded in after it, as one pass on
//! the widest vectors the CPU has. Done row by row in the baseline build, these steps took three
//! times as long as the fused pass (benches/RESULTS.md).

use super::clip;
use super::fake_quantize::FakeQuantize;

/// What is added to each value before the clip.
#[derive(Debug, Clone, Copy)]
pub enum Bias<'a> {
    /// One per channel: the values are channel-last rows of as many channels.
    PerChannel(&'a [f32]),
    /// One for all the values (one channel's).
    Same(f32),
}

/// Adds `bias` to `values`, clips them to `clip` and quantizes them with each of `quantize` in
/// turn. With `Bias::PerChannel`, `values` holds whole rows.
pub fn finish(values: &mut [f32], bias: Bias, clip: (f32, f32), quantize: &[FakeQuantize]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked just above.
            return unsafe { finish_avx512(values, bias, clip, quantize) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { finish_avx2(values, bias, clip, quantize) };
        }
    }
    finish_with(values, bias, clip, quantize)
}

/// The same operations on twice SSE2's vector width, so the same values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn finish_avx2(values: &mut [f32], bias: Bias, clip: (f32, f32), quantize: &[FakeQuantize]) {
    finish_with(values, bias, clip, quantize)
}

/// The same operations on four times SSE2's vector width.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn finish_avx512(values: &mut [f32], bias: Bias, clip: (f32, f32), quantize: &[FakeQuantize]) {
    finish_with(values, bias, clip, quantize)
}

#[inline(always)]
fn finish_with(values: &mut [f32], bias: Bias, clip: (f32, f32), quantize: &[FakeQuantize]) {
    // No quantize and one are what convolutions have: one loop each, the quantize inlined. A
    // loop folding any number of quantizes per value made the compiler leave the one-quantize
    // case unvectorized too, so more than one take a pass each.
    match quantize {
        [] => each(values, bias, |v| clip::clamp(v, clip)),
        [q] => each(values, bias, |v| q.value(clip::clamp(v, clip))),
        [first, rest @ ..] => {
            each(values, bias, |v| first.value(clip::clamp(v, clip)));
            for q in rest {
                values.iter_mut().for_each(|v| *v = q.value(*v));
            }
        }
    }
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
    fn every_build(
        values: &[f32],
        bias: Bias,
        clip: (f32, f32),
        q: &[FakeQuantize],
    ) -> Vec<(&'static str, Vec<f32>)> {
        let run = |f: &dyn Fn(&mut [f32])| {
            let mut v = values.to_vec();
            f(&mut v);
            v
        };
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut builds = vec![
            ("picked", run(&|v| finish(v, bias, clip, q))),
            ("portable", run(&|v| finish_with(v, bias, clip, q))),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                builds.push(("avx2", run(&|v| unsafe { finish_avx2(v, bias, clip, q) })));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                builds.push(("avx512", run(&|v| unsafe { finish_avx512(v, bias, clip, q) })));
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
            for (build, got) in every_build(values, bias_arg, clip, &quantize) {
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
        finish(&mut values, Bias::PerChannel(&[0.0, 0.25]), (0.0, 6.0), &q);
        assert_eq!(values, [0.0, 1.0]);
    }
}
