//! Integer products for the convolutions of INT8 QDQ models: 8-bit weights times 8-bit
//! activations, summed exactly in i32, on the dot-product instructions (`SDOT`, ARMv8.2: every
//! Orin and Xavier core), where one instruction does 16 multiply-adds and an f32 `FMLA` 4. Both
//! sides come from the f32 values an INT8 QDQ model computes between its fake-quantize steps:
//! the weights are its dequantized constants (integers times a scale per output channel, found
//! again here), the data the output of a `FakeQuantize` (integers times its scale), so the
//! integers are recovered exactly and the product equals the f32 one but for the f32 rounding
//! the integer sum does not make.

/// Output channels a kernel computes at once.
const ROWS: usize = 8;
/// Positions a kernel computes at once.
const COLUMNS: usize = 8;
/// Values along the depth each dot product takes.
const GROUP: usize = 4;

/// Where the values a fake-quantize step or an 8-bit activation writes lie: `scale · (q − offset)`
/// for an i8 `q`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub scale: f32,
    pub offset: i32,
}

/// Whether this processor has the dot-product instructions the integer products need to be
/// faster than f32 ones (elsewhere a model keeps its f32 products).
pub fn has_dot_product() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("dotprod")
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

/// A product's constant side as integers: `weights[o][i] = scales[o] · q[o][i]`, packed for the
/// kernels: blocks of `ROWS` output channels, in each the `GROUP` values of every row for one
/// group of the depth after another (rows and depth padded with zeros).
#[derive(Debug, Clone, PartialEq)]
pub struct IntegerWeights {
    rows: usize,
    depth: usize,
    packed: Vec<i8>,
    /// Σ q[o][i] of each output channel, to take the data's offset away once per output.
    sums: Vec<i32>,
    scales: Vec<f32>,
}

impl IntegerWeights {
    /// `weights` (`rows` × `depth`, row-major) as integers in i8's range times a scale per row
    /// (per-channel quantization; per-tensor is the same scale in each); None unless every weight
    /// is such an integer within f32 rounding, or where a sum could leave i32.
    pub fn new(weights: &[f32], rows: usize, depth: usize) -> Option<IntegerWeights> {
        // Each output, Σ q · (data − offset) with |q| ≤ 128 and |data − offset| ≤ 255, must fit
        // an i32: the sums are then exact however they wrap on the way.
        if rows == 0 || depth == 0 || weights.len() != rows * depth || depth > i32::MAX as usize / (128 * 255)
        {
            return None;
        }
        let (mut q, mut scales) = (Vec::with_capacity(weights.len()), Vec::with_capacity(rows));
        for row in weights.chunks_exact(depth) {
            let (levels, scale) = levels(row)?;
            q.extend(levels);
            scales.push(scale);
        }
        Some(IntegerWeights::packed(&q, rows, depth, scales))
    }

    fn packed(q: &[i8], rows: usize, depth: usize, scales: Vec<f32>) -> IntegerWeights {
        let groups = depth.div_ceil(GROUP);
        let mut packed = vec![0; rows.div_ceil(ROWS) * groups * ROWS * GROUP];
        for (o, row) in q.chunks_exact(depth).enumerate() {
            let block = &mut packed[o / ROWS * groups * ROWS * GROUP..];
            for (i, &v) in row.iter().enumerate() {
                block[(i / GROUP * ROWS + o % ROWS) * GROUP + i % GROUP] = v;
            }
        }
        let sums = q.chunks_exact(depth).map(|row| row.iter().map(|&v| v as i32).sum()).collect();
        IntegerWeights { rows, depth, packed, sums, scales }
    }

