//! mAP@IoU of candidate boxes against reference boxes taken as ground truth (VOC style:
//! greedy matching by score, all-point interpolated precision, mean over reference classes).

use std::collections::BTreeSet;

use crate::postprocess::nms::iou;
use crate::postprocess::Detection;

/// Mean average precision over the classes present in `reference`; `None` when neither side has
/// a box (nothing to compare), 0 when the candidate finds nothing the reference has.
pub fn mean_average_precision(
    reference: &[Vec<Detection>],
    candidate: &[Vec<Detection>],
    iou_threshold: f32,
) -> Option<f64> {
    let classes: BTreeSet<usize> = reference.iter().flatten().map(|d| d.class_id).collect();
    if classes.is_empty() {
        let none_found = candidate.iter().all(Vec::is_empty);
        return if none_found { None } else { Some(0.0) };
    }
    let aps: Vec<f64> =
        classes.iter().map(|&c| average_precision(reference, candidate, c, iou_threshold)).collect();
    Some(aps.iter().sum::<f64>() / aps.len() as f64)
}

fn average_precision(
    reference: &[Vec<Detection>],
    candidate: &[Vec<Detection>],
    class: usize,
    threshold: f32,
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
            .map(|(i, t)| (i, iou(&t.bbox, &d.bbox)))
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
        assert_eq!(mean_average_precision(&boxes, &boxes, 0.5), Some(1.0));
    }

    #[test]
    fn hand_computed_precision_recall() {
        // Class 0, two true boxes in one image. Candidates by score: a hit, a miss, a hit.
        // Points (recall, precision): (0.5, 1), (0.5, 0.5), (1, 2/3) → AP = 0.5·1 + 0.5·2/3.
        let reference = vec![vec![d(0, 1.0, 0.0), d(0, 1.0, 100.0)]];
        let candidate = vec![vec![d(0, 0.9, 0.0), d(0, 0.8, 300.0), d(0, 0.7, 101.0)]];
        let map = mean_average_precision(&reference, &candidate, 0.5).unwrap();
        assert!((map - (0.5 + 0.5 * 2.0 / 3.0)).abs() < 1e-12, "{map}");
    }

    #[test]
    fn a_missed_class_and_a_wrong_class_count_as_zero() {
        // Class 0 found exactly, class 1 missed (the candidate calls it class 2): mAP = (1 + 0) / 2.
        let reference = vec![vec![d(0, 1.0, 0.0), d(1, 1.0, 50.0)]];
        let candidate = vec![vec![d(0, 0.9, 0.0), d(2, 0.9, 50.0)]];
        assert_eq!(mean_average_precision(&reference, &candidate, 0.5), Some(0.5));
    }

    #[test]
    fn a_shifted_box_below_the_threshold_is_a_miss_and_duplicates_are_false_positives() {
        // IoU of boxes shifted by 6 of 10: 4/16 = 0.25 < 0.5.
        let reference = vec![vec![d(0, 1.0, 0.0)]];
        assert_eq!(mean_average_precision(&reference, &[vec![d(0, 0.9, 6.0)]], 0.5), Some(0.0));
        // A duplicate after the hit: points (1, 1), (1, 0.5) → AP 1.
        let dup = vec![vec![d(0, 0.9, 0.0), d(0, 0.8, 0.0)]];
        assert_eq!(mean_average_precision(&reference, &dup, 0.5), Some(1.0));
        assert_eq!(mean_average_precision(&[vec![]], &[vec![]], 0.5), None);
    }
}
