//! Greedy non-maximum suppression, per class or across classes.

use super::detect::Candidate;
use super::Detection;

/// What NMS reads of a box.
pub trait Scored {
    fn class_id(&self) -> usize;
    fn score(&self) -> f32;
    fn bbox(&self) -> &[f32; 4];
}

impl Scored for Detection {
    fn class_id(&self) -> usize {
        self.class_id
    }
    fn score(&self) -> f32 {
        self.score
    }
    fn bbox(&self) -> &[f32; 4] {
        &self.bbox
    }
}

impl Scored for Candidate {
    fn class_id(&self) -> usize {
        self.class_id
    }
    fn score(&self) -> f32 {
        self.score
    }
    fn bbox(&self) -> &[f32; 4] {
        &self.bbox
    }
}

/// Intersection over union of two `[x1, y1, x2, y2]` boxes.
pub fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 {
        0.0
    } else {
        inter / union
    }
}

/// Keeps the best box of each overlapping group of the same class, best first.
pub fn nms(boxes: Vec<Detection>, iou_threshold: f32) -> Vec<Detection> {
    suppress(boxes, iou_threshold, false, usize::MAX)
}

/// Keeps the best box of each group overlapping by more than `iou_threshold` (of the same class,
/// or of any with `agnostic`), best first, at most `max_det`.
pub fn suppress<T: Scored>(mut boxes: Vec<T>, iou_threshold: f32, agnostic: bool, max_det: usize) -> Vec<T> {
    boxes.sort_by(|a, b| b.score().total_cmp(&a.score()));
    let mut kept: Vec<T> = Vec::new();
    for candidate in boxes {
        if kept.len() >= max_det {
            break;
        }
        let overlaps = kept.iter().any(|k| {
            (agnostic || k.class_id() == candidate.class_id())
                && iou(k.bbox(), candidate.bbox()) > iou_threshold
        });
        if !overlaps {
            kept.push(candidate);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(class_id: usize, score: f32, bbox: [f32; 4]) -> Detection {
        Detection { class_id, score, bbox, ..Detection::default() }
    }

    #[test]
    fn iou_of_hand_made_boxes() {
        assert_eq!(iou(&[0.0, 0.0, 2.0, 2.0], &[1.0, 1.0, 3.0, 3.0]), 1.0 / 7.0);
        assert_eq!(iou(&[0.0, 0.0, 1.0, 1.0], &[2.0, 2.0, 3.0, 3.0]), 0.0);
        assert_eq!(iou(&[0.0, 0.0, 1.0, 1.0], &[0.0, 0.0, 1.0, 1.0]), 1.0);
    }

    #[test]
    fn nms_drops_overlaps_of_the_same_class_only() {
        let kept = nms(
            vec![
                det(0, 0.6, [0.0, 0.0, 10.0, 10.0]),
                det(0, 0.9, [1.0, 1.0, 11.0, 11.0]),
                det(1, 0.5, [0.0, 0.0, 10.0, 10.0]),
                det(0, 0.4, [50.0, 50.0, 60.0, 60.0]),
            ],
            0.45,
        );
        let scores: Vec<f32> = kept.iter().map(|d| d.score).collect();
        assert_eq!(scores, vec![0.9, 0.5, 0.4]);
    }

    #[test]
    fn agnostic_nms_drops_overlaps_of_any_class_and_max_det_caps() {
        let boxes = vec![
            det(0, 0.9, [0.0, 0.0, 10.0, 10.0]),
            det(1, 0.8, [1.0, 1.0, 11.0, 11.0]),
            det(2, 0.7, [50.0, 50.0, 60.0, 60.0]),
            det(3, 0.6, [80.0, 80.0, 90.0, 90.0]),
        ];
        let scores = |kept: Vec<Detection>| kept.iter().map(|d| d.score).collect::<Vec<_>>();
        assert_eq!(scores(suppress(boxes.clone(), 0.45, true, 300)), vec![0.9, 0.7, 0.6]);
        assert_eq!(scores(suppress(boxes.clone(), 0.45, false, 300)), vec![0.9, 0.8, 0.7, 0.6]);
        assert_eq!(scores(suppress(boxes, 0.45, true, 2)), vec![0.9, 0.7]);
    }
}
