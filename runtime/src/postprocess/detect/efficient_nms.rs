//! Boxes already suppressed by the model: TensorRT's EfficientNMS plugin (`num_detections [N, 1]`,
//! `detection_boxes [N, K, 4]`, `detection_scores [N, K]`, `detection_classes [N, K]`, INT32 or
//! float) and the TensorFlow Object Detection API (the same names, `num_detections [N]`, boxes as
//! y-first corners in fractions of the input). Rows past `num_detections` are padding.

use super::queries::class_index;
use super::{output, passes, Candidate};
use crate::model::manifest::{BoxOrder, DetectFormat, DetectSpec};
use crate::tensor::{HostTensor, TensorSpec};

#[derive(Debug, Clone)]
pub struct EfficientNms {
    num: usize,
    boxes: usize,
    scores: usize,
    classes: usize,
    rows: usize,
    order: BoxOrder,
    normalized: bool,
}

impl EfficientNms {
    pub fn new(spec: &DetectSpec, outputs: &[TensorSpec]) -> Result<EfficientNms, String> {
        let format = DetectFormat::EfficientNms;
        let find = |name: &str, ranks: &[usize]| {
            let found = ranks.iter().find_map(|&rank| output(outputs, format, Some(name), rank).ok());
            found.ok_or_else(|| {
                format!(
                    "format 'efficient-nms' needs an output named like '{name}' of {} dimensions; the model's are {}",
                    ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" or "),
                    crate::tensor::describe(outputs)
                )
            })
        };
        let (num, num_dims) = find("num_detections", &[1, 2])?;
        let (boxes, box_dims) = find("detection_boxes", &[3])?;
        let (scores, score_dims) = find("detection_scores", &[2])?;
        let (classes, class_dims) = find("detection_classes", &[2])?;
        let rows = box_dims[0];
        if box_dims[1] != 4
            || score_dims[0] != rows
            || class_dims[0] != rows
            || num_dims.iter().any(|&d| d != 1)
        {
            return Err(format!(
                "format 'efficient-nms' needs num_detections [N, 1], detection_boxes [N, K, 4], detection_scores and \
                 detection_classes [N, K]; the model's are {}",
                crate::tensor::describe(outputs)
            ));
        }
        let (order, normalized) = (spec.box_order.unwrap_or_default(), spec.normalized.unwrap_or(false));
        Ok(EfficientNms { num, boxes, scores, classes, rows, order, normalized })
    }

    pub fn candidates(
        &self,
        outputs: &[HostTensor],
        item: usize,
        confidence: f32,
        (height, width): (usize, usize),
    ) -> Vec<Candidate> {
        let count = outputs[self.num].item(item).first().copied().unwrap_or(0.0);
        let count = if count.is_finite() && count > 0.0 { (count as usize).min(self.rows) } else { 0 };
        let (sx, sy) = if self.normalized { (width as f32, height as f32) } else { (1.0, 1.0) };
        let boxes = outputs[self.boxes].item(item);
        let scores = outputs[self.scores].item(item);
        let classes = outputs[self.classes].item(item);
        let mut found = Vec::new();
        for k in 0..count {
            let Some(class_id) = class_index(classes[k]) else { continue };
            if !passes(scores[k], confidence) {
                continue;
            }
            let b = &boxes[k * 4..k * 4 + 4];
            let [x1, y1, x2, y2] = match self.order {
                BoxOrder::Xyxy => [b[0], b[1], b[2], b[3]],
                BoxOrder::Yxyx => [b[1], b[0], b[3], b[2]],
            };
            found.push(Candidate {
                class_id,
                score: scores[k],
                bbox: [x1 * sx, y1 * sy, x2 * sx, y2 * sy],
                row: k,
            });
        }
        found
    }
}
