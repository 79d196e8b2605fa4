//! Channel-last depthwise 2-D convolutions (NHWC, HWC), in f32, one output row at a time: each
//! output pixel is its channels at once, a block of accumulators summed over the taps that land
//! in the image, so the vectors run along the channels and a stride or the padding costs
//! nothing. The channel-first kernel (`depthwise_kernel`) vectorizes along a plane instead,
//! which small planes (MobileNet's 14 × 14 and 7 × 7) and strides fill poorly.

use super::clip;
use super::planes::PlaneGeometry;

/// Channels summed together: one AVX-512 vector, two AVX2 or four NEON. A pixel's channels go
/// by 16, then one by one; with `PIXELS`, four blocks of accumulators, which stay in AVX-512's
/// and NEON's 32 registers (AVX2 has `AVX2_PIXELS`).
const BLOCK: usize = 16;

/// Output pixels of a row computed together, in the interior: each tap's weights are read once
/// for all of them.
const PIXELS: usize = 4;

/// AVX2's 16 registers do not hold `PIXELS` blocks of accumulators with a clip's bounds: the
/// compiler then spills them and falls back to 4-lane vectors, several times slower than two
/// pixels at a time (benches/RESULTS.md, MobileNetV2 on an AVX2 machine).
#[cfg(target_arch = "x86_64")]
const AVX2_PIXELS: usize = 2;

/// A channel-last depthwise convolution's constants.
pub struct ChannelLast<'a> {
    pub geometry: &'a PlaneGeometry,
    /// Taps, tap-major: kernel height × kernel width × channels.
    pub kernel: &'a [f32],
    /// One per channel.
    pub bias: &'a [f32],
    /// Bounds of a folded ReLU or ReLU6 before the convolution (applied to each value read) and
    /// after it; `clip::NONE` without one.
    pub input_clip: (f32, f32),
    pub clip: (f32, f32),
}

/// Where one tap reads for an output pixel: its weights' offset in the kernel and its values'
/// in the image (relative to the pixel's `base`).
type Tap = (usize, usize);

