//! Model maps (mask prototypes, class scores) resampled to source pixels as Ultralytics does it:
//! upsampled bilinearly to a working grid, the letterbox's content cropped there (so pixels at
//! the frame's edge read the content's edge, not the padding), then resampled bilinearly to the
//! source; the two steps composed into taps per source column and row.

use crate::preprocess::Geometry;

/// A source pixel's map cells along one axis and their weights.
#[derive(Debug, Clone, Copy)]
pub struct Tap {
    cells: [usize; 4],
    weights: [f32; 4],
}

impl Tap {
    /// The rows of `plane` (rows `out.len()` wide, the first being map row `first`) this row tap
    /// reads, weighed into `out`.
    pub fn rows(&self, plane: &[f32], first: usize, out: &mut [f32]) {
        let width = out.len();
        let row = |k: usize| &plane[(self.cells[k] - first) * width..(self.cells[k] - first + 1) * width];
        let (a, b, c, d) = (row(0), row(1), row(2), row(3));
        let [wa, wb, wc, wd] = self.weights;
        for ((((v, &a), &b), &c), &d) in out.iter_mut().zip(a).zip(b).zip(c).zip(d) {
            *v = wa * a + wb * b + wc * c + wd * d;
        }
    }

    /// This column tap's value of `row`, whose first value is map column `first`.
    pub fn value(&self, row: &[f32], first: usize) -> f32 {
        self.cells.iter().zip(&self.weights).map(|(&c, &w)| w * row[c - first]).sum()
    }
}

/// One axis: the geometry's `scale` (input pixels a source pixel) and `offset` (where the
/// content starts in the input), and the sizes of source, input and map.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    scale: f32,
    offset: f32,
    source: usize,
    input: usize,
    cells: usize,
}

impl Axis {
    /// The x and y axes of a `(height, width)` map read through `geometry` from an input of
    /// `(height, width)`.
    pub fn pair(
        geometry: &Geometry,
        (input_h, input_w): (usize, usize),
        (h, w): (usize, usize),
    ) -> (Axis, Axis) {
        let x = Axis {
            scale: geometry.scale_x,
            offset: geometry.offset_x,
            source: geometry.source_width as usize,
            input: input_w,
            cells: w,
        };
        let y = Axis {
            scale: geometry.scale_y,
            offset: geometry.offset_y,
            source: geometry.source_height as usize,
            input: input_h,
            cells: h,
        };
        (x, y)
    }

    /// The content's size and first cell on a working grid of `upsampled` cells.
    fn content(&self, upsampled: usize) -> (usize, f32) {
        let per_input = upsampled as f32 / self.input as f32;
        let size = ((self.source as f32 * self.scale * per_input).round() as usize).max(1);
        (size, (self.offset * per_input - 0.1).round())
    }

    /// For each source pixel in `pixels`: the content cells it reads on a working grid of
    /// `upsampled` cells, and the map cells each of those reads.
    pub fn taps(&self, pixels: std::ops::Range<usize>, upsampled: usize) -> Vec<Tap> {
        let (content, first) = self.content(upsampled);
        let cell = |i: usize| (first as i64 + i as i64).clamp(0, upsampled as i64 - 1) as usize;
        let ratio = content as f32 / self.source as f32;
        let down = self.cells as f32 / upsampled as f32;
        pixels
            .map(|p| {
                let (i0, i1, l) = bilinear(p, ratio, content);
                let (a0, a1, m0) = bilinear(cell(i0), down, self.cells);
                let (b0, b1, m1) = bilinear(cell(i1), down, self.cells);
                Tap {
                    cells: [a0, a1, b0, b1],
                    weights: [(1.0 - l) * (1.0 - m0), (1.0 - l) * m0, l * (1.0 - m1), l * m1],
                }
            })
            .collect()
    }
}

impl Axis {
    /// For each source pixel in `pixels`: the map cell it takes by nearest neighbour, through a
    /// working grid of `upsampled` cells, as `interpolate(mode="nearest")` picks them.
    pub fn nearest(&self, pixels: std::ops::Range<usize>, upsampled: usize) -> Vec<usize> {
        let (content, first) = self.content(upsampled);
        let ratio = content as f32 / self.source as f32;
        let down = self.cells as f32 / upsampled as f32;
        pixels
            .map(|p| {
                let i = ((p as f32 * ratio).floor() as usize).min(content - 1);
                let cell = (first as i64 + i as i64).clamp(0, upsampled as i64 - 1) as usize;
                ((cell as f32 * down).floor() as usize).min(self.cells - 1)
            })
            .collect()
    }
}

/// How many times Ultralytics upsamples mask prototypes before cropping the content: the least of
/// 1, 2, 4 (up to the input's size) at which the padding on both axes falls on whole cells.
pub fn upsampling(x: Axis, y: Axis) -> usize {
    let whole = |a: Axis, f: usize| {
        let per_input = (f * a.cells) as f32 / a.input as f32;
        let padding = (a.input as f32 - (a.source as f32 * a.scale).round()) * per_input;
        let fits = |v: f32| (v - v.round()).abs() < 1e-3;
        fits(a.offset * per_input) && fits(padding)
    };
    [1, 2, 4].into_iter().find(|&f| f * x.cells >= x.input || (whole(x, f) && whole(y, f))).unwrap_or(4)
}

/// Bilinear interpolation from `from` values to a grid `1 / ratio` times as fine, without
/// corner alignment (as `torch.nn.functional.interpolate` does it): the two values position `at`
/// reads and the second's weight.
fn bilinear(at: usize, ratio: f32, from: usize) -> (usize, usize, f32) {
    let real = ((at as f32 + 0.5) * ratio - 0.5).max(0.0);
    let low = (real.floor() as usize).min(from - 1);
    (low, (low + 1).min(from - 1), real - low as f32)
}

/// The cells `taps` read: first and one past the last.
pub fn window(taps: &[Tap]) -> (usize, usize) {
    let low = taps.iter().flat_map(|t| t.cells).min().unwrap_or(0);
    let high = taps.iter().flat_map(|t| t.cells).max().unwrap_or(0);
    (low, high + 1)
}
