//! Which detector format a model's outputs are in, from their names and shapes and, where the
//! model has it, its Ultralytics metadata: what a bare model runs as, what `inspect` names, and
//! what `edgert manifest` writes.

use super::manifest::{BoxOrder, DetectFormat, DetectSpec};
use super::ultralytics::UltralyticsMeta;
use crate::tensor::TensorSpec;

/// A recognised format, its settings, and what was guessed rather than known.
#[derive(Debug, Clone)]
pub struct Recognised {
    pub spec: DetectSpec,
    /// Each a sentence: what the shapes alone could not settle.
    pub guesses: Vec<String>,
}

/// The format the outputs fit, if any; `classes` is the number of class names known.
pub fn recognise(
    outputs: &[TensorSpec],
    classes: Option<usize>,
    meta: Option<&UltralyticsMeta>,
) -> Option<Recognised> {
    let named = |part: &str| outputs.iter().find(|o| o.name.to_ascii_lowercase().contains(part));
    let known = |format| Some(Recognised { spec: DetectSpec::new(format), guesses: Vec::new() });
    if ["num_detections", "detection_boxes", "detection_scores", "detection_classes"]
        .iter()
        .all(|n| named(n).is_some())
    {
        let mut spec = DetectSpec::new(DetectFormat::EfficientNms);
        // TensorFlow's Object Detection API gives `num_detections` as [N] and boxes as normalised
        // y-first corners; TensorRT's plugin [N, 1] and boxes as the network gave them.
        let tensorflow = named("num_detections").is_some_and(|o| o.shape.len() == 1);
        let guess = if tensorflow {
            spec.box_order = Some(BoxOrder::Yxyx);
            spec.normalized = Some(true);
            "num_detections is [N]: read as TensorFlow's boxes, y-first corners as fractions of the input"
        } else {
            "boxes read as x-first corners in input pixels, as TensorRT's EfficientNMS gives a YOLO's"
        };
        return Some(Recognised { spec, guesses: vec![guess.into()] });
    }
    if outputs.len() == 3 && ["labels", "boxes", "scores"].iter().all(|n| named(n).is_some()) {
        return known(DetectFormat::LabelsBoxesScores);
    }
    if named("output_cov").is_some() && named("output_bbox").is_some() {
        return known(DetectFormat::DetectnetV2);
    }
    // Segment models give prototypes `[N, coefficients, h, w]` beside their boxes.
    let protos = |o: &TensorSpec| o.shape.len() == 4;
    let recognised = match outputs {
        // An engine's outputs are unknown until a backend loads it: its metadata says the format
        // (Ultralytics exports detectors in these three), and the decoder checks the shapes.
        [] => meta.and_then(|m| {
            known(match (m.is_rtdetr(), m.end2end) {
                (true, _) => DetectFormat::Rtdetr,
                (false, true) => DetectFormat::End2end,
                (false, false) => DetectFormat::Yolov8,
            })
        }),
        [a, b] if ssd_pair(a, b) || ssd_pair(b, a) => known(DetectFormat::Ssd),
        [o] => single(o, classes, meta, extra_values(meta, None)),
        [o, p] | [p, o] if protos(p) && !protos(o) => {
            let coefficients = p.shape[1].unwrap_or(0);
            single(o, classes, meta, extra_values(meta, Some(coefficients)))
        }
        _ => None,
    };
    recognised.map(|mut r| {
        carried(&mut r.spec, meta, outputs.iter().any(protos));
        r
    })
}

/// What each box carries after its classes: an Ultralytics model's task says; else a prototypes
/// output beside the boxes means masks.
fn carried(spec: &mut DetectSpec, meta: Option<&UltralyticsMeta>, protos: bool) {
    if !matches!(spec.format, DetectFormat::Yolov8 | DetectFormat::End2end) {
        return;
    }
    match meta.and_then(|m| m.task.as_deref()) {
        Some("segment") => spec.masks = true,
        Some("pose") => spec.keypoints = meta.and_then(|m| m.kpt_shape),
        Some("obb") => spec.rotated = true,
        _ => spec.masks = protos,
    }
}

/// How many values follow the classes of each box, as `carried` will set them.
fn extra_values(meta: Option<&UltralyticsMeta>, coefficients: Option<usize>) -> usize {
    match meta.and_then(|m| m.task.as_deref()) {
        Some("pose") => meta.and_then(|m| m.kpt_shape).map_or(0, |[k, v]| k * v),
        Some("obb") => 1,
        _ => coefficients.unwrap_or(0),
    }
}