impl ChannelLast<'_> {
    fn channels(&self) -> usize {
        self.bias.len()
    }

    /// Output row `y` of `image` (input height × width × channels) into `out` (output width ×
    /// channels). `taps` is scratch for the row's taps, kept between calls.
    pub fn row(&self, image: &[f32], y: usize, taps: &mut Vec<Tap>, out: &mut [f32]) {
        // What makes every read and write of `pixels` in bounds: each tap it is given is a
        // pixel of the image and of the kernel, each output pixel one of the row.
        let (g, c) = (self.geometry, self.channels());
        assert!(y < g.output[0], "output row {y} of {}", g.output[0]);
        assert_eq!(image.len(), g.input[0] * g.input[1] * c, "image size");
        assert_eq!(self.kernel.len(), g.kernel[0] * g.kernel[1] * c, "kernel size");
        assert_eq!(out.len(), g.output[1] * c, "output row size");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 (and so FMA), checked just above.
            unsafe { self.row_avx512(image, y, taps, out) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { self.row_avx2_fma(image, y, taps, out) };
            return;
        }
        // aarch64's NEON has a fused multiply-add in its baseline; x86_64's SSE2 has none, where
        // `mul_add` would be a library call.
        self.row_clipped::<{ cfg!(target_arch = "aarch64") }, PIXELS>(image, y, taps, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    fn row_avx512(&self, image: &[f32], y: usize, taps: &mut Vec<Tap>, out: &mut [f32]) {
        self.row_clipped::<true, PIXELS>(image, y, taps, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn row_avx2_fma(&self, image: &[f32], y: usize, taps: &mut Vec<Tap>, out: &mut [f32]) {
        self.row_clipped::<true, AVX2_PIXELS>(image, y, taps, out)
    }

    /// `row_with`, clipping each value read where there is a clip before.
    #[inline(always)]
    fn row_clipped<const FMA: bool, const P: usize>(
        &self,
        image: &[f32],
        y: usize,
        taps: &mut Vec<Tap>,
        out: &mut [f32],
    ) {
        match self.input_clip != clip::NONE {
            true => self.row_with::<FMA, true, P>(image, y, taps, out),
            false => self.row_with::<FMA, false, P>(image, y, taps, out),
        }
    }

    /// With `CLIP`, each value read is clipped to `input_clip` (without, a NaN stays a NaN); `P`
    /// interior pixels at a time.
    #[inline(always)]
    fn row_with<const FMA: bool, const CLIP: bool, const P: usize>(
        &self,
        image: &[f32],
        y: usize,
        taps: &mut Vec<Tap>,
        out: &mut [f32],
    ) {
        let g = self.geometry;
        let c = self.channels();
        let ([h, w], [kh, kw], [sy, sx], [dy, dx], [top, left]) =
            (g.input, g.kernel, g.stride, g.dilation, g.pad_before);
        let inside = |at: usize, pad: usize, size: usize| at >= pad && at - pad < size;
        // The kernel rows inside the image, with the image row each reads.
        let rows = || {
            (0..kh)
                .map(|ky| (ky, y * sy + ky * dy))
                .filter(|&(_, r)| inside(r, top, h))
                .map(|(ky, r)| (ky, r - top))
        };
        // Columns whose every tap is inside the image read the same taps, shifted: the interior.
        // Their taps come first in `taps`, then those of one pixel at the border at a time.
        let span = (kw - 1) * dx;
        let first = left.div_ceil(sx);
        let interior = |x: usize| x >= first && x * sx - left + span < w;
        taps.clear();
        for (ky, iy) in rows() {
            for kx in 0..kw {
                taps.push(((ky * kw + kx) * c, (iy * w + kx * dx) * c));
            }
        }
        let interior_taps = taps.len();
        let pixels = out.len() / c;
        let mut x = 0;
        while x < pixels {
            if x + P <= pixels && interior(x) && interior(x + P - 1) {
                let bases = std::array::from_fn(|j| ((x + j) * sx - left) * c);
                self.channels_of::<FMA, CLIP, P>(image, &taps[..interior_taps], bases, x, out);
                x += P;
                continue;
            }
            // A pixel whose taps reach into the padding reads only those inside.
            taps.truncate(interior_taps);
            for (ky, iy) in rows() {
                for kx in 0..kw {
                    let column = x * sx + kx * dx;
                    if inside(column, left, w) {
                        taps.push(((ky * kw + kx) * c, (iy * w + column - left) * c));
                    }
                }
            }
            self.channels_of::<FMA, CLIP, 1>(image, &taps[interior_taps..], [0], x, out);
            x += 1;
        }
    }

    /// Every channel of the `N` output pixels from `x` on, `BLOCK` channels at a time.
    #[inline(always)]
    fn channels_of<const FMA: bool, const CLIP: bool, const N: usize>(
        &self,
        image: &[f32],
        taps: &[Tap],
        bases: [usize; N],
        x: usize,
        out: &mut [f32],
    ) {
        let c = self.channels();
        let mut start = 0;
        while start + BLOCK <= c {
            self.pixels::<BLOCK, FMA, CLIP, N>(image, taps, bases, start, x, out);
            start += BLOCK;
        }
        while start < c {
            self.pixels::<1, FMA, CLIP, N>(image, taps, bases, start, x, out);
            start += 1;
        }
    }

    /// Channels `start..start + B` of the `N` output pixels from `x` on: the bias, every tap's
    /// values (at `bases[j]` plus the tap's offset, for pixel j) multiplied by its weights and
    /// added, then clipped.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // `channels_of`'s loop state, passed as it is
    fn pixels<const B: usize, const FMA: bool, const CLIP: bool, const N: usize>(
        &self,
        image: &[f32],
        taps: &[Tap],
        bases: [usize; N],
        start: usize,
        x: usize,
        out: &mut [f32],
    ) {
        let c = self.channels();
        // Within `row`'s checks, as `row_with` builds the taps, these hold; they are tested
        // (debug builds) rather than checked at each read, which cost more than the sums.
        debug_assert!(taps
            .iter()
            .all(|&(w, v)| w + c <= self.kernel.len() && bases[N - 1] + v + c <= image.len()));
        debug_assert!(start + B <= c && (x + N) * c <= out.len());
        // SAFETY: as above, every block read or written is inside its slice.
        let block = |values: &[f32], at: usize| unsafe { &*(values.as_ptr().add(at) as *const [f32; B]) };
        let mut acc = [*block(self.bias, start); N];
        for &(weights, values) in taps {
            let weights = block(self.kernel, weights + start);
            for j in 0..N {
                self.multiply_add::<B, FMA, CLIP>(
                    &mut acc[j],
                    weights,
                    block(image, bases[j] + values + start),
                );
            }
        }
        for (j, acc) in acc.iter().enumerate() {
            // SAFETY: as above.
            let out = unsafe { &mut *(out.as_mut_ptr().add((x + j) * c + start) as *mut [f32; B]) };
            for i in 0..B {
                out[i] = clip::clamp(acc[i], self.clip);
            }
        }
    }

    /// `acc += weights × values`, `values` clipped with `CLIP`: one vector instruction each.
    #[inline(always)]
    fn multiply_add<const B: usize, const FMA: bool, const CLIP: bool>(
        &self,
        acc: &mut [f32; B],
        weights: &[f32; B],
        values: &[f32; B],
    ) {
        for i in 0..B {
            let v = if CLIP { clip::clamp(values[i], self.input_clip) } else { values[i] };
            acc[i] = if FMA { weights[i].mul_add(v, acc[i]) } else { acc[i] + weights[i] * v };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::tract_ops::planes::tests::{geometry, reference};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_the_definition(
            g in geometry(),
            channels in prop::sample::select(vec![1usize, 3, 16, 17, 64, 83, 144]),
            seed in any::<u64>(),
            clipped in any::<bool>(),
        ) {
            let values = crate::backend::tract_ops::tests::values;
            let ([h, w], [ho, wo], taps) = (g.input, g.output, g.kernel[0] * g.kernel[1]);
            let image = values(h * w * channels, seed);
            let kernel = values(taps * channels, seed ^ 1);
            let bias = values(channels, seed ^ 2);
            let input_clip = if clipped { (-1.0, 1.5) } else { clip::NONE };
            let op = ChannelLast { geometry: &g, kernel: &kernel, bias: &bias, input_clip, clip: clip::NONE };
            // Every build this CPU can run, not only the one `row` picks.
            type Build = fn(&ChannelLast, &[f32], usize, &mut Vec<Tap>, &mut [f32]);
            #[allow(unused_mut)] // x86_64 adds its builds below.
            let mut builds: Vec<(&str, Build)> = vec![
                ("portable", |op, i, y, t, o| op.row_clipped::<false, PIXELS>(i, y, t, o)),
                ("fused multiply-add", |op, i, y, t, o| op.row_clipped::<true, PIXELS>(i, y, t, o)),
            ];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has AVX2 and FMA.
                    builds.push(("AVX2", |op, i, y, t, o| unsafe { op.row_avx2_fma(i, y, t, o) }));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512.
                    builds.push(("AVX-512", |op, i, y, t, o| unsafe { op.row_avx512(i, y, t, o) }));
                }
            }
            for (name, build) in builds {
                let mut out = vec![f32::NAN; ho * wo * channels];
                let mut scratch = Vec::new();
                for (y, row) in out.chunks_exact_mut(wo * channels).enumerate() {
                    build(&op, &image, y, &mut scratch, row);
                }
                for c in 0..channels {
                    let plane: Vec<f32> =
                        (0..h * w).map(|i| clip::clamp(image[i * channels + c], input_clip)).collect();
                    let filter: Vec<f32> = (0..taps).map(|t| kernel[t * channels + c]).collect();
                    let expected = reference(&g, &plane, &filter, bias[c]);
                    for (i, e) in expected.iter().enumerate() {
                        let a = out[i * channels + c];
                        prop_assert!((a - e).abs() <= 1e-5 * (1.0 + e.abs()), "{name}, channel {c}, output {i}: {a} against {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn clips_after_and_leaves_a_nan_unfinite_without_a_clip() {
        let g = PlaneGeometry {
            input: [1, 2],
            output: [1, 2],
            kernel: [1, 1],
            stride: [1, 1],
            dilation: [1, 1],
            pad_before: [0, 0],
        };
        let bias = [0.5, 0.0];
        let op = ChannelLast {
            geometry: &g,
            kernel: &[1.0, 1.0],
            bias: &bias,
            input_clip: clip::NONE,
            clip: (0.0, 6.0),
        };
        let mut out = [0.0; 4];
        op.row(&[-2.0, f32::NAN, 9.0, 1.0], 0, &mut Vec::new(), &mut out);
        assert_eq!(out[..2], [0.0, 0.0], "ReLU6 of -1.5, and a NaN the clip turns into its low bound");
        assert_eq!(out[2..], [6.0, 1.0]);
        // As the channel-first kernel: the unbounded clip makes a NaN -∞, which the backend's
        // check of the outputs reports as it does a NaN.
        let unclipped = ChannelLast { clip: clip::NONE, ..op };
        unclipped.row(&[-2.0, f32::NAN, 9.0, 1.0], 0, &mut Vec::new(), &mut out);
        assert!(!out[1].is_finite(), "{out:?}");
    }
}
