//! `run --source` and `bench --source`: frames through the pipelined path, a JSON line per frame,
//! the stream in the bench report, and the ways a run ends early: Ctrl-C, a recording damaged
//! while it plays, a source that ends before the bench could measure.

mod common;

use std::process::Child;

use common::*;
use serde_json::Value;

fn digits() -> String {
    model("digits_mlp_nchw.toml").display().to_string()
}

fn interrupt(child: &Child) {
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn run_prints_a_json_line_per_frame_in_order_then_a_summary() {
    let model = digits();
    let args = ["run", "-m", &model, "--source", "synthetic:64x48@100,nv12", "--frames", "12", "--json"];
    let out = edgert(&[&args[..], &["--drop", "none"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines.len(), 13);
    for (i, line) in lines[..12].iter().enumerate() {
        assert_eq!(line["source"], "synthetic:64x48@100,nv12");
        assert_eq!(line["sequence"], i as u64);
        assert!(line["glass_to_glass_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(line["prediction"]["classes"].as_array().unwrap().len(), 3, "{line}");
    }
    // Paced at 100 fps: frame 11 is due 110 ms after frame 0.
    assert!(lines[11]["timestamp_ms"].as_f64().unwrap() >= 109.0, "{}", lines[11]);
    let summary = &lines[12]["summary"];
    assert_eq!(summary["frames_processed"], 12);
    assert_eq!(summary["ending"]["reason"], "frames");
    assert_eq!(summary["drop_policy"], "none");
    assert_eq!(lines[12]["stages"]["end_to_end"]["count"], 12);
    assert!(stderr(&out).contains("12 of 12 frames predicted"), "{}", stderr(&out));
}

/// Top-1 class of each JSON line's prediction.
fn recording(format: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/recordings/{format}-320x240"))
}

#[test]
fn damaged_jpegs_in_an_mjpeg_recording_are_skipped_and_counted() {
    // The two photos, then the first one cut short (as a dropped USB transfer leaves it), bytes
    // that are not a JPEG, and a JPEG of another size.
    let dir = tempfile::tempdir().unwrap();
    let mut raw = std::fs::read(recording("mjpeg").join("frames.raw")).unwrap();
    let mut index: Value =
        serde_json::from_str(&std::fs::read_to_string(recording("mjpeg").join("frames.json")).unwrap())
            .unwrap();
    let first = index["frames"][0]["length"].as_u64().unwrap() as usize;
    let truncated = raw[..first / 2].to_vec();
    let mut not_jpeg = raw[..first].to_vec();
    not_jpeg[0] = 0;
    let mut other_size = Vec::new();
    image::RgbImage::new(16, 16)
        .write_to(&mut std::io::Cursor::new(&mut other_size), image::ImageFormat::Jpeg)
        .unwrap();
    for (i, bytes) in [truncated, not_jpeg, other_size].into_iter().enumerate() {
        let entry = serde_json::json!({
            "sequence": 2 + i, "timestamp_ns": (2 + i) * 33_333_333, "offset": raw.len(), "length": bytes.len()
        });
        index["frames"].as_array_mut().unwrap().push(entry);
        raw.extend_from_slice(&bytes);
    }
    std::fs::write(dir.path().join("frames.raw"), raw).unwrap();
    std::fs::write(dir.path().join("frames.json"), index.to_string()).unwrap();
    let uri = format!("file:{}", dir.path().display());
    let out = edgert(&["run", "-m", &digits(), "--source", &uri, "--drop", "none", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["frames_processed"], 2, "{summary}");
    assert_eq!(summary["frames_skipped_by_source"], 3, "{summary}");
    assert_eq!(summary["ending"]["reason"], "end_of_stream");
}

fn top1(lines: &[Value]) -> Vec<u64> {
    lines.iter().filter_map(|l| l["prediction"]["classes"][0]["class_id"].as_u64()).collect()
}

#[test]
fn recorded_yuyv_nv12_and_mjpeg_frames_of_photos_get_the_photos_own_classes() {
    let mobilenet = model("mobilenetv2_fp32.toml").display().to_string();
    let photos = ["chelsea.png", "coffee.png"].map(|p| image(p).display().to_string());
    let mut expected = Vec::new();
    for photo in &photos {
        let out = edgert(&["run", "-m", &mobilenet, "--input", photo, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        expected.extend(top1(&json_lines(&stdout(&out))));
    }
    assert!(CAT_CLASSES.contains(&(expected[0] as usize)), "{expected:?}");
    for format in ["yuyv", "nv12", "mjpeg"] {
        let uri = format!("file:{}", recording(format).display());
        let out = edgert(&["run", "-m", &mobilenet, "--source", &uri, "--drop", "none", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let lines = json_lines(&stdout(&out));
        assert_eq!(lines.last().unwrap()["summary"]["ending"]["reason"], "end_of_stream");
        assert_eq!(top1(&lines[..lines.len() - 1]), expected, "{format}");
    }
}

#[test]
fn ctrl_c_stops_a_run_with_its_summary_and_exit_code_130() {
    let model = digits();
    let (mut child, mut lines) = spawn(&["run", "-m", &model, "--source", "synthetic:64x48@30", "--json"]);
    for _ in 0..3 {
        lines.next().unwrap().unwrap();
    }
    interrupt(&child);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let summary: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["ending"]["reason"], "interrupted");
    assert!(summary["summary"]["frames_processed"].as_u64().unwrap() >= 3);
}

#[test]
fn a_recording_damaged_while_it_plays_stops_the_run_with_what_it_predicted_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("rec");
    let out = edgert(&[
        "capture",
        "--source",
        "synthetic:64x48,grey",
        "--frames",
        "4",
        "--out",
        recording.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let uri = format!("file:{}", recording.display());
    let model = digits();
    let (child, mut lines) =
        spawn(&["run", "-m", &model, "--source", &uri, "--loop", "--fps", "50", "--drop", "none"]);
    for _ in 0..2 {
        assert!(lines.next().unwrap().unwrap().starts_with(&format!("{uri}#")));
    }
    // As a camera that goes away: the frames vanish under the reader.
    std::fs::File::create(recording.join("frames.raw")).unwrap();
    let printed = 2 + lines.count();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains(&format!("edgert: {printed} of ")), "{printed} printed: {err}");
    assert!(err.contains("ended: failed"), "{err}");
    assert!(err.contains("edgert: error: ") && err.contains("frames.raw: frame "), "{err}");
}

#[test]
fn bench_reports_the_stream_with_glass_to_glass_as_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let model = digits();
    let out = edgert(&[
        "bench",
        "-m",
        &model,
        "--source",
        "synthetic:320x240@200,yuyv",
        "--drop",
        "none",
        "--duration-s",
        "0.5",
        "--warmup-ms",
        "100",
        "--batch",
        "1,2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("end to end is glass to glass"), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: Vec<String> = schema().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(report["input"], "synthetic:320x240@200,yuyv");
    for (run, batch) in report["runs"].as_array().unwrap().iter().zip([1, 2]) {
        let stream = &run["stream"];
        assert_eq!(run["batch"], batch);
        assert_eq!(stream["ending"]["reason"], "duration");
        assert_eq!(stream["source_fps"], 200.0);
        let processed = stream["frames_processed"].as_u64().unwrap();
        assert!(processed >= 50, "{stream}");
        assert_eq!(run["stages"]["end_to_end"]["count"], processed);
        assert_eq!(stream["frame_buffers"]["made"], stream["frame_buffers"]["pooled"]);
    }
}

#[test]
fn ctrl_c_during_a_streamed_bench_writes_the_report_so_far_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let model = digits();
    let args = [
        "bench",
        "-m",
        &model,
        "--source",
        "synthetic:64x48@100",
        "--duration-s",
        "60",
        "--warmup-ms",
        "0",
        "--json",
        json.to_str().unwrap(),
    ];
    let (mut child, lines) = spawn(&args);
    // Into the measured window: the model loads in milliseconds, under qemu in about a second.
    std::thread::sleep(std::time::Duration::from_millis(if emulated() { 6000 } else { 1500 }));
    interrupt(&child);
    let printed: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(printed.iter().any(|l| l.contains("end to end is glass to glass")), "{printed:?}");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["runs"][0]["stream"]["ending"]["reason"], "interrupted");
    assert!(report["runs"][0]["stream"]["frames_processed"].as_u64().unwrap() > 0);
    assert!(report["warnings"].to_string().contains("interrupted"), "{}", report["warnings"]);
}

#[test]
fn source_errors_and_misuse_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("rec");
    let out = edgert(&[
        "capture",
        "--source",
        "synthetic:64x48",
        "--frames",
        "3",
        "--out",
        recording.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let model = digits();
    let short = format!("file:{}", recording.display());
    // qemu-user answers V4L2 requests with ENOSYS, a kernel with ENOTTY.
    let not_v4l2 = if emulated() {
        "/dev/null: V4L2 requests are not supported here"
    } else {
        "/dev/null: not a V4L2 device"
    };
    let gpu_on_cpu =
        "--preprocess gpu writes the model's input in GPU memory, which backend 'cpu' does not read";
    let cases: [(&[&str], i32, &str); 17] = [
        (&["bench", "-m", &model, "--source", &short, "--duration-s", "0.2"], 2, "the source ended after"),
        (&["run", "-m", &model, "--source", "v4l2:///dev/video7"], 2, "/dev/video7: no such device"),
        (&["run", "-m", &model, "--source", "v4l2:///dev/null"], 2, not_v4l2),
        (&["capture", "--source", "v4l2:///dev/null", "--out", "x"], 2, not_v4l2),
        (&["run", "-m", &model, "--source", "synthetic:64x48", "--input", "x.png"], 2, "cannot be used with"),
        (&["run", "-m", &model, "--drop", "none", "--input", "x.png"], 2, "--drop needs --source"),
        (&["bench", "-m", &model, "--queue-depth", "3"], 2, "--queue-depth needs --source"),
        (&["bench", "-m", &model, "--preprocess", "gpu"], 2, "--preprocess needs --source"),
        (&["run", "-m", &model, "--source", "synthetic:64x48", "--preprocess", "gpu"], 2, gpu_on_cpu),
        (&["bench", "-m", &model, "--reconnect", "3"], 2, "--reconnect needs --source"),
        (&["run", "-m", &model, "--latency-ms", "0", "--input", "x.png"], 2, "--latency-ms needs --source"),
        (&["bench", "-m", &model, "--rtsp-transport", "tcp"], 2, "--rtsp-transport needs --source"),
        (&["run", "-m", &model, "--source", "synthetic:8x8", "--reconnect=-1"], 2, "--reconnect"),
        (&["run", "-m", &model, "--source", "synthetic:8x8", "--latency-ms", "10001"], 2, "--latency-ms"),
        (
            &["run", "-m", &model, "--source", "synthetic:8x8", "--rtsp-transport", "quic"],
            2,
            "--rtsp-transport",
        ),
        (&["run", "-m", &model, "--source", "synthetic:8x8", "--fps=-1"], 2, "nor 0 (unpaced)"),
        (&["run", "-m", &model, "--source", "synthetic:8x8", "--fps", "nan"], 2, "nor 0 (unpaced)"),
    ];
    for (args, code, message) in cases {
        let out = edgert(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

/// A camera node the user may not open. Root opens anything, so the run drops to `nobody` with
/// util-linux's `setpriv`; skipped where the tests are not root, under qemu, or without setpriv.
#[test]
fn a_camera_the_user_may_not_open_says_how_to_get_access() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv =
        std::process::Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if !root || !setpriv || emulated() {
        return eprintln!("skipped: needs root, setpriv and a native run (root {root}, setpriv {setpriv})");
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let node = dir.path().join("video0");
    std::fs::write(&node, b"").unwrap();
    std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o600)).unwrap();
    let uri = format!("v4l2://{}", node.display());
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_edgert")])
        .args(["capture", "--source", &uri, "--out", missing("out").to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&out);
    if !err.starts_with("edgert: ") {
        return eprintln!("skipped: nobody cannot start the test binary here: {err}");
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "edgert: error: {}: permission denied: add the user to the video group (sudo usermod -aG video $USER) and log in again",
            node.display()
        )
    );
}

/// The same photo through `--input` and `--source file:` gets the same classes and scores: the
/// two run one preprocessing path (the tensors themselves are compared in tests/models.rs).
#[test]
fn input_and_source_file_give_the_same_prediction() {
    let model = model("mobilenetv2_int8_qdq.toml").display().to_string();
    for photo in ["bus.jpg", "chelsea.png"] {
        let path = image(photo).display().to_string();
        let out = edgert(&["run", "-m", &model, "--input", &path, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let from_input: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
        let uri = format!("file:{path}");
        let out = edgert(&["run", "-m", &model, "--source", &uri, "--frames", "1", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let from_source = &json_lines(&stdout(&out))[0];
        assert_eq!(from_input["prediction"]["classes"], from_source["prediction"]["classes"], "{photo}");
    }
}
