//! One channel plane of a depthwise 2-D convolution, in f32. The plane is first copied, padded
//! and split by stride phase into a scratch buffer, so that every kernel tap reads a contiguous
//! run of it: the whole output plane is then blocks of fused multiply-adds the compiler
//! vectorizes, with no border test inside. tract's own depthwise kernel walks the taps one output
//! point at a time, which took half of MobileNetV2's time (benches/RESULTS.md).

use std::ops::Range;

use super::clip;

/// Where one plane's taps read, and what an output row needs. Built once per convolution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlaneGeometry {
    /// Input height and width.
    pub input: [usize; 2],
    /// Output height and width.
    pub output: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Zero rows above and zero columns left of the input.
    pub pad_before: [usize; 2],
}

/// Outputs computed together, in registers: four 8-lane vectors keep four independent
/// multiply-add chains in flight. The end of a plane goes by 8.
const WIDE: usize = 32;
const NARROW: usize = 8;

// The scratch holds the padded plane split by stride phase: for each row phase (padded rows p,
// p + sy, …) and, inside it, each column phase (padded columns q, q + sx, …), a block of rows of
// `phase_len` values. Output row y then reads, for every tap, row y + (offset) of one block: all
// rows start `phase_len` apart, so the output plane, with the columns between its rows, is one
// run that starts at each tap's offset.
impl PlaneGeometry {
    /// Rows of the padded input that the output reads.
    fn padded_rows(&self) -> usize {
        (self.output[0] - 1) * self.stride[0] + (self.kernel[0] - 1) * self.dilation[0] + 1
    }

    /// Rows of one row phase.
    fn phase_rows(&self) -> usize {
        self.padded_rows().div_ceil(self.stride[0])
    }

    /// Length of one phase row: whole narrow blocks of outputs, plus the furthest a tap reaches
    /// to the right.
    fn phase_len(&self) -> usize {
        self.output[1].div_ceil(NARROW) * NARROW + (self.kernel[1] - 1) * self.dilation[1] / self.stride[1]
    }

    /// Where the phases end: one spare padded row follows (where `fill` splits a row into its
    /// column phases).
    fn phases_len(&self) -> usize {
        self.stride[0] * self.stride[1] * self.phase_rows() * self.phase_len()
    }

    /// Floats of the scratch that taps read: the phases, the spare row (which the run's dropped
    /// columns read past the last phase), and a wide block's slack.
    fn read_len(&self) -> usize {
        self.phases_len() + self.stride[1] * self.phase_len() + WIDE
    }

    /// Floats of scratch one plane needs: what taps read, then the output run.
    pub fn scratch_len(&self) -> usize {
        self.read_len() + self.run_len()
    }

    fn run_len(&self) -> usize {
        (self.output[0] * self.phase_len()).div_ceil(NARROW) * NARROW
    }

    /// Offset in the scratch of each tap's value for output 0, in the kernel's order.
    pub fn tap_offsets(&self) -> Vec<usize> {
        let ([kh, kw], [sy, sx], [dy, dx]) = (self.kernel, self.stride, self.dilation);
        let (rows, len) = (self.phase_rows(), self.phase_len());
        (0..kh * kw)
            .map(|t| {
                let (row, column) = ((t / kw) * dy, (t % kw) * dx);
                ((row % sy * sx + column % sx) * rows + row / sy) * len + column / sx
            })
            .collect()
    }

    /// Copies `plane` (input height × width), clipped to `clip`, into `scratch`'s phases. The
    /// padding is never written: `scratch` must start zeroed, and then holds one plane after
    /// another (a clip before a convolution leaves its padding zero).
    pub fn fill(&self, plane: &[f32], clip: (f32, f32), scratch: &mut [f32]) {
        let [h, w] = self.input;
        let ([sy, sx], rows, len) = (self.stride, self.phase_rows(), self.phase_len());
        let [top, left] = self.pad_before;
        let (phases, spare) = scratch.split_at_mut(self.phases_len());
        let spare = &mut spare[..sx * len];
        // Input row y is padded row r, whose column phase q is row r / sy of block (r % sy, q).
        for (y, row) in plane.chunks_exact(w).take(h).enumerate() {
            let r = y + top;
            if r >= self.padded_rows() {
                break;
            }
            let at = |q: usize| ((r % sy * sx + q) * rows + r / sy) * len;
            if sx == 1 {
                place_row(row, left, clip, &mut phases[at(0)..][..len]);
                continue;
            }
            // The row padded in the spare row, then dealt out to the phases, both passes
            // contiguous; a stride of 2 (most strided convolutions) as pairs, which vectorizes.
            place_row(row, left, clip, spare);
            if sx == 2 {
                let (even, odd) = phases.split_at_mut(at(1));
                for ((e, o), pair) in
                    even[at(0)..][..len].iter_mut().zip(&mut odd[..len]).zip(spare.chunks_exact(2))
                {
                    (*e, *o) = (pair[0], pair[1]);
                }
            } else {
                for (j, columns) in spare.chunks_exact(sx).enumerate() {
                    for (q, &value) in columns.iter().enumerate() {
                        phases[at(q) + j] = value;
                    }
                }
            }
        }
    }

