//! Instance masks of segment models (YOLOv8/11/26-seg): each box's coefficients weigh the model's
//! prototypes into mask logits, which are resampled bilinearly to the source through the
//! letterbox, set above 0 (a sigmoid above 0.5) and kept within the box, as Ultralytics'
//! `retina_masks` makes them: the prototypes upsampled first where the letterbox's padding does
//! not fall on whole cells, the content cropped (so pixels at the frame's edge read the content's
//! edge, not the padding), then resampled to the source. The resamplings are composed into one
//! pass over the box's source pixels; the result is COCO's run-length encoding.

use serde::Serialize;

use super::resample::{upsampling, window, Axis};
use crate::preprocess::Geometry;
use crate::tensor::{HostTensor, TensorSpec};

/// COCO's uncompressed run-length encoding of a binary mask: alternate runs of unset and set
/// pixels, column by column (column-major), the first run unset (0 long where the first pixel is
/// set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rle {
    /// `[height, width]`.
    pub size: [usize; 2],
    pub counts: Vec<u32>,
}

impl Rle {
    /// How many pixels are set.
    pub fn area(&self) -> u64 {
        self.counts.iter().skip(1).step_by(2).map(|&c| u64::from(c)).sum()
    }

    /// How many pixels are set in both (of the same size).
    pub fn intersection(&self, other: &Rle) -> u64 {
        let set = |rle: &Rle| {
            let mut at = 0u64;
            let mut runs = Vec::with_capacity(rle.counts.len() / 2);
            for (i, &c) in rle.counts.iter().enumerate() {
                if i % 2 == 1 {
                    runs.push((at, at + u64::from(c)));
                }
                at += u64::from(c);
            }
            runs
        };
        let (a, b) = (set(self), set(other));
        let (mut i, mut j, mut both) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let (start, end) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
            both += end.saturating_sub(start);
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        both
    }

    /// Each run of set pixels within one column: `(x, first row, rows past the last)`.
    pub fn for_each_run(&self, mut f: impl FnMut(usize, usize, usize)) {
        let height = self.size[0].max(1);
        let mut at = 0usize;
        for (i, &count) in self.counts.iter().enumerate() {
            let (start, end) = (at, at + count as usize);
            at = end;
            if i % 2 == 0 {
                continue;
            }
            let mut p = start;
            while p < end {
                let (x, y) = (p / height, p % height);
                let rows = (height - y).min(end - p);
                f(x, y, y + rows);
                p += rows;
            }
        }
    }
}

/// Builds counts from runs given in column-major order, merging neighbours of one value.
struct Runs {
    counts: Vec<u32>,
    set: bool,
}

impl Runs {
    fn new() -> Runs {
        Runs { counts: vec![0], set: false }
    }

    fn push(&mut self, set: bool, length: usize) {
        if length == 0 {
            return;
        }
        if set != self.set {
            self.counts.push(0);
            self.set = set;
        }
        *self.counts.last_mut().expect("counts start with one run") += length as u32;
    }

    /// The runs of one column's values, set where above 0: compared 64 at a time into a word,
    /// whose changes of bit are the runs' ends (most of a column is long runs).
    fn extend_column(&mut self, values: &[f32]) {
        let (mut set, mut start) = (false, 0);
        for (w, chunk) in values.chunks(64).enumerate() {
            let mut word = 0u64;
            for (i, &v) in chunk.iter().enumerate() {
                word |= u64::from(v > 0.0) << i;
            }
            let valid = if chunk.len() == 64 { u64::MAX } else { (1 << chunk.len()) - 1 };
            let mut changes = (word ^ (word << 1 | u64::from(set))) & valid;
            while changes != 0 {
                let at = w * 64 + changes.trailing_zeros() as usize;
                self.push(set, at - start);
                (set, start) = (!set, at);
                changes &= changes - 1;
            }
        }
        self.push(set, values.len() - start);
    }
}

/// Where a segment model's prototypes are: the one output of four dimensions, `[N, coefficients,
/// height, width]`.
#[derive(Debug, Clone, Copy)]
pub struct Prototypes {
    index: usize,
    pub coefficients: usize,
    height: usize,
    width: usize,
}

impl Prototypes {
    pub fn find(outputs: &[TensorSpec]) -> Result<Prototypes, String> {
        let found: Vec<_> = outputs.iter().enumerate().filter(|(_, o)| o.shape.len() == 4).collect();
        let [(index, o)] = found[..] else {
            return Err(format!(
                "detect.masks needs one prototypes output [N, coefficients, height, width]; the model's are {}",
                crate::tensor::describe(outputs)
            ));
        };
        match o.shape[1..] {
            [Some(c), Some(h), Some(w)] if c > 0 && h > 0 && w > 0 => {
                Ok(Prototypes { index, coefficients: c, height: h, width: w })
            }
            _ => Err(format!(
                "detect.masks needs prototypes output '{}' as [N, coefficients, height, width] of fixed sizes, it is {}",
                o.name,
                o.shape_text()
            )),
        }
    }