    /// `out` (`rows` × `n`, row-major) = these weights · the `n` columns of data `pack_data`
    /// packed on `input`'s grid, back in f32.
    pub fn product(&self, data: &[i8], n: usize, input: Grid, out: &mut [f32]) {
        let groups = self.depth.div_ceil(GROUP);
        let (block_len, column_len) = (groups * ROWS * GROUP, groups * COLUMNS * GROUP);
        assert!(data.len() >= n.div_ceil(COLUMNS) * column_len && out.len() == self.rows * n);
        let dot = has_dot_product();
        let mut tile = [[0i32; COLUMNS]; ROWS];
        for (block, weights) in self.packed.chunks_exact(block_len).enumerate() {
            let first = block * ROWS;
            let rows = ROWS.min(self.rows - first);
            for (c, columns) in data.chunks_exact(column_len).take(n.div_ceil(COLUMNS)).enumerate() {
                tile_of(weights, columns, groups, dot, &mut tile);
                let (at, width) = (c * COLUMNS, COLUMNS.min(n - c * COLUMNS));
                for (r, sums) in tile.iter().take(rows).enumerate() {
                    let o = first + r;
                    // Wrapping: the result fits (`new`), so it is exact.
                    let offset = input.offset.wrapping_mul(self.sums[o]);
                    let scale = input.scale * self.scales[o];
                    let values = sums.map(|sum| sum.wrapping_sub(offset) as f32 * scale);
                    out[o * n + at..][..width].copy_from_slice(&values[..width]);
                }
            }
        }
    }
}

/// `values` as integers in i8's range times one scale: the largest magnitude divided by the
/// level it sits at, 127 or 128 first (symmetric INT8 reaches one or the other), then any lower
/// (a channel that uses less of the range, as under one scale for a whole tensor); None where no
/// level makes every value such an integer.
fn levels(values: &[f32]) -> Option<(Vec<i8>, f32)> {
    let largest = values.iter().fold(0f32, |m, v| m.max(v.abs()));
    if largest == 0.0 && values.iter().all(|&v| v == 0.0) {
        return Some((vec![0; values.len()], 1.0));
    }
    let top = [127, 128].into_iter().chain((1..=126).rev());
    top.map(|level| largest / level as f32).find_map(|scale| Some((on_grid(values, scale)?, scale)))
}

/// `values` divided by `scale`, where each is an integer in i8's range within the f32 rounding of
/// a dequantization (`q · scale`); None otherwise.
fn on_grid(values: &[f32], scale: f32) -> Option<Vec<i8>> {
    let tolerance = scale * 128.0 * 4.0 * f32::EPSILON;
    values
        .iter()
        .map(|&w| {
            let v = (w / scale).round();
            // NaN and infinite weights fail here too.
            ((-128.0..=127.0).contains(&v) && (v * scale - w).abs() <= tolerance).then_some(v as i8)
        })
        .collect()
}

/// Packs `n` columns of `depth` rows of f32 data (row `i` from `values[i * stride..]`), each on
/// `grid`, as the kernels read them: blocks of `COLUMNS` columns, in each the `GROUP` values of
/// every column for one group of the depth after another (padded with zeros), each
/// `round(value / scale) + offset` saturated to i8.
pub fn pack_data(values: &[f32], stride: usize, depth: usize, n: usize, grid: Grid, packed: &mut Vec<i8>) {
    assert!(n > 0 && depth > 0 && (depth - 1) * stride + n <= values.len());
    let groups = depth.div_ceil(GROUP);
    let column_len = groups * COLUMNS * GROUP;
    packed.clear();
    packed.resize(n.div_ceil(COLUMNS) * column_len, 0);
    let (inverse, offset) = (1.0 / grid.scale, grid.offset as f32);
    for (c, block) in packed.chunks_exact_mut(column_len).enumerate() {
        let at = c * COLUMNS;
        let width = COLUMNS.min(n - at);
        for (g, out) in block.chunks_exact_mut(COLUMNS * GROUP).enumerate() {
            let rows = GROUP.min(depth - g * GROUP);
            #[cfg(target_arch = "aarch64")]
            if rows == GROUP && width == COLUMNS {
                let row = |t: usize| &values[(g * GROUP + t) * stride + at..][..COLUMNS];
                pack_group_neon([row(0), row(1), row(2), row(3)], inverse, offset, out);
                continue;
            }
            for t in 0..rows {
                let row = &values[(g * GROUP + t) * stride + at..][..width];
                for (j, &x) in row.iter().enumerate() {
                    out[j * GROUP + t] = quantize(x, inverse, offset);
                }
            }
        }
    }
}

