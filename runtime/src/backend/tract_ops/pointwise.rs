//! `PointwiseConv`: f32 1×1 convolutions (MobileNet's expansions and projections) and fully
//! connected layers, which tract declutters into an EinSum of the data with a constant weight
//! matrix, and dense convolutions over their im2col matrix (`conv`): run as matrix products by
//! the `gemm` crate's f32 kernels (AVX2, AVX-512 or NEON, picked at run time), then, on each
//! block of rows while it is in cache, the bias, a ReLU or ReLU6 that follows, and any
//! QuantizeLinear → DequantizeLinear pairs folded in. An INT8 QDQ model's channel-first products
//! run on integers where the processor has dot-product instructions (`int8_product`).

use std::ops::Range;

use gemm_common::Parallelism;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::fake_quantize::FakeQuantize;
use super::finish::{finish, Bias, Steps};
use super::im2col::Im2col;
use super::int8_product::{pack_data, Grid, IntegerWeights};
use super::planes::transpose;
use super::pointwise_narrow::{Narrow, MAX_CHANNELS};
use super::quantize_table::QuantizeTable;
use super::threads;

/// For each block and position p: out[o, p] = bias[o] + Σ_i weights[o, i] · data[i, p], clipped,
/// where data and out each hold a block as channels × positions (channel-first) or positions ×
/// channels (channel-last); with `im2col`, data is the im2col matrix of the input's block.
#[derive(Debug, Clone, PartialEq)]
pub struct PointwiseConv {
    /// Independent blocks (the images of NCHW; 1 where the positions take every outer axis).
    blocks: usize,
    /// Positions in a block (the pixels of an image).
    positions: usize,
    data_channel_last: bool,
    output_channel_last: bool,
    /// The product's depth: input channels, or rows of the im2col matrix.
    in_channels: usize,
    /// A dense convolution's: the data is made from the input band by band (channel-first).
    im2col: Option<Im2col>,
    /// Output channels × input channels, row-major; input channels × output channels where
    /// the data or the output is channel-last over several positions (`input_major`), so that
    /// the product's side that gemm packs by output channel is read in order.
    weights: Vec<f32>,
    /// One per output channel.
    bias: Vec<f32>,
    /// Bounds of a folded ReLU or ReLU6; infinite without one.
    clip: (f32, f32),
    /// A SiLU after it (x · sigmoid(x), which tract makes one `Silu`), folded in: applied after
    /// the bias, before `quantize`.
    silu: bool,
    /// QuantizeLinear → DequantizeLinear pairs after it (with the clips between), folded in:
    /// applied in order after the bias and the activation.
    quantize: Vec<FakeQuantize>,
    /// An 8-bit activation after it (`QuantizeTable`), folded in: applied last.
    table: Option<QuantizeTable>,
    output_shape: TVec<usize>,
    /// The weights as integers and the grid the data lies on, where the data is a fake-quantize
    /// step's output and the weights are integers times a scale (`on_integers`): channel-first
    /// products are then integer ones.
    integer: Option<(IntegerWeights, Grid)>,
}

// Weights are compared bit for bit; a NaN weight makes two ops unequal, which only costs tract a
// missed deduplication.
impl Eq for PointwiseConv {}

impl Op for PointwiseConv {
    fn name(&self) -> StaticName {
        "EdgertPointwiseConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let side = |last: bool| if last { "channel-last" } else { "channel-first" };
        let channels = format!("{} → {} channels", self.in_channels, self.bias.len());
        let layout = format!("{} → {}", side(self.data_channel_last), side(self.output_channel_last));
        let blocks = format!("{} × {} positions", self.blocks, self.positions);
        let im2col = if self.im2col.is_some() { ", over im2col" } else { "" };
        let silu = if self.silu { ", SiLU" } else { "" };
        let integer = if self.integer.is_some() { ", on integers" } else { "" };
        let table = match &self.table {
            Some(table) => format!(", then {}", table.info()?.join(" ")),
            None => String::new(),
        };
        Ok(vec![format!(
            "{channels}{im2col}{integer}, {layout}, {blocks}, clip {:?}{silu}, {:?}{table}",
            self.clip, self.quantize
        )])
    }

    fn validation(&self) -> Validation {
        Validation::Rounding
    }

    op_as_typed_op!();
}

/// A matrix in a slice: its values and its (row, column) strides.
type Matrix<'a> = (&'a [f32], usize, usize);

