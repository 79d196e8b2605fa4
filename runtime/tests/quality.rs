//! `validate` and `tune` on real data: the digits MLP's variants against FP32 on its 360 labelled
//! images, YOLO INT8 against FP32 by mAP (darknet YOLOv3 and a bare Ultralytics export), labelled
//! image folders, and their error paths.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn validate(candidate: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("v.json");
    let (reference, candidate, data) =
        (model("digits_mlp_nchw.toml"), model(candidate), model("digits_test.npz"));
    let mut args = vec![
        "validate",
        "--reference",
        s(&reference),
        "--candidate",
        s(&candidate),
        "--data",
        s(&data),
        "--json",
        s(&json),
    ];
    args.extend(extra);
    let out = edgert(&args);
    let report =
        std::fs::read_to_string(&json).map(|t| serde_json::from_str(&t).unwrap()).unwrap_or(Value::Null);
    (out, report)
}

#[test]
fn digits_int8_keeps_99_percent_of_fp32_accuracy() {
    let (out, r) = validate("digits_mlp_int8_qdq.toml", &[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(r["samples"], 360);
    assert_eq!(r["gate"]["metric"], "accuracy_kept");
    assert!(r["gate"]["value"].as_f64().unwrap() >= 0.99, "{r}");
    assert!(r["reference"]["accuracy"].as_f64().unwrap() >= 0.97);
    assert_eq!(r["candidate"]["precision"], "int8-qdq");
    assert!(r["top1_agreement"].as_f64().unwrap() >= 0.97);
    assert!(r["cosine_mean"].as_f64().unwrap() > 0.99);
    assert!(stdout(&out).contains("within budget"));
}

#[test]
fn ninety_percent_pruning_is_caught_with_exit_code_3() {
    let (out, r) = validate("digits_mlp_pruned90.toml", &["--budget", "1%"]);
    assert_eq!(out.status.code(), Some(3), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(r["gate"]["within_budget"], false);
    assert!(r["accuracy_drop"].as_f64().unwrap() > 0.01, "{r}");
    assert!(stdout(&out).contains("OVER BUDGET"));
    assert_eq!(r["worst_inputs"].as_array().unwrap().len(), 5);
}

#[test]
fn a_budget_that_covers_the_drop_passes() {
    let (out, r) = validate("digits_mlp_pruned90.toml", &["--budget", "100"]);
    assert_eq!(out.status.code(), Some(0), "{r}");
}

#[test]
fn yolo_int8_against_fp32_by_map() {
    let reference = model(yolo_fp32().unwrap_or("yolov3_tiny_coco_int8_qdq.toml"));
    let dir = tempfile::tempdir().unwrap();
    for photo in ["bus.jpg", "zidane.jpg"] {
        std::fs::copy(image(photo), dir.path().join(photo)).unwrap();
    }
    let json = dir.path().join("v.json");
    let out = edgert(&[
        "validate",
        "--reference",
        s(&reference),
        "--candidate",
        s(&model("yolov3_tiny_coco_int8_qdq.toml")),
        "--data",
        s(dir.path()),
        "--budget",
        "50%",
        "--json",
        s(&json),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["gate"]["metric"], "map50");
    let map = r["map50"].as_f64().unwrap();
    assert!(map > 0.5, "INT8 finds the same objects as FP32 (mAP {map})");
}

/// A bare Ultralytics export against two INT8 variants (`models/detectors.py --int8`): its
/// convolutions quantized, and every operator, whose class scores round to 0 in the head's last
/// Concat. Validate's detection agreement passes the first and fails the second, and tune weighs
/// them by it. (The fixtures are untrained: their agreement, near 0.6, is no measure of INT8.)
#[test]
fn ultralytics_int8_against_fp32_by_map_in_validate_and_tune() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("photos");
    std::fs::create_dir(&data).unwrap();
    for photo in ["bus.jpg", "zidane.jpg", "motorcycle_left.png"] {
        std::fs::copy(image(photo), data.join(photo)).unwrap();
    }
    let detect = models().join("detect");
    let fp32 = detect.join("yolov8n.onnx");
    let (convs, all) = (detect.join("yolov8n_int8.onnx"), detect.join("yolov8n_int8_all.onnx"));
    let validate = |candidate: &Path| {
        let json = dir.path().join("v.json");
        let out = edgert(&[
            "validate",
            "--reference",
            s(&fp32),
            "--candidate",
            s(candidate),
            "--data",
            s(&data),
            "--budget",
            "60%",
            "--json",
            s(&json),
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["gate"]["metric"], "map50", "{r}");
        (out.status.code(), r["map50"].as_f64().unwrap())
    };
    let (code, map) = validate(&convs);
    assert!(code == Some(0) && map > 0.4 && map <= 1.0, "convolutions in INT8: exit {code:?}, mAP {map}");
    let (code, collapsed) = validate(&all);
    assert!(code == Some(3) && collapsed < 0.05, "scores rounded to 0: exit {code:?}, mAP {collapsed}");

    let tuned = dir.path().join("t.json");
    let variants = format!("{},{}", s(&convs), s(&all));
    let out = edgert(&[
        "tune",
        "--model",
        s(&fp32),
        "--variants",
        &variants,
        "--data",
        s(&data),
        "--budget",
        "60%",
        "--duration-s",
        "0",
        "--min-iterations",
        "2",
        "--json",
        s(&tuned),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&tuned).unwrap()).unwrap();
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{t}");
    assert!(rows.iter().all(|row| row["gate_metric"] == "map50"), "{t}");
    let row = |name: &str| rows.iter().find(|r| r["variant"].as_str().unwrap().ends_with(name)).unwrap();
    assert!((row("yolov8n_int8.onnx")["accuracy_drop"].as_f64().unwrap() - (1.0 - map)).abs() < 1e-9, "{t}");
    assert_eq!(row("yolov8n_int8_all.onnx")["within_budget"], false, "{t}");
    assert_ne!(
        rows[t["pick"].as_u64().unwrap() as usize]["variant"],
        row("yolov8n_int8_all.onnx")["variant"]
    );
}

#[test]
fn image_folders_labelled_by_sub_folder_names_and_by_csv() {
    let dir = tempfile::tempdir().unwrap();
    for (class, photo) in [("Egyptian cat", "chelsea.png"), ("espresso", "coffee.png")] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        std::fs::copy(image(photo), dir.path().join(class).join(photo)).unwrap();
    }
    let json = dir.path().join("v.json");
    let args = |data: &Path| {
        edgert(&[
            "validate",
            "--reference",
            s(&model("mobilenetv2_fp32.toml")),
            "--candidate",
            s(&model("mobilenetv2_fp32.toml")),
            "--data",
            s(data),
            "--json",
            s(&json),
        ])
    };
    let out = args(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["reference"]["accuracy"], 1.0, "{r}");
    assert_eq!(r["cosine_min"], 1.0, "the same model agrees with itself");

    // A flat folder with labels.csv: class ids and names; one wrong on purpose.
    let flat = tempfile::tempdir().unwrap();
    for photo in ["chelsea.png", "coffee.png"] {
        std::fs::copy(image(photo), flat.path().join(photo)).unwrap();
    }
    std::fs::write(flat.path().join("labels.csv"), "file,label\nchelsea.png,285\ncoffee.png,tabby\n")
        .unwrap();
    let out = args(flat.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["reference"]["accuracy"], 0.5, "{r}");
}

#[test]
fn tune_marks_the_front_and_picks_the_fastest_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (json, svg) = (dir.path().join("t.json"), dir.path().join("t.svg"));
    let variants =
        format!("{},{}", s(&model("digits_mlp_int8_qdq.toml")), s(&model("digits_mlp_pruned90.toml")));
    let out = edgert(&[
        "tune",
        "--model",
        s(&model("digits_mlp_nchw.toml")),
        "--variants",
        &variants,
        "--data",
        s(&model("digits_test.npz")),
        "--duration-s",
        "0.2",
        "--warmup-ms",
        "20",
        "--plot",
        s(&svg),
        "--json",
        s(&json),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "base and two variants on cpu");
    let by_name = |n: &str| rows.iter().find(|row| row["variant"].as_str().unwrap().contains(n)).unwrap();
    assert_eq!(by_name("digits_mlp_nchw")["accuracy_drop"], 0.0, "the base against itself");
    assert_eq!(by_name("int8")["within_budget"], true);
    assert_eq!(by_name("pruned90")["within_budget"], false);
    assert_eq!(by_name("int8")["precision"], "int8-qdq");
    // The pick is within budget and no row within budget has a lower p99.
    let pick = &rows[r["pick"].as_u64().unwrap() as usize];
    assert_eq!(pick["within_budget"], true);
    let within = rows.iter().filter(|row| row["within_budget"] == true);
    assert!(within.clone().all(|row| row["p99_ms"].as_f64() >= pick["p99_ms"].as_f64()));
    // The most accurate row is always on the front; the pick too (nothing within budget beats it).
    assert_eq!(by_name("digits_mlp_nchw")["pareto"], true);
    assert!(rows.iter().all(|row| row["energy_mj"].is_null()), "no energy figure without sensors");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains("Pareto front") && text.contains("pick"),
        "{}",
        &text[..200]
    );
    assert!(stdout(&out).contains("<- pick"));
}

#[test]
fn tune_explains_a_precision_it_skips() {
    // A manifest-described model whose weights are FP8 cannot run on the cpu backend.
    let dir = tempfile::tempdir().unwrap();
    use prost::Message;
    let mut proto =
        tract_onnx::pb::ModelProto::decode(&*std::fs::read(model("digits_mlp_nchw.onnx")).unwrap()).unwrap();
    let graph = proto.graph.as_mut().unwrap();
    graph.initializer.push(tract_onnx::pb::TensorProto {
        name: "fp8_scale".into(),
        data_type: 17,
        dims: vec![1],
        raw_data: vec![0x38],
        ..Default::default()
    });
    let path = dir.path().join("digits_fp8.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    let out = edgert(&[
        "tune",
        "--model",
        s(&model("digits_mlp_nchw.toml")),
        "--variants",
        s(&path),
        "--data",
        s(&model("digits_test.npz")),
        "--duration-s",
        "0",
        "--min-iterations",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("skipped")
            && stdout(&out).contains("FP8 needs a GPU of compute capability >= 8.9"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn validate_errors() {
    let out = edgert(&[
        "validate",
        "--reference",
        s(&model("digits_mlp_nchw.toml")),
        "--candidate",
        s(&model("yolov3_tiny_coco_int8_qdq.toml")),
        "--data",
        s(&model("digits_test.npz")),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing to compare"), "{}", stderr(&out));

    let out = edgert(&[
        "validate",
        "--reference",
        s(&model("digits_mlp_nchw.toml")),
        "--candidate",
        s(&model("digits_mlp_nchw.toml")),
        "--data",
        s(&model("digits_test.npz")),
        "--budget",
        "lots",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a percentage"), "{}", stderr(&out));

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("unicorn")).unwrap();
    std::fs::copy(image("chelsea.png"), dir.path().join("unicorn/chelsea.png")).unwrap();
    let out = edgert(&[
        "validate",
        "--reference",
        s(&model("mobilenetv2_int8_qdq.toml")),
        "--candidate",
        s(&model("mobilenetv2_int8_qdq.toml")),
        "--data",
        s(dir.path()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("label 'unicorn' is not a class") && err.lines().count() == 1, "{err}");
}
