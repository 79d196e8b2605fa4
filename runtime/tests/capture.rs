//! `edgert capture` and the frame sources: synthetic frames recorded and replayed byte for byte,
//! images as frames, pacing, and the errors of bad URIs and damaged recordings.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn capture(args: &[&str]) -> std::process::Output {
    edgert(&[&["capture"], args].concat())
}

fn index(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("frames.json")).unwrap()).unwrap()
}

#[test]
fn synthetic_frames_of_every_format_record_and_replay_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    // Bytes per 64x48 frame: YUYV 2/pixel, NV12 1.5, GREY 1, RGB24 and BGR24 3.
    for (format, frame_bytes) in
        [("yuyv", 6144), ("nv12", 4608), ("grey", 3072), ("rgb24", 9216), ("bgr24", 9216)]
    {
        let (first, second) = (dir.path().join(format), dir.path().join(format!("{format}-again")));
        let uri = format!("synthetic:64x48,{format}");
        let out = capture(&["--source", &uri, "--frames", "5", "--out", first.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(&format!("captured 5 frame(s), {format} 64x48")), "{}", stdout(&out));
        let recorded = index(&first);
        assert_eq!(recorded["schema"], "edgert.recording/1");
        assert_eq!(recorded["format"], format);
        assert_eq!(recorded["frames"].as_array().unwrap().len(), 5);
        let raw = std::fs::read(first.join("frames.raw")).unwrap();
        assert_eq!(raw.len(), 5 * frame_bytes);
        assert_ne!(raw[..frame_bytes], raw[frame_bytes..2 * frame_bytes], "frames differ");

        let replay = format!("file:{}", first.display());
        let out = capture(&["--source", &replay, "--frames", "10", "--out", second.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("captured 5 frame(s)") && stdout(&out).contains("(end of stream)"));
        assert_eq!(std::fs::read(second.join("frames.raw")).unwrap(), raw);
        assert_eq!(index(&second)["frames"], recorded["frames"], "sequence numbers and timestamps kept");
    }
}

#[test]
fn an_mjpeg_recording_replays_and_records_again_as_the_same_jpegs() {
    let mjpeg = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/mjpeg-320x240");
    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again");
    let uri = format!("file:{}", mjpeg.display());
    let out = capture(&["--source", &uri, "--frames", "2", "--out", again.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("captured 2 frame(s), mjpeg 320x240"), "{}", stdout(&out));
    assert_eq!(
        std::fs::read(again.join("frames.raw")).unwrap(),
        std::fs::read(mjpeg.join("frames.raw")).unwrap()
    );
    let (original, copy) = (index(&mjpeg), index(&again));
    assert_eq!(copy["format"], "mjpeg");
    assert_eq!(copy["frames"], original["frames"]);
}

#[test]
fn a_looped_recording_keeps_its_timestamps_increasing() {
    let dir = tempfile::tempdir().unwrap();
    let (first, looped) = (dir.path().join("a"), dir.path().join("b"));
    let out =
        capture(&["--source", "synthetic:32x32@200,grey", "--frames", "3", "--out", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let replay = format!("file:{}", first.display());
    let out = capture(&["--source", &replay, "--loop", "--frames", "7", "--out", looped.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let frames = index(&looped)["frames"].as_array().unwrap().clone();
    assert_eq!(frames.len(), 7);
    let stamps: Vec<u64> = frames.iter().map(|f| f["timestamp_ns"].as_u64().unwrap()).collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
    let sequences: Vec<u64> = frames.iter().map(|f| f["sequence"].as_u64().unwrap()).collect();
    assert_eq!(sequences, (0..7).collect::<Vec<u64>>());
}

#[test]
fn a_paced_source_keeps_frames_at_least_a_period_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = capture(&[
        "--source",
        "synthetic:32x32@50,grey",
        "--frames",
        "6",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stamps: Vec<u64> = index(dir.path())["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["timestamp_ns"].as_u64().unwrap())
        .collect();
    // Frame n is not made before n/50 s: a lower bound only, which a slow machine cannot break.
    for (n, stamp) in stamps.iter().enumerate() {
        assert!(*stamp >= n as u64 * 20_000_000, "frame {n} at {stamp} ns");
    }
}

#[test]
fn an_image_becomes_rgb_frames_once_or_looped() {
    let dir = tempfile::tempdir().unwrap();
    let photo = format!("file:{}", image("chelsea.png").display());
    let once = dir.path().join("once");
    let out = capture(&["--source", &photo, "--frames", "3", "--out", once.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("captured 1 frame(s), rgb24 451x300") && stdout(&out).contains("end of stream"),
        "{}",
        stdout(&out)
    );
    let looped = dir.path().join("looped");
    let out = capture(&["--source", &photo, "--loop", "--frames", "3", "--out", looped.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let raw = std::fs::read(looped.join("frames.raw")).unwrap();
    assert_eq!(raw.len(), 3 * 451 * 300 * 3);
    let decoded = ::image::open(image("chelsea.png")).unwrap().to_rgb8().into_raw();
    assert_eq!(raw[2 * decoded.len()..], decoded[..]);
}

#[test]
fn a_source_without_a_frame_in_time_stops_with_what_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // At 0.5 fps the second frame is due 2 s after the first, past a 0.2 s timeout.
    let args = ["--source", "synthetic:8x8@0.5,grey", "--frames", "3", "--timeout-s", "0.2"];
    let out = capture(&[&args[..], &["--out", dir.path().to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("synthetic:8x8@0.5,grey: no frame within 0.2 s") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(index(dir.path())["frames"].as_array().unwrap().len(), 1, "the frame before stays recorded");
}

#[test]
fn bad_sources_and_damaged_recordings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    let out =
        capture(&["--source", "synthetic:16x16,grey", "--frames", "4", "--out", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    let truncated = dir.path().join("truncated");
    std::fs::create_dir_all(&truncated).unwrap();
    copy_tree(&good, &truncated);
    let raw = truncated.join("frames.raw");
    let bytes = std::fs::read(&raw).unwrap();
    std::fs::write(&raw, &bytes[..bytes.len() - 10]).unwrap();

    let other_schema = dir.path().join("other");
    std::fs::create_dir_all(&other_schema).unwrap();
    std::fs::copy(good.join("frames.raw"), other_schema.join("frames.raw")).unwrap();
    let mut idx = index(&good);
    idx["schema"] = Value::from("edgert.recording/0");
    std::fs::write(other_schema.join("frames.json"), idx.to_string()).unwrap();

    let backwards = dir.path().join("backwards");
    std::fs::create_dir_all(&backwards).unwrap();
    std::fs::copy(good.join("frames.raw"), backwards.join("frames.raw")).unwrap();
    let mut idx = index(&good);
    idx["frames"][2]["timestamp_ns"] = Value::from(0);
    std::fs::write(backwards.join("frames.json"), idx.to_string()).unwrap();

    let mjpeg = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/mjpeg-320x240");
    let no_length = dir.path().join("no_length");
    std::fs::create_dir_all(&no_length).unwrap();
    std::fs::copy(mjpeg.join("frames.raw"), no_length.join("frames.raw")).unwrap();
    let mut idx = index(&mjpeg);
    idx["frames"][1].as_object_mut().unwrap().remove("length");
    std::fs::write(no_length.join("frames.json"), idx.to_string()).unwrap();

    let huge = dir.path().join("huge");
    std::fs::create_dir_all(&huge).unwrap();
    std::fs::copy(good.join("frames.raw"), huge.join("frames.raw")).unwrap();
    let mut idx = index(&good);
    idx["stride"] = Value::from(1u64 << 62);
    std::fs::write(huge.join("frames.json"), idx.to_string()).unwrap();

    let garbled = dir.path().join("garbled");
    std::fs::create_dir_all(&garbled).unwrap();
    std::fs::write(garbled.join("frames.json"), "{ not json").unwrap();

    let out_dir = dir.path().join("out");
    let cases = [
        ("http://camera/stream".to_string(), "unknown source".to_string()),
        ("synthetic:0x10".into(), "not a frame size".into()),
        ("synthetic:15x16,yuyv".into(), "needs even sides".into()),
        ("v4l2:///dev/video63".into(), "/dev/video63: no such device".into()),
        (format!("file:{}", truncated.display()), format!("{}: truncated: frame 3", raw.display())),
        (
            format!("file:{}", other_schema.display()),
            "schema 'edgert.recording/0' is not edgert.recording/1".into(),
        ),
        (format!("file:{}", garbled.display()), "frames.json: not a recording index".into()),
        (format!("file:{}", backwards.display()), "frame 2's timestamp is earlier than frame 1's".into()),
        (format!("file:{}", no_length.display()), "MJPEG frame 1 has no length".into()),
        (format!("file:{}", huge.display()), "cannot fit in memory".into()),
        (format!("file:{}", dir.path().join("missing").display()), "missing".into()),
    ];
    for (uri, message) in cases {
        let out = capture(&["--source", &uri, "--out", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{uri}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&message) && err.lines().count() == 1, "{uri}: {err}");
    }
}