/// `a · b`, m × n, written row-major over `out` with row stride `out_rs`.
struct Product<'a> {
    m: usize,
    n: usize,
    k: usize,
    a: Matrix<'a>,
    b: Matrix<'a>,
}

impl Product<'_> {
    fn run(&self, out: &mut [f32], out_rs: usize) -> TractResult<()> {
        // SAFETY: `out` is borrowed mutably, so nothing else reads or writes it, and `len` is its
        // length.
        unsafe { self.run_into(out.as_mut_ptr(), out_rs, out.len()) }
    }

    /// `run` into the `len` values from `out`, of which it writes `n` columns of `m` rows of
    /// `out_rs` only.
    ///
    /// # Safety
    /// `out` must be valid for writes of `len` values, and nothing else may read or write the
    /// values this product writes while it runs.
    unsafe fn run_into(&self, out: *mut f32, out_rs: usize, len: usize) -> TractResult<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        ensure!(m > 0 && n > 0 && k > 0 && n <= out_rs, "empty or overlapping product");
        let end = |rows: usize, cols: usize, (_, rs, cs): Matrix| (rows - 1) * rs + (cols - 1) * cs + 1;
        ensure!(end(m, k, self.a) <= self.a.0.len() && end(k, n, self.b) <= self.b.0.len());
        ensure!((m - 1) * out_rs + n <= len, "product output out of bounds");
        // gemm-f32's kernels write a column-major destination fast and a row-major one several
        // times more slowly, so the product is computed as its transpose, bᵀ · aᵀ, column-major, as the `gemm` crate's front end does.
        // SAFETY: every index the strides reach is inside its slice (checked above), and the
        // caller vouches for the values of `out` it writes. `read_dst` is false: `out` is only
        // written.
        unsafe {
            gemm_f32::gemm::f32::get_gemm_fn()(
                n,
                m,
                k,
                out,
                out_rs as isize,
                1,
                false,
                self.b.0.as_ptr(),
                self.b.1 as isize,
                self.b.2 as isize,
                self.a.0.as_ptr(),
                self.a.1 as isize,
                self.a.2 as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            )
        }
        Ok(())
    }
}

impl EvalOp for PointwiseConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (blocks, positions, cin, cout) = (self.blocks, self.positions, self.in_channels, self.bias.len());
        let view = inputs[0].try_as_plain_ram()?;
        let input = view.as_slice::<f32>()?;
        let data_len = self.im2col.as_ref().map_or(positions * cin, Im2col::image_len);
        let out_len = positions * cout;
        ensure!(
            input.len() == blocks * data_len,
            "input holds {} values, not {}",
            input.len(),
            blocks * data_len
        );
        // SAFETY: the products below write every value before its bias is added.
        let mut output = unsafe { Tensor::uninitialized::<f32>(&self.output_shape)? };
        let mut out = output.try_as_plain_ram_mut()?;
        let out = out.as_slice_mut::<f32>()?;
        ensure!(out.len() == blocks * out_len, "output holds {} values, not {}", out.len(), blocks * out_len);
        if let Some(im2col) = &self.im2col {
            self.convolve(im2col, input, out)?;
            return Ok(tvec!(output.into_tvalue()));
        }
        let work = positions * cin * cout;
        for (data, out) in input.chunks_exact(data_len).zip(out.chunks_exact_mut(out_len)) {
            if positions == 1 {
                // One row (a fully connected layer on one vector): its output channels are
                // what splits, each block a run of them: data (1 × in) · weightsᵀ (in × block).
                on_row_blocks(out, 1, work, |first, columns| {
                    let weights = (&self.weights[first * cin..], 1, cin);
                    let product = Product { m: 1, n: columns.len(), k: cin, a: (data, cin, 1), b: weights };
                    let bias = Bias::PerChannel(&self.bias[first..][..columns.len()]);
                    product.run(columns, columns.len())?;
                    self.finish(columns, bias);
                    Ok(())
                })?;
            } else if self.output_channel_last {
                // Rows of positions: data (rows × in) · weightsᵀ (in × out).
                on_row_blocks(out, cout, work, |first, rows| {
                    if self.data_channel_last && cout <= MAX_CHANNELS {
                        let data = &data[first * cin..][..rows.len() / cout * cin];
                        Narrow { weights: &self.weights, in_channels: cin }.run(data, rows);
                        self.finish(rows, Bias::PerChannel(&self.bias));
                        return Ok(());
                    }
                    let data = if self.data_channel_last {
                        (&data[first * cin..], cin, 1)
                    } else {
                        (&data[first..], 1, positions)
                    };
                    let product = Product {
                        m: rows.len() / cout,
                        n: cout,
                        k: cin,
                        a: data,
                        b: (&self.weights, cout, 1),
                    };
                    product.run(rows, cout)?;
                    self.finish(rows, Bias::PerChannel(&self.bias));
                    Ok(())
                })?;
            } else if self.data_channel_last {
                // Rows of output channels from channel-last data.
                on_row_blocks(out, positions, work, |first, rows| {
                    self.transposed_block(first, rows, positions, data)
                })?;
            } else {
                // Weights (out × in) · data (in × positions), a chunk of positions at a time.
                self.channel_first(out, self.chunk_columns(), |_, columns| Chunk::Borrowed {
                    values: &data[columns.start..],
                    stride: positions,
                })?;
            }
        }
        Ok(tvec!(output.into_tvalue()))
    }
}

