//! mAP@IoU of candidate detections against reference detections taken as ground truth (VOC
//! style: greedy matching by score, all-point interpolated precision, mean over reference
//! classes), their overlap measured as the task has it: boxes' IoU, masks' IoU, keypoints'
//! similarity (OKS) or rotated boxes' probabilistic IoU.

use std::collections::BTreeSet;

use crate::model::manifest::DetectSpec;
use crate::postprocess::nms::iou;
use crate::postprocess::{rotated, Detection};

/// How a candidate detection overlaps a reference one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    Boxes,
    Masks,
    Keypoints,
    Rotated,
}

/// COCO's per-keypoint spreads for a person's 17 (what Ultralytics' OKS uses); other skeletons
/// weigh every point the same.
const COCO_SIGMAS: [f32; 17] =
    [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89];

/// A reference keypoint this sure is visible, and counts in OKS.
const VISIBLE: f32 = 0.5;

impl Overlap {
    /// What a detector's boxes carry decides how they are matched.
    pub fn of(spec: &DetectSpec) -> Overlap {
        if spec.masks {
            Overlap::Masks
        } else if spec.keypoints.is_some() {
            Overlap::Keypoints
        } else if spec.rotated {
            Overlap::Rotated
        } else {
            Overlap::Boxes
        }
    }

    /// The gate metric's name.
    pub fn metric(self) -> &'static str {
        match self {
            Overlap::Boxes => "map50",
            Overlap::Masks => "mask_map50",
            Overlap::Keypoints => "oks_map50",
            Overlap::Rotated => "rotated_map50",
        }
    }

    /// 0 where either side lacks what is compared.
    fn between(self, truth: &Detection, found: &Detection) -> f32 {
        match self {
            Overlap::Boxes => iou(&truth.bbox, &found.bbox),
            Overlap::Masks => match (&truth.mask, &found.mask) {
                (Some(t), Some(f)) if t.size == f.size => {
                    let both = t.intersection(f) as f64;
                    let either = (t.area() + f.area()) as f64 - both;
                    if either > 0.0 {
                        (both / either) as f32
                    } else {
                        0.0
                    }
                }
                _ => 0.0,
            },
            Overlap::Keypoints => match (&truth.keypoints, &found.keypoints) {
                (Some(t), Some(f)) => oks(t, f, truth.bbox),
                _ => 0.0,
            },
            Overlap::Rotated => match (&truth.rotated, &found.rotated) {
                (Some(t), Some(f)) => rotated::overlap(t.xywhr, f.xywhr) as f32,
                _ => 0.0,
            },
        }
    }
}

/// Object keypoint similarity as Ultralytics computes it: each visible reference point's
/// `exp(-d² / (2 · (2σ)² · area))`, averaged, with the area 0.53 of the reference's box.
fn oks(
    truth: &crate::postprocess::keypoints::Keypoints,
    found: &crate::postprocess::keypoints::Keypoints,
    bbox: [f32; 4],
) -> f32 {
    let area = (bbox[2] - bbox[0]).max(0.0) * (bbox[3] - bbox[1]).max(0.0) * 0.53;
    let count = truth.flat.len() / truth.values.max(1);
    let sigma = |k: usize| if count == 17 { COCO_SIGMAS[k] / 10.0 } else { 1.0 / count as f32 };
    let (mut sum, mut visible) = (0.0f32, 0usize);
    for (k, ((tx, ty, tc), (fx, fy, _))) in truth.points().zip(found.points()).enumerate() {
        if tc < VISIBLE {
            continue;
        }
        let d = (tx - fx).powi(2) + (ty - fy).powi(2);
        sum += (-d / ((2.0 * sigma(k)).powi(2) * (area + 1e-9) * 2.0)).exp();
        visible += 1;
    }
    if visible == 0 {
        0.0
    } else {
        sum / visible as f32
    }
}

/// Mean average precision over the classes present in `reference`; `None` when neither side has
/// a box (nothing to compare), 0 when the candidate finds nothing the reference has.
pub fn mean_average_precision(
    reference: &[Vec<Detection>],
    candidate: &[Vec<Detection>],
    iou_threshold: f32,
    overlap: Overlap,
) -> Option<f64> {
    let classes: BTreeSet<usize> = reference.iter().flatten().map(|d| d.class_id).collect();
    if classes.is_empty() {
        let none_found = candidate.iter().all(Vec::is_empty);
        return if none_found { None } else { Some(0.0) };
    }
    let aps: Vec<f64> =
        classes.iter().map(|&c| average_precision(reference, candidate, c, iou_threshold, overlap)).collect();
    Some(aps.iter().sum::<f64>() / aps.len() as f64)
}

