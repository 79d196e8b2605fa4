//! Channel-last 1×1 convolutions with few output channels (MobileNetV2's first projection:
//! 32 → 16 channels over 112 × 112 positions), where gemm's f32 kernels, which run 48 output
//! channels at once, ran two thirds empty: each position's output channels in blocks of 16, summed
//! over the input channels, eight positions at a time so that each input channel's weights are
//! read once for all eight.

/// Output channels summed together: one AVX-512 vector, two AVX2 or four NEON; then by 8 and one
/// by one.
const BLOCK: usize = 16;

/// Positions computed together: eight blocks of accumulators, which stay in AVX-512's and NEON's
/// 32 registers (AVX2 has `AVX2_POSITIONS`).
const POSITIONS: usize = 8;

/// AVX2 has half of AVX-512's registers, and half as wide: eight blocks of accumulators are
/// sixteen of its sixteen, and spilled (as `depthwise_channel_last`'s AVX2 pixels).
#[cfg(target_arch = "x86_64")]
const AVX2_POSITIONS: usize = 4;

/// The most output channels this kernel takes: past it gemm's kernels fill up (benches/RESULTS.md).
pub const MAX_CHANNELS: usize = 16;

/// A 1×1 convolution's weights, input channels × output channels (row-major).
pub struct Narrow<'a> {
    pub weights: &'a [f32],
    pub in_channels: usize,
}

impl Narrow<'_> {
    fn out_channels(&self) -> usize {
        self.weights.len() / self.in_channels
    }

    /// `out` (positions × output channels) = `data` (positions × input channels) · weights.
    pub fn run(&self, data: &[f32], out: &mut [f32]) {
        // What makes every read and write of `block` in bounds.
        let (cin, cout) = (self.in_channels, self.out_channels());
        assert!(cin > 0 && cout > 0 && self.weights.len() == cin * cout, "weights of {cin} × {cout}");
        assert!(
            out.len().is_multiple_of(cout) && data.len() == out.len() / cout * cin,
            "data and output sizes"
        );
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 (and so FMA), checked just above.
            unsafe { self.run_avx512(data, out) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { self.run_avx2_fma(data, out) };
            return;
        }
        // aarch64's NEON has a fused multiply-add in its baseline; x86_64's SSE2 has none, where
        // `mul_add` would be a library call.
        self.run_with::<{ cfg!(target_arch = "aarch64") }, POSITIONS>(data, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    fn run_avx512(&self, data: &[f32], out: &mut [f32]) {
        self.run_with::<true, POSITIONS>(data, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn run_avx2_fma(&self, data: &[f32], out: &mut [f32]) {
        self.run_with::<true, AVX2_POSITIONS>(data, out)
    }

    #[inline(always)]
    fn run_with<const FMA: bool, const N: usize>(&self, data: &[f32], out: &mut [f32]) {
        let positions = out.len() / self.out_channels();
        let mut p = 0;
        while p + N <= positions {
            self.channels_of::<FMA, N>(data, p, out);
            p += N;
        }
        while p < positions {
            self.channels_of::<FMA, 1>(data, p, out);
            p += 1;
        }
    }

    /// Every output channel of the `N` positions from `p` on.
    #[inline(always)]
    fn channels_of<const FMA: bool, const N: usize>(&self, data: &[f32], p: usize, out: &mut [f32]) {
        let cout = self.out_channels();
        let mut start = 0;
        while start + BLOCK <= cout {
            self.block::<BLOCK, FMA, N>(data, p, start, out);
            start += BLOCK;
        }
        while start + 8 <= cout {
            self.block::<8, FMA, N>(data, p, start, out);
            start += 8;
        }
        while start < cout {
            self.block::<1, FMA, N>(data, p, start, out);
            start += 1;
        }
    }

    /// Output channels `start..start + B` of the `N` positions from `p` on: each input channel's
    /// value times its weights, added up in input channel order.
    #[inline(always)]
    fn block<const B: usize, const FMA: bool, const N: usize>(
        &self,
        data: &[f32],
        p: usize,
        start: usize,
        out: &mut [f32],
    ) {
        let (cin, cout) = (self.in_channels, self.out_channels());
        // Within `run`'s checks, as `channels_of` and `run_with` step, these hold; they are
        // tested (debug builds) rather than checked at each read.
        debug_assert!(start + B <= cout && (p + N) * cout <= out.len() && (p + N) * cin <= data.len());
        // SAFETY: as above, every block and value read or written is inside its slice.
        let weights =
            |i: usize| unsafe { &*(self.weights.as_ptr().add(i * cout + start) as *const [f32; B]) };
        let value = |j: usize, i: usize| unsafe { *data.get_unchecked((p + j) * cin + i) };
        let mut acc = [[0f32; B]; N];
        for i in 0..cin {
            let w = weights(i);
            for (j, acc) in acc.iter_mut().enumerate() {
                let x = value(j, i);
                for l in 0..B {
                    acc[l] = if FMA { x.mul_add(w[l], acc[l]) } else { acc[l] + x * w[l] };
                }
            }
        }
        for (j, acc) in acc.iter().enumerate() {
            // SAFETY: as above.
            let out = unsafe { &mut *(out.as_mut_ptr().add((p + j) * cout + start) as *mut [f32; B]) };
            *out = *acc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every build this CPU runs, on positions and channel counts off the blocks.
        #[test]
        fn matches_the_definition(
            positions in 1usize..30,
            cin in 1usize..40,
            cout in prop::sample::select(vec![1usize, 3, 8, 9, 16, 17, 24, 33]),
            seed in any::<u64>(),
        ) {
            let values = crate::backend::tract_ops::tests::values;
            let (data, weights) = (values(positions * cin, seed), values(cin * cout, seed ^ 1));
            let op = Narrow { weights: &weights, in_channels: cin };
            type Build = fn(&Narrow, &[f32], &mut [f32]);
            #[allow(unused_mut)] // x86_64 adds its builds below.
            let mut builds: Vec<(&str, Build)> = vec![
                ("picked", |op, d, o| op.run(d, o)),
                ("portable", |op, d, o| op.run_with::<false, POSITIONS>(d, o)),
                ("fused multiply-add", |op, d, o| op.run_with::<true, POSITIONS>(d, o)),
            ];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has AVX2 and FMA.
                    builds.push(("AVX2", |op, d, o| unsafe { op.run_avx2_fma(d, o) }));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512.
                    builds.push(("AVX-512", |op, d, o| unsafe { op.run_avx512(d, o) }));
                }
            }
            for (name, build) in builds {
                let mut out = vec![f32::NAN; positions * cout];
                build(&op, &data, &mut out);
                for p in 0..positions {
                    for o in 0..cout {
                        let e: f32 = (0..cin).map(|i| data[p * cin + i] * weights[i * cout + o]).sum();
                        let a = out[p * cout + o];
                        prop_assert!((a - e).abs() <= 1e-5 * (1.0 + e.abs()), "{name}, position {p}, channel {o}: {a} against {e}");
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "data and output sizes")]
    fn refuses_data_of_another_size() {
        let weights = [1.0; 6];
        Narrow { weights: &weights, in_channels: 3 }.run(&[1.0; 5], &mut [0.0; 4]);
    }
}