impl PointwiseConv {
    /// A dense convolution of `blocks` channel-first images: `weights` (output channels ×
    /// `im2col`'s depth, row-major) over each image's im2col matrix, writing `output_shape`.
    pub fn over_im2col(
        blocks: usize,
        im2col: Im2col,
        weights: Vec<f32>,
        bias: Vec<f32>,
        clip: (f32, f32),
        output_shape: &[usize],
    ) -> PointwiseConv {
        PointwiseConv {
            blocks,
            positions: im2col.positions(),
            data_channel_last: false,
            output_channel_last: false,
            in_channels: im2col.depth(),
            im2col: Some(im2col),
            weights,
            bias,
            clip,
            silu: false,
            quantize: vec![],
            table: None,
            output_shape: output_shape.into(),
            integer: None,
        }
    }

    /// Each image of `input` through its im2col matrix into `out`: its planes padded once
    /// (`Im2col::fill`), then multiplied as the output is laid out.
    fn convolve(&self, im2col: &Im2col, input: &[f32], out: &mut [f32]) -> TractResult<()> {
        // Zeroed once: `fill` never writes the padding.
        let mut planes = vec![0.0; im2col.planes_len()];
        let image_out = self.positions * self.bias.len();
        for (image, out) in input.chunks_exact(im2col.image_len()).zip(out.chunks_exact_mut(image_out)) {
            im2col.fill(image, &mut planes);
            match self.output_channel_last {
                true => self.image_channel_last(im2col, &planes, out)?,
                false => self.image_channel_first(im2col, &planes, out)?,
            }
        }
        Ok(())
    }

    /// One image into channel-last `out`: blocks of output rows split between threads, each
    /// gathered and multiplied by the thread that takes it, a chunk of rows at a time
    /// (`CHUNK_VALUES` of the matrix) so that the chunk is read from cache.
    fn image_channel_last(&self, im2col: &Im2col, planes: &[f32], out: &mut [f32]) -> TractResult<()> {
        let (positions, depth, cout, width) =
            (self.positions, self.in_channels, self.bias.len(), im2col.width());
        let row = width * cout;
        let chunk_rows = (CHUNK_VALUES / (depth * width)).max(1);
        threads::on_rows(out, row, positions * depth * cout, |first, rows| {
            let mut matrix = Vec::new();
            for (i, chunk) in rows.chunks_mut(chunk_rows * row).enumerate() {
                let (first, n) = (first + i * chunk_rows, chunk.len() / cout);
                matrix.resize(depth * n, 0.0);
                im2col.gather(planes, first..first + n / width, &mut matrix);
                // Positions × depth (the matrix's transpose) · depth × output channels.
                let product =
                    Product { m: n, n: cout, k: depth, a: (&matrix, 1, n), b: (&self.weights, 1, depth) };
                product.run(chunk, cout)?;
                self.finish(chunk, Bias::PerChannel(&self.bias));
            }
            Ok(())
        })
    }

    /// One image into channel-first `out` (`channel_first`): each chunk's im2col matrix gathered
    /// by the thread that takes it, a whole number of output rows.
    fn image_channel_first(&self, im2col: &Im2col, planes: &[f32], out: &mut [f32]) -> TractResult<()> {
        let width = im2col.width();
        let chunk = self.chunk_columns().div_ceil(width) * width;
        self.channel_first(out, chunk, |matrix, columns| {
            matrix.resize(self.in_channels * columns.len(), 0.0);
            im2col.gather(planes, columns.start / width..columns.end / width, matrix);
            Chunk::Made { stride: columns.len() }
        })
    }

