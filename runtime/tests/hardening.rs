//! Inputs a careless user, a damaged file or a hostile one make: each gets one line and the right
//! exit code, a warning, or a correct answer; never a panic, an abort, a hang, a lost or
//! half-written file, or a confident answer made of NaN.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use prost::Message;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile").join(name)
}

fn digits() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../models/digits_mlp_nchw.toml")
}

#[test]
fn a_graph_output_that_nothing_makes_is_an_invalid_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut proto =
        tract_onnx::pb::ModelProto::decode(&*std::fs::read(model("digits_mlp_nchw.onnx")).unwrap()).unwrap();
    proto.graph.as_mut().unwrap().output[0].name = "nowhere".into();
    let path = dir.path().join("dangling.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    fails(&["inspect", "-m", s(&path)], 2, &[s(&path), "graph output 'nowhere' is made by no node"]);
    let input = model("digits_test.npz");
    fails(&["run", "-m", s(&path), "--input", s(&input)], 2, &["made by no node"]);
}

#[test]
fn graphs_tract_breaks_down_on_are_models_it_cannot_run_in_one_line() {
    // tract 0.23 panics on these (make.py): in analysis, where a constant is folded, an axis
    // permuted or reduced, a slice stepped or a repeat counted.
    for (name, says) in [
        ("tract_gather_constant.onnx", "index out of bounds: the len is 4 but the index is 99"),
        ("tract_transpose.onnx", "index out of bounds: the len is 2 but the index is 5"),
        ("tract_slice.onnx", "attempt to divide by zero"),
        ("tract_reduce.onnx", "Illegal combination of values for rank and axis: 2 and 9"),
        ("tract_tile.onnx", "assertion failed"),
        ("tract_topk_negative.onnx", "assertion failed"),
    ] {
        let path = hostile(name);
        let cannot = "the cpu backend cannot run this model: analysis: tract failed unexpectedly: ";
        fails(&["bench", "-m", s(&path), "--task", "raw", "--duration-s", "0"], 2, &[s(&path), cannot, says]);
    }
    // One it would run and answer wrongly: a TopK of 7 values from 4.
    let path = hostile("tract_topk_beyond.onnx");
    let topk =
        "the cpu backend cannot run this model: node 'y' (TopK): k is 7, and its axis 1 holds 4 values";
    fails(&["bench", "-m", s(&path), "--task", "raw", "--duration-s", "0"], 2, &[s(&path), topk]);
    // Inspecting one says what needs no analysis, its MACs unknown.
    let out = edgert(&["inspect", "-m", s(&hostile("tract_gather_constant.onnx")), "--task", "raw"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success() && err.is_empty(), "{err}");
    assert!(
        text.contains("Gather") && text.lines().any(|l| l.starts_with("MACs") && l.ends_with("unknown")),
        "{text}"
    );
    // A Gather of the input past its end is found only when the model runs.
    let path = hostile("tract_gather_input.onnx");
    let says =
        ["inference failed: tract failed unexpectedly: index out of bounds: the len is 4 but the index is 7"];
    fails(&["bench", "-m", s(&path), "--task", "raw", "--duration-s", "0"], 1, &[s(&path), says[0]]);
}

#[test]
fn what_would_not_fit_in_memory_is_refused_before_it_is_allocated() {
    let expand = hostile("expand_huge.onnx");
    let tensor =
        "a tensor of shape [100000, 1000000] (node 'y') would take 372.5 GiB, more than the memory limit";
    fails(&["bench", "-m", s(&expand), "--duration-s", "0"], 2, &[s(&expand), tensor]);
    let mobilenet = model("mobilenetv2_int8_qdq.toml");
    let batch = ["bench", "-m", s(&mobilenet), "--batch", "1000000", "--duration-s", "0"];
    fails(&batch, 2, &["the input at batch 1000000 ([1000000, 3, 224, 224])", "memory limit"]);
    // The limit is the user's to set.
    let small = ["bench", "-m", digits(), "--batch", "100000", "--max-memory-mb", "1", "--duration-s", "0"];
    fails(&small, 2, &["24.4 MiB, more than the memory limit of 1.0 MiB (--max-memory-mb)"]);
    // An input that fits by itself (512 KiB at batch 2000) but not beside tract's copy of it and
    // the tensors the model makes from it; half that batch fits with them.
    let peak = ["bench", "-m", digits(), "--batch", "2000", "--max-memory-mb", "1", "--duration-s", "0"];
    let says = "running it (the input as edgert holds it, the weights, and at its peak the tensors alive at once) would take 1.5 MiB, more than the memory limit of 1.0 MiB";
    fails(&peak, 2, &[says]);
    let fits =
        edgert(&["bench", "-m", digits(), "--batch", "1000", "--max-memory-mb", "1", "--duration-s", "0"]);
    assert!(fits.status.success(), "{}", stderr(&fits));
    // A model fed u8 holds its input twice during a run, as f32 (0.85 MiB here) and as u8.
    let u8_input = model("digits_mlp_u8_input.toml");
    let twice = ["bench", "-m", s(&u8_input), "--batch", "3500", "--max-memory-mb", "1", "--duration-s", "0"];
    fails(
        &twice,
        2,
        &["the input at batch 3500 ([3500, 1, 8, 8]) as f32 and its u8 copy would take 1.1 MiB"],
    );
}

#[test]
fn numbers_that_no_duration_or_rate_can_hold_are_refused_with_their_range() {
    let m = digits();
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "-m", m, "--source", "synthetic:64x48@1e-300"],
            "'1e-300' is not a frame rate in [0.001, 10000]",
        ),
        (&["run", "-m", m, "--source", "synthetic:64x48", "--fps", "1e-300"], "is not a frame rate in"),
        (&["run", "-m", m, "--source", "synthetic:64x48", "--timeout-s", "1e300"], "seconds in (0, 1000000]"),
        (
            &["run", "-m", m, "--source", "synthetic:64x48", "--duration-s", "1e300"],
            "seconds in (0, 1000000]",
        ),
        (&["bench", "-m", m, "--duration-s", "1e300"], "--duration-s 1e300 is not a number in [0, 1000000]"),
        (&["bench", "-m", m, "--idle-s", "inf"], "--idle-s inf is not a number in [0, 1000000]"),
    ];
    for (args, message) in cases {
        fails(args, 2, &[message]);
    }
}

