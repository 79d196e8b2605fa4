//! `task = "semantic"`: a class for every source pixel, from scores per class and pixel
//! (`[N, C, h, w]`: the best class; one score, `[N, 1, h, w]`: the foreground above a threshold) or
//! from a map of class ids (`[N, h, w]`, what Ultralytics' exports give with the argmax in the
//! graph). Scores are resampled as Ultralytics does (bilinear to the input, the letterbox's content
//! to the source), ids by nearest neighbour; the result is the map and each class's share of it.

use serde::Serialize;

use super::resample::{window, Axis};
use crate::limits::{MemoryLimit, TooLarge};
use crate::preprocess::Geometry;
use crate::tensor::{DataType, HostTensor, TensorSpec};

/// A class per source pixel, and each class's share of the frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticMap {
    /// `[height, width]`.
    pub size: [usize; 2],
    /// Classes by share, the largest first; only those present.
    pub shares: Vec<ClassShare>,
    /// The class of each pixel, row-major; `NO_CLASS` where the model gave no valid id.
    #[serde(skip)]
    pub classes: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassShare {
    pub class_id: usize,
    pub label: String,
    /// The fraction of the frame's pixels.
    pub share: f32,
}

/// A pixel whose id in a map of class ids was not one (negative, fractional garbage, NaN).
pub const NO_CLASS: u32 = u32::MAX;

/// The largest class id read from a map of ids.
const MAX_CLASS_ID: f32 = 1e6;

/// Where the scores or ids are, and their sizes.
#[derive(Debug, Clone, Copy)]
pub struct Segmenter {
    index: usize,
    /// Scores per class; 0 for a map of ids.
    channels: usize,
    height: usize,
    width: usize,
    threshold: f32,
}

impl Segmenter {
    /// The model's one output of three or four fixed dimensions.
    pub fn new(outputs: &[TensorSpec], threshold: f32) -> Result<Segmenter, String> {
        let found: Vec<_> =
            outputs.iter().enumerate().filter(|(_, o)| matches!(o.shape.len(), 3 | 4)).collect();
        let [(index, o)] = found[..] else {
            return Err(format!(
                "task 'semantic' needs one output of scores [N, classes, h, w] or class ids [N, h, w]; the model's are {}",
                crate::tensor::describe(outputs)
            ));
        };
        let (channels, height, width) = match o.shape[1..] {
            [Some(c), Some(h), Some(w)] if c > 0 => (c, h, w),
            [Some(h), Some(w)] => (0, h, w),
            _ => (0, 0, 0),
        };
        // Scores in three dimensions (a detector's rows) are not a map of ids: ids are integers.
        let integer = matches!(
            o.dtype,
            DataType::U8 | DataType::I8 | DataType::U16 | DataType::I16 | DataType::I32 | DataType::I64
        );
        if channels == 0 && height > 0 && !integer {
            return Err(format!(
                "task 'semantic' reads a three-dimensional output as class ids, which are integers; '{}' is {} {}",
                o.name,
                o.dtype.name(),
                o.shape_text()
            ));
        }
        if height == 0 || width == 0 {
            return Err(format!(
                "task 'semantic' needs output '{}' of fixed sizes, [N, classes, h, w] or [N, h, w]; it is {}",
                o.name,
                o.shape_text()
            ));
        }
        Ok(Segmenter { index, channels, height, width, threshold })
    }

    /// How many classes the scores tell apart (two for one score: background and foreground);
    /// unknown for a map of ids.
    pub fn classes(&self) -> Option<usize> {
        match self.channels {
            0 => None,
            1 => Some(2),
            c => Some(c),
        }
    }