    /// Columns per chunk of a channel-first product: as many as fill `CHUNK_VALUES` of data (so
    /// that a chunk made in a scratch is multiplied from cache), but no fewer than the output
    /// channels, or the weights (packed again for each chunk) would cost more than the data.
    fn chunk_columns(&self) -> usize {
        (CHUNK_VALUES / self.in_channels.max(1)).max(self.bias.len()).max(1)
    }

    /// Channel-first `out` (output channels × positions): weights · data, where `data(scratch,
    /// columns)` gives the data of `columns` (depth × the columns, `Chunk`), then finished.
    /// gemm packs the whole of each side of a product it is given, so the pool's threads split
    /// the larger side: the columns, in chunks of `chunk` claimed in turn, each thread making and
    /// packing only its own; or, where there are fewer positions than output channels and the
    /// data is small enough to make whole (`WHOLE_DATA`), the output channels, each thread
    /// packing only its channels' weights.
    fn channel_first<'d>(
        &self,
        out: &mut [f32],
        chunk: usize,
        data: impl Fn(&mut Vec<f32>, Range<usize>) -> Chunk<'d> + Sync,
    ) -> TractResult<()> {
        let (positions, depth, cout) = (self.positions, self.in_channels, self.bias.len());
        let threads = if positions * depth * cout >= THREADING_WORK { threads::available() } else { 1 };
        if threads > 1 && positions < cout && depth * positions <= WHOLE_DATA && self.integer.is_none() {
            let mut scratch = Vec::new();
            let chunk = data(&mut scratch, 0..positions);
            let (values, stride) = chunk.values(&scratch);
            let data = (values, stride, 1);
            return on_row_blocks(out, positions, positions * depth * cout, |first, rows| {
                let channels = rows.len() / positions;
                let weights = (&self.weights[first * depth..], depth, 1);
                Product { m: channels, n: positions, k: depth, a: weights, b: data }.run(rows, positions)?;
                for (row, &bias) in rows.chunks_exact_mut(positions).zip(&self.bias[first..]) {
                    self.finish(row, Bias::Same(bias));
                }
                Ok(())
            });
        }
        let out = SharedRows::new(out, positions);
        threads::on_ranges(positions, chunk, threads, Scratch::default, |scratch, columns| {
            let Scratch { values, packed, products } = scratch;
            let chunk = data(values, columns.clone());
            let (data, stride) = chunk.values(values);
            if let Some((weights, grid)) = &self.integer {
                let n = columns.len();
                pack_data(data, stride, depth, n, *grid, packed);
                products.resize(cout * n, 0.0);
                weights.product(packed, n, *grid, products);
                for (c, (&bias, products)) in self.bias.iter().zip(products.chunks_exact(n)).enumerate() {
                    // SAFETY: the ranges `on_ranges` hands out are disjoint, so no other call
                    // writes or reads these columns of any output channel while this one does.
                    let row = unsafe { out.columns(c, columns.clone()) };
                    row.copy_from_slice(products);
                    self.finish(row, Bias::Same(bias));
                }
                return Ok(());
            }
            let (weights, n) = ((&self.weights[..], depth, 1), columns.len());
            let product = Product { m: cout, n, k: depth, a: weights, b: (data, stride, 1) };
            // SAFETY: the ranges `on_ranges` hands out are disjoint, so no other call writes or
            // reads these columns of any output channel while this one does.
            unsafe {
                product.run_into(out.at(0, columns.start), positions, out.len() - columns.start)?;
                for (c, &bias) in self.bias.iter().enumerate() {
                    self.finish(out.columns(c, columns.clone()), Bias::Same(bias));
                }
            }
            Ok(())
        })
    }

    /// The output channels `first..` that `rows` holds (`positions` values each) from
    /// channel-last `data`: a chunk of positions at a time computed channel-last into a scratch
    /// (gemm's kernels read channel-last data in order that way; for a channel-first product
    /// they would gather it), then finished into the rows, transposed.
    fn transposed_block(
        &self,
        first: usize,
        rows: &mut [f32],
        positions: usize,
        data: &[f32],
    ) -> TractResult<()> {
        let (cin, channels) = (self.in_channels, rows.len() / positions);
        let chunk = chunk_positions(channels);
        let mut scratch = vec![0.0; chunk.min(positions) * channels];
        for at in (0..positions).step_by(chunk) {
            let n = chunk.min(positions - at);
            let weights = (&self.weights[first..], self.bias.len(), 1);
            let product = Product { m: n, n: channels, k: cin, a: (&data[at * cin..], cin, 1), b: weights };
            product.run(&mut scratch, channels)?;
            // 16 channels at a time: each position's are one cache line of the scratch.
            for (block, rows) in rows.chunks_mut(16 * positions).enumerate() {
                let block = block * 16;
                for (p, products) in scratch.chunks_exact(channels).take(n).enumerate() {
                    for (row, &v) in rows.chunks_exact_mut(positions).zip(&products[block..]) {
                        row[at + p] = v;
                    }
                }
                for (c, row) in rows.chunks_exact_mut(positions).enumerate() {
                    self.finish(&mut row[at..at + n], Bias::Same(self.bias[first + block + c]));
                }
            }
        }
        Ok(())
    }

    /// This convolution with `quantize` as its last step; `None` after a table, which is last.
    pub fn then_quantized(&self, quantize: &FakeQuantize) -> Option<PointwiseConv> {
        self.table.is_none().then(|| {
            let mut op = self.clone();
            op.quantize.push(quantize.clone());
            op
        })
    }

    /// This convolution with `table` as its last step; `None` where it has one already.
    pub fn then_tabled(&self, table: &QuantizeTable) -> Option<PointwiseConv> {
        self.table.is_none().then(|| PointwiseConv { table: Some(table.clone()), ..self.clone() })
    }

    /// This convolution on integers, its data lying on `input`: where it computes channel-first
    /// products and its weights are integers times a scale.
    pub fn on_integers(&self, input: Grid) -> Option<PointwiseConv> {
        let channel_first = !self.data_channel_last && !self.output_channel_last && self.positions > 1;
        if !channel_first || self.integer.is_some() {
            return None;
        }
        // Channel-first products keep their weights output channels × depth.
        let weights = IntegerWeights::new(&self.weights, self.bias.len(), self.in_channels)?;
        Some(PointwiseConv { integer: Some((weights, input)), ..self.clone() })
    }

    /// The grid its outputs lie on: that of the 8-bit activation or fake-quantize step it ends
    /// with, if any.
    pub fn output_grid(&self) -> Option<Grid> {
        match &self.table {
            Some(table) => table.grid(),
            None => self.quantize.last()?.grid(),
        }
    }

    /// This convolution with a SiLU after it, where nothing comes between: no clip, no quantize.
    pub fn then_silu(&self) -> Option<PointwiseConv> {
        let bare = self.clip == clip::NONE && self.quantize.is_empty() && !self.silu;
        bare.then(|| PointwiseConv { silu: true, ..self.clone() })
    }

    /// Adds the bias to products, clips or applies the SiLU, then quantizes them, while they are
    /// still in cache.
    fn finish(&self, values: &mut [f32], bias: Bias) {
        finish(values, bias, Steps { clip: self.clip, silu: self.silu, quantize: &self.quantize });
        if let Some(table) = &self.table {
            table.apply(values);
        }
    }
}