    /// Batch item `item`'s prototypes.
    pub fn of<'a>(&self, outputs: &'a [HostTensor], item: usize) -> &'a [f32] {
        outputs[self.index].item(item)
    }

    /// The mask of one instance in source pixels, `bbox` its box there, from the prototypes of its
    /// batch item (`of`); none where no pixel is set (Ultralytics drops such instances). `scratch`
    /// is reused between instances.
    pub fn mask(
        &self,
        protos: &[f32],
        coefficients: &[f32],
        bbox: [f32; 4],
        input: (usize, usize),
        geometry: &Geometry,
        scratch: &mut Scratch,
    ) -> Option<Rle> {
        let (sw, sh) = (geometry.source_width as usize, geometry.source_height as usize);
        // Pixel x is in the box where x1 <= x < x2, as Ultralytics' crop_mask has it.
        let span = |lo: f32, hi: f32, limit: usize| {
            let first = (lo.max(0.0).ceil() as usize).min(limit);
            let end = (hi.max(0.0).ceil() as usize).min(limit);
            (first, end.max(first))
        };
        let (x0, x1) = span(bbox[0], bbox[2], sw);
        let (y0, y1) = span(bbox[1], bbox[3], sh);
        if x0 == x1 || y0 == y1 {
            return None;
        }
        // Each source column's and row's prototype cells.
        let (x, y) = Axis::pair(geometry, input, (self.height, self.width));
        let f = upsampling(x, y);
        let (columns, rows) = (x.taps(x0..x1, f * self.width), y.taps(y0..y1, f * self.height));
        let (c0, c1) = window(&columns);
        let (r0, r1) = window(&rows);
        // The instance's logits over the prototypes its box reads.
        let cw = c1 - c0;
        let plane = self.height * self.width;
        scratch.logits.clear();
        scratch.logits.resize(cw * (r1 - r0), 0.0);
        for (k, &weight) in coefficients.iter().enumerate().take(self.coefficients) {
            let proto = &protos[k * plane..(k + 1) * plane];
            for (r, logits) in (r0..r1).zip(scratch.logits.chunks_exact_mut(cw)) {
                let row = &proto[r * self.width + c0..r * self.width + c1];
                for (l, &p) in logits.iter_mut().zip(row) {
                    *l += weight * p;
                }
            }
        }
        let (h, rh) = (y1 - y0, r1 - r0);
        // Each logits column resampled to the box's source rows once; each source column is then
        // a weighed sum of a few of those, a pass over contiguous values, whose runs are the
        // column's part of the encoding.
        scratch.column.clear();
        scratch.column.resize(rh, 0.0);
        scratch.tall.clear();
        for c in 0..cw {
            for (r, v) in scratch.column.iter_mut().enumerate() {
                *v = scratch.logits[r * cw + c];
            }
            scratch.tall.extend(rows.iter().map(|tap| tap.value(&scratch.column, r0)));
        }
        scratch.row.resize(h, 0.0);
        let mut runs = Runs::new();
        runs.push(false, x0 * sh);
        for tap in &columns {
            tap.rows(&scratch.tall, c0, &mut scratch.row);
            runs.push(false, y0);
            runs.extend_column(&scratch.row);
            runs.push(false, sh - y1);
        }
        runs.push(false, (sw - x1) * sh);
        // Only the first run is unset where no pixel is.
        if runs.counts.len() == 1 {
            return None;
        }
        Some(Rle { size: [sh, sw], counts: runs.counts })
    }
}

/// Buffers one instance's mask is made in, kept between instances and frames.
#[derive(Debug, Default)]
pub struct Scratch {
    logits: Vec<f32>,
    column: Vec<f32>,
    tall: Vec<f32>,
    row: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pixels of an RLE as a row-major bitmap.
    fn bitmap(rle: &Rle) -> Vec<bool> {
        let [h, w] = rle.size;
        let mut bits = vec![false; h * w];
        rle.for_each_run(|x, y0, y1| (y0..y1).for_each(|y| bits[y * w + x] = true));
        bits
    }

