//! `Im2col`: what each output position of a dense convolution reads at each tap, as the rows of a
//! matrix, made a band of output rows at a time (`PointwiseConv` makes chunks that fit a core's
//! cache) and multiplied by the weights there.

use std::ops::Range;

use super::clip;
use super::planes::PlaneGeometry;

/// What each output position of an image reads at each tap, as the rows of a matrix (one per
/// input channel and tap, channel-major as OIHW weights are), a band of output rows at a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Im2col {
    geometry: PlaneGeometry,
    channels: usize,
    tap_offsets: Vec<usize>,
}

impl Im2col {
    pub fn new(geometry: PlaneGeometry, channels: usize) -> Im2col {
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
