//! Each format decoded from a family's real raw outputs (`models/detect/`, made by
//! `models/detectors.py`) equals the family's own postprocessing of the same tensors: Ultralytics'
//! predictor for YOLOv8, YOLO11, YOLOv10, YOLO26, `nms=True` exports and RT-DETR; transcriptions
//! of pytorch-ssd's predictor, EfficientNMS's output layout and DeepStream's DetectNet_v2 parser.

use super::*;
use crate::limits::MemoryLimit;
use crate::postprocess::fixtures::{arrays, fixtures, geometry};
use crate::tensor::DataType;

pub(super) struct Fixture {
    pub specs: Vec<TensorSpec>,
    pub tensors: Vec<HostTensor>,
    pub json: serde_json::Value,
}

pub(super) fn fixture(name: &str) -> Fixture {
    let dir = fixtures();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    let (specs, tensors) = arrays(&dir.join(format!("{name}.npz")))
        .into_iter()
        .map(|(name, t)| {
            let spec =
                TensorSpec { name, shape: t.shape.iter().map(|&d| Some(d)).collect(), dtype: DataType::F32 };
            (spec, t)
        })
        .unzip();
    Fixture { specs, tensors, json }
}

/// Decodes a fixture as `format` and compares with its reference: same count, and in order the
/// same classes, scores within 1e-4 and corners within 0.5 px.
fn check(name: &str, format: DetectFormat, adjust: impl Fn(&mut DetectSpec)) {
    let (found, json) = decoded(name, format, adjust);
    same_boxes(name, &found, &json);
}

/// A fixture decoded as `format`, with its reference.
pub(super) fn decoded(
    name: &str,
    format: DetectFormat,
    adjust: impl Fn(&mut DetectSpec),
) -> (Vec<Detection>, serde_json::Value) {
    let f = fixture(name);
    let mut spec = DetectSpec::new(format);
    spec.confidence = f.json["confidence"].as_f64().unwrap() as f32;
    spec.iou = f.json["iou"].as_f64().unwrap() as f32;
    spec.max_det = f.json["max_det"].as_u64().unwrap() as usize;
    adjust(&mut spec);
    let input =
        (f.json["input"][0].as_u64().unwrap() as usize, f.json["input"][1].as_u64().unwrap() as usize);
    let decoder = Decoder::new(&spec, &f.specs, input).unwrap();
    let found = decoder
        .decode(&f.tensors, 0, &geometry(&f.json), |c| format!("c{c}"), MemoryLimit::from_mib(64))
        .unwrap();
    (found, f.json)
}

/// The same boxes as the reference's `detections`, in order.
pub(super) fn same_boxes(name: &str, found: &[Detection], json: &serde_json::Value) {
    let wanted = json["detections"].as_array().unwrap();
    // edgert keeps every box inside the image; Ultralytics clips YOLO's boxes there too
    // (`scale_boxes`) but not RT-DETR's, nor pytorch-ssd its own: theirs are clipped to compare.
    let source = [json["source"][0].as_f64().unwrap(), json["source"][1].as_f64().unwrap()];
    assert!(!wanted.is_empty(), "{name}: the fixture has no detections to compare");
    assert_eq!(
        found.len(),
        wanted.len(),
        "{name}: {} boxes, the reference has {}",
        found.len(),
        wanted.len()
    );
    for (i, (d, w)) in found.iter().zip(wanted).enumerate() {
        let w: Vec<f64> = w.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(d.class_id, w[5] as usize, "{name} #{i}: class of {d:?} against {w:?}");
        assert!((d.score as f64 - w[4]).abs() < 1e-4, "{name} #{i}: score of {d:?} against {w:?}");
        for k in 0..4 {
            let want = w[k].clamp(0.0, source[k % 2]);
            assert!((d.bbox[k] as f64 - want).abs() <= 0.5, "{name} #{i}: corner {k} of {d:?} against {w:?}");
        }
    }
}

#[test]
fn yolov8_and_yolo11_as_ultralytics_decodes_them() {
    check("yolov8n", DetectFormat::Yolov8, |_| {});
    check("yolo11n", DetectFormat::Yolov8, |_| {});
}

#[test]
fn end_to_end_heads_and_nms_exports_as_ultralytics_decodes_them() {
    check("yolov10n", DetectFormat::End2end, |_| {});
    check("yolo26n", DetectFormat::End2end, |_| {});
    check("yolov8n_nms", DetectFormat::End2end, |_| {});
}

#[test]
fn rtdetr_as_ultralytics_decodes_it() {
    check("rtdetr", DetectFormat::Rtdetr, |_| {});
}

#[test]
fn ssd_efficient_nms_and_detectnet_as_their_published_decoders() {
    check("ssd", DetectFormat::Ssd, |_| {});
    check("efficient_nms", DetectFormat::EfficientNms, |_| {});
    check("detectnet_v2", DetectFormat::DetectnetV2, |_| {});
}

