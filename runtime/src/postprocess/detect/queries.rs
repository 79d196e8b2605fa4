//! Detectors whose outputs are already one box per object, with no NMS to run: `[N, K, 6]` rows
//! of x1, y1, x2, y2 in input pixels, score, class (YOLOv10, YOLO26, Ultralytics' `nms=True`
//! exports; segment, pose and OBB models add their values after the class: `[N, K, 6 + E]`, and an
//! OBB model's boxes are cx, cy, w, h), and RT-DETR's queries, boxes as cx, cy, w, h in fractions of the input with either
//! a score per class (`[N, K, 4 + C]`) or the best one and its class (`[N, K, 6]`, Ultralytics
//! 8.4 and later).

use super::{best, corners, output, passes, Candidate};
use crate::model::manifest::DetectFormat;
use crate::tensor::{HostTensor, TensorSpec};

#[derive(Debug, Clone)]
pub struct Queries {
    index: usize,
    width: usize,
    rtdetr: bool,
    /// Boxes given as centre and size (OBB models) rather than corners.
    centred: bool,
}

impl Queries {
    /// `carried`: how many values follow each box's class; `centred`: boxes are cx, cy, w, h.
    pub fn new(
        format: DetectFormat,
        outputs: &[TensorSpec],
        carried: usize,
        centred: bool,
    ) -> Result<Queries, String> {
        let (index, dims) = output(outputs, format, None, 3)?;
        let rtdetr = format == DetectFormat::Rtdetr;
        let width = dims[1];
        if (!rtdetr && width != 6 + carried) || width < 5 || dims[0] == 0 {
            let wanted = match (rtdetr, carried) {
                (true, _) => "[N, queries, 4 + classes] or [N, queries, 6]".to_string(),
                (false, 0) => "[N, boxes, 6]".to_string(),
                (false, e) => format!("[N, boxes, 6 + {e}]"),
            };
            return Err(format!(
                "format '{}' needs output '{}' as {wanted}, it is [N, {}, {width}]",
                format.name(),
                outputs[index].name,
                dims[0]
            ));
        }
        Ok(Queries { index, width, rtdetr, centred })
    }

    /// The values box `row` carries after its class, appended to `into`.
    pub fn carried(&self, outputs: &[HostTensor], item: usize, row: usize, into: &mut Vec<f32>) {
        let values = outputs[self.index].item(item);
        into.extend_from_slice(&values[row * self.width + 6..(row + 1) * self.width]);
    }

    /// Per-class scores (`[N, K, 4 + C]`) tell how many classes there are.
    pub fn classes(&self) -> Option<usize> {
        (self.rtdetr && self.width != 6).then_some(self.width - 4)
    }

    pub fn candidates(
        &self,
        outputs: &[HostTensor],
        item: usize,
        confidence: f32,
        (height, width): (usize, usize),
    ) -> Vec<Candidate> {
        let (h, w) = (height as f32, width as f32);
        let mut found = Vec::new();
        for (r, row) in outputs[self.index].item(item).chunks_exact(self.width).enumerate() {
            let (class_id, score) = if !self.rtdetr || self.width == 6 {
                match class_index(row[5]) {
                    Some(class_id) => (class_id, row[4]),
                    None => continue,
                }
            } else {
                best(row[4..].iter().copied())
            };
            if !passes(score, confidence) {
                continue;
            }
            let bbox = if self.rtdetr {
                corners(row[0] * w, row[1] * h, row[2] * w, row[3] * h)
            } else if self.centred {
                corners(row[0], row[1], row[2], row[3])
            } else {
                [row[0], row[1], row[2], row[3]]
            };
            found.push(Candidate { class_id, score, bbox, row: r });
        }
        if self.rtdetr {
            // Ultralytics sorts RT-DETR's kept queries by score; end-to-end heads give them sorted.
            found.sort_by(|a, b| b.score.total_cmp(&a.score));
        }
        found
    }
}

/// A class index carried as a float (or an integer read as one); none where it is not one.
pub fn class_index(value: f32) -> Option<usize> {
    (0.0..1e7).contains(&value).then(|| value.round() as usize)
}