/// A thread's scratch for `channel_first`: a chunk's data where it is made, and for an integer
/// product the data packed and the products.
#[derive(Default)]
struct Scratch {
    values: Vec<f32>,
    packed: Vec<i8>,
    products: Vec<f32>,
}

/// A chunk's data for `channel_first`: depth rows of its columns, `stride` apart.
enum Chunk<'d> {
    /// Made in the scratch the call was given.
    Made { stride: usize },
    /// Read where it is.
    Borrowed { values: &'d [f32], stride: usize },
}

impl<'d> Chunk<'d> {
    /// The chunk's values, from `scratch` where they were made there, and their row stride.
    fn values<'s>(&self, scratch: &'s [f32]) -> (&'s [f32], usize)
    where
        'd: 's,
    {
        match *self {
            Chunk::Made { stride } => (scratch, stride),
            Chunk::Borrowed { values, stride } => (values, stride),
        }
    }
}

/// Rows of `row` values that threads write at once, each its own columns of every row.
struct SharedRows<'a> {
    values: *mut f32,
    len: usize,
    row: usize,
    _out: std::marker::PhantomData<&'a mut [f32]>,
}

// SAFETY: the values are only reached through `at` and `columns`, whose callers vouch that no two
// threads touch the same one at once.
unsafe impl Send for SharedRows<'_> {}
unsafe impl Sync for SharedRows<'_> {}

