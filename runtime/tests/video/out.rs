//! Video out through GStreamer: annotated frames to MP4 and MKV files read back by edgert, to an
//! RTP receiver and an RTSP client (edgert reading what edgert sent), and the refusals.

use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::common::*;
use crate::files::{json_lines, summary, tools};

fn digits() -> String {
    model("digits_mlp_nchw.toml").display().to_string()
}

/// Frames predicted from `uri` and the size they came at.
pub fn read_back(uri: &str, extra: &[&str]) -> (u64, u64, u64) {
    let digits = digits();
    let mut args = vec!["run", "-m", &digits, "--source", uri, "--json"];
    args.extend_from_slice(extra);
    let out = edgert(&args);
    assert!(out.status.success(), "{uri}: {}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let s = summary(&lines);
    (s["frames_processed"].as_u64().unwrap(), s["width"].as_u64().unwrap(), s["height"].as_u64().unwrap())
}

/// The frames a run's output line says it wrote to `output`.
pub fn frames_written(stderr: &str, output: &str) -> u64 {
    stderr
        .split(&format!("to {output} ("))
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no frame count for {output}: {stderr}"))
}

#[test]
fn annotated_frames_make_an_mp4_and_an_mkv_with_every_frame() {
    let Some(()) = tools("video out to files") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mp4, mkv) = (dir.path().join("out.mp4"), dir.path().join("out.mkv"));
    let out = edgert(&[
        "run",
        "-m",
        &digits(),
        "--source",
        "synthetic:160x120@100",
        "--frames",
        "30",
        "--drop",
        "none",
        "--output",
        &format!("file:{}", mp4.display()),
        "--output",
        &format!("file:{}", mkv.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("edgert: output: 30 frames shown"), "{}", stderr(&out));
    for video in [&mp4, &mkv] {
        let uri = format!("file:{}", video.display());
        assert_eq!(read_back(&uri, &["--fps", "0", "--drop", "none"]), (30, 160, 120), "{uri}");
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    names.sort();
    assert_eq!(names, ["out.mkv", "out.mp4"], "no partial files left");
}

#[test]
fn rtp_and_rtsp_outputs_reach_a_client() {
    let Some(()) = tools("video out to RTP and RTSP") else { return };
    let port = || std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (rtp, rtsp) =
        (port(), std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    let mut outputs = vec!["--output".to_string(), format!("rtp://127.0.0.1:{rtp}")];
    if cfg!(feature = "rtsp-server") {
        outputs.extend(["--output".into(), format!("rtsp://127.0.0.1:{rtsp}/out")]);
    }
    // The receiver listens first; the sender then runs long enough for both clients.
    let receiver_source = format!(
        "gst:udpsrc port={rtp} caps=application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000 \
         ! rtph264depay ! avdec_h264"
    );
    let digits = digits();
    let receiver = command(&[
        "run",
        "-m",
        &digits,
        "--source",
        &receiver_source,
        "--frames",
        "10",
        "--json",
        "--timeout-s",
        "15",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut sender_args = vec!["run", "-m", &digits, "--source", "synthetic:160x120@30", "--duration-s", "8"];
    sender_args.extend(outputs.iter().map(String::as_str));
    let sender = command(&sender_args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let received = receiver.wait_with_output().unwrap();
    assert!(received.status.success(), "RTP: {}", stderr(&received));
    let s = summary(&json_lines(&stdout(&received))).clone();
    assert_eq!(
        (s["frames_processed"].as_u64(), s["width"].as_u64(), s["height"].as_u64()),
        (Some(10), Some(160), Some(120)),
        "{s}"
    );
    if cfg!(feature = "rtsp-server") {
        let uri = format!("rtsp://127.0.0.1:{rtsp}/out");
        assert_eq!(
            read_back(&uri, &["--frames", "10", "--drop", "none", "--timeout-s", "10"]),
            (10, 160, 120)
        );
    }
    // Both clients have gone (the RTSP one mid-stream): the sender ran its 8 s regardless.
    let sent = sender.wait_with_output().unwrap();
    let err = stderr(&sent);
    assert!(sent.status.success() && err.contains("ended: duration"), "{err}");
}

#[test]
fn video_outputs_are_refused_in_one_line() {
    let Some(()) = tools("video out refusals") else { return };
    let dir = tempfile::tempdir().unwrap();
    let digits = digits();
    let refused = |output: &str, code: i32, says: &str| {
        fails(
            &["run", "-m", &digits, "--source", "synthetic:32x32", "--frames", "1", "--output", output],
            code,
            &[says],
        );
    };
    let missing = dir.path().join("missing/out.mp4").display().to_string();
    refused(&format!("file:{missing}"), 1, &missing);
    refused("rtp://127.0.0.1", 2, "names no port");
    refused("rtp://:5000", 2, "names no host");
    if cfg!(feature = "rtsp-server") {
        refused("rtsp://127.0.0.1:8554", 2, "names no stream");
        refused("rtsp://camera.local:8554/x", 2, "not an IP address");
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        refused(&format!("rtsp://127.0.0.1:{port}/x"), 1, &format!("127.0.0.1:{port}"));
    }
    // No encoder: GStreamer with no plugins at all.
    let out = command(&[
        "run",
        "-m",
        &digits,
        "--source",
        "synthetic:32x32",
        "--frames",
        "1",
        "--output",
        "file:x.mp4",
    ])
    .env("GST_PLUGIN_SYSTEM_PATH_1_0", dir.path())
    .env("GST_PLUGIN_PATH_1_0", dir.path())
    .env("GST_REGISTRY_1_0", dir.path().join("registry.bin"))
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no H.264 encoder"), "{}", stderr(&out));
}

#[test]
fn a_run_stopped_by_ctrl_c_still_finishes_its_video() {
    let Some(()) = tools("video out stopped by SIGINT") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mp4 = dir.path().join("out.mp4");
    let digits = digits();
    let output = format!("file:{}", mp4.display());
    let args =
        ["run", "-m", &digits, "--source", "synthetic:160x120@30", "--drop", "none", "--output", &output];
    let (child, mut lines) = spawn(&args);
    // Stopped once frames flow, as a user's Ctrl-C would.
    for _ in 0..10 {
        lines.next().expect("a prediction").unwrap();
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // As many frames in the video as the run says it wrote there.
    let shown = frames_written(&err, &output);
    assert!(shown >= 10, "{err}");
    assert_eq!(read_back(&output, &["--fps", "0", "--drop", "none"]), (shown, 160, 120));
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["out.mp4"], "no partial file left");
}

#[test]
fn a_video_that_cannot_be_finished_is_an_error_and_leaves_nothing() {
    let Some(()) = tools("video out failing at its end") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mp4 = dir.path().join("out.mp4");
    let digits = digits();
    let output = format!("file:{}", mp4.display());
    let args =
        ["run", "-m", &digits, "--source", "synthetic:160x120@30", "--frames", "45", "--output", &output];
    let (child, mut lines) = spawn(&args);
    lines.next().expect("a prediction").unwrap();
    // Its name taken by a folder while it runs: the finished video has nowhere to go.
    std::fs::create_dir_all(mp4.join("taken")).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("edgert: error: {output}: cannot write: {}: ", mp4.display())),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["out.mp4"], "the folder only, no partial file left");
    assert!(mp4.is_dir());

    // A disk that fills as it runs (a 64 kB limit on what edgert may write to a file): the run
    // stops there, its summary written, the partial video removed.
    std::fs::remove_dir_all(&mp4).unwrap();
    let mut full = command(&args);
    unsafe {
        full.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: 64 * 1024, rlim_max: 64 * 1024 };
            match libc::setrlimit(libc::RLIMIT_FSIZE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        })
    };
    let out = full.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ended: failed") && err.lines().last().unwrap().contains("File too large"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no partial file left");
}
