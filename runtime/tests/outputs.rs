//! Annotated frames out of a `--source` run: images in a folder checked on their pixels, the live
//! preview served over HTTP and shown in a headless browser, and the ways each is refused.

mod common;

#[path = "outputs/browser.rs"]
mod browser;
#[path = "outputs/preview.rs"]
mod preview;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStderr, Stdio};

use common::{command, edgert, fails, image, model, stderr, stdout};
use edgert::annotate::palette::{class_colour, ink_on};
use serde_json::Value;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Starts edgert with `args` and a preview on a free loopback port; the child, the rest of its
/// stderr, and the page's URL (`http://ADDRESS/?token=…`), which must be its first line.
fn previewing(args: &[&str]) -> (Child, BufReader<ChildStderr>, String) {
    let mut all = args.to_vec();
    all.extend(["--preview", "127.0.0.1:0"]);
    let mut child = command(&all).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut errors = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    errors.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("edgert: preview at ").unwrap_or_else(|| panic!("{line}")).to_string();
    (child, errors, url)
}

/// One frame of `photo` through `manifest`, drawn as PNG into `dir`: the prediction and the image.
fn annotated(manifest: &str, photo: &str, dir: &Path, extra: &[&str]) -> (Value, image::RgbImage, Value) {
    let manifest = model(manifest).display().to_string();
    let source = format!("file:{}", image(photo).display());
    let output = format!("dir:{}?format=png", dir.display());
    let mut args = vec![
        "run", "-m", &manifest, "--source", &source, "--frames", "1", "--drop", "none", "--output", &output,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = edgert(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let file = dir.join(format!("frame-{:08}.png", lines[0]["sequence"].as_u64().unwrap()));
    let picture = image::open(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())).to_rgb8();
    (lines[0]["prediction"].clone(), picture, lines[1]["summary"].clone())
}

/// Darknet YOLOv3 through its manifest, and a bare Ultralytics export (its best box: the fixture's
/// random weights put many overlapping boxes on the photo).
#[test]
fn detector_boxes_are_drawn_in_their_class_colour_where_they_were_predicted() {
    boxes_drawn("yolov3_tiny_coco_int8_qdq.toml", &[], 3);
    boxes_drawn("detect/yolov8n.onnx", &["--max-det", "1"], 1);
}

fn boxes_drawn(model: &str, extra: &[&str], at_least: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (prediction, picture, summary) = annotated(model, "bus.jpg", dir.path(), extra);
    let boxes = prediction["boxes"].as_array().unwrap();
    assert!(boxes.len() >= at_least, "{prediction}");
    let (w, h) = picture.dimensions();
    for b in boxes {
        let colour = class_colour(b["class_id"].as_u64().unwrap() as usize);
        let [x0, y0, x1, y1] = [0, 1, 2, 3].map(|i| b["bbox"][i].as_f64().unwrap().round() as i64);
        // Along the left and right edges, a pixel inside the line, over the box's lower half
        // (its label and the overlay sit near tops): mostly the class colour, where later boxes
        // do not cross it.
        let rows = ((y0 + y1) / 2..y1 - 4).step_by(5);
        let points: Vec<(i64, i64)> = rows.flat_map(|y| [(x0 + 1, y), (x1 - 2, y)]).collect();
        let inside: Vec<_> =
            points.iter().filter(|&&(x, y)| x >= 0 && y >= 0 && x < w as i64 && y < h as i64).collect();
        let hits =
            inside.iter().filter(|&&&(x, y)| picture.get_pixel(x as u32, y as u32).0 == colour).count();
        assert!(
            inside.len() >= 4 && hits * 10 >= inside.len() * 7,
            "{b}: {hits} of {} edge pixels in {colour:?}",
            inside.len()
        );
        // A little way inside the box, the photo.
        let (cx, cy) = ((x0 + x1) / 2, (y0 + y1) / 2 + 9);
        assert_ne!(picture.get_pixel(cx as u32, cy as u32).0, colour, "{b}: the inside is not painted");
    }
    let output = &summary["output"];
    assert_eq!(output["frames_shown"], 1, "{summary}");
    assert_eq!(output["outputs"][0]["frames"], 1, "{summary}");
    assert!(output["outputs"][0]["output"].as_str().unwrap().starts_with("dir:"), "{summary}");
    assert!(output["annotate"]["p50_ms"].as_f64().unwrap() > 0.0, "{summary}");
    // PNG only: nothing was JPEG-encoded.
    assert!(output["encode"].is_null(), "{summary}");
}

#[test]
fn a_classifiers_top_classes_are_labelled_in_their_colours() {
    let dir = tempfile::tempdir().unwrap();
    let (prediction, picture, _) = annotated("mobilenetv2_fp32.toml", "chelsea.png", dir.path(), &[]);
    let top = prediction["classes"][0]["class_id"].as_u64().unwrap() as usize;
    let colour = class_colour(top);
    // The first label bar: the first row near the left edge in the top class's colour, below the
    // overlay's dark panel.
    let bar = (0..picture.height() / 2).find(|&y| picture.get_pixel(1, y).0 == colour).expect("a label bar");
    let mut ink = 0;
    for y in bar..bar + 8 {
        for x in 0..80 {
            ink += (picture.get_pixel(x, y).0 == ink_on(colour)) as u32;
        }
    }
    assert!(ink > 20, "the label's text has {ink} pixels");
    assert!(picture.get_pixel(2, 2).0.iter().all(|&v| v < 128 || v == 255), "the panel darkens the corner");
}

#[test]
fn jpeg_frames_are_written_one_per_frame() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let folder = dir.path().join("made/here");
    let out = edgert(&[
        "run",
        "-m",
        &digits,
        "--source",
        "synthetic:96x64@200",
        "--frames",
        "12",
        "--drop",
        "none",
        "--output",
        &folder.display().to_string(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    names.sort();
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("frame-") && n.ends_with(".jpg")), "{names:?}");
    for name in &names {
        let picture = image::open(folder.join(name)).unwrap();
        assert_eq!((picture.width(), picture.height()), (96, 64));
    }
    let summary = &json_lines(&stdout(&out))[12]["summary"];
    assert_eq!(summary["output"]["frames_shown"], 12, "{summary}");
    assert_eq!(summary["output"]["dropped_before_output"], 0, "{summary}");
    assert_eq!(summary["output"]["encode"]["count"], 12, "{summary}");
}

#[test]
fn bench_measures_with_the_output_stage_on_and_reports_its_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (json, frames) = (dir.path().join("r.json"), dir.path().join("frames"));
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let out = edgert(&[
        "bench",
        "-m",
        &digits,
        "--source",
        "synthetic:128x96@100",
        "--duration-s",
        "0.5",
        "--warmup-ms",
        "100",
        "--output",
        &format!("dir:{}", frames.display()),
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("  output: "), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: Vec<String> = common::schema().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let output = &report["runs"][0]["stream"]["output"];
    let shown = output["frames_shown"].as_u64().unwrap();
    assert!(shown > 10, "{output}");
    assert_eq!(output["outputs"][0]["frames"], shown, "{output}");
    assert!(output["encode"]["p99_ms"].as_f64().unwrap() > 0.0, "{output}");
    assert!(std::fs::read_dir(&frames).unwrap().count() > 10);
}

#[test]
fn a_folder_that_goes_away_mid_run_ends_it_in_one_line_with_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("frames");
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let output = format!("dir:{}", folder.display());
    let child = common::command(&[
        "run",
        "-m",
        &digits,
        "--source",
        "synthetic:64x48@50",
        "--duration-s",
        "20",
        "--output",
        &output,
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_dir(&folder).map_or(0, |d| d.count()) < 3 && started.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Renamed away in one step: removing it file by file races the frames still being written.
    std::fs::rename(&folder, dir.path().join("gone")).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(started.elapsed().as_secs() < 15, "the run went on");
    assert!(err.contains("ended: failed"), "{err}");
    let error: Vec<&str> = err.lines().filter(|l| l.starts_with("edgert: error: ")).collect();
    assert_eq!(error.len(), 1, "{err}");
    assert!(error[0].contains(&output) && error[0].contains("frame-"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_outputs_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let run = |output: &str| {
        ["run", "-m", &digits, "--source", "synthetic:32x32", "--frames", "1", "--output", output]
            .map(String::from)
    };
    for (output, code, says) in [
        ("http://host/x", 2, "unknown scheme 'http'"),
        ("clip.mp4", 2, "file:clip.mp4"),
        ("dir:", 2, "names no folder"),
        ("dir:x?format=gif", 2, "?format=jpg"),
        ("file:clip.avi", 2, ".mp4 or .mkv"),
        (&file.display().to_string(), 1, "is not a folder"),
        (&format!("dir:{}/under", file.display()), 1, "a-file"),
    ] {
        let args = run(output);
        fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), code, &[says]);
    }
    // Output flags without a source.
    fails(
        &["run", "-m", &digits, "--input", &image("chelsea.png").display().to_string(), "--output", "dir:x"],
        2,
        &["--output needs --source"],
    );
    fails(&["bench", "-m", &digits, "--preview", "127.0.0.1:0"], 2, &["--preview needs --source"]);
}