#[test]
fn usage_errors_are_one_line_like_every_other_error() {
    fails(&["run", "-m", digits(), "--source", "synthetic:8x8", "--fps", "x"], 2, &["--fps"]);
    fails(&["run"], 2, &["the following required arguments were not provided: --model"]);
    fails(&["bogus"], 2, &["unrecognized subcommand 'bogus'"]);
}

#[test]
fn threads_past_the_cpus_are_capped_with_a_warning_unless_forced() {
    let input = model("digits_test.npz");
    let out = edgert(&["run", "-m", digits(), "--input", s(&input), "--threads", "65535"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("edgert: warning: --threads 65535 is more than the"), "{}", stderr(&out));
}

/// A copy of the recording `fixture` whose index disagrees with its frames.
fn recording_with(dir: &Path, fixture: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings").join(fixture);
    let copy = dir.join("recording");
    std::fs::create_dir_all(&copy).unwrap();
    copy_tree(&fixture, &copy);
    let index = copy.join("frames.json");
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(&index, json.to_string()).unwrap();
    copy
}

#[test]
fn recordings_whose_index_disagrees_with_their_frames_are_refused() {
    type Edit = fn(&mut serde_json::Value);
    let yuyv = "yuyv-320x240";
    let cases: [(&str, Edit, &str); 4] = [
        (
            yuyv,
            |j| j["frames"][0]["length"] = 10.into(),
            "frame 0 has 10 bytes; a yuyv frame of this size has 153600",
        ),
        (yuyv, |j| j["frames"][1]["length"] = 0.into(), "frame 1 has 0 bytes"),
        (yuyv, |j| j["width"] = (1u64 << 63).into(), "is over 16384 pixels a side"),
        // Found by the fuzzer: the replay took the index's stride for the decoded frames' rows.
        (
            "mjpeg-320x240",
            |j| j["stride"] = 990.into(),
            "stride 990 is not an MJPEG recording's: its frames decode to rows of 960 bytes",
        ),
    ];
    for (fixture, edit, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let uri = format!("file:{}", recording_with(dir.path(), fixture, edit).display());
        fails(&["run", "-m", digits(), "--source", &uri], 2, &["frames.json", message]);
    }
}

/// The MJPEG fixture's folder with its frames replaced by `frames` frames of garbage.
fn garbage_mjpeg(dir: &Path, frames: usize) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/mjpeg-320x240");
    let copy = dir.join("garbage");
    std::fs::create_dir_all(&copy).unwrap();
    copy_tree(&fixture, &copy);
    let garbage: Vec<u8> = (0..5000).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(copy.join("frames.raw"), &garbage).unwrap();
    let index = copy.join("frames.json");
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    json["frames"] = (0..frames)
        .map(|i| serde_json::json!({"sequence": i, "timestamp_ns": i * 1000, "offset": 0, "length": garbage.len()}))
        .collect();
    std::fs::write(&index, json.to_string()).unwrap();
    format!("file:{}", copy.display())
}