    #[test]
    fn a_column_s_runs_across_words_are_its_pixels() {
        // Runs that cross the 64-value words, start set, and end at the column's end.
        let values: Vec<f32> =
            (0..200).map(|i| if (i / 7) % 3 == 0 || (60..140).contains(&i) { 1.0 } else { -1.0 }).collect();
        let mut runs = Runs::new();
        runs.extend_column(&values);
        let rle = Rle { size: [200, 1], counts: runs.counts };
        let wanted: Vec<bool> = values.iter().map(|&v| v > 0.0).collect();
        assert_eq!(bitmap(&rle), wanted);
        let mut nan = Runs::new();
        nan.extend_column(&[f32::NAN; 70]);
        assert_eq!(nan.counts, [70]);
    }

    #[test]
    fn runs_are_column_major_and_start_unset() {
        // 3 high, 2 wide: set pixels (0, 0), (1, 0), (1, 1) as (x, y).
        let mut runs = Runs::new();
        for set in [true, false, false, true, true, false] {
            runs.push(set, 1);
        }
        let rle = Rle { size: [3, 2], counts: runs.counts };
        assert_eq!(rle.counts, [0, 1, 2, 2, 1]);
        assert_eq!(rle.area(), 3);
        // Against (1, 0), (1, 1), (1, 2): two pixels in common.
        let other = Rle { size: [3, 2], counts: vec![3, 3] };
        assert_eq!((rle.intersection(&other), other.intersection(&rle)), (2, 2));
        assert_eq!(rle.intersection(&rle), 3);
        assert_eq!(bitmap(&rle), [true, true, false, true, false, false]);
    }

    #[test]
    fn a_mask_is_its_logits_sampled_through_the_geometry_within_the_box() {
        // One prototype 2×2: positive on the left column. Input 4×4, source 8×8 (scale 0.5).
        let protos = HostTensor::new(vec![1, 1, 2, 2], vec![1.0, -1.0, 1.0, -1.0]);
        let p = Prototypes { index: 0, coefficients: 1, height: 2, width: 2 };
        let g = Geometry {
            source_width: 8,
            source_height: 8,
            scale_x: 0.5,
            scale_y: 0.5,
            offset_x: 0.0,
            offset_y: 0.0,
        };
        let mut scratch = Scratch::default();
        let rle = p.mask(&protos.data, &[1.0], [0.0, 0.0, 8.0, 8.0], (4, 4), &g, &mut scratch).unwrap();
        // Logits fall from 1 to -1 between source columns 2 and 5: zero at the middle, x = 4.
        let bits = bitmap(&rle);
        for y in 0..8 {
            let row: Vec<bool> = (0..8).map(|x| bits[y * 8 + x]).collect();
            assert_eq!(row, [true, true, true, true, false, false, false, false], "row {y}");
        }
        // Cropped to a box from x 1.5 to 3, y 2 to 4.5: column 2 of rows 2 to 4.
        let rle = p.mask(&protos.data, &[1.0], [1.5, 2.0, 3.0, 4.5], (4, 4), &g, &mut scratch).unwrap();
        let bits = bitmap(&rle);
        let set: Vec<(usize, usize)> = (0..64).filter(|&i| bits[i]).map(|i| (i % 8, i / 8)).collect();
        assert_eq!(set, [(2, 2), (2, 3), (2, 4)]);
        // A negative coefficient sets the other side; nothing set is no mask.
        let rle = p.mask(&protos.data, &[-1.0], [0.0, 0.0, 8.0, 8.0], (4, 4), &g, &mut scratch).unwrap();
        assert_eq!(rle.area(), 32);
        assert!(p.mask(&protos.data, &[0.0], [0.0, 0.0, 8.0, 8.0], (4, 4), &g, &mut scratch).is_none());
        assert!(p.mask(&protos.data, &[f32::NAN], [0.0, 0.0, 8.0, 8.0], (4, 4), &g, &mut scratch).is_none());
        assert!(p.mask(&protos.data, &[1.0], [3.0, 3.0, 3.0, 9.0], (4, 4), &g, &mut scratch).is_none());
    }

    #[test]
    fn prototypes_are_the_one_output_of_four_fixed_dimensions() {
        use crate::tensor::DataType;
        let spec = |shape: Vec<Option<usize>>| TensorSpec { name: "p".into(), shape, dtype: DataType::F32 };
        let boxes = spec(vec![Some(1), Some(116), Some(8400)]);
        assert!(
            Prototypes::find(&[boxes.clone(), spec(vec![Some(1), Some(32), Some(160), Some(160)])]).is_ok()
        );
        let none = Prototypes::find(std::slice::from_ref(&boxes)).unwrap_err();
        assert!(none.contains("one prototypes output"), "{none}");
        let dynamic = Prototypes::find(&[boxes, spec(vec![Some(1), Some(32), None, None])]).unwrap_err();
        assert!(dynamic.contains("fixed sizes"), "{dynamic}");
    }
}
