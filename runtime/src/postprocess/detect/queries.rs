//! Detectors whose outputs are already one box per object, with no NMS to run: `[N, K, 6]` rows
//! of x1, y1, x2, y2 in input pixels, score, class (YOLOv10, YOLO26, Ultralytics' `nms=True`
//! exports), and RT-DETR's queries, boxes as cx, cy, w, h in fractions of the input with either
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
}

impl Queries {
    pub fn new(format: DetectFormat, outputs: &[TensorSpec]) -> Result<Queries, String> {
        let (index, dims) = output(outputs, format, None, 3)?;
        let rtdetr = format == DetectFormat::Rtdetr;
        let width = dims[1];
        if (!rtdetr && width != 6) || width < 5 || dims[0] == 0 {
            let wanted =
                if rtdetr { "[N, queries, 4 + classes] or [N, queries, 6]" } else { "[N, boxes, 6]" };
            return Err(format!(
                "format '{}' needs output '{}' as {wanted}, it is [N, {}, {width}]",
                format.name(),
                outputs[index].name,
                dims[0]
            ));
        }
        Ok(Queries { index, width, rtdetr })
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
        for row in outputs[self.index].item(item).chunks_exact(self.width) {
            let (class_id, score) = if self.width == 6 {
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
            } else {
                [row[0], row[1], row[2], row[3]]
            };
            found.push(Candidate { class_id, score, bbox });
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