    /// What the outputs of rows `rows` read at one tap (its offset from `tap_offsets`) of the
    /// plane `fill` left in `scratch`, into `out` (rows × output width): a band of one row of an
    /// im2col matrix.
    pub fn gather(&self, scratch: &[f32], tap_offset: usize, rows: Range<usize>, out: &mut [f32]) {
        let wo = self.output[1];
        for (y, row) in rows.zip(out.chunks_exact_mut(wo)) {
            copy_row(&scratch[tap_offset + y * self.phase_len()..][..wo], row);
        }
    }

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

/// `row`, clipped, after the `left` padding columns of `out` (as much of it as `out` holds).
fn place_row(row: &[f32], left: usize, clip: (f32, f32), out: &mut [f32]) {
    let left = left.min(out.len());
    let n = row.len().min(out.len() - left);
    let (row, out) = (&row[..n], &mut out[left..left + n]);
    // Without a clip, a plain copy: `max` with -∞ would turn a NaN into -∞.
    if clip == clip::NONE {
        copy_row(row, out);
    } else {
        for (o, &v) in out.iter_mut().zip(row) {
            *o = clip::clamp(v, clip);
        }
    }
}

/// `dst.copy_from_slice(src)`, inline for rows of 4 to 64 values: on small planes (MobileNet's
/// 14 × 14 and 7 × 7) a call to `memcpy` for each row was a large share of a plane's work.
#[inline(always)]
fn copy_row(src: &[f32], dst: &mut [f32]) {
    match src.len() {
        8..=64 => copy_blocks::<8>(src, dst),
        4..8 => copy_blocks::<4>(src, dst),
        _ => dst.copy_from_slice(src),
    }
}

/// Copies blocks of `B` values, the last one overlapping the one before; `src` holds `B` at least.
#[inline(always)]
fn copy_blocks<const B: usize>(src: &[f32], dst: &mut [f32]) {
    let n = src.len();
    assert_eq!(n, dst.len(), "copy between rows of different lengths");
    let mut start = 0;
    loop {
        let at = start.min(n - B);
        let block: [f32; B] = src[at..at + B].try_into().expect("B values");
        dst[at..at + B].copy_from_slice(&block);
        if at == n - B {
            return;
        }
        start += B;
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
    use proptest::prelude::*;

    /// The definition, one output point at a time.
    fn reference(g: &PlaneGeometry, plane: &[f32], kernel: &[f32], bias: f32) -> Vec<f32> {
        let ([h, w], [ho, wo], [kh, kw]) = (g.input, g.output, g.kernel);
        let mut out = vec![0.0; ho * wo];
        for oy in 0..ho {
            for ox in 0..wo {
                let mut sum = bias as f64;
                for ky in 0..kh {
                    for kx in 0..kw {
                        let iy = (oy * g.stride[0] + ky * g.dilation[0]) as isize - g.pad_before[0] as isize;
                        let ix = (ox * g.stride[1] + kx * g.dilation[1]) as isize - g.pad_before[1] as isize;
                        if (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix) {
                            sum += (kernel[ky * kw + kx] * plane[iy as usize * w + ix as usize]) as f64;
                        }
                    }
                }
                out[oy * wo + ox] = sum as f32;
            }
        }
        out
    }

    fn geometry() -> impl Strategy<Value = PlaneGeometry> {
        (1usize..40, 1usize..70, 1usize..6, 1usize..6, 1usize..4, 1usize..4, 1usize..3, 1usize..3)
            .prop_flat_map(|(h, w, kh, kw, sy, sx, dy, dx)| {
                (Just((h, w, kh, kw, sy, sx, dy, dx)), 0..=kh, 0..=kw, 0..=kh, 0..=kw)
            })
            .prop_filter_map("output must not be empty", |((h, w, kh, kw, sy, sx, dy, dx), t, l, b, r)| {
                let span = |k: usize, d: usize| (k - 1) * d + 1;
                let (ph, pw) = (h + t + b, w + l + r);
                if ph < span(kh, dy) || pw < span(kw, dx) {
                    return None;
                }
                let output = [(ph - span(kh, dy)) / sy + 1, (pw - span(kw, dx)) / sx + 1];
                Some(PlaneGeometry {
                    input: [h, w],
                    output,
                    kernel: [kh, kw],
                    stride: [sy, sx],
                    dilation: [dy, dx],
                    pad_before: [t, l],
                })
            })
    }

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
