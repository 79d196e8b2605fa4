//! Detectors from the field, end to end through the binary: Ultralytics exports run bare from
//! their metadata and find what Ultralytics finds; `edgert manifest` writes what edgert uses;
//! models and manifests it cannot read are refused in one line.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn detect(name: &str) -> PathBuf {
    models().join("detect").join(name)
}

fn reference(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(detect(&format!("{name}.json"))).unwrap()).unwrap()
}

/// A fixture's reference detections under `key`: [x1, y1, x2, y2, score, class] each.
fn detections(name: &str, key: &str) -> Vec<Vec<f64>> {
    let all = reference(name)[key].as_array().unwrap().clone();
    all.iter().map(|d| d.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()).collect()
}

/// At least 95 % of `wanted` are among `found` (the same class, a score within 0.01, boxes
/// `close`), and the counts differ by at most 5 %: the arithmetic of two engines differs in the
/// last bits, which can move a box across a threshold.
fn assert_found(what: &str, wanted: &[Vec<f64>], found: &[Vec<f64>], close: impl Fn(&[f64], &[f64]) -> bool) {
    assert!(wanted.len() > 10, "{what}: too few reference boxes to compare");
    let matched = wanted
        .iter()
        .filter(|w| found.iter().any(|f| f[5] == w[5] && (f[4] - w[4]).abs() < 0.01 && close(f, w)))
        .count();
    assert!(
        matched * 100 >= wanted.len() * 95 && found.len().abs_diff(wanted.len()) * 20 <= wanted.len(),
        "{what}: {matched} of {} reference boxes found, {} boxes in all",
        wanted.len(),
        found.len()
    );
}

fn iou(a: &[f64], b: &[f64]) -> f64 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let area = |r: &[f64]| (r[2] - r[0]) * (r[3] - r[1]);
    w * h / (area(a) + area(b) - w * h)
}

