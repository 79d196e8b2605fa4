//! One channel plane of a depthwise 2-D convolution, in f32. The plane is first copied, padded
//! and split by stride phase into a scratch buffer, so that every kernel tap reads a contiguous
//! run of it: the whole output plane is then blocks of fused multiply-adds the compiler
//! vectorizes, with no border test inside. tract's own depthwise kernel walks the taps one output
//! point at a time, which took half of MobileNetV2's time (benches/RESULTS.md).

use super::clip;
use super::planes::{copy_row, PlaneGeometry, NARROW, WIDE};

impl PlaneGeometry {
    /// Convolves the plane `fill` left in `scratch` into `out` (output height × width).
    pub fn convolve(&self, filter: &Filter, scratch: &mut [f32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 (and so FMA), checked just above.
            unsafe { self.convolve_avx512(filter, scratch, out) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { self.convolve_avx2_fma(filter, scratch, out) };
            return;
        }
        // aarch64's NEON has a fused multiply-add in its baseline; x86_64's SSE2 has none, where
        // `mul_add` would be a library call.
        self.convolve_with::<{ cfg!(target_arch = "aarch64") }>(filter, scratch, out)
    }

    /// The same operations, 16 lanes a vector: a wide block is two registers, not four.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    fn convolve_avx512(&self, filter: &Filter, scratch: &mut [f32], out: &mut [f32]) {
        self.convolve_with::<true>(filter, scratch, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn convolve_avx2_fma(&self, filter: &Filter, scratch: &mut [f32], out: &mut [f32]) {
        self.convolve_with::<true>(filter, scratch, out)
    }

    #[inline(always)]
    fn convolve_with<const FMA: bool>(&self, filter: &Filter, scratch: &mut [f32], out: &mut [f32]) {
        let [ho, wo] = self.output;
        let (input, run) = scratch.split_at_mut(self.read_len());
        // Output row y is at y × phase_len in the run; the columns between rows are computed and
        // dropped. Small planes (MobileNet's 14 × 14 and 7 × 7) would otherwise be a few short
        // blocks a row.
        let run = &mut run[..self.run_len()];
        let n = run.len();
        let mut x = 0;
        while x + WIDE <= n {
            block::<WIDE, FMA>(input, x, filter, &mut run[x..x + WIDE]);
            x += WIDE;
        }
        while x < n {
            block::<NARROW, FMA>(input, x, filter, &mut run[x..x + NARROW]);
            x += NARROW;
        }
        for (row, values) in out[..ho * wo].chunks_exact_mut(wo).zip(run.chunks(self.phase_len())) {
            copy_row(&values[..wo], row);
        }
    }
}

/// One channel's filter: its taps in row-major order, their scratch offsets (`tap_offsets`), its
/// bias, and the bounds of a folded ReLU or ReLU6.
pub struct Filter<'a> {
    pub kernel: &'a [f32],
    pub taps: &'a [usize],
    pub bias: f32,
    pub clip: (f32, f32),
}

/// `B` outputs of the run from output `start`: every tap's run of `B` values multiplied by its
/// weight and summed, then clipped.
#[inline(always)]
fn block<const B: usize, const FMA: bool>(scratch: &[f32], start: usize, filter: &Filter, out: &mut [f32]) {
    let mut acc = [filter.bias; B];
    for (&weight, &offset) in filter.kernel.iter().zip(filter.taps) {
        let src: &[f32; B] = scratch[start + offset..][..B].try_into().expect("B values");
        for (a, &s) in acc.iter_mut().zip(src) {
            *a = if FMA { weight.mul_add(s, *a) } else { *a + weight * s };
        }
    }
    let (lo, hi) = filter.clip;
    for (o, a) in out.iter_mut().zip(acc) {
        *o = clip::clamp(a, (lo, hi));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::tract_ops::planes::tests::{geometry, reference};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_the_definition(g in geometry(), seed in any::<u64>()) {
            let mut state = seed | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 2001) as f32 / 1000.0 - 1.0
            };
            // Two planes through one scratch, as a convolution runs its channels: the second
            // must not see the first's values.
            let planes: Vec<Vec<f32>> =
                (0..2).map(|_| (0..g.input[0] * g.input[1]).map(|_| next()).collect()).collect();
            let kernel: Vec<f32> = (0..g.kernel[0] * g.kernel[1]).map(|_| next()).collect();
            let bias = next();
            let taps = g.tap_offsets();
            // Every build this CPU can run, not only the one `convolve` picks.
            type Build = fn(&PlaneGeometry, &Filter, &mut [f32], &mut [f32]);
            #[allow(unused_mut)] // x86_64 adds its builds below.
            let mut builds: Vec<(&str, Build)> = vec![
                ("portable", |g, f, s, o| g.convolve_with::<false>(f, s, o)),
                ("fused multiply-add", |g, f, s, o| g.convolve_with::<true>(f, s, o)),
            ];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has AVX2 and FMA.
                    builds.push(("AVX2", |g, f, s, o| unsafe { g.convolve_avx2_fma(f, s, o) }));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512.
                    builds.push(("AVX-512", |g, f, s, o| unsafe { g.convolve_avx512(f, s, o) }));
                }
            }
            for (name, build) in builds {
                let mut scratch = vec![0.0; g.scratch_len()];
                for (p, plane) in planes.iter().enumerate() {
                    let expected = reference(&g, plane, &kernel, bias);
                    let mut out = vec![f32::NAN; g.output[0] * g.output[1]];
                    g.fill(plane, clip::NONE, &mut scratch);
                    let filter = Filter { kernel: &kernel, taps: &taps, bias, clip: clip::NONE };
                    build(&g, &filter, &mut scratch, &mut out);
                    for (i, (a, e)) in out.iter().zip(&expected).enumerate() {
                        prop_assert!((a - e).abs() <= 1e-5 * (1.0 + e.abs()), "{name}, plane {p}, output {i}: {a} against {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn clips_as_relu6() {
        let g = PlaneGeometry {
            input: [1, 3],
            output: [1, 3],
            kernel: [1, 1],
            stride: [1, 1],
            dilation: [1, 1],
            pad_before: [0, 0],
        };
        let mut out = [0.0; 3];
        let mut scratch = vec![0.0; g.scratch_len()];
        g.fill(&[-2.0, 2.0, 9.0], clip::NONE, &mut scratch);
        let filter = Filter { kernel: &[1.0], taps: &g.tap_offsets(), bias: 0.5, clip: (0.0, 6.0) };
        g.convolve(&filter, &mut scratch, &mut out);
        assert_eq!(out, [0.0, 2.5, 6.0]);
    }
}