impl<'a> SharedRows<'a> {
    fn new(out: &'a mut [f32], row: usize) -> SharedRows<'a> {
        SharedRows { values: out.as_mut_ptr(), len: out.len(), row, _out: std::marker::PhantomData }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Where value `column` of row `row` is.
    fn at(&self, row: usize, column: usize) -> *mut f32 {
        assert!(row * self.row + column <= self.len, "outside the rows");
        // SAFETY: within (or one past) the slice `new` was given, checked above.
        unsafe { self.values.add(row * self.row + column) }
    }

    /// The values `columns` of row `row`.
    ///
    /// # Safety
    /// Nothing else may read or write these values while the slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn columns(&self, row: usize, columns: Range<usize>) -> &mut [f32] {
        assert!(columns.end <= self.row && (row + 1) * self.row <= self.len, "outside the rows");
        // SAFETY: inside the slice `new` was given (checked above); the caller vouches that the
        // values are this slice's alone while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.at(row, columns.start), columns.len()) }
    }
}

/// The most values a channel-last scratch holds (256 KiB: a Jetson Orin core's L2), so that
/// finishing them reads cache, not memory.
const CHUNK_VALUES: usize = 64 * 1024;

/// Positions per chunk of a scratch with `channels` values each: whole blocks of 64 (the widest
/// kernel's rows), one at least.
fn chunk_positions(channels: usize) -> usize {
    (CHUNK_VALUES / channels.max(1)).next_multiple_of(64).max(64)
}

/// The most values of data `channel_first` makes whole to split a product by output channels
/// (4 MiB).
const WHOLE_DATA: usize = 1 << 20;

/// Below this many multiply-adds one thread does the whole product, as in gemm's own threading.
const THREADING_WORK: usize = 48 * 48 * 256;

/// Calls `each(first row, block)` on blocks of whole rows (`row` values each) of `out`: one
/// block per thread of the inference's pool (`--threads`), as even as rows allow (rounding them
/// to whole kernels' worth left MobileNetV2's 7 × 7 layers split 32 + 17, benches/RESULTS.md);
/// the whole of `out` on one.
fn on_row_blocks(
    out: &mut [f32],
    row: usize,
    work: usize,
    each: impl Fn(usize, &mut [f32]) -> TractResult<()> + Send + Sync,
) -> TractResult<()> {
    let rows = out.len() / row;
    let threads = if work >= THREADING_WORK { threads::available() } else { 1 };
    threads::on_row_blocks(out, row, rows.div_ceil(threads), each)
}

impl TypedOp for PointwiseConv {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    /// A dense convolution takes the move of its output's channels last (its data stays
    /// channel-first, as a model's input is); any other change stops at it.
    fn change_axes(
        &self,
        _model: &TypedModel,
        _node: &TypedNode,
        io: InOut,
        change: &AxisOp,
    ) -> TractResult<Option<AxisChangeConsequence>> {
        let rank = self.output_shape.len();
        rule_if!(matches!(io, InOut::Out(0)) && self.im2col.is_some() && !self.output_channel_last);
        rule_if!(rank >= 3 && *change == AxisOp::Move(rank - 3, rank - 1));
        let mut output_shape = self.output_shape.clone();
        change.change_shape_array(&mut output_shape, false)?;
        let op = PointwiseConv { output_channel_last: true, output_shape, ..self.clone() };
        Ok(Some(AxisChangeConsequence {
            substitute_op: Some(Box::new(op)),
            wire_changes: tvec!((io, change.clone())),
        }))
    }