#[test]
fn a_source_of_nothing_but_undecodable_frames_ends_with_an_error() {
    // `run` through the pipeline reports what it did, then why it ended: a failure while running.
    let ends_with = |out: &std::process::Output, code: i32, message: &str| {
        assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
        let last = stderr(out).lines().last().unwrap_or_default().to_string();
        assert!(last.starts_with("edgert: error: ") && last.contains(message), "{last}");
    };
    let dir = tempfile::tempdir().unwrap();
    let few = garbage_mjpeg(dir.path(), 2);
    ends_with(
        &edgert(&["run", "-m", digits(), "--source", &few]),
        1,
        "none of the recording's 2 MJPEG frames decodes",
    );
    // Looped, it used to be read forever, deaf to time limits and signals.
    let dir = tempfile::tempdir().unwrap();
    let many = garbage_mjpeg(dir.path(), 40);
    let started = Instant::now();
    let looped = ["bench", "-m", digits(), "--source", &many, "--loop", "--duration-s", "1", "--idle-s", "0"];
    let out = edgert(&looped);
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    // bench stops at its first batch: nothing was measured, so bad input, exit 2.
    ends_with(&out, 2, "30 MJPEG frames in a row did not decode (the last: ");
}

#[test]
fn a_sensor_that_claims_an_endless_update_interval_does_not_stall_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/orin-nano-jp6");
    let root = dir.path().join("board");
    std::fs::create_dir_all(&root).unwrap();
    copy_tree(&fixture, &root);
    std::fs::write(root.join("sys/class/hwmon/hwmon1/update_interval"), "18446744073709551615\n").unwrap();
    let started = Instant::now();
    let args = ["bench", "-m", digits(), "--sysfs-root", s(&root), "--duration-s", "0.3", "--idle-s", "0"];
    let out = edgert(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}

#[test]
fn manifest_numbers_that_would_make_nan_scores_are_refused() {
    let cases: [(&str, &str, &str); 7] = [
        ("scale = 0.00392156862745098", "scale = nan", "preprocess.scale = NaN"),
        ("scale = 0.00392156862745098", "scale = 1e39", "preprocess.scale = inf"),
        ("mean = [0.485, 0.456, 0.406]", "mean = [inf]", "preprocess.mean = inf"),
        ("std = [0.229, 0.224, 0.225]", "std = [nan]", "preprocess.std = NaN"),
        (
            "std = [0.229, 0.224, 0.225]",
            "std = [1e-45]",
            "preprocess.std = 1e-45 is not a number whose size is in [0.000001, 10000]",
        ),
        (
            "resize_short_side = 256",
            "resize_short_side = 100000",
            "resize_short_side = 100000 is not in [224, 16384]",
        ),
        (
            "file = \"mobilenetv2_fp32.onnx\"",
            "file = \"../../../../etc/passwd\"",
            "model.file '../../../../etc/passwd' must name a file in the manifest's folder",
        ),
    ];
    let photo = image("chelsea.png");
    for (from, to, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let manifest = edited_manifest(dir.path(), "mobilenetv2_fp32.toml", |t| {
            assert!(t.contains(from), "{from}");
            t.replace(from, to)
        });
        fails(&["run", "-m", s(&manifest), "--input", s(&photo)], 2, &[s(&manifest), message]);
    }
}