/// `scores [N, B, C]` beside `boxes [N, B, 4]`.
fn ssd_pair(scores: &TensorSpec, boxes: &TensorSpec) -> bool {
    match (&scores.shape[..], &boxes.shape[..]) {
        ([_, b1, Some(c)], [_, b2, Some(4)]) => b1 == b2 && (*c != 4 || boxes.name.contains("box")),
        _ => false,
    }
}

/// One output `[N, a, b]`: a YOLO's or an RT-DETR's; `extra` values follow each box's classes.
fn single(
    o: &TensorSpec,
    classes: Option<usize>,
    meta: Option<&UltralyticsMeta>,
    extra: usize,
) -> Option<Recognised> {
    let [_, Some(a), Some(b)] = o.shape[..] else { return None };
    let e = extra;
    let after = if e > 0 { format!(" and {e} values each after them") } else { String::new() };
    let pick = |format, guess: Option<String>| {
        Some(Recognised { spec: DetectSpec::new(format), guesses: guess.into_iter().collect() })
    };
    let (end2end, rtdetr) = meta.map_or((false, false), |m| (m.end2end, m.is_rtdetr()));
    if rtdetr {
        return pick(DetectFormat::Rtdetr, None);
    }
    if b == 6 + e && end2end {
        return pick(DetectFormat::End2end, None);
    }
    match classes {
        Some(c) if a == 4 + c + e => pick(DetectFormat::Yolov8, None),
        Some(c) if e == 0 && b == 5 + c => pick(DetectFormat::Yolov5, None),
        Some(c) if e == 0 && b == 4 + c => pick(
            DetectFormat::Rtdetr,
            Some(format!(
                "[N, {a}, {b}] read as RT-DETR's {a} queries of 4 + {c} classes, not YOLOv5's (5 + classes)"
            )),
        ),
        _ if b == 6 + e && a > b => pick(
            DetectFormat::End2end,
            Some(format!(
                "[N, {a}, {b}] read as {a} boxes already suppressed (x1, y1, x2, y2, score, class)"
            )),
        ),
        _ if a < b && a > 4 + e => pick(
            DetectFormat::Yolov8,
            Some(format!("[N, {a}, {b}] read as YOLOv8's {b} boxes of 4 + {} classes{after}", a - 4 - e)),
        ),
        _ if e == 0 && b < a && b > 5 => pick(
            DetectFormat::Yolov5,
            Some(format!(
                "[N, {a}, {b}] read as YOLOv5's {a} boxes of 5 + {} classes (RT-DETR's would be 4 + {})",
                b - 5,
                b - 4
            )),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;

    fn out(name: &str, shape: &[usize]) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            shape: shape.iter().map(|&d| Some(d)).collect(),
            dtype: DataType::F32,
        }
    }

    fn format(
        outputs: &[TensorSpec],
        classes: Option<usize>,
        meta: Option<&UltralyticsMeta>,
    ) -> Option<DetectFormat> {
        recognise(outputs, classes, meta).map(|r| r.spec.format)
    }

    #[test]
    fn each_family_from_its_outputs() {
        use DetectFormat::*;
        assert_eq!(format(&[out("output0", &[1, 84, 8400])], Some(80), None), Some(Yolov8));
        assert_eq!(format(&[out("output0", &[1, 84, 8400])], None, None), Some(Yolov8));
        assert_eq!(format(&[out("output", &[1, 25200, 85])], Some(80), None), Some(Yolov5));
        assert_eq!(format(&[out("output0", &[1, 300, 6])], None, None), Some(End2end));
        assert_eq!(format(&[out("output0", &[1, 300, 84])], Some(80), None), Some(Rtdetr));
        let ssd = [out("scores", &[1, 3000, 21]), out("boxes", &[1, 3000, 4])];
        assert_eq!(format(&ssd, None, None), Some(Ssd));
        let nms = ["num_detections", "detection_boxes", "detection_scores", "detection_classes"];
        let nms: Vec<TensorSpec> = nms.iter().map(|n| out(n, &[1, 100])).collect();
        assert_eq!(format(&nms, None, None), Some(EfficientNms));
        let dn = [out("output_cov/Sigmoid", &[1, 3, 34, 60]), out("output_bbox/BiasAdd", &[1, 12, 34, 60])];
        assert_eq!(format(&dn, None, None), Some(DetectnetV2));
        let lbs = [out("labels", &[1, 300]), out("boxes", &[1, 300, 4]), out("scores", &[1, 300])];
        assert_eq!(format(&lbs, None, None), Some(LabelsBoxesScores));
    }

    #[test]
    fn metadata_settles_what_shapes_cannot() {
        let e2e = UltralyticsMeta { end2end: true, ..Default::default() };
        let r = recognise(&[out("output0", &[1, 300, 6])], Some(80), Some(&e2e)).unwrap();
        assert_eq!((r.spec.format, r.guesses.len()), (DetectFormat::End2end, 0));
        let rtdetr =
            UltralyticsMeta { description: Some("Ultralytics RT-DETR-l".into()), ..Default::default() };
        assert_eq!(
            format(&[out("output0", &[1, 300, 6])], Some(80), Some(&rtdetr)),
            Some(DetectFormat::Rtdetr)
        );
        let guessed = recognise(&[out("output0", &[1, 300, 6])], None, None).unwrap();
        assert!(guessed.guesses[0].contains("already suppressed"), "{:?}", guessed.guesses);
    }

    #[test]
    fn an_engine_s_format_comes_from_its_metadata_alone() {
        let yolo = UltralyticsMeta { task: Some("detect".into()), ..Default::default() };
        let e2e = UltralyticsMeta { end2end: true, ..yolo.clone() };
        let rtdetr = UltralyticsMeta { description: Some("Ultralytics RT-DETR-l".into()), ..yolo.clone() };
        assert_eq!(format(&[], None, Some(&yolo)), Some(DetectFormat::Yolov8));
        assert_eq!(format(&[], None, Some(&e2e)), Some(DetectFormat::End2end));
        assert_eq!(format(&[], None, Some(&rtdetr)), Some(DetectFormat::Rtdetr));
        assert_eq!(format(&[], None, None), None);
    }

    #[test]
    fn segment_pose_and_obb_models_carry_their_values_after_the_classes() {
        let meta = |task: &str| UltralyticsMeta { task: Some(task.into()), ..Default::default() };
        let seg = [out("output0", &[1, 116, 8400]), out("output1", &[1, 32, 160, 160])];
        let r = recognise(&seg, Some(80), Some(&meta("segment"))).unwrap();
        assert_eq!((r.spec.format, r.spec.masks, r.guesses.len()), (DetectFormat::Yolov8, true, 0));
        // Without metadata, the prototypes say masks; the guess counts the classes without them.
        let r = recognise(&[seg[1].clone(), seg[0].clone()], None, None).unwrap();
        assert!(r.spec.masks && r.guesses[0].contains("4 + 80 classes and 32 values"), "{:?}", r.guesses);
        let e2e = UltralyticsMeta { end2end: true, ..meta("segment") };
        let r = recognise(&[out("output0", &[1, 300, 38]), seg[1].clone()], Some(80), Some(&e2e)).unwrap();
        assert_eq!((r.spec.format, r.spec.masks), (DetectFormat::End2end, true));
        let pose = UltralyticsMeta { kpt_shape: Some([17, 3]), ..meta("pose") };
        let r = recognise(&[out("output0", &[1, 56, 8400])], Some(1), Some(&pose)).unwrap();
        assert_eq!((r.spec.format, r.spec.keypoints), (DetectFormat::Yolov8, Some([17, 3])));
        let obb = meta("obb");
        let r = recognise(&[out("output0", &[1, 20, 21504])], Some(15), Some(&obb)).unwrap();
        assert_eq!((r.spec.format, r.spec.rotated, r.spec.masks), (DetectFormat::Yolov8, true, false));
        // A plain detector keeps its boxes plain.
        let r = recognise(&[out("output0", &[1, 84, 8400])], Some(80), Some(&meta("detect"))).unwrap();
        assert!(!r.spec.masks && !r.spec.rotated && r.spec.keypoints.is_none());
    }

    #[test]
    fn classifiers_segmenters_and_dynamic_shapes_are_none() {
        assert!(format(&[out("logits", &[1, 1000])], None, None).is_none());
        assert!(format(&[out("map", &[1, 21, 64, 64])], None, None).is_none());
        let dynamic =
            TensorSpec { name: "o".into(), shape: vec![None, Some(84), None], dtype: DataType::F32 };
        assert!(format(&[dynamic], None, None).is_none());
        assert!(format(&[out("o", &[1, 4, 4])], None, None).is_none());
    }
}