#[test]
fn yolov5_rows_score_objectness_times_class() {
    // Two boxes of [N, boxes, 5 + 2]: the first passes (0.9 × 0.8), the second's objectness is
    // under the threshold whatever its class says.
    let values = vec![
        50.0, 40.0, 20.0, 10.0, 0.9, 0.1, 0.8, //
        10.0, 10.0, 4.0, 4.0, 0.2, 1.0, 1.0,
    ];
    let tensor = HostTensor::new(vec![1, 2, 7], values);
    let spec = DetectSpec::new(DetectFormat::Yolov5);
    let specs =
        [TensorSpec { name: "output".into(), shape: vec![Some(1), Some(2), Some(7)], dtype: DataType::F32 }];
    let decoder = Decoder::new(&spec, &specs, (64, 64)).unwrap();
    assert_eq!(decoder.classes(), Some(2));
    let found = decoder
        .decode(&[tensor], 0, &Geometry::identity(64, 64), |c| c.to_string(), MemoryLimit::from_mib(1))
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].class_id, found[0].bbox), (1, [40.0, 35.0, 60.0, 45.0]));
    assert!((found[0].score - 0.72).abs() < 1e-6);
}

#[test]
fn outputs_that_do_not_fit_the_format_are_refused_naming_them() {
    let spec = |format| DetectSpec::new(format);
    let out = |name: &str, shape: &[usize]| TensorSpec {
        name: name.into(),
        shape: shape.iter().map(|&d| Some(d)).collect(),
        dtype: DataType::F32,
    };
    let cases: Vec<(DetectFormat, Vec<TensorSpec>, &str)> = vec![
        (DetectFormat::Yolov8, vec![out("logits", &[1, 1000])], "needs one output of 3 dimensions"),
        (DetectFormat::Yolov8, vec![out("o", &[1, 4, 100])], "[N, 4 + classes, boxes]"),
        (DetectFormat::End2end, vec![out("o", &[1, 300, 7])], "[N, boxes, 6]"),
        (DetectFormat::Ssd, vec![out("scores", &[1, 10, 3]), out("boxes", &[1, 11, 4])], "boxes [N, B, 4]"),
        (DetectFormat::EfficientNms, vec![out("num_detections", &[1, 1])], "detection_boxes"),
        (
            DetectFormat::DetectnetV2,
            vec![out("output_cov/Sigmoid", &[1, 3, 4, 4]), out("output_bbox/BiasAdd", &[1, 8, 4, 4])],
            "[N, 4C, h, w]",
        ),
    ];
    for (format, outputs, wanted) in cases {
        let err = Decoder::new(&spec(format), &outputs, (64, 64)).unwrap_err();
        assert!(err.contains(format.name()) && err.contains(wanted), "{}: {err}", format.name());
    }
    let dynamic =
        TensorSpec { name: "o".into(), shape: vec![Some(1), None, Some(100)], dtype: DataType::F32 };
    let err = Decoder::new(&spec(DetectFormat::Yolov8), &[dynamic], (64, 64)).unwrap_err();
    assert!(err.contains("fixed dimensions") && err.contains("[1, ?, 100]"), "{err}");
}

#[test]
fn nan_scores_and_classes_find_nothing() {
    let nan = f32::NAN;
    let yolo =
        HostTensor::new(vec![1, 6, 2], vec![10.0, 10.0, 10.0, 10.0, 4.0, 4.0, 4.0, 4.0, nan, nan, nan, nan]);
    let spec = TensorSpec { name: "o".into(), shape: vec![Some(1), Some(6), Some(2)], dtype: DataType::F32 };
    let decoder = Decoder::new(&DetectSpec::new(DetectFormat::Yolov8), &[spec], (64, 64)).unwrap();
    assert!(decoder
        .decode(&[yolo], 0, &Geometry::identity(64, 64), |c| c.to_string(), MemoryLimit::from_mib(1))
        .unwrap()
        .is_empty());
    let rows =
        HostTensor::new(vec![1, 2, 6], vec![1.0, 1.0, 5.0, 5.0, nan, 0.0, 1.0, 1.0, 5.0, 5.0, 0.9, nan]);
    let spec = TensorSpec { name: "o".into(), shape: vec![Some(1), Some(2), Some(6)], dtype: DataType::F32 };
    let decoder = Decoder::new(&DetectSpec::new(DetectFormat::End2end), &[spec], (64, 64)).unwrap();
    assert!(decoder
        .decode(&[rows], 0, &Geometry::identity(64, 64), |c| c.to_string(), MemoryLimit::from_mib(1))
        .unwrap()
        .is_empty());
}