    as_op!();
}

/// Whether a `PointwiseConv` keeps its weights input channels × output channels: where it
/// computes channel-last products.
fn input_major(data_channel_last: bool, output_channel_last: bool, positions: usize) -> bool {
    (data_channel_last || output_channel_last) && positions > 1
}

/// Where each of an EinSum's axes is: in the data, the weights, the output (positions).
struct AxisPlace {
    data: Option<usize>,
    weights: Option<usize>,
    output: Option<usize>,
}

/// How an EinSum of data with a weight matrix lays out as `PointwiseConv` computes it.
struct Layout {
    blocks: usize,
    positions: usize,
    data_channel_last: bool,
    output_channel_last: bool,
    in_channels: usize,
    out_channels: usize,
    /// Whether the weights are output channels × input channels (else the transpose).
    out_channels_first: bool,
    /// The output channels' axis in the output.
    channel_axis: usize,
}

/// The layout of `einsum` with the data at input `data` (shape `input`) and the weight matrix at
/// the other, writing `output` (size-1 axes aside, as they move no value): None unless the data
/// and the output are [blocks…, channels, positions…] or [blocks…, positions…, channels] in
/// memory, with the same block and position axes in the same order. tract lays MobileNet's
/// out both ways, and on aarch64 switches between them at a 1×1 convolution.
fn layout(einsum: &EinSum, data: usize, input: &[usize], output: &[usize]) -> Option<Layout> {
    let one = |positions: &[usize]| (positions.len() <= 1).then(|| positions.first().copied());
    let places = einsum
        .axes
        .iter_all_axes()
        .map(|axis| {
            let (data, weights) = (one(&axis.inputs[data])?, one(&axis.inputs[1 - data])?);
            Some(AxisPlace { data, weights, output: one(&axis.outputs[0])? })
        })
        .collect::<Option<Vec<_>>>()?;
    let size = |p: &AxisPlace| match (p.data, p.output) {
        (Some(d), _) => input[d],
        (None, Some(o)) => output[o],
        _ => 1,
    };
    // The weights' two axes: one summed with the data's, one that becomes the output's.
    let summed: Vec<_> = places.iter().filter(|p| p.weights.is_some() && p.output.is_none()).collect();
    let made: Vec<_> = places.iter().filter(|p| p.weights.is_some() && p.data.is_none()).collect();
    let ([summed], [made]) = (&summed[..], &made[..]) else { return None };
    let (Some(in_at), Some(out_at)) = (summed.data, made.output) else { return None };
    // Any other axis goes from the data to the output, or has size 1.
    let passes =
        |p: &AxisPlace| p.weights.is_some() || p.data.is_some() == p.output.is_some() || size(p) == 1;
    if !places.iter().all(passes) {
        return None;
    }
    // The axes before and after the channels, in memory order, as indices into `places`.
    let sides = |position: fn(&AxisPlace) -> Option<usize>, channels: usize| {
        let mut axes: Vec<(usize, usize)> = places
            .iter()
            .enumerate()
            .filter(|(_, p)| p.weights.is_none() && size(p) > 1)
            .filter_map(|(i, p)| position(p).map(|at| (at, i)))
            .collect();
        axes.sort();
        let side = |before: bool| axes.iter().filter(move |(at, _)| (*at < channels) == before).map(|a| a.1);
        (side(true).collect::<Vec<_>>(), side(false).collect::<Vec<_>>())
    };
    let (data_before, data_after) = sides(|p| p.data, in_at);
    let (out_before, out_after) = sides(|p| p.output, out_at);
    let product = |axes: &[usize]| axes.iter().map(|&i| size(&places[i])).product::<usize>();
    let joined = |a: &[usize], b: &[usize]| [a, b].concat();
    // (blocks, positions, data channel-last, output channel-last).
    let (blocks, positions, data_last, output_last) =
        if (&data_before, &data_after) == (&out_before, &out_after) {
            match product(&data_after) {
                // Nothing after the channels: every position is in one block, channel-last.
                1 => (1, product(&data_before), true, true),
                after => (product(&data_before), after, false, false),
            }
        } else if out_after.is_empty() && out_before == joined(&data_before, &data_after) {
            (product(&data_before), product(&data_after), false, true)
        } else if data_after.is_empty() && data_before == joined(&out_before, &out_after) {
            (product(&out_before), product(&out_after), true, false)
        } else {
            return None;
        };
    Some(Layout {
        blocks,
        positions,
        data_channel_last: data_last,
        output_channel_last: output_last,
        in_channels: size(summed),
        out_channels: size(made),
        out_channels_first: made.weights == Some(0),
        channel_axis: out_at,
    })
}

/// The constant bias added to `node`'s output right after it, and nothing else reading that
/// output: one value per output channel (`layout.channel_axis`) or one for all, and the Add.
fn bias_after(
    model: &TypedModel,
    node: &TypedNode,
    layout: &Layout,
    rank: usize,
) -> TractResult<Option<(Vec<f32>, usize)>> {
    let Some(next) = model.single_succ(node.id)? else { return Ok(None) };
    if !clip::only_feeds(model, node.id, next.id)? {
        return Ok(None);
    }
    let Some(("Add", constant, _)) = clip::against_constant(model, next)? else { return Ok(None) };
    let cout = layout.out_channels;
    let along = |i: usize, d: usize| d == 1 || (i == layout.channel_axis && d == cout);
    if constant.rank() != rank || !constant.shape().iter().enumerate().all(|(i, &d)| along(i, d)) {
        return Ok(None);
    }
    let values = constant.try_as_plain_ram()?;
    let values = values.as_slice::<f32>()?;
    Ok(Some(((0..cout).map(|c| values[c % values.len()]).collect(), next.id)))
}

/// An f32 EinSum of data with a constant weight matrix along one axis, as `PointwiseConv` runs
/// it: the data's input, the weights and the layout; None for any other.
fn einsum_parts<'a>(
    model: &'a TypedModel,
    node: &TypedNode,
    einsum: &EinSum,
) -> TractResult<Option<(usize, &'a Arc<Tensor>, Layout)>> {
    rule_if_some!((data, weights) = data_and_weights(model, node, einsum)?);
    rule_if!(weights.rank() == 2);
    rule_if_some!(input_shape = model.outlet_fact(node.inputs[data])?.shape.as_concrete());
    rule_if_some!(output_shape = model.outlet_fact(node.id.into())?.shape.as_concrete());
    Ok(layout(einsum, data, input_shape, output_shape).map(|layout| (data, weights, layout)))
}

