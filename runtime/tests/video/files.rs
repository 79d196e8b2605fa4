//! Video files, `gst:` pipelines, `csi://` where no Argus is, capture from video, and `info`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// GStreamer's command-line tools and the encoders the tests make videos with, or `None` (SKIPPED).
pub fn tools(test: &str) -> Option<()> {
    let has = |element: &str| {
        Command::new("gst-inspect-1.0").arg(element).output().is_ok_and(|o| o.status.success())
    };
    let found = ["videotestsrc", "x264enc", "mp4mux", "matroskamux", "avdec_h264"].iter().all(|e| has(e));
    or_skipped(
        found.then_some(()),
        "EDGERT_REQUIRE_GSTREAMER",
        test,
        "gst-launch-1.0 with videotestsrc, x264enc, mp4mux, matroskamux and avdec_h264 is not installed",
    )
}

pub fn has_element(element: &str) -> bool {
    Command::new("gst-inspect-1.0").arg(element).output().is_ok_and(|o| o.status.success())
}

/// Runs `gst-launch-1.0` on a pipeline, which must succeed.
pub fn launch(pipeline: &str) {
    let words: Vec<&str> = pipeline.split_whitespace().collect();
    let out = Command::new("gst-launch-1.0").arg("-q").args(&words).output().unwrap();
    assert!(out.status.success(), "{pipeline}: {}", stderr(&out));
}

/// A test-pattern video of `frames` frames at `fps`, 160x120, through `encoder ! muxer`.
fn video(dir: &Path, name: &str, frames: u32, fps: u32, encode: &str) -> PathBuf {
    let path = dir.join(name);
    launch(&format!(
        "videotestsrc num-buffers={frames} pattern=ball ! video/x-raw,width=160,height=120,framerate={fps}/1 \
         ! {encode} ! filesink location={}",
        path.display()
    ));
    path
}

fn digits() -> String {
    model("digits_mlp_nchw.toml").display().to_string()
}

pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// The summary line of `run --json`.
pub fn summary(lines: &[Value]) -> &Value {
    &lines.last().expect("a summary line")["summary"]
}