/// `round(x / scale) + offset`, ties to even, saturated to i8 (a `FakeQuantize` writes no NaN).
#[inline(always)]
fn quantize(x: f32, inverse: f32, offset: f32) -> i8 {
    ((x * inverse).round_ties_even() + offset) as i8
}

/// One group of four rows of `COLUMNS` columns, quantized and interleaved: `out[j * 4 + t]` is
/// row `t`'s column `j`. `FCVTNS` rounds ties to even, and the additions and narrowing moves
/// saturate, as `quantize` does.
#[cfg(target_arch = "aarch64")]
fn pack_group_neon(rows: [&[f32]; GROUP], inverse: f32, offset: f32, out: &mut [i8]) {
    use std::arch::aarch64::*;
    assert!(rows.iter().all(|row| row.len() == COLUMNS) && out.len() == COLUMNS * GROUP);
    // SAFETY: NEON is in aarch64's baseline; every row holds 8 values and `out` 32 (above).
    unsafe {
        let (inverse, offset) = (vdupq_n_f32(inverse), vdupq_n_s32(offset as i32));
        let narrow = |row: &[f32]| {
            let level = |at: usize| {
                vqaddq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(row[at..].as_ptr()), inverse)), offset)
            };
            vqmovn_s16(vcombine_s16(vqmovn_s32(level(0)), vqmovn_s32(level(4))))
        };
        let interleaved = int8x8x4_t(narrow(rows[0]), narrow(rows[1]), narrow(rows[2]), narrow(rows[3]));
        vst4_s8(out.as_mut_ptr(), interleaved);
    }
}

/// `tile_dot` where `dot` says the CPU has it, `tile_portable` elsewhere.
fn tile_of(weights: &[i8], data: &[i8], groups: usize, dot: bool, tile: &mut [[i32; COLUMNS]; ROWS]) {
    assert!(weights.len() >= groups * ROWS * GROUP && data.len() >= groups * COLUMNS * GROUP);
    #[cfg(target_arch = "aarch64")]
    if dot {
        // SAFETY: `dot` is `has_dot_product()`, and both blocks hold `groups` groups (above).
        unsafe { tile_dot(weights, data, groups, tile) };
        return;
    }
    let _ = dot;
    tile_portable(weights, data, groups, tile);
}

/// `tile[r][j] = Σ weights · data` over `groups` groups: row `r` of the weights' block and column
/// `j` of the data's.
fn tile_portable(weights: &[i8], data: &[i8], groups: usize, tile: &mut [[i32; COLUMNS]; ROWS]) {
    *tile = [[0; COLUMNS]; ROWS];
    for g in 0..groups {
        let w = &weights[g * ROWS * GROUP..][..ROWS * GROUP];
        let d = &data[g * COLUMNS * GROUP..][..COLUMNS * GROUP];
        for (r, sums) in tile.iter_mut().enumerate() {
            let w = &w[r * GROUP..][..GROUP];
            for (j, sum) in sums.iter_mut().enumerate() {
                let d = &d[j * GROUP..][..GROUP];
                *sum += (0..GROUP).map(|t| w[t] as i32 * d[t] as i32).sum::<i32>();
            }
        }
    }
}