    /// The map of batch item `item` in source pixels; one past `memory` is an error.
    pub fn decode(
        &self,
        outputs: &[HostTensor],
        item: usize,
        input: (usize, usize),
        geometry: &Geometry,
        label: impl Fn(usize) -> String,
        memory: MemoryLimit,
    ) -> Result<SemanticMap, TooLarge> {
        let values = outputs[self.index].item(item);
        let (sw, sh) = (geometry.source_width as usize, geometry.source_height as usize);
        // The map, a class a pixel, and each class's scores along one row while it is made.
        let bytes = (sw * sh) as u128 * 4 + (self.channels * sw) as u128 * 4;
        memory.check_bytes(|| format!("the class map at {sw}×{sh}"), bytes)?;
        let (x, y) = Axis::pair(geometry, input, (self.height, self.width));
        let classes = if self.channels == 0 {
            // Ids are not blended: each source pixel takes its nearest cell's.
            let (columns, rows) = (x.nearest(0..sw, input.1), y.nearest(0..sh, input.0));
            let mut classes = Vec::with_capacity(sw * sh);
            for &r in &rows {
                classes.extend(columns.iter().map(|&c| class_id(values[r * self.width + c])));
            }
            classes
        } else {
            self.scores(values, x.taps(0..sw, input.1), y.taps(0..sh, input.0))
        };
        let mut counts = std::collections::BTreeMap::<u32, usize>::new();
        for &c in classes.iter().filter(|&&c| c != NO_CLASS) {
            *counts.entry(c).or_default() += 1;
        }
        let total = (sw * sh).max(1) as f32;
        let mut shares: Vec<ClassShare> = counts
            .into_iter()
            .map(|(c, n)| ClassShare {
                class_id: c as usize,
                label: label(c as usize),
                share: n as f32 / total,
            })
            .collect();
        shares.sort_by(|a, b| b.share.total_cmp(&a.share));
        Ok(SemanticMap { size: [sh, sw], shares, classes })
    }

    /// Each source pixel's best class (or, for one score, whether it is over the threshold).
    fn scores(
        &self,
        values: &[f32],
        columns: Vec<super::resample::Tap>,
        rows: Vec<super::resample::Tap>,
    ) -> Vec<u32> {
        let (c0, c1) = window(&columns);
        let (r0, r1) = window(&rows);
        let (cw, plane) = (c1 - c0, self.height * self.width);
        // Each class's scores over the cells the frame reads.
        let windowed: Vec<Vec<f32>> = (0..self.channels)
            .map(|k| {
                (r0..r1)
                    .flat_map(|r| &values[k * plane + r * self.width + c0..k * plane + r * self.width + c1])
                    .copied()
                    .collect()
            })
            .collect();
        let mut resampled = vec![vec![0.0; cw]; self.channels];
        let mut classes = Vec::with_capacity(columns.len() * rows.len());
        for tap in &rows {
            for (row, scores) in resampled.iter_mut().zip(&windowed) {
                tap.rows(scores, r0, row);
            }
            for column in &columns {
                let class = if self.channels == 1 {
                    u32::from(column.value(&resampled[0], c0) > self.threshold)
                } else {
                    let mut best = (0, f32::NEG_INFINITY);
                    for (k, row) in resampled.iter().enumerate() {
                        let v = column.value(row, c0);
                        if v > best.1 {
                            best = (k as u32, v);
                        }
                    }
                    best.0
                };
                classes.push(class);
            }
        }
        classes
    }
}