#[test]
fn yolo_heads_are_checked_against_the_model() {
    let cases: [(&str, &str, &str); 7] = [
        (
            "[[81, 82], [135, 169], [344, 319]]",
            "[[81, 82], [135, 169]]",
            "has 255 channels, not 2 anchors × (5 + classes)",
        ),
        ("[[81, 82], [135, 169], [344, 319]]", "[]", "has no anchors"),
        ("[[81, 82], [135, 169], [344, 319]]", "[[0, 82], [135, 169], [344, 319]]", "anchor side of 0"),
        ("[[81, 82], [135, 169], [344, 319]]", "[[-81, 82], [135, 169], [344, 319]]", "anchor side of -81"),
        ("confidence = 0.25", "confidence = 1.5", "yolo.confidence = 1.5 is not in [0, 1]"),
        ("iou = 0.45", "iou = nan", "yolo.iou = NaN is not in [0, 1]"),
        ("output = \"yolo1\"", "output = \"yolo0\"", "yolo head output 'yolo0' is named by two heads"),
    ];
    let photo = image("bus.jpg");
    for (from, to, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let manifest = edited_manifest(dir.path(), "yolov3_tiny_coco_int8_qdq.toml", |t| {
            assert!(t.contains(from), "{from}");
            t.replacen(from, to, 1)
        });
        fails(&["run", "-m", s(&manifest), "--input", s(&photo)], 2, &[s(&manifest), message]);
    }
    // A classifier is no detector.
    let dir = tempfile::tempdir().unwrap();
    let manifest = edited_manifest(dir.path(), "mobilenetv2_fp32.toml", |t| {
        let classifier = t.split("[classification]").next().unwrap().to_string();
        classifier.replace("task = \"classification\"", "task = \"yolo\"")
            + "\n[yolo]\n[[yolo.heads]]\noutput = \"logits\"\nanchors = [[10, 14]]\n"
    });
    let out = edgert(&["run", "-m", s(&manifest), "--input", s(&photo)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not [N, anchors × (5 + classes), H, W]"), "{}", stderr(&out));
}

#[test]
fn nan_in_inputs_or_outputs_is_an_error_not_an_answer() {
    let nan_x = hostile("nan_x.npz");
    fails(
        &["run", "-m", digits(), "--input", s(&nan_x)],
        2,
        &[s(&nan_x), "'x' holds NaN (sample 1, value 28)"],
    );
    let validate = ["validate", "--reference", digits(), "--candidate", digits(), "--data", s(&nan_x)];
    fails(&validate, 2, &["holds NaN"]);
    let nan_model = hostile("nan_output.onnx");
    let out = edgert(&["bench", "-m", s(&nan_model), "--duration-s", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("inference failed: output 'y' holds NaN (value 0)"), "{}", stderr(&out));
}

#[test]
fn a_column_major_npz_reads_as_numpy_means_it() {
    let fortran = hostile("digits_fortran.npz");
    let out = edgert(&["run", "-m", digits(), "--input", s(&fortran)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same 40 digits in row-major order: 39 of 40 right (digits_test.npz, the first 40).
    let accuracy = stderr(&out);
    assert!(accuracy.contains("(39/40)") || accuracy.contains("(40/40)"), "{accuracy}");
}

#[test]
fn labels_that_do_not_match_the_classes_and_flags_that_would_be_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("three.txt");
    std::fs::write(&labels, "zero\none\ntwo\n").unwrap();
    let onnx = model("digits_mlp_nchw.onnx");
    let input = model("digits_test.npz");
    let out = edgert(&["run", "-m", s(&onnx), "--labels", s(&labels), "--input", s(&input)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: ")
            && stderr(&out).contains("the labels name 3 classes, the model has 10")
    );
    let csv = dir.path().join("labels.csv");
    std::fs::write(&csv, "file,label\n").unwrap();
    let args = ["validate", "--reference", digits(), "--candidate", digits(), "--data", s(&input)];
    fails(&[&args[..], &["--labels-csv", s(&csv)]].concat(), 2, &["--labels-csv", "labels image folders"]);
}

#[test]
fn an_output_that_cannot_be_written_fails_before_the_run_and_a_full_disk_leaves_no_file() {
    let under_a_file = missing("r.json");
    let started = Instant::now();
    let args = ["bench", "-m", digits(), "--duration-s", "60", "--json", s(&under_a_file)];
    fails(&args, 1, &[s(&under_a_file), "cannot write"]);
    assert!(started.elapsed() < Duration::from_secs(30), "checked after the run: {:?}", started.elapsed());
    // A full disk, as /dev/full is: the error names it, and a device is never replaced by a file.
    if Path::new("/dev/full").exists() {
        let args =
            ["bench", "-m", digits(), "--duration-s", "0", "--min-iterations", "1", "--json", "/dev/full"];
        fails(&args, 1, &["/dev/full: cannot write: No space left on device"]);
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
        // Saved outputs (a zip archive) on a full disk: edgert's line alone, nothing from the
        // zip library before it.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.path().join("chelsea.png.npz")).unwrap();
        let photo = image("chelsea.png");
        let args = ["run", "-m", digits(), "--input", s(&photo), "--save-outputs", s(dir.path())];
        fails(&args, 1, &["chelsea.png.npz", "No space left on device"]);
    }
}

#[test]
fn sigterm_stops_a_plain_bench_and_a_capture_with_what_they_measured_written() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let args = ["bench", "-m", digits(), "--duration-s", "600", "--idle-s", "0", "--json", s(&json)];
    let out = terminated(&args, Duration::from_secs(if emulated() { 20 } else { 4 }));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(report["runs"][0]["iterations"].as_u64().unwrap() >= 1, "{report}");
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));

    let recording = dir.path().join("recording");
    let capture = ["capture", "--source", "synthetic:64x48@20", "--frames", "100000", "--out", s(&recording)];
    let out = terminated(&capture, Duration::from_secs(if emulated() { 10 } else { 2 }));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let replay = format!("file:{}", recording.display());
    let out = edgert(&["run", "-m", digits(), "--source", &replay]);
    assert!(out.status.success(), "the interrupted recording replays: {}", stderr(&out));
}

/// A command blocked where it cannot look at the stop (here, one inference of several seconds)
/// ends a second after SIGTERM, in one line; one that has nothing to end early with ends at once.
#[test]
fn sigterm_ends_a_blocked_command_within_a_second_and_any_other_at_once() {
    let mobilenet = model("mobilenetv2_fp32.toml");
    let args = ["bench", "-m", s(&mobilenet), "--batch", "64", "--duration-s", "60"];
    let (out, took) = terminated_timed(&args, Duration::from_secs(3));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(3), "ended {took:?} after the signal: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("edgert: error: ")).collect();
    assert_eq!(errors, ["edgert: error: bench interrupted by a signal"], "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let root = fixture("orin-nano-jp6");
    let monitor = ["monitor", "--interval-ms", "100", "--sysfs-root", s(&root)];
    let (out, took) = terminated_timed(&monitor, Duration::from_secs(if emulated() { 5 } else { 1 }));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(took < Duration::from_millis(500), "ended {took:?} after the signal");
    assert_eq!(stderr(&out), "edgert: error: monitor interrupted by a signal\n");
}

/// A folder of `n` copies of a photo (links), labelled 3 by a CSV: data that takes a while to
/// decode, for the digits models (which shrink it to 8×8 grey) to compare.
fn many_photos(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
    let photos = dir.join("photos");
    std::fs::create_dir(&photos).unwrap();
    let mut csv = String::new();
    for i in 0..n {
        std::os::unix::fs::symlink(image("chelsea.png"), photos.join(format!("{i}.png"))).unwrap();
        csv.push_str(&format!("{i}.png,3\n"));
    }
    let labels = dir.join("labels.csv");
    std::fs::write(&labels, csv).unwrap();
    (photos, labels)
}

#[test]
fn sigterm_stops_validate_and_tune_with_what_they_compared_written_and_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (photos, labels) = many_photos(dir.path(), 5000);
    let (fp32, int8) = (model("digits_mlp_nchw.toml"), model("digits_mlp_int8_qdq.toml"));
    let json = dir.path().join("validate.json");
    let args = [
        "validate",
        "--reference",
        s(&fp32),
        "--candidate",
        s(&int8),
        "--data",
        s(&photos),
        "--labels-csv",
        s(&labels),
        "--json",
        s(&json),
    ];
    let out = terminated(&args, Duration::from_secs(if emulated() { 20 } else { 4 }));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples = report["samples"].as_u64().unwrap();
    assert!(report["interrupted"].as_bool().unwrap() && (1..5000).contains(&samples), "{report}");
    assert_eq!(report["gate"]["within_budget"], false, "no verdict on part of the data: {report}");
    assert!(stdout(&out).contains(&format!("verdict    none: interrupted after {samples} samples")));

    let json = dir.path().join("tune.json");
    let plot = dir.path().join("tune.svg");
    let digits = model("digits_mlp_nchw.toml");
    let test_set = model("digits_test.npz");
    let variant = model("digits_mlp_int8_qdq.toml");
    let args = [
        "tune",
        "--model",
        s(&digits),
        "--variants",
        s(&variant),
        "--data",
        s(&test_set),
        "--duration-s",
        "600",
        "--idle-s",
        "0",
        "--json",
        s(&json),
        "--plot",
        s(&plot),
    ];
    let out = terminated(&args, Duration::from_secs(if emulated() { 30 } else { 4 }));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // The base was being benchmarked (600 s) when the signal came: no row is half measured.
    assert!(report["interrupted"].as_bool().unwrap(), "{report}");
    assert_eq!(report["rows"].as_array().unwrap().len(), 0, "{report}");
    assert!(!plot.exists(), "no rows, no plot");
    assert!(stderr(&out).contains("interrupted: 0 rows done"), "{}", stderr(&out));
}

#[test]
fn a_jpeg_cut_short_is_refused_not_read_as_grey() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(image("bus.jpg")).unwrap();
    let cut = dir.path().join("cut.jpg");
    std::fs::write(&cut, &bytes[..bytes.len() / 50]).unwrap();
    let mobilenet = model("mobilenetv2_int8_qdq.toml");
    fails(&["run", "-m", s(&mobilenet), "--input", s(&cut)], 2, &[s(&cut), "a JPEG cut short"]);
}

#[test]
fn reports_read_back_refuse_negative_latencies_and_escape_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/report.json");
    let mut report: serde_json::Value = serde_json::from_slice(&std::fs::read(seed).unwrap()).unwrap();
    report["model"]["path"] = "models/digits\u{1b}[31m|red.toml".into();
    let good = dir.path().join("good.json");
    std::fs::write(&good, report.to_string()).unwrap();
    let table = stdout(&edgert(&["report", "merge", s(&good)]));
    assert!(!table.contains('\u{1b}') && table.contains("digits\\u{1b}[31m"), "{table}");
    report["runs"][0]["stages"]["inference"]["p50_ms"] = (-1.0).into();
    let negative = dir.path().join("negative.json");
    std::fs::write(&negative, report.to_string()).unwrap();
    fails(
        &["report", "compare", s(&good), s(&negative)],
        2,
        &[s(&negative), "inference has a latency of -1"],
    );
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let c = std::ffi::CString::new(s(&path)).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    path
}

