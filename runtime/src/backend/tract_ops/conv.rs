//! Dense 2-D convolutions (3×3 and larger, one group, channel-first): run as a `PointwiseConv`
//! over an im2col matrix (`Im2col`: what each output position reads at each tap, one row per
//! input channel and tap), built band by band of output rows so that it never holds more than
//! `BAND_VALUES`; the bias, a ReLU or ReLU6 and any quantization are folded in as for a 1×1
//! convolution. On YOLOv3-tiny's 3×3 convolutions this took 71 ms where tract's own took 87 ms
//! (benches/RESULTS.md).

use std::ops::Range;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};

use super::clip;
use super::depthwise::{bias_per_channel, conv_parts, ConvParts};
use super::depthwise_kernel::PlaneGeometry;
use super::pointwise::PointwiseConv;

/// The most values a band of the im2col matrix holds (4 MiB): bounds the memory a convolution
/// takes beside its input and output, whatever the image size.
const BAND_VALUES: usize = 1 << 20;

/// What each output position of an image reads at each tap, as the rows of a matrix (one per
/// input channel and tap, channel-major as OIHW weights are), a band of output rows at a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Im2col {
    geometry: PlaneGeometry,
    channels: usize,
    tap_offsets: Vec<usize>,
}

impl Im2col {
    fn new(geometry: PlaneGeometry, channels: usize) -> Im2col {
        let tap_offsets = geometry.tap_offsets();
        Im2col { geometry, channels, tap_offsets }
    }

    /// Rows of the matrix: the depth of the product.
    pub fn depth(&self) -> usize {
        self.channels * self.tap_offsets.len()
    }

    /// Output positions of an image.
    pub fn positions(&self) -> usize {
        self.geometry.output[0] * self.geometry.output[1]
    }

    /// Output positions per output row.
    pub fn width(&self) -> usize {
        self.geometry.output[1]
    }

    /// Values of one image.
    pub fn image_len(&self) -> usize {
        self.channels * self.geometry.input[0] * self.geometry.input[1]
    }

    /// Output rows per band: as many as keep a band within `BAND_VALUES`, one at least.
    pub fn band_rows(&self) -> usize {
        (BAND_VALUES / (self.depth() * self.geometry.output[1])).clamp(1, self.geometry.output[0])
    }

    /// The bands of output rows, in order.
    pub fn bands(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        let (rows, band) = (self.geometry.output[0], self.band_rows());
        (0..rows).step_by(band).map(move |first| first..(first + band).min(rows))
    }

    /// Floats the padded planes of one image take (`fill`).
    pub fn planes_len(&self) -> usize {
        self.channels * self.geometry.scratch_len()
    }

    /// Copies `image` into `planes`, padded as the taps read it. `planes` must start zeroed: the
    /// padding is never written, so one buffer serves one image after another.
    pub fn fill(&self, image: &[f32], planes: &mut [f32]) {
        let plane_in = self.geometry.input[0] * self.geometry.input[1];
        for (plane, scratch) in
            image.chunks_exact(plane_in).zip(planes.chunks_exact_mut(self.geometry.scratch_len()))
        {
            self.geometry.fill(plane, clip::NONE, scratch);
        }
    }

    /// The band of output rows `rows` of the matrix, from the planes `fill` made, into `matrix`
    /// (depth × positions of the band).
    pub fn gather(&self, planes: &[f32], rows: Range<usize>, matrix: &mut [f32]) {
        let band = rows.len() * self.geometry.output[1];
        let mut matrix_rows = matrix.chunks_exact_mut(band);
        for scratch in planes.chunks_exact(self.geometry.scratch_len()) {
            for (&offset, row) in self.tap_offsets.iter().zip(&mut matrix_rows) {
                self.geometry.gather(scratch, offset, rows.clone(), row);
            }
        }
    }
}

/// Replaces a dense (one group) f32 `Conv` with OIHW weights and the ReLU or ReLU6 right after
/// it by a `PointwiseConv` over its `Im2col`; leaves 1×1 convolutions (tract's EinSum, edgert's
/// `pointwise::rule`) and any other to tract.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    conv: &Conv,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if!(conv.group == 1 && conv.kernel_fmt == KernelFormat::OIHW);
    rule_if_some!(ConvParts { geometry, batch, output_shape, kernel, bias } = conv_parts(model, node, conv)?);
    let (cin, cout) = (conv.input_channels(), conv.output_channels());
    let [kh, kw] = geometry.kernel;
    rule_if!(kh * kw > 1 && kernel.shape() == [cout, cin, kh, kw]);
    rule_if_some!(bias = bias_per_channel(bias, cout)?);
    let weights = kernel.try_as_plain_ram()?.as_slice::<f32>()?.to_vec();

    let (clip, last) = clip::after(model, node)?;
    let im2col = Im2col::new(geometry, cin);
    let product = PointwiseConv::over_im2col(batch, im2col, weights, bias, clip, output_shape);
    let mut patch = TypedModelPatch::default();
    let input = patch.tap_model(model, node.inputs[0])?;
    let output = patch.wire_node(name, product, &[input])?[0];
    patch.shunt_outside(model, last.into(), output)?;
    Ok(Some(patch))
}