/// A class id carried as a float; `NO_CLASS` where it is not one.
fn class_id(value: f32) -> u32 {
    if (0.0..MAX_CLASS_ID).contains(&value) {
        value.round() as u32
    } else {
        NO_CLASS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postprocess::fixtures::{arrays, fixtures, geometry};

    /// A fixture decoded, with its reference class map.
    fn decoded(name: &str, threshold: f32) -> (SemanticMap, Vec<u32>) {
        let dir = fixtures();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap())
                .unwrap();
        let (specs, tensors): (Vec<TensorSpec>, Vec<HostTensor>) = arrays(&dir.join(format!("{name}.npz")))
            .into_iter()
            .map(|(n, t)| {
                // A map of ids is what the export declares it: bytes.
                let dtype = if t.shape.len() == 3 { DataType::U8 } else { DataType::F32 };
                let shape = t.shape.iter().map(|&d| Some(d)).collect();
                (TensorSpec { name: n, shape, dtype }, t)
            })
            .unzip();
        let input =
            (json["input"][0].as_u64().unwrap() as usize, json["input"][1].as_u64().unwrap() as usize);
        let segmenter = Segmenter::new(&specs, threshold).unwrap();
        let map = segmenter
            .decode(&tensors, 0, input, &geometry(&json), |c| format!("class{c}"), MemoryLimit::from_mib(64))
            .unwrap();
        let png = image::open(dir.join(format!("{name}.png"))).unwrap().into_luma8();
        assert_eq!([png.height() as usize, png.width() as usize], map.size, "{name}");
        (map, png.into_raw().into_iter().map(u32::from).collect())
    }

    /// At least `share` of the pixels have the reference's class: scores that nearly tie can
    /// fall either way in another order of arithmetic.
    fn agrees(name: &str, threshold: f32, share: f64) {
        let (map, wanted) = decoded(name, threshold);
        let same = map.classes.iter().zip(&wanted).filter(|(a, b)| a == b).count();
        let agreement = same as f64 / wanted.len() as f64;
        assert!(agreement >= share, "{name}: {:.5} of the pixels agree", agreement);
        let kinds = wanted.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(kinds > 1, "{name}: the reference has one class, nothing to tell apart");
        let total: f32 = map.shares.iter().map(|s| s.share).sum();
        assert!((total - 1.0).abs() < 1e-4 && map.shares.windows(2).all(|w| w[0].share >= w[1].share));
    }

    #[test]
    fn scores_as_ultralytics_and_torchvision_resample_them() {
        agrees("yolo26n_sem", 0.0, 0.999);
        agrees("yolo26n_sem1", 0.0, 0.999);
        agrees("lraspp", 0.0, 0.999);
    }

    #[test]
    fn class_ids_as_ultralytics_takes_them() {
        agrees("yolo26n_sem_ids", 0.0, 1.0);
    }

    #[test]
    fn outputs_of_no_semantic_shape_are_refused_naming_them() {
        let spec = |shape: Vec<Option<usize>>| TensorSpec { name: "o".into(), shape, dtype: DataType::F32 };
        let logits = Segmenter::new(&[spec(vec![Some(1), Some(1000)])], 0.0).unwrap_err();
        assert!(logits.contains("needs one output of scores"), "{logits}");
        let dynamic = Segmenter::new(&[spec(vec![Some(1), Some(21), None, None])], 0.0).unwrap_err();
        assert!(dynamic.contains("fixed sizes") && dynamic.contains("'o'"), "{dynamic}");
        let rows = Segmenter::new(&[spec(vec![Some(1), Some(84), Some(8400)])], 0.0).unwrap_err();
        assert!(rows.contains("class ids, which are integers; 'o' is f32 [1, 84, 8400]"), "{rows}");
        let one = Segmenter::new(&[spec(vec![Some(1), Some(1), Some(4), Some(4)])], 0.5).unwrap();
        assert_eq!(one.classes(), Some(2));
    }

    #[test]
    fn ids_that_are_not_classes_count_for_none() {
        let spec =
            TensorSpec { name: "o".into(), shape: vec![Some(1), Some(2), Some(2)], dtype: DataType::I64 };
        let s = Segmenter::new(&[spec], 0.0).unwrap();
        let t = HostTensor::new(vec![1, 2, 2], vec![1.0, f32::NAN, -3.0, 1e30]);
        let map = s
            .decode(&[t], 0, (2, 2), &Geometry::identity(2, 2), |c| c.to_string(), MemoryLimit::from_mib(1))
            .unwrap();
        assert_eq!(map.classes, [1, NO_CLASS, NO_CLASS, NO_CLASS]);
        assert_eq!(map.shares.len(), 1);
        assert!((map.shares[0].share - 0.25).abs() < 1e-6);
        // A map at the frame's size past the memory limit: an error naming it.
        let t = HostTensor::new(vec![1, 2, 2], vec![1.0; 4]);
        let big = Geometry { source_width: 4000, source_height: 3000, ..Geometry::identity(2, 2) };
        let err = s.decode(&[t], 0, (2, 2), &big, |c| c.to_string(), MemoryLimit::from_mib(16)).unwrap_err();
        assert!(err.to_string().starts_with("the class map at 4000×3000 would take 45.8 MiB"), "{err}");
    }
}