/// A sparse file of `bytes`: its length alone is past what edgert reads.
fn sparse(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().set_len(bytes).unwrap();
    path
}

#[test]
fn fifos_devices_and_files_past_their_cap_are_refused_in_one_line_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (model_fifo, manifest_fifo, image_fifo) =
        (fifo(d, "model.onnx"), fifo(d, "model.toml"), fifo(d, "photo.png"));
    let (arrivals_fifo, report_fifo) = (fifo(d, "arrivals.txt"), fifo(d, "report.json"));
    let arrivals_huge = sparse(d, "arrivals-huge.txt", 65 << 20);
    let report_huge = sparse(d, "report-huge.json", 257 << 20);
    let image = image("chelsea.png");
    let server = |arrivals: &Path| {
        ["bench", "-m", digits(), "--scenario", "server", "--arrivals", s(arrivals), "--min-queries", "1"]
            .map(String::from)
            .to_vec()
    };
    let fifo_says = "is a FIFO, not a regular file";
    let device_says = "is a character device, not a regular file";
    let cases: Vec<(Vec<String>, &Path, &str)> = vec![
        (vec!["inspect".into(), "-m".into(), s(&model_fifo).into()], &model_fifo, fifo_says),
        (vec!["inspect".into(), "-m".into(), "/dev/zero".into()], Path::new("/dev/zero"), device_says),
        (vec!["inspect".into(), "-m".into(), s(&manifest_fifo).into()], &manifest_fifo, fifo_says),
        (
            ["run", "-m", digits(), "--input", s(&image_fifo)].map(String::from).to_vec(),
            &image_fifo,
            fifo_says,
        ),
        (
            ["run", "-m", digits(), "--input", "/dev/urandom"].map(String::from).to_vec(),
            Path::new("/dev/urandom"),
            device_says,
        ),
        (server(&arrivals_fifo), &arrivals_fifo, fifo_says),
        (server(Path::new("/dev/zero")), Path::new("/dev/zero"), device_says),
        (
            server(&arrivals_huge),
            &arrivals_huge,
            "is 65.0 MiB long, more than the 64.0 MiB an arrivals file may be",
        ),
        (vec!["report".into(), "merge".into(), s(&report_fifo).into()], &report_fifo, fifo_says),
        (vec!["report".into(), "merge".into(), "/dev/zero".into()], Path::new("/dev/zero"), device_says),
        (
            vec!["report".into(), "merge".into(), s(&report_huge).into()],
            &report_huge,
            "is 257.0 MiB long, more than the 256.0 MiB a report may be",
        ),
    ];
    for (args, path, says) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, 2, &[&format!("{}: {says}", path.display())]);
    }
    // A regular photo is read as before.
    let out = edgert(&["run", "-m", digits(), "--input", s(&image)]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A board's sensor files made FIFOs and devices (a fixture tree, or a driver gone wrong): `info`,
/// `monitor` and `doctor` read what else there is and end.
#[test]
fn sensor_files_that_are_fifos_or_devices_do_not_hang_info_monitor_or_doctor() {
    let root = tempfile::tempdir().unwrap();
    copy_tree(&fixture("orin-nano-jp6"), root.path());
    for file in ["sys/class/thermal/thermal_zone0/temp", "sys/class/hwmon/hwmon1/in1_input"] {
        let path = root.path().join(file);
        std::fs::remove_file(&path).unwrap();
        fifo(path.parent().unwrap(), path.file_name().unwrap().to_str().unwrap());
    }
    let meminfo = root.path().join("proc/meminfo");
    if meminfo.exists() {
        std::fs::remove_file(&meminfo).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &meminfo).unwrap();
    }
    let r = s(root.path());
    for args in [
        vec!["info", "--sysfs-root", r],
        vec!["monitor", "--count", "2", "--interval-ms", "20", "--sysfs-root", r],
        vec!["doctor", "--sysfs-root", r, "--only", "cpu,platform"],
    ] {
        let out = edgert_within(&args, Duration::from_secs(60));
        assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
        assert_ne!(out.status.code(), Some(101), "{args:?}");
    }
}