/// Which input of an f32 EinSum of two inputs is the data, and the other's constant weights;
/// None for a quantized product or one with both or neither input constant.
pub fn data_and_weights<'a>(
    model: &'a TypedModel,
    node: &TypedNode,
    einsum: &EinSum,
) -> TractResult<Option<(usize, &'a Arc<Tensor>)>> {
    rule_if!(einsum.q_params.is_none() && einsum.operating_dt == f32::datum_type() && node.inputs.len() == 2);
    let facts = model.node_input_facts(node.id)?;
    rule_if!(facts.iter().all(|f| f.datum_type == f32::datum_type()));
    Ok(match (&facts[0].konst, &facts[1].konst) {
        (None, Some(w)) => Some((0, w)),
        (Some(w), None) => Some((1, w)),
        _ => None,
    })
}

/// The move that puts the channels of a 1×1 convolution's output last, where its data's are
/// last and its output's first, over several positions; None otherwise.
pub fn channel_last_output(
    model: &TypedModel,
    node: &TypedNode,
    einsum: &EinSum,
) -> TractResult<Option<AxisOp>> {
    rule_if_some!((_, _, layout) = einsum_parts(model, node, einsum)?);
    rule_if!(layout.data_channel_last && !layout.output_channel_last && layout.positions > 1);
    let rank = model.outlet_fact(node.id.into())?.rank();
    Ok(Some(AxisOp::Move(layout.channel_axis, rank - 1)))
}

/// Replaces an f32 EinSum that multiplies data by a constant weight matrix along one axis (what
/// tract declutters a 1×1 convolution or a fully connected layer into), the constant bias added
/// right after it and a ReLU or ReLU6 after that, by one `PointwiseConv`; leaves any other
/// EinSum to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    einsum: &EinSum,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if_some!((data, weights, layout) = einsum_parts(model, node, einsum)?);
    rule_if_some!(output_shape = model.outlet_fact(node.id.into())?.shape.as_concrete());
    let (cin, cout) = (layout.in_channels, layout.out_channels);
    rule_if!(layout.blocks * layout.positions * cin * cout > 0);
    let [rows, columns] = if layout.out_channels_first { [cout, cin] } else { [cin, cout] };
    rule_if!(weights.shape() == [rows, columns]);
    let w = weights.try_as_plain_ram()?;
    let w = w.as_slice::<f32>()?;
    let input_major = input_major(layout.data_channel_last, layout.output_channel_last, layout.positions);
    let weights =
        if layout.out_channels_first != input_major { w.to_vec() } else { transpose(w, rows, columns) };

    let (bias, last) =
        bias_after(model, node, &layout, output_shape.len())?.unwrap_or((vec![0.0; cout], node.id));
    let (clip, last) = clip::after(model, model.node(last))?;
    let op = PointwiseConv {
        blocks: layout.blocks,
        positions: layout.positions,
        data_channel_last: layout.data_channel_last,
        output_channel_last: layout.output_channel_last,
        in_channels: cin,
        im2col: None,
        weights,
        bias,
        clip,
        silu: false,
        quantize: vec![],
        table: None,
        output_shape: output_shape.into(),
        integer: None,
    };
    super::replacing(model, node.inputs[data], name, op, last.into())
}
