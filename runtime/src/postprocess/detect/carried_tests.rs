//! Masks, keypoints and rotated boxes decoded from segment, pose and OBB models' real raw outputs
//! (`models/detect/`, made by `models/task_heads.py`) equal Ultralytics' own postprocessing of the
//! same tensors: masks by IoU per instance, keypoints and corners within half a pixel.

use super::tests::{decoded, same_boxes};
use super::*;
use crate::postprocess::mask::Rle;

/// An RLE's pixels, column-major.
fn pixels(rle: &Rle) -> Vec<bool> {
    let [h, w] = rle.size;
    let mut bits = vec![false; h * w];
    rle.for_each_run(|x, y0, y1| bits[x * h + y0..x * h + y1].fill(true));
    bits
}

fn reference_rle(value: &serde_json::Value) -> Rle {
    let size = [value["size"][0].as_u64().unwrap() as usize, value["size"][1].as_u64().unwrap() as usize];
    let counts = value["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap() as u32).collect();
    Rle { size, counts }
}

fn floats(value: &serde_json::Value) -> Vec<f64> {
    value.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

#[test]
fn segment_models_masks_as_ultralytics_makes_them() {
    for (name, format) in [("yolov8n_seg", DetectFormat::Yolov8), ("yolo26n_seg", DetectFormat::End2end)] {
        let (found, json) = decoded(name, format, |s| s.masks = true);
        same_boxes(name, &found, &json);
        let wanted = json["masks"].as_array().unwrap();
        assert_eq!(found.len(), wanted.len(), "{name}");
        for (i, (d, w)) in found.iter().zip(wanted).enumerate() {
            let (ours, theirs) = (d.mask.as_ref().unwrap(), reference_rle(w));
            assert_eq!(ours.size, theirs.size, "{name} #{i}");
            let (a, b) = (pixels(ours), pixels(&theirs));
            let both = a.iter().zip(&b).filter(|(a, b)| **a && **b).count();
            let either = a.iter().zip(&b).filter(|(a, b)| **a || **b).count();
            let iou = both as f64 / either as f64;
            assert!(
                iou >= 0.98,
                "{name} #{i}: mask IoU {iou:.4} ({} against {} pixels)",
                ours.area(),
                theirs.area()
            );
        }
    }
}

#[test]
fn pose_models_keypoints_as_ultralytics_scales_them() {
    for (name, format) in [("yolo11n_pose", DetectFormat::Yolov8), ("yolo26n_pose", DetectFormat::End2end)] {
        let (found, json) = decoded(name, format, |s| s.keypoints = Some([17, 3]));
        assert_eq!(json["kpt_shape"], serde_json::json!([17, 3]), "{name}");
        same_boxes(name, &found, &json);
        let wanted = json["keypoints"].as_array().unwrap();
        for (i, (d, w)) in found.iter().zip(wanted).enumerate() {
            let ours = d.keypoints.as_ref().unwrap();
            let theirs: Vec<Vec<f64>> = w.as_array().unwrap().iter().map(floats).collect();
            assert_eq!(ours.flat.len(), theirs.len() * 3, "{name} #{i}");
            for (k, ((x, y, c), t)) in ours.points().zip(&theirs).enumerate() {
                let close = (f64::from(x) - t[0]).abs() <= 0.5 && (f64::from(y) - t[1]).abs() <= 0.5;
                assert!(
                    close && (f64::from(c) - t[2]).abs() < 1e-4,
                    "{name} #{i} point {k}: {x}, {y}, {c} against {t:?}"
                );
            }
        }
    }
}

#[test]
fn obb_models_rotated_boxes_as_ultralytics_keeps_them() {
    for (name, format) in [("yolov8n_obb", DetectFormat::Yolov8), ("yolo26n_obb", DetectFormat::End2end)] {
        let (found, json) = decoded(name, format, |s| s.rotated = true);
        let (wanted, corners) = (json["obb"].as_array().unwrap(), json["corners"].as_array().unwrap());
        assert!(!wanted.is_empty(), "{name}: nothing to compare");
        assert_eq!(
            found.len(),
            wanted.len(),
            "{name}: {} boxes, the reference has {}",
            found.len(),
            wanted.len()
        );
        for (i, ((d, w), c)) in found.iter().zip(wanted).zip(corners).enumerate() {
            let (w, turned) = (floats(w), d.rotated.unwrap());
            assert_eq!(d.class_id, w[6] as usize, "{name} #{i}");
            assert!(
                (f64::from(d.score) - w[5]).abs() < 1e-4,
                "{name} #{i}: score {} against {}",
                d.score,
                w[5]
            );
            for k in 0..4 {
                assert!(
                    (f64::from(turned.xywhr[k]) - w[k]).abs() <= 0.5,
                    "{name} #{i}: {turned:?} against {w:?}"
                );
            }
            assert!(
                (f64::from(turned.xywhr[4]) - w[4]).abs() < 1e-4,
                "{name} #{i}: angle of {turned:?} against {w:?}"
            );
            for (ours, theirs) in turned.corners.iter().zip(c.as_array().unwrap()) {
                let theirs = floats(theirs);
                assert!(
                    (f64::from(ours[0]) - theirs[0]).abs() <= 0.5
                        && (f64::from(ours[1]) - theirs[1]).abs() <= 0.5,
                    "{name} #{i}: corner {ours:?} against {theirs:?}"
                );
            }
            let [x1, y1, x2, y2] = d.bbox;
            assert!(x1 <= x2 && y1 <= y2, "{name} #{i}: {:?}", d.bbox);
        }
    }
}

#[test]
fn outputs_that_cannot_carry_what_the_spec_says_are_refused() {
    use crate::tensor::DataType;
    let out = |shape: &[usize]| TensorSpec {
        name: "output0".into(),
        shape: shape.iter().map(|&d| Some(d)).collect(),
        dtype: DataType::F32,
    };
    let mut pose = DetectSpec::new(DetectFormat::Yolov8);
    pose.keypoints = Some([17, 3]);
    // 17 keypoints of 2 values: 4 + 1 + 34 rows, fewer than 4 + 51 needs.
    let err = Decoder::new(&pose, &[out(&[1, 39, 8400])], (640, 640)).unwrap_err();
    assert!(err.contains("[N, 4 + classes + 51, boxes]"), "{err}");
    let mut e2e = DetectSpec::new(DetectFormat::End2end);
    e2e.keypoints = Some([17, 3]);
    let err = Decoder::new(&e2e, &[out(&[1, 300, 40])], (640, 640)).unwrap_err();
    assert!(err.contains("[N, boxes, 6 + 51]"), "{err}");
    let mut seg = DetectSpec::new(DetectFormat::Yolov8);
    seg.masks = true;
    let protos = TensorSpec {
        name: "output1".into(),
        shape: vec![Some(1), Some(32), Some(160)],
        dtype: DataType::F32,
    };
    let err = Decoder::new(&seg, &[out(&[1, 116, 8400]), protos], (640, 640)).unwrap_err();
    assert!(err.contains("one prototypes output"), "{err}");
}

#[test]
fn masks_past_the_memory_limit_are_an_error_naming_them() {
    use crate::limits::MemoryLimit;
    let (found, _) = decoded("yolov8n_seg", DetectFormat::Yolov8, |s| s.masks = true);
    let encoded: usize = found.iter().map(|d| d.mask.as_ref().unwrap().counts.len() * 4).sum();
    // The same decoding with a limit under what its masks take.
    let f = super::tests::fixture("yolov8n_seg");
    let mut spec = DetectSpec::new(DetectFormat::Yolov8);
    (spec.masks, spec.confidence, spec.iou) = (true, 0.8, 0.7);
    let decoder = Decoder::new(&spec, &f.specs, (160, 224)).unwrap();
    let g = crate::postprocess::fixtures::geometry(&f.json);
    let limit = MemoryLimit { bytes: encoded as u64 / 2 };
    let Err(err) = decoder.decode(&f.tensors, 0, &g, |c| c.to_string(), limit) else {
        panic!("masks of {encoded} bytes decoded within a limit of half that")
    };
    assert!(err.to_string().starts_with("the masks of 28 boxes at 810×1080 (those of the first "), "{err}");
    assert!(err.to_string().contains("more than the memory limit"), "{err}");
    let enough = MemoryLimit { bytes: encoded as u64 };
    assert_eq!(decoder.decode(&f.tensors, 0, &g, |c| c.to_string(), enough).unwrap().len(), found.len());
}