fn run_video(uri: &str, extra: &[&str]) -> Vec<Value> {
    let digits = digits();
    let args = [&["run", "-m", &digits, "--source", uri, "--drop", "none", "--json"][..], extra].concat();
    let out = edgert(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json_lines(&stdout(&out))
}

#[test]
fn every_frame_of_an_h264_file_is_predicted_at_the_files_rate_or_unpaced() {
    let Some(()) = tools("video files") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut videos = vec![
        video(dir.path(), "clip.mp4", 24, 24, "x264enc ! mp4mux"),
        video(dir.path(), "clip.mkv", 24, 24, "x264enc ! matroskamux"),
    ];
    if has_element("x265enc") && has_element("avdec_h265") {
        videos.push(video(dir.path(), "clip-h265.mkv", 24, 24, "x265enc ! h265parse ! matroskamux"));
    } else {
        eprintln!("no H.265 encoder or decoder installed: H.265 not tried");
    }
    for path in &videos {
        let uri = format!("file:{}", path.display());
        let paced = run_video(&uri, &[]);
        let s = summary(&paced);
        assert_eq!(s["frames_processed"], 24, "{uri}: {s}");
        assert_eq!(s["source_fps"], 24.0, "{uri}: {s}");
        assert_eq!(s["ending"]["reason"], "end_of_stream", "{s}");
        assert_eq!(s["clock"], "delivery", "{s}");
        assert_eq!(s["format"], "nv12", "{s}");
        assert_eq!((s["width"].as_u64(), s["height"].as_u64()), (Some(160), Some(120)), "{s}");
        // Played at 24 fps: the last of 24 frames is due 23/24 s after the first.
        assert!(s["elapsed_s"].as_f64().unwrap() >= 0.9, "{uri}: {s}");
        let timestamps: Vec<f64> = paced[..24].iter().map(|l| l["timestamp_ms"].as_f64().unwrap()).collect();
        assert!((timestamps[23] - timestamps[0] - 23000.0 / 24.0).abs() < 1.0, "{timestamps:?}");
        let unpaced = run_video(&uri, &["--fps", "0"]);
        let s = summary(&unpaced);
        assert_eq!(s["frames_processed"], 24, "{uri}: {s}");
        assert_eq!(s["source_fps"], Value::Null, "{s}");
    }
}

#[test]
fn a_looped_file_starts_again_with_timestamps_that_keep_increasing() {
    let Some(()) = tools("looped video") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = video(dir.path(), "clip.mp4", 10, 30, "x264enc ! mp4mux");
    let lines = run_video(&format!("file:{}", path.display()), &["--loop", "--fps", "0", "--frames", "25"]);
    assert_eq!(summary(&lines)["frames_processed"], 25);
    let timestamps: Vec<f64> = lines[..25].iter().map(|l| l["timestamp_ms"].as_f64().unwrap()).collect();
    assert!(timestamps.windows(2).all(|w| w[1] > w[0]), "{timestamps:?}");
}

#[test]
fn yolo_finds_the_bus_and_the_people_in_every_frame_of_a_video_of_the_photo() {
    let Some(()) = tools("YOLO on video") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bus.mp4");
    // Constant quantizer 10: close to the photo in every frame, P frames included.
    launch(&format!(
        "multifilesrc location={} loop=true num-buffers=5 caps=image/jpeg,framerate=5/1 ! jpegdec ! videoconvert \
         ! x264enc pass=quant quantizer=10 ! mp4mux ! filesink location={}",
        image("bus.jpg").display(),
        path.display()
    ));
    let yolo = model("yolov3_tiny_coco_int8_qdq.toml").display().to_string();
    let uri = format!("file:{}", path.display());
    let out = edgert(&["run", "-m", &yolo, "--source", &uri, "--drop", "none", "--fps", "0", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(summary(&lines)["frames_processed"], 5);
    for line in &lines[..5] {
        let labels: Vec<&str> = line["prediction"]["boxes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["label"].as_str().unwrap())
            .collect();
        assert!(labels.contains(&"bus"), "{line}");
        assert!(labels.iter().filter(|l| **l == "person").count() >= 2, "{line}");
    }
}

#[test]
fn gst_pipelines_run_with_or_without_their_own_appsink() {
    let Some(()) = tools("gst: pipelines") else { return };
    for uri in [
        "gst:videotestsrc num-buffers=7 ! video/x-raw,width=64,height=48",
        "gst:videotestsrc num-buffers=7 ! video/x-raw,width=64,height=48,format=RGB ! appsink name=edgert",
    ] {
        let s = summary(&run_video(uri, &[])).clone();
        assert_eq!(s["frames_processed"], 7, "{uri}: {s}");
        assert_eq!(s["ending"]["reason"], "end_of_stream", "{s}");
    }
    // A live source stamps frames on the pipeline clock: glass to glass starts at capture.
    let lines =
        run_video("gst:videotestsrc is-live=true num-buffers=10 ! video/x-raw,width=64,height=48", &[]);
    let s = summary(&lines);
    assert_eq!(s["clock"], "pipeline", "{s}");
    assert_eq!(s["source_delay"]["count"], 10, "{s}");
    assert!(s["source_delay"]["p50_ms"].as_f64().unwrap() > 0.0, "{s}");
}

#[test]
fn bad_video_sources_fail_in_one_line_with_exit_2() {
    let Some(()) = tools("bad video sources") else { return };
    let dir = tempfile::tempdir().unwrap();
    let good = video(dir.path(), "good.mp4", 10, 30, "x264enc ! mp4mux");
    let bytes = std::fs::read(&good).unwrap();
    let truncated = dir.path().join("truncated.mp4");
    std::fs::write(&truncated, &bytes[..bytes.len() / 20]).unwrap();
    let garbage = dir.path().join("garbage.mkv");
    std::fs::write(
        &garbage,
        (0..50_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let empty = dir.path().join("empty.mp4");
    std::fs::write(&empty, b"").unwrap();
    // A FIFO nobody writes to would hold filesrc open for ever.
    let fifo = dir.path().join("fifo.mp4");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let folder = dir.path().join("folder.mp4");
    std::fs::create_dir(&folder).unwrap();
    let digits = digits();
    let file = |p: &Path| format!("file:{}", p.display());
    for (uri, says) in [
        (file(&missing("clip.mp4")), "clip.mp4: cannot read"),
        (file(&fifo), "is not a regular file"),
        (file(&folder), "is not a regular file"),
        (file(&truncated), "no playable stream"),
        (file(&garbage), "Could not determine type of stream"),
        (file(&empty), "Stream contains no data"),
        ("gst:notanelement ! appsink name=edgert".into(), "does not parse: no element \"notanelement\""),
        ("gst:videotestsrc name=edgert ! fakesink".into(), "the element named edgert is not an appsink"),
        ("gst:videotestsrc ! fakesink".into(), "appended"),
        ("gst:videotestsrc ! video/x-raw,format=I420 ! appsink name=edgert".into(), "not-negotiated"),
        ("csi://0".into(), "CSI cameras need JetPack's GStreamer plugins"),
        (
            "gst:videotestsrc num-buffers=1 ! video/x-raw,width=20000,height=2,format=GRAY8 ! appsink name=edgert".into(),
            "over 16384 pixels a side",
        ),
    ] {
        // A file is named by its path, other sources by their URI.
        let name = uri.strip_prefix("file:").unwrap_or(&uri);
        fails(&["run", "-m", &digits, "--source", &uri], 2, &[name, says]);
    }
}

/// A server that takes the connection and never answers holds rtspsrc in its state change (its
/// own timeout is 20 s): SIGTERM ends the run within a second and a half, in one line.
#[test]
fn sigterm_ends_a_run_whose_source_never_answers() {
    let Some(()) = tools("a silent source") else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("rtsp://127.0.0.1:{}/test", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let digits = digits();
    let args = ["run", "-m", &digits, "--source", &uri, "--rtsp-transport", "tcp"];
    let (out, took) = terminated_timed(&args, std::time::Duration::from_secs(3));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < std::time::Duration::from_millis(1_500), "ended {took:?} after the signal: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("edgert: error: ")).collect();
    assert_eq!(errors, ["edgert: error: run interrupted by a signal"], "{err}");
}

#[test]
fn a_codec_with_no_decoder_installed_is_named() {
    let Some(()) = tools("missing decoder") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = video(dir.path(), "clip.mkv", 5, 30, "x264enc ! matroskamux");
    // Every H.264 decoder this GStreamer has, ranked out of decodebin's reach.
    let out = Command::new("gst-inspect-1.0").output().unwrap();
    let decoders: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(str::trim))
        .filter(|name| name.contains("h264") && (name.contains("dec") || name.contains("Dec")))
        .map(|name| format!("{name}:0"))
        .collect();
    assert!(!decoders.is_empty(), "no H.264 decoder listed");
    let digits = digits();
    let uri = format!("file:{}", path.display());
    let out = command(&["run", "-m", &digits, "--source", &uri])
        .env("GST_PLUGIN_FEATURE_RANK", decoders.join(","))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Missing decoder: H.264"), "{err}");
}

#[test]
fn capture_records_a_video_that_replays_frame_for_frame() {
    let Some(()) = tools("capture from video") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = video(dir.path(), "clip.mp4", 12, 30, "x264enc ! mp4mux");
    let recording = dir.path().join("rec");
    let (uri, out_dir) = (format!("file:{}", path.display()), recording.display().to_string());
    let out = edgert(&["capture", "--source", &uri, "--fps", "0", "--frames", "100", "--out", &out_dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(recording.join("frames.json")).unwrap()).unwrap();
    assert_eq!(index["frames"].as_array().unwrap().len(), 12, "{index}");
    let from_video = run_video(&uri, &["--fps", "0"]);
    let replayed = run_video(&format!("file:{out_dir}"), &[]);
    let scores = |lines: &[Value]| -> Vec<String> {
        lines[..12].iter().map(|l| l["prediction"]["classes"].to_string()).collect()
    };
    assert_eq!(scores(&replayed), scores(&from_video));
}

#[test]
fn doctor_names_gstreamer_and_the_h264_encoder() {
    let Some(()) = tools("doctor") else { return };
    let out = edgert(&["doctor", "--only", "platform", "--json", "-"]);
    let report: Value =
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "GStreamer")
        .unwrap_or_else(|| panic!("{report}"))
        .clone();
    // This machine is no Jetson: GStreamer and x264enc (the tests' tools) are found.
    assert_eq!(check["status"], "pass", "{check}");
    let seen = check["seen"].as_str().unwrap();
    assert!(seen.starts_with("GStreamer 1.") && seen.contains("H.264 encoder x264enc"), "{check}");
    // A Jetson (a board's tree) whose GStreamer lacks JetPack's elements: a failure with the fix.
    if !has_element("nvarguscamerasrc") {
        let root = fixture("orin-nano-jp6").display().to_string();
        let out = edgert(&["doctor", "--only", "platform", "--sysfs-root", &root, "--json", "-"]);
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let check =
            report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "GStreamer").unwrap().clone();
        assert_eq!(check["status"], "fail", "{check}");
        assert!(check["seen"].as_str().unwrap().contains("missing nvarguscamerasrc"), "{check}");
        assert!(check["fix"].as_str().unwrap().contains("nvidia-l4t-gstreamer"), "{check}");
        assert_eq!(out.status.code(), Some(1), "a failed check");
    }
}

#[test]
fn info_lists_gstreamer_and_the_jetson_elements() {
    let Some(()) = tools("info") else { return };
    let out = edgert(&["info", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let g = &info["gstreamer"];
    assert!(g["version"].as_str().unwrap().starts_with("GStreamer 1."), "{g}");
    let names: Vec<&str> =
        g["jetson_elements"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["nvarguscamerasrc", "nvv4l2decoder", "nvvidconv"]);
    assert_eq!(g["jetson_elements"][0]["present"], has_element("nvarguscamerasrc"));
    let text = stdout(&edgert(&["info"]));
    assert!(text.contains("gstreamer GStreamer 1."), "{text}");
}