fn average_precision(
    reference: &[Vec<Detection>],
    candidate: &[Vec<Detection>],
    class: usize,
    threshold: f32,
    overlap: Overlap,
) -> f64 {
    let truth: Vec<Vec<&Detection>> =
        reference.iter().map(|boxes| boxes.iter().filter(|d| d.class_id == class).collect()).collect();
    let total: usize = truth.iter().map(Vec::len).sum();
    let mut found: Vec<(usize, &Detection)> = candidate
        .iter()
        .enumerate()
        .flat_map(|(image, boxes)| boxes.iter().filter(|d| d.class_id == class).map(move |d| (image, d)))
        .collect();
    found.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
    let mut matched: Vec<Vec<bool>> = truth.iter().map(|t| vec![false; t.len()]).collect();
    let (mut tp, mut points) = (0usize, Vec::with_capacity(found.len()));
    for (rank, (image, d)) in found.iter().enumerate() {
        let best = truth[*image]
            .iter()
            .enumerate()
            .filter(|(i, _)| !matched[*image][*i])
            .map(|(i, t)| (i, overlap.between(t, d)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, _)) = best.filter(|(_, overlap)| *overlap >= threshold) {
            matched[*image][i] = true;
            tp += 1;
        }
        points.push((tp as f64 / total as f64, tp as f64 / (rank + 1) as f64));
    }
    // All-point interpolation: precision made non-increasing, summed over recall steps.
    let mut ap = 0.0;
    let mut best_precision = 0.0f64;
    for i in (0..points.len()).rev() {
        best_precision = best_precision.max(points[i].1);
        let previous_recall = if i == 0 { 0.0 } else { points[i - 1].0 };
        ap += (points[i].0 - previous_recall) * best_precision;
    }
    ap
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(class_id: usize, score: f32, x: f32) -> Detection {
        Detection { class_id, score, bbox: [x, 0.0, x + 10.0, 10.0], ..Detection::default() }
    }

    #[test]
    fn identical_boxes_score_one() {
        let boxes = vec![vec![d(0, 0.9, 0.0), d(1, 0.8, 50.0)], vec![d(0, 0.7, 20.0)]];
        assert_eq!(mean_average_precision(&boxes, &boxes, 0.5, Overlap::Boxes), Some(1.0));
    }

    #[test]
    fn hand_computed_precision_recall() {
        // Class 0, two true boxes in one image. Candidates by score: a hit, a miss, a hit.
        // Points (recall, precision): (0.5, 1), (0.5, 0.5, Overlap::Boxes), (1, 2/3) → AP = 0.5·1 + 0.5·2/3.
        let reference = vec![vec![d(0, 1.0, 0.0), d(0, 1.0, 100.0)]];
        let candidate = vec![vec![d(0, 0.9, 0.0), d(0, 0.8, 300.0), d(0, 0.7, 101.0)]];
        let map = mean_average_precision(&reference, &candidate, 0.5, Overlap::Boxes).unwrap();
        assert!((map - (0.5 + 0.5 * 2.0 / 3.0)).abs() < 1e-12, "{map}");
    }

    #[test]
    fn a_missed_class_and_a_wrong_class_count_as_zero() {
        // Class 0 found exactly, class 1 missed (the candidate calls it class 2): mAP = (1 + 0) / 2.
        let reference = vec![vec![d(0, 1.0, 0.0), d(1, 1.0, 50.0)]];
        let candidate = vec![vec![d(0, 0.9, 0.0), d(2, 0.9, 50.0)]];
        assert_eq!(mean_average_precision(&reference, &candidate, 0.5, Overlap::Boxes), Some(0.5));
    }

    #[test]
    fn a_shifted_box_below_the_threshold_is_a_miss_and_duplicates_are_false_positives() {
        // IoU of boxes shifted by 6 of 10: 4/16 = 0.25 < 0.5.
        let reference = vec![vec![d(0, 1.0, 0.0)]];
        assert_eq!(
            mean_average_precision(&reference, &[vec![d(0, 0.9, 6.0)]], 0.5, Overlap::Boxes),
            Some(0.0)
        );
        // A duplicate after the hit: points (1, 1), (1, 0.5, Overlap::Boxes) → AP 1.
        let dup = vec![vec![d(0, 0.9, 0.0), d(0, 0.8, 0.0)]];
        assert_eq!(mean_average_precision(&reference, &dup, 0.5, Overlap::Boxes), Some(1.0));
        assert_eq!(mean_average_precision(&[vec![]], &[vec![]], 0.5, Overlap::Boxes), None);
    }

    #[test]
    fn keypoints_match_by_similarity_and_rotated_boxes_by_their_overlap() {
        use crate::postprocess::keypoints::Keypoints;
        use crate::postprocess::rotated::RotatedBox;
        let person = |shift: f32, sure: f32| Detection {
            bbox: [0.0, 0.0, 100.0, 200.0],
            keypoints: Some(Keypoints {
                values: 3,
                flat: (0..17).flat_map(|k| [10.0 + 5.0 * k as f32 + shift, 100.0, sure]).collect(),
            }),
            ..Detection::default()
        };
        let truth = vec![vec![person(0.0, 0.9)]];
        let near = Overlap::Keypoints.between(&truth[0][0], &person(1.0, 0.9));
        let far = Overlap::Keypoints.between(&truth[0][0], &person(30.0, 0.9));
        assert!(near > 0.9 && far < 0.2, "{near} {far}");
        assert_eq!(
            mean_average_precision(&truth, &[vec![person(1.0, 0.9)]], 0.5, Overlap::Keypoints),
            Some(1.0)
        );
        assert_eq!(
            mean_average_precision(&truth, &[vec![person(30.0, 0.9)]], 0.5, Overlap::Keypoints),
            Some(0.0)
        );
        // No reference point sure enough to count: no similarity.
        assert_eq!(Overlap::Keypoints.between(&person(0.0, 0.1), &person(0.0, 0.1)), 0.0);
        let turned = |angle: f32| Detection {
            rotated: Some(RotatedBox::new([50.0, 50.0, 80.0, 10.0, angle])),
            ..Detection::default()
        };
        assert!(Overlap::Rotated.between(&turned(0.3), &turned(0.3)) > 0.99);
        assert!(Overlap::Rotated.between(&turned(0.3), &turned(1.8)) < 0.5);
        // What one side lacks does not match.
        assert_eq!(Overlap::Masks.between(&turned(0.3), &turned(0.3)), 0.0);
    }
}
