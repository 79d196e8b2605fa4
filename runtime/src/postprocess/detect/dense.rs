//! YOLO outputs with a row of numbers per grid position, before NMS: YOLOv8, YOLO11 and YOLOv5u
//! `[N, 4 + C, boxes]` (channels first; score = the best class; segment, pose and OBB models add
//! their values after the classes: `[N, 4 + C + E, boxes]`), and the original YOLOv5
//! `[N, boxes, 5 + C]` (score = objectness × the best class). Boxes are cx, cy, w, h in input
//! pixels.

use super::{best, corners, output, passes, Candidate};
use crate::model::manifest::DetectFormat;
use crate::tensor::{HostTensor, TensorSpec};

/// Ultralytics keeps the 30,000 best candidates for NMS; so does edgert, so that a model whose
/// every box scores high costs bounded time.
const MAX_CANDIDATES: usize = 30_000;

#[derive(Debug, Clone)]
pub struct Dense {
    index: usize,
    boxes: usize,
    pub classes: usize,
    /// Values after the classes (YOLOv8's channels-first rows only).
    carried: usize,
    /// YOLOv8's channels-first rows, or YOLOv5's rows with objectness.
    channels_first: bool,
}

impl Dense {
    /// `carried`: how many values follow each box's classes.
    pub fn new(format: DetectFormat, outputs: &[TensorSpec], carried: usize) -> Result<Dense, String> {
        let (index, dims) = output(outputs, format, None, 3)?;
        let channels_first = format == DetectFormat::Yolov8;
        let (rows, boxes, extra) =
            if channels_first { (dims[0], dims[1], 4 + carried) } else { (dims[1], dims[0], 5) };
        if rows <= extra || boxes == 0 {
            let wanted = match (channels_first, carried) {
                (true, 0) => "[N, 4 + classes, boxes]".to_string(),
                (true, e) => format!("[N, 4 + classes + {e}, boxes]"),
                (false, _) => "[N, boxes, 5 + classes]".to_string(),
            };
            return Err(format!(
                "format '{}' needs output '{}' as {wanted}, it is [N, {}, {}]",
                format.name(),
                outputs[index].name,
                dims[0],
                dims[1]
            ));
        }
        Ok(Dense { index, boxes, classes: rows - extra, carried, channels_first })
    }

    /// The values box `row` carries after its classes, appended to `into`.
    pub fn carried(&self, outputs: &[HostTensor], item: usize, row: usize, into: &mut Vec<f32>) {
        let values = outputs[self.index].item(item);
        let first = 4 + self.classes;
        into.extend((first..first + self.carried).map(|c| values[c * self.boxes + row]));
    }

    pub fn candidates(&self, outputs: &[HostTensor], item: usize, confidence: f32) -> Vec<Candidate> {
        let values = outputs[self.index].item(item);
        let mut found = Vec::new();
        if self.channels_first {
            // Which boxes have a class over the threshold, found class by class along the rows,
            // which lie contiguous (a box's classes are a whole output apart), in one read of the
            // output; then those boxes' best classes, again row by row, each row read only at
            // them and in order.
            let n = self.boxes;
            let rows = || values[4 * n..(4 + self.classes) * n].chunks_exact(n);
            let mut any = vec![false; n];
            for row in rows() {
                for (hit, &score) in any.iter_mut().zip(row) {
                    *hit |= passes(score, confidence);
                }
            }
            let passing: Vec<usize> = (0..n).filter(|&b| any[b]).collect();
            let mut best = vec![(0u32, f32::NEG_INFINITY); passing.len()];
            for (c, row) in rows().enumerate() {
                for (slot, &b) in best.iter_mut().zip(&passing) {
                    if row[b] > slot.1 {
                        *slot = (c as u32, row[b]);
                    }
                }
            }
            let at = |row: usize, b: usize| values[row * n + b];
            for (&b, &(class_id, score)) in passing.iter().zip(&best) {
                let bbox = corners(at(0, b), at(1, b), at(2, b), at(3, b));
                found.push(Candidate { class_id: class_id as usize, score, bbox, row: b });
            }
        } else {
            let width = 5 + self.classes;
            for (b, row) in values.chunks_exact(width).enumerate() {
                let objectness = row[4];
                if !passes(objectness, confidence) {
                    continue;
                }
                let (class_id, score) = best(row[5..].iter().map(|&s| s * objectness));
                if passes(score, confidence) {
                    let bbox = corners(row[0], row[1], row[2], row[3]);
                    found.push(Candidate { class_id, score, bbox, row: b });
                }
            }
        }
        if found.len() > MAX_CANDIDATES {
            found.select_nth_unstable_by(MAX_CANDIDATES, |a, b| b.score.total_cmp(&a.score));
            found.truncate(MAX_CANDIDATES);
        }
        found
    }
}