/// The boxes of `edgert run --json` on one image: [x1, y1, x2, y2, score, class, named], `named`
/// 1 where the label is the fixtures' name for the class (`class7`), 0 where it is numbered.
fn boxes(model: &Path, image: &Path, extra: &[&str]) -> (Vec<Vec<f64>>, String) {
    let mut args = vec!["run", "-m", model.to_str().unwrap(), "--input", image.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = edgert(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let found = line["prediction"]["boxes"]
        .as_array()
        .unwrap_or_else(|| panic!("no boxes: {line}"))
        .iter()
        .map(|d| {
            let b = &d["bbox"];
            let class = d["class_id"].as_f64().unwrap();
            let named = if d["label"] == format!("class{class}") { 1.0 } else { 0.0 };
            (0..4)
                .map(|k| b[k].as_f64().unwrap())
                .chain([d["score"].as_f64().unwrap(), class, named])
                .collect()
        })
        .collect();
    (found, stderr(&out))
}

/// On the image Ultralytics letterboxed itself (nothing left to resize), a bare export finds the
/// boxes Ultralytics' predictor finds with onnxruntime: the same class at IoU ≥ 0.95 with a score
/// within 0.01, for at least 95 % of them (tract's and onnxruntime's arithmetic differ in the last
/// bits, which can move a box across a threshold).
#[test]
fn ultralytics_exports_run_bare_and_find_what_ultralytics_finds() {
    // NMS inside the graph (`nms=True`) is beyond tract: that export runs on ONNX Runtime.
    let ort = or_skipped(
        std::env::var("ORT_DYLIB_PATH").ok(),
        "EDGERT_REQUIRE_ORT",
        "ultralytics_exports_run_bare_and_find_what_ultralytics_finds (yolov8n_nms on ort)",
        "ORT_DYLIB_PATH is not set",
    );
    let mut runs = vec![("yolov8n", "cpu"), ("yolo11n", "cpu"), ("yolo26n", "cpu")];
    if ort.is_some() {
        runs.extend([("yolov8n_nms", "ort"), ("yolov8n", "ort")]);
    }
    for (name, backend) in runs {
        let wanted = detections(name, "detections_on_letterboxed");
        let extra = ["--backend", backend];
        let (found, log) = boxes(&detect(&format!("{name}.onnx")), &detect("bus_letterboxed.png"), &extra);
        assert!(!log.contains("warning"), "{name}: an Ultralytics export needs no guess: {log}");
        assert!(found.iter().all(|f| f[6] == 1.0), "{name}: names come from the model's metadata");
        assert_found(&format!("{name} on {backend}"), &wanted, &found, |f, w| iou(f, w) >= 0.95);
    }
}

/// On the photo itself every box lies inside it, and the thresholds given on the command line
/// hold: fewer boxes at a higher confidence, at most --max-det.
#[test]
fn boxes_are_in_source_pixels_and_the_flags_apply() {
    let model = detect("yolov8n.onnx");
    let bus = image("bus.jpg");
    let (all, _) = boxes(&model, &bus, &[]);
    assert!(!all.is_empty());
    for b in &all {
        assert!(b[0] >= 0.0 && b[1] >= 0.0 && b[2] <= 810.0 && b[3] <= 1080.0 && b[0] <= b[2], "{b:?}");
        assert!(b[4] > 0.25, "{b:?}");
    }
    let (confident, _) = boxes(&model, &bus, &["--confidence", "0.6"]);
    assert!(confident.len() < all.len() && confident.iter().all(|b| b[4] > 0.6), "{}", confident.len());
    let (few, _) = boxes(&model, &bus, &["--max-det", "3"]);
    assert_eq!(few.len(), 3);
    // Across classes, overlapping boxes of different classes go too.
    let (aware, _) = boxes(&model, &bus, &["--iou", "0.3"]);
    let (agnostic, _) = boxes(&model, &bus, &["--agnostic", "--iou", "0.3"]);
    assert!(agnostic.len() < aware.len(), "{} agnostic, {} per class", agnostic.len(), aware.len());
}

#[test]
fn inspect_names_the_format_and_manifest_writes_what_edgert_uses() {
    let model = detect("yolo26n.onnx");
    let out = edgert(&["inspect", "-m", model.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("task       detect, format end2end"), "{}", stdout(&out));

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&model, dir.path().join("yolo26n.onnx")).unwrap();
    let written = dir.path().join("yolo26n.toml");
    let out = edgert(&[
        "manifest",
        "-m",
        dir.path().join("yolo26n.onnx").to_str().unwrap(),
        "-o",
        written.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&written).unwrap();
    for part in [
        "file = \"yolo26n.onnx\"",
        "task = \"detect\"",
        "format = \"end2end\"",
        "shape = [1, 3, 160, 224]",
        "resize = \"letterbox\"",
        "pad_value = 114",
        "\"class19\"]",
        "sha256 = \"",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    // The manifest runs and finds what the bare model finds.
    let letterboxed = detect("bus_letterboxed.png");
    let (bare, _) = boxes(&model, &letterboxed, &[]);
    let (manifested, _) = boxes(&written, &letterboxed, &[]);
    assert_eq!(bare, manifested);
    // Edited, it is what runs.
    std::fs::write(&written, text.replace("max_det = 300", "max_det = 2")).unwrap();
    assert_eq!(boxes(&written, &letterboxed, &[]).0.len(), 2);
}

#[test]
fn a_model_without_metadata_says_what_was_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("plain.onnx");
    let mut proto = read_proto(&detect("yolov8n.onnx"));
    proto.metadata_props.clear();
    write_proto(&bare, &proto);
    let out = edgert(&[
        "run",
        "-m",
        bare.to_str().unwrap(),
        "--input",
        detect("bus_letterboxed.png").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(log.contains("warning") && log.contains("format 'yolov8' from their shapes alone"), "{log}");
    assert!(log.contains("read as YOLOv8's 735 boxes of 4 + 20 classes"), "{log}");
    // No names in the file: classes are numbered.
    assert!(stdout(&out).contains("class "), "{}", stdout(&out));
    let out = edgert(&["manifest", "-m", bare.to_str().unwrap()]);
    assert!(stdout(&out).contains("# GUESSED:"), "{}", stdout(&out));
}

#[test]
fn an_image_model_whose_outputs_fit_no_format_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.onnx");
    let mut proto = read_proto(&detect("yolov8n.onnx"));
    proto.metadata_props.clear();
    // The output reshaped to four dimensions fits no detector layout.
    let graph = proto.graph.as_mut().unwrap();
    let last = graph.output[0].name.clone();
    graph.output[0].name = "odd".into();
    graph.initializer.push(common::graph::int64s("odd_shape", vec![1, 24, 735, 1]));
    graph.node.push(common::graph::node("Reshape", &[&last, "odd_shape"], "odd", vec![]));
    graph.output[0] = common::graph::tensor_info("odd", &[1, 24, 735, 1]);
    write_proto(&odd, &proto);
    let out = edgert(&["run", "-m", odd.to_str().unwrap(), "--input", image("bus.jpg").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert_eq!(log.matches("warning").count(), 1, "{log}");
    assert!(
        log.contains("[1, 24, 735, 1]") && log.contains("yolov8") && log.contains("edgert manifest"),
        "{log}"
    );
    // Told it is a detector, it is refused rather than run raw.
    fails(
        &[
            "run",
            "-m",
            odd.to_str().unwrap(),
            "--task",
            "detect",
            "--input",
            image("bus.jpg").to_str().unwrap(),
        ],
        2,
        &["odd.onnx", "fit no detector format"],
    );
}

fn read_proto(path: &Path) -> tract_onnx::pb::ModelProto {
    use prost::Message;
    tract_onnx::pb::ModelProto::decode(&*std::fs::read(path).unwrap()).unwrap()
}

fn write_proto(path: &Path, proto: &tract_onnx::pb::ModelProto) {
    use prost::Message;
    std::fs::write(path, proto.encode_to_vec()).unwrap();
}

/// A copy of yolov8n.onnx in `dir` whose metadata key `key` is `value`.
fn with_metadata(dir: &Path, key: &str, value: &str) -> PathBuf {
    let mut proto = read_proto(&detect("yolov8n.onnx"));
    for p in &mut proto.metadata_props {
        if p.key == key {
            p.value = value.into();
        }
    }
    let path = dir.join(format!("meta_{key}.onnx"));
    write_proto(&path, &proto);
    path
}

#[test]
fn broken_metadata_and_detect_settings_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bus = image("bus.jpg");
    let bus = bus.to_str().unwrap();
    let names = with_metadata(dir.path(), "names", "{0: 'a', 0: 'b'}");
    fails(
        &["run", "-m", names.to_str().unwrap(), "--input", bus],
        2,
        &["meta_names.onnx", "metadata 'names'", "named twice"],
    );
    let imgsz = with_metadata(dir.path(), "imgsz", "[99999, 99999]");
    fails(
        &["inspect", "-m", imgsz.to_str().unwrap()],
        2,
        &["meta_imgsz.onnx", "metadata 'imgsz'", "not in [1, 16384]"],
    );
    let model = detect("yolov8n.onnx");
    let model = model.to_str().unwrap();
    for (flag, value, wanted) in [
        ("--max-det", "0", "max_det"),
        ("--max-det", "1000000000", "max_det"),
        ("--confidence", "NaN", "confidence"),
        ("--iou", "1.5", "iou"),
        ("--imgsz", "0", "--imgsz"),
    ] {
        let out = edgert(&["run", "-m", model, "--input", bus, flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.lines().count() == 1 && err.contains(wanted) && !err.contains("panicked"),
            "{flag} {value}: {err}"
        );
    }
    // A fixed input refuses another size.
    fails(&["run", "-m", model, "--input", bus, "--imgsz", "320"], 2, &["fixed at [1, 3, 160, 224]"]);
}

/// A manifest whose [detect] does not fit its model, or that carries another task's section.
#[test]
fn manifests_that_contradict_their_model_or_task_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(detect("yolov8n.onnx"), dir.path().join("yolov8n.onnx")).unwrap();
    let out = edgert(&["manifest", "-m", dir.path().join("yolov8n.onnx").to_str().unwrap()]);
    let text = stdout(&out);
    let bus = image("bus.jpg");
    let cases = [
        (
            text.replace("format = \"yolov8\"", "format = \"end2end\""),
            "format 'end2end' needs output 'output0' as [N, boxes, 6]",
        ),
        (text.replace("format = \"yolov8\"", "format = \"ssd\""), "format 'ssd'"),
        (text.replace("max_det = 300", "max_det = 0"), "detect.max_det = 0 is not in [1, 10000]"),
        (
            text.clone() + "\n[yolo]\n[[yolo.heads]]\noutput = \"output0\"\nanchors = [[10, 10]]\n",
            "[yolo] is the settings of task 'yolo', but model.task is 'detect'",
        ),
        (
            text.replace("task = \"detect\"", "task = \"classification\""),
            "[detect] is the settings of task 'detect'",
        ),
        (
            text.replace("agnostic = false", "agnostic = false\nbox_order = \"yxyx\""),
            "detect.box_order is for format 'efficient-nms'",
        ),
    ];
    for (i, (manifest, wanted)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case{i}.toml"));
        std::fs::write(&path, manifest).unwrap();
        fails(
            &["run", "-m", path.to_str().unwrap(), "--input", bus.to_str().unwrap()],
            2,
            &[&format!("case{i}.toml"), wanted],
        );
    }
}

/// `bench` on a bare detector preprocesses a real picture and times the decoding as its own stage.
#[test]
fn bench_times_a_detector_s_preprocessing_and_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let model = detect("yolov8n.onnx");
    let out = edgert(&[
        "bench",
        "-m",
        model.to_str().unwrap(),
        "--input",
        image("bus.jpg").to_str().unwrap(),
        "--duration-s",
        "0",
        "--min-iterations",
        "3",
        "--warmup-ms",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["model"]["task"], "detect", "{report}");
    let stages = &report["runs"][0]["stages"];
    for stage in ["preprocess", "postprocess"] {
        let p50 = stages[stage]["p50_ms"].as_f64().unwrap_or(0.0);
        // A 810×1080 photo letterboxed into 160×224, and 735 boxes decoded: neither is free.
        assert!(p50 > 0.0, "{stage}: {stages}");
    }
}

/// RT-DETR as its own repository exports it: the image size is a second input, the decoding is in
/// the graph. edgert feeds the input size and maps the boxes back through the stretch; the
/// reference fed the photo's own size to onnxruntime (the photo resized by OpenCV rather than
/// edgert, so the last decimals differ).
#[test]
fn a_detector_taking_the_image_size_as_an_input_runs_bare() {
    let ort = or_skipped(
        std::env::var("ORT_DYLIB_PATH").ok(),
        "EDGERT_REQUIRE_ORT",
        "a_detector_taking_the_image_size_as_an_input_runs_bare (on ort)",
        "ORT_DYLIB_PATH is not set",
    );
    let wanted = detections("rtdetr_official", "detections");
    let model = detect("rtdetr_official.onnx");
    let backends = if ort.is_some() { vec!["cpu", "ort"] } else { vec!["cpu"] };
    for backend in backends {
        let (found, log) = boxes(&model, &image("bus.jpg"), &["--backend", backend, "--confidence", "0.5"]);
        assert!(log.contains("format 'labels-boxes-scores'"), "{log}");
        assert_found(backend, &wanted, &found, |f, w| (0..4).all(|k| (f[k] - w[k]).abs() < 2.0));
    }
}

#[test]
fn an_image_size_input_edgert_cannot_feed_is_refused_in_one_line() {
    use tract_onnx::pb::{tensor_shape_proto::dimension::Value, type_proto};
    let dir = tempfile::tempdir().unwrap();
    let bus = image("bus.jpg");
    type Edit = fn(&mut type_proto::Tensor);
    let edits: [(&str, Edit); 2] = [
        ("is bool", |t| t.elem_type = 9),
        ("not [N, 2]", |t| t.shape.as_mut().unwrap().dim[1].value = Some(Value::DimValue(3))),
    ];
    for (i, (wanted, edit)) in edits.into_iter().enumerate() {
        let mut proto = read_proto(&detect("rtdetr_official.onnx"));
        let input = &mut proto.graph.as_mut().unwrap().input[1];
        assert_eq!(input.name, "orig_target_sizes");
        let Some(type_proto::Value::TensorType(tensor)) = input.r#type.as_mut().unwrap().value.as_mut()
        else {
            panic!("not a tensor")
        };
        edit(tensor);
        let path = dir.path().join(format!("sized{i}.onnx"));
        write_proto(&path, &proto);
        fails(
            &["run", "-m", path.to_str().unwrap(), "--input", bus.to_str().unwrap()],
            2,
            &[&format!("sized{i}.onnx"), "input 'orig_target_sizes'", wanted],
        );
    }
}

/// Column-major pixels of a COCO run-length encoding in JSON.
fn rle_pixels(rle: &Value) -> Vec<bool> {
    let mut bits = Vec::new();
    for (i, c) in rle["counts"].as_array().unwrap().iter().enumerate() {
        bits.extend(std::iter::repeat_n(i % 2 == 1, c.as_u64().unwrap() as usize));
    }
    bits
}

/// A segment export runs bare from its metadata: on the image Ultralytics letterboxed itself, its
/// boxes are Ultralytics' and each mask (COCO run-length encoding over the whole image) matches
/// Ultralytics' retina mask of the same instance at IoU ≥ 0.9 for at least 95 % of them (tract's
/// and onnxruntime's arithmetic differ in the last bits, which moves a noisy mask's edges).
#[test]
fn a_segment_export_runs_bare_and_its_masks_are_ultralytics_masks() {
    let model = detect("yolov8n_seg.onnx");
    let image = detect("bus_letterboxed.png");
    let reference = &reference("yolov8n_seg");
    let confidence = reference["confidence"].to_string();
    let (model, image) = (model.to_str().unwrap(), image.to_str().unwrap());
    let out = edgert(&["run", "-m", model, "--input", image, "--json", "--confidence", &confidence]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let found = line["prediction"]["boxes"].as_array().unwrap();
    let reference = &reference["on_letterboxed"];
    let (wanted, masks) =
        (reference["detections"].as_array().unwrap(), reference["masks"].as_array().unwrap());
    assert!(
        wanted.len() > 10 && found.len().abs_diff(wanted.len()) * 20 <= wanted.len(),
        "{} found",
        found.len()
    );
    let mut matched = 0;
    for (w, m) in wanted.iter().zip(masks) {
        let theirs = rle_pixels(m);
        let best = found
            .iter()
            .filter(|f| f["class_id"].as_f64() == w[5].as_f64())
            .map(|f| {
                assert_eq!(f["mask"]["size"], serde_json::json!([160, 224]), "{f}");
                let ours = rle_pixels(&f["mask"]);
                assert_eq!(ours.len(), 160 * 224, "the runs cover the image");
                let both = ours.iter().zip(&theirs).filter(|(a, b)| **a && **b).count();
                let either = ours.iter().zip(&theirs).filter(|(a, b)| **a || **b).count();
                both as f64 / either.max(1) as f64
            })
            .fold(0.0, f64::max);
        matched += usize::from(best >= 0.9);
    }
    assert!(matched * 100 >= wanted.len() * 95, "{matched} of {} masks matched", wanted.len());
}

/// `inspect` says what a segment model's boxes carry; `edgert manifest` writes it, and a manifest
/// that asks for masks of a model without prototypes, or for two kinds at once, is refused.
#[test]
fn masks_keypoints_and_rotated_boxes_in_inspect_and_the_manifest() {
    let model = detect("yolov8n_seg.onnx");
    let out = edgert(&["inspect", "-m", model.to_str().unwrap()]);
    assert!(stdout(&out).contains("format yolov8 with masks"), "{}", stdout(&out));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&model, dir.path().join("seg.onnx")).unwrap();
    let written = dir.path().join("seg.toml");
    let out = edgert(&[
        "manifest",
        "-m",
        dir.path().join("seg.onnx").to_str().unwrap(),
        "-o",
        written.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("masks = true"), "{text}");
    let image = detect("bus_letterboxed.png");
    let run = |manifest: &str| {
        std::fs::write(&written, manifest).unwrap();
        edgert(&["run", "-m", written.to_str().unwrap(), "--input", image.to_str().unwrap(), "--json"])
    };
    let ok = run(&text);
    assert!(ok.status.success() && stdout(&ok).contains("\"size\":[160,224]"), "{}", stderr(&ok));
    for (edit, wanted) in [
        (text.replace("masks = true", "masks = true\nrotated = true"), "different models: keep one"),
        (
            text.replace("masks = true", "keypoints = [17, 3]"),
            "score 1 class a box besides its keypoints; the class names are 20",
        ),
        (text.replace("masks = true", "keypoints = [17, 4]"), "detect.keypoints = [17, 4]"),
        (text.replace("format = \"yolov8\"", "format = \"ssd\""), "detect.masks is for formats"),
    ] {
        let out = run(&edit);
        assert_eq!(out.status.code(), Some(2), "{wanted}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(wanted) && err.trim().lines().count() == 1, "{wanted}: {err}");
    }
}

/// An Ultralytics semantic export runs bare: a class for every pixel of the photo, each class's
/// share of it; `edgert manifest` writes the task, and a threshold that is not a number is refused.
#[test]
fn a_semantic_export_runs_bare_and_gives_each_class_its_share() {
    let model = detect("yolo26n_sem.onnx");
    let bus = image("bus.jpg");
    let out = edgert(&["run", "-m", model.to_str().unwrap(), "--input", bus.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let map = &line["prediction"]["semantic"];
    assert_eq!(map["size"], serde_json::json!([1080, 810]), "{line}");
    let shares = map["shares"].as_array().unwrap();
    let total: f64 = shares.iter().map(|s| s["share"].as_f64().unwrap()).sum();
    assert!(shares.len() > 1 && (total - 1.0).abs() < 1e-3, "{shares:?}");
    assert!(
        shares.iter().all(|s| s["label"].as_str().unwrap().starts_with("class")),
        "names from the metadata"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&model, dir.path().join("sem.onnx")).unwrap();
    let written = dir.path().join("sem.toml");
    let out = edgert(&[
        "manifest",
        "-m",
        dir.path().join("sem.onnx").to_str().unwrap(),
        "-o",
        written.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("task = \"semantic\"") && text.contains("[semantic]"), "{text}");
    std::fs::write(&written, text.replace("threshold = 0.0", "threshold = nan")).unwrap();
    let out = edgert(&["run", "-m", written.to_str().unwrap(), "--input", bus.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("semantic.threshold = NaN is not a number"), "{}", stderr(&out));
    // A detector read as a segmenter: its one output is no class map.
    let yolo = detect("yolov8n.onnx");
    let out = edgert(&[
        "run",
        "-m",
        yolo.to_str().unwrap(),
        "--input",
        bus.to_str().unwrap(),
        "--task",
        "semantic",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("class ids, which are integers; 'output0' is f32 [1, 24, 735]"),
        "{}",
        stderr(&out)
    );
}

/// `validate` gates a segment model by its masks: a candidate whose prototypes are negated keeps
/// every box (a gate on boxes would pass it) and turns every mask inside out, which the mask mAP
/// catches; the model against itself keeps all. A semantic model is gated by mean IoU.
#[test]
fn validate_gates_masks_and_class_maps() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    std::fs::create_dir(&photos).unwrap();
    for photo in ["bus.jpg", "zidane.jpg"] {
        std::fs::copy(image(photo), photos.join(photo)).unwrap();
    }
    let seg = detect("yolov8n_seg.onnx");
    let broken = dir.path().join("negated.onnx");
    let mut proto = read_proto(&seg);
    let graph = proto.graph.as_mut().unwrap();
    let producer = graph.node.iter_mut().find(|n| n.output.iter().any(|o| o == "output1")).unwrap();
    producer.output = vec!["protos".into()];
    graph.node.push(common::graph::node("Neg", &["protos"], "output1", vec![]));
    write_proto(&broken, &proto);
    let validate = |reference: &Path, candidate: &Path| {
        let json = dir.path().join("v.json");
        let out = edgert(&[
            "validate",
            "--reference",
            reference.to_str().unwrap(),
            "--candidate",
            candidate.to_str().unwrap(),
            "--data",
            photos.to_str().unwrap(),
            "--budget",
            "10%",
            "--json",
            json.to_str().unwrap(),
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (
            out.status.code(),
            r["gate"]["metric"].as_str().unwrap().to_string(),
            r["gate"]["value"].as_f64().unwrap(),
        )
    };
    assert_eq!(validate(&seg, &seg), (Some(0), "mask_map50".into(), 1.0));
    let (code, metric, value) = validate(&seg, &broken);
    assert!(code == Some(3) && metric == "mask_map50" && value < 0.1, "{code:?} {metric} {value}");
    let sem = detect("yolo26n_sem.onnx");
    assert_eq!(validate(&sem, &sem), (Some(0), "miou".into(), 1.0));
}