/// `tile_portable` on `SDOT`: each instruction adds four columns' dot products of four values
/// with one row's, 16 accumulators holding the tile.
///
/// # Safety
/// The CPU must have the dot-product instructions, and both `weights` and `data` must hold
/// `groups` groups of 32 values.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon,dotprod")]
unsafe fn tile_dot(weights: &[i8], data: &[i8], groups: usize, tile: &mut [[i32; COLUMNS]; ROWS]) {
    use std::arch::aarch64::*;
    use std::arch::asm;
    debug_assert!(weights.len() >= groups * 32 && data.len() >= groups * 32);
    // `SDOT Vd.4S, Vn.16B, Vm.4B[lane]`: Vd[i] += Σ_t Vn[4i + t] · Vm[4 lane + t]. The intrinsic
    // is not stable in this Rust; the instruction is what it compiles to.
    macro_rules! sdot {
        ($acc:expr, $data:expr, $weights:expr, $lane:literal) => {
            asm!(
                concat!("sdot {acc:v}.4s, {data:v}.16b, {weights:v}.4b[", $lane, "]"),
                acc = inout(vreg) $acc,
                data = in(vreg) $data,
                weights = in(vreg_low16) $weights,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
    }
    let zero = vdupq_n_s32(0);
    let mut acc = [[zero; 2]; ROWS];
    let (mut w, mut d) = (weights.as_ptr(), data.as_ptr());
    for _ in 0..groups {
        // SAFETY: each of the `groups` groups is 32 values of each side (the caller's promise).
        let (d0, d1, w0, w1) =
            unsafe { (vld1q_s8(d), vld1q_s8(d.add(16)), vld1q_s8(w), vld1q_s8(w.add(16))) };
        // SAFETY: the instruction reads and writes registers only.
        unsafe {
            sdot!(acc[0][0], d0, w0, 0);
            sdot!(acc[0][1], d1, w0, 0);
            sdot!(acc[1][0], d0, w0, 1);
            sdot!(acc[1][1], d1, w0, 1);
            sdot!(acc[2][0], d0, w0, 2);
            sdot!(acc[2][1], d1, w0, 2);
            sdot!(acc[3][0], d0, w0, 3);
            sdot!(acc[3][1], d1, w0, 3);
            sdot!(acc[4][0], d0, w1, 0);
            sdot!(acc[4][1], d1, w1, 0);
            sdot!(acc[5][0], d0, w1, 1);
            sdot!(acc[5][1], d1, w1, 1);
            sdot!(acc[6][0], d0, w1, 2);
            sdot!(acc[6][1], d1, w1, 2);
            sdot!(acc[7][0], d0, w1, 3);
            sdot!(acc[7][1], d1, w1, 3);
            (w, d) = (w.add(32), d.add(32));
        }
    }
    for (row, sums) in tile.iter_mut().zip(&acc) {
        // SAFETY: each row of the tile holds 8 i32s.
        unsafe {
            vst1q_s32(row.as_mut_ptr(), sums[0]);
            vst1q_s32(row.as_mut_ptr().add(4), sums[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of values: the same sequence on every run and processor.
    fn values(n: usize, seed: u32) -> impl Iterator<Item = i32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n).map(move |_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as i32
        })
    }

    /// Weights on a per-row grid and data on `grid`, for a product of `rows` × `depth` × `n`.
    fn operands(rows: usize, depth: usize, n: usize, grid: Grid) -> (Vec<i32>, Vec<f32>, Vec<f32>, Vec<f32>) {
        // Each row reaches 127, as a per-channel symmetric quantization's rows do.
        let q: Vec<i32> = values(rows * depth, 1)
            .enumerate()
            .map(|(i, v)| if i % depth == 0 { 127 } else { v.rem_euclid(255) - 127 })
            .collect();
        let scales: Vec<f32> = (0..rows).map(|o| 0.01 + 0.003 * o as f32).collect();
        let weights = q.iter().enumerate().map(|(i, &v)| v as f32 * scales[i / depth]).collect();
        // Data on the grid: (q − offset) · scale for q in i8's range, as a FakeQuantize writes.
        let data = values(depth * n, 2)
            .map(|v| (v.rem_euclid(256) - 128 - grid.offset) as f32 * grid.scale)
            .collect();
        (q, scales, weights, data)
    }

    #[test]
    fn products_equal_the_exact_integer_sums_on_every_shape() {
        let grid = Grid { scale: 0.0173, offset: -5 };
        // Rows, depths and columns around the kernel's blocks and the depth's groups.
        for (rows, depth, n) in [(1, 1, 1), (8, 4, 8), (16, 27, 13), (9, 33, 17), (64, 144, 40), (3, 5, 100)]
        {
            let (q, scales, weights, data) = operands(rows, depth, n, grid);
            let integer = IntegerWeights::new(&weights, rows, depth).expect("weights on a grid");
            let mut packed = vec![];
            pack_data(&data, n, depth, n, grid, &mut packed);
            let mut out = vec![f32::NAN; rows * n];
            integer.product(&packed, n, grid, &mut out);
            for o in 0..rows {
                for p in 0..n {
                    let exact: i64 = (0..depth)
                        .map(|i| q[o * depth + i] as i64 * ((data[i * n + p] / grid.scale).round() as i64))
                        .sum();
                    let expected = exact as f64 * scales[o] as f64 * grid.scale as f64;
                    let got = out[o * n + p] as f64;
                    assert!(
                        (got - expected).abs() <= 1e-5 * expected.abs().max(1e-3),
                        "{rows}×{depth}×{n} at ({o}, {p}): {got} against {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn data_is_read_with_its_stride_and_only_the_columns_asked_for() {
        let grid = Grid { scale: 0.5, offset: 0 };
        let (rows, depth, n, stride) = (8, 6, 5, 11);
        let (_, _, weights, _) = operands(rows, depth, n, grid);
        let integer = IntegerWeights::new(&weights, rows, depth).unwrap();
        // Column j of row i is i + j at stride 11; what lies past the columns is a NaN, never read.
        let mut data = vec![f32::NAN; (depth - 1) * stride + n];
        for i in 0..depth {
            for j in 0..n {
                data[i * stride + j] = (i + j) as f32 * grid.scale;
            }
        }
        let (mut packed, mut out) = (vec![], vec![0.0; rows * n]);
        pack_data(&data, stride, depth, n, grid, &mut packed);
        integer.product(&packed, n, grid, &mut out);
        for o in 0..rows {
            for j in 0..n {
                let expected: f32 =
                    (0..depth).map(|i| weights[o * depth + i] * (i + j) as f32 * grid.scale).sum();
                assert!((out[o * n + j] - expected).abs() <= 1e-4 * expected.abs().max(1.0), "({o}, {j})");
            }
        }
    }

    #[test]
    fn data_off_the_int8_range_saturates() {
        let grid = Grid { scale: 1.0, offset: 0 };
        let mut packed = vec![];
        pack_data(&[1000.0, -1000.0, 2.5, f32::NAN], 4, 1, 4, grid, &mut packed);
        // Ties to even: 2.5 is 2.
        assert_eq!(packed[..16], [127, 0, 0, 0, -128, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn weights_that_are_not_on_a_grid_stay_f32() {
        let (rows, depth) = (4, 9);
        let grid = Grid { scale: 0.1, offset: 0 };
        let (_, _, mut weights, _) = operands(rows, depth, 1, grid);
        assert!(IntegerWeights::new(&weights, rows, depth).is_some());
        // A per-tensor grid (one scale, no row reaching ±127) is found too.
        let per_tensor: Vec<f32> = (0..rows * depth).map(|i| (i as f32 - 127.0) * 0.02).collect();
        assert!(IntegerWeights::new(&per_tensor, rows, depth).is_some());
        weights[5] *= 1.003;
        assert!(IntegerWeights::new(&weights, rows, depth).is_none(), "an f32 model's weights");
        for bad in [f32::NAN, f32::INFINITY] {
            let mut w = per_tensor.clone();
            w[3] = bad;
            assert!(IntegerWeights::new(&w, rows, depth).is_none(), "{bad}");
        }
        assert!(IntegerWeights::new(&[0.0; 8], 2, 4).is_some(), "zeros are integers");
        assert!(IntegerWeights::new(&[], 0, 4).is_none());
    }

    /// On an ARM core with the dot-product instructions (a Cortex-A76 under qemu in CI), the
    /// `SDOT` kernel against the portable one on the same packed blocks.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn the_dot_product_kernel_adds_what_the_portable_one_does() {
        if !has_dot_product() {
            eprintln!("SKIPPED: this processor has no dot-product instructions");
            return;
        }
        let groups = 37;
        let weights: Vec<i8> = values(groups * 32, 3).map(|v| v as i8).collect();
        let data: Vec<i8> = values(groups * 32, 4).map(|v| v as i8).collect();
        let (mut dot, mut portable) = ([[0; COLUMNS]; ROWS], [[0; COLUMNS]; ROWS]);
        // SAFETY: the CPU has the instructions (checked above); both sides hold `groups` groups.
        unsafe { tile_dot(&weights, &data, groups, &mut dot) };
        tile_portable(&weights, &data, groups, &mut portable);
        assert_eq!(dot, portable);
    }
}
