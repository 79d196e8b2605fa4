//! What edgert's plane operators (depthwise and dense convolutions, max pooling) share: a plane
//! copied, padded and split by stride phase into a scratch buffer (`PlaneGeometry`), so that every
//! kernel tap reads a contiguous run of it; reading a tract `Conv`'s parts; and making an output
//! tensor plane by plane.

use std::ops::Range;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, PoolSpec};

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
pub(super) const WIDE: usize = 32;
pub(super) const NARROW: usize = 8;

// The scratch holds the padded plane split by stride phase: for each row phase (padded rows p,
// p + sy, …) and, inside it, each column phase (padded columns q, q + sx, …), a block of rows of
// `phase_len` values. Output row y then reads, for every tap, row y + (offset) of one block: all
// rows start `phase_len` apart, so the output plane, with the columns between its rows, is one
// run that starts at each tap's offset.
impl PlaneGeometry {
    /// Rows of the padded input that the output reads.
    pub(super) fn padded_rows(&self) -> usize {
        (self.output[0] - 1) * self.stride[0] + (self.kernel[0] - 1) * self.dilation[0] + 1
    }

    /// Rows of one row phase.
    pub(super) fn phase_rows(&self) -> usize {
        self.padded_rows().div_ceil(self.stride[0])
    }

    /// Length of one phase row: whole narrow blocks of outputs, plus the furthest a tap reaches
    /// to the right.
    pub(super) fn phase_len(&self) -> usize {
        self.output[1].div_ceil(NARROW) * NARROW + (self.kernel[1] - 1) * self.dilation[1] / self.stride[1]
    }

    /// Where the phases end: one spare padded row follows (where `fill` splits a row into its
    /// column phases).
    pub(super) fn phases_len(&self) -> usize {
        self.stride[0] * self.stride[1] * self.phase_rows() * self.phase_len()
    }

    /// Floats of the scratch that taps read: the phases, the spare row (which the run's dropped
    /// columns read past the last phase), and a wide block's slack.
    pub(super) fn read_len(&self) -> usize {
        self.phases_len() + self.stride[1] * self.phase_len() + WIDE
    }

    /// Floats of scratch one plane needs: what taps read, then the output run.
    pub fn scratch_len(&self) -> usize {
        self.read_len() + self.run_len()
    }

    pub(super) fn run_len(&self) -> usize {
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
pub(super) fn copy_row(src: &[f32], dst: &mut [f32]) {
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

/// What edgert's convolutions read of a `Conv`.
pub struct ConvParts<'a> {
    pub geometry: PlaneGeometry,
    pub batch: usize,
    pub output_shape: &'a [usize],
    pub kernel: &'a Arc<Tensor>,
    pub bias: &'a Arc<Tensor>,
}

/// The parts of an f32 2-D `Conv` (channel-first or channel-last) with concrete shapes and a
/// constant f32 kernel and bias; None for any other.
pub fn conv_parts<'a>(
    model: &'a TypedModel,
    node: &'a TypedNode,
    conv: &Conv,
) -> TractResult<Option<ConvParts<'a>>> {
    let spec = &conv.pool_spec;
    rule_if!(conv.q_params.is_none() && node.inputs.len() == 3);
    rule_if!(spec.rank() == 2);
    let facts = model.node_input_facts(node.id)?;
    rule_if!(facts[0].datum_type == f32::datum_type());
    rule_if_some!(input_shape = facts[0].shape.as_concrete());
    rule_if_some!(kernel = facts[1].konst.as_ref());
    rule_if_some!(bias = facts[2].konst.as_ref());
    rule_if!(kernel.datum_type() == f32::datum_type() && bias.datum_type() == f32::datum_type());
    rule_if_some!(output_shape = model.outlet_fact(node.id.into())?.shape.as_concrete());

    rule_if_some!((geometry, batch) = plane_geometry(spec, input_shape)?);
    rule_if!(
        output_shape.iter().product::<usize>()
            == batch * conv.output_channels() * geometry.output.iter().product::<usize>()
    );
    Ok(Some(ConvParts { geometry, batch, output_shape, kernel, bias }))
}

/// A new f32 tensor of `shape` made plane by plane from `input`: its planes of `plane_out` values
/// match `input`'s of `plane_in` one for one, and `fill(input's values, the new tensor's)` must
/// write every value.
pub fn new_planes(
    input: &TValue,
    shape: &[usize],
    [plane_in, plane_out]: [usize; 2],
    fill: impl FnOnce(&[f32], &mut [f32]) -> TractResult<()>,
) -> TractResult<Tensor> {
    let view = input.try_as_plain_ram()?;
    let input = view.as_slice::<f32>()?;
    // SAFETY: `fill` writes every value before anything reads it.
    let mut output = unsafe { Tensor::uninitialized::<f32>(shape)? };
    {
        let mut out = output.try_as_plain_ram_mut()?;
        let out = out.as_slice_mut::<f32>()?;
        ensure!(
            input.len() / plane_in == out.len() / plane_out,
            "input and output hold different plane counts"
        );
        fill(input, out)?;
    }
    Ok(output)
}

/// Where a 2-D pooling or convolution over `input_shape` reads, and its batch size;
/// None for empty planes or kernels and a stride or dilation of 0, left to tract's checks.
pub fn plane_geometry(spec: &PoolSpec, input_shape: &[usize]) -> TractResult<Option<(PlaneGeometry, usize)>> {
    let shape = spec.data_format.shape(input_shape)?;
    let hw = shape.hw_dims();
    let padding = spec.computed_padding(hw);
    let geometry = PlaneGeometry {
        input: [hw[0], hw[1]],
        output: [padding[0].convoluted, padding[1].convoluted],
        kernel: [spec.kernel_shape[0], spec.kernel_shape[1]],
        stride: [spec.stride(0), spec.stride(1)],
        dilation: [spec.dilation(0), spec.dilation(1)],
        pad_before: [padding[0].pad_before, padding[1].pad_before],
    };
    let sizes = [geometry.input, geometry.output, geometry.kernel, geometry.stride, geometry.dilation];
    rule_if!(sizes.iter().flatten().all(|&d| d > 0));
    Ok(Some((geometry, *shape.n().unwrap_or(&1))))
}

/// `values` (rows × columns, row-major) transposed: weights laid out for a kernel.
pub fn transpose(values: &[f32], rows: usize, columns: usize) -> Vec<f32> {
    (0..rows * columns).map(|i| values[(i % rows) * columns + i / rows]).collect()
}

/// One bias value per channel from a bias of one value or one per channel; None otherwise.
pub fn bias_per_channel(bias: &Tensor, channels: usize) -> TractResult<Option<Vec<f32>>> {
    let bias = bias.try_as_plain_ram()?;
    let bias = bias.as_slice::<f32>()?;
    Ok(match bias.len() {
        1 => Some(vec![bias[0]; channels]),
        n if n == channels => Some(bias.to_vec()),
        _ => None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::PlaneGeometry;
    use proptest::prelude::*;

    /// The definition, one output point at a time.
    pub fn reference(g: &PlaneGeometry, plane: &[f32], kernel: &[f32], bias: f32) -> Vec<f32> {
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

    pub fn geometry() -> impl Strategy<Value = PlaneGeometry> {
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
}