/// A load-cache entry that is a FIFO (a careless `mkfifo`, a hostile user of a shared cache) is
/// neither read from nor written through: the run warns, analyses the model, and replaces the FIFO
/// with a good entry, which the next run uses without a word.
#[test]
fn a_load_cache_entry_that_is_a_fifo_is_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tract");
    let digits_in = model("digits_test.npz");
    let run = || {
        let mut command = command(&["run", "-m", digits(), "--input", s(&digits_in)]);
        command.env("EDGERT_TRACT_CACHE", &cache).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("a run with a FIFO in its load cache did not end within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let first = run();
    let entry = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(&entry).unwrap();
    fifo(&cache, entry.file_name().unwrap().to_str().unwrap());

    let second = run();
    assert_eq!(stdout(&second), stdout(&first));
    // The run's accuracy line goes to stderr too, the same in every run.
    let said = stderr(&second);
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    let warning = warnings.join("\n");
    assert_eq!(warnings.len(), 1, "{warning}");
    assert!(warning.contains(s(&entry)) && warning.contains("is a FIFO, not a regular file"), "{warning}");
    assert!(std::fs::symlink_metadata(&entry).unwrap().is_file(), "the FIFO was replaced by an entry");

    let third = run();
    assert_eq!(stderr(&third), stderr(&first));
    assert_eq!(stdout(&third), stdout(&first));
}
