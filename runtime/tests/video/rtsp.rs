//! `rtsp://` against a real RTSP server on loopback: gst-rtsp-server serving an H.264 test
//! pattern from a child process of this test binary (`serve`), so a test can stop it as a crashed
//! or rebooted camera stops, and start it again.

use std::io::{BufRead, BufReader, Lines};
use std::net::TcpListener;
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer_rtsp_server::prelude::*;
use gstreamer_rtsp_server::{
    RTSPAuth, RTSPMediaFactory, RTSPServer, RTSPToken, RTSP_PERM_MEDIA_FACTORY_ACCESS,
    RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, RTSP_TOKEN_MEDIA_FACTORY_ROLE,
};
use serde_json::Value;

use super::files::{json_lines, summary, tools};
use super::out::{frames_written, read_back};
use crate::common::*;

/// `PORT` or `PORT:USER:PASSWORD`: what the child process serves.
const SERVE: &str = "EDGERT_TEST_RTSP_SERVE";
/// `WIDTHxHEIGHT` of its frames.
const SIZE: &str = "EDGERT_TEST_RTSP_SIZE";

/// The server itself, run only as the child process the tests start (`Server::start`).
#[test]
#[ignore = "the RTSP server the other tests start as a child process"]
fn serve() {
    let Ok(spec) = std::env::var(SERVE) else { return };
    let mut words = spec.split(':');
    let port = words.next().unwrap();
    let credentials = words.next().zip(words.next());
    let size = std::env::var(SIZE).unwrap();
    let (width, height) = size.split_once('x').unwrap();
    gst::init().unwrap();
    let server = RTSPServer::new();
    server.set_address("127.0.0.1");
    server.set_service(port);
    let factory = RTSPMediaFactory::new();
    // A key frame every 10 frames, so a client that joins or rejoins decodes within a third of
    // a second.
    factory.set_launch(&format!(
        "( videotestsrc is-live=true pattern=ball ! video/x-raw,width={width},height={height},framerate=30/1 \
         ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=10 ! rtph264pay name=pay0 pt=96 )"
    ));
    factory.set_shared(true);
    if let Some((user, password)) = credentials {
        let auth = RTSPAuth::new();
        let token = RTSPToken::builder().field(RTSP_TOKEN_MEDIA_FACTORY_ROLE, "viewer").build();
        auth.add_basic(RTSPAuth::make_basic(user, password).as_str(), &token);
        server.set_auth(Some(&auth));
        let role = gst::Structure::builder("viewer")
            .field(RTSP_PERM_MEDIA_FACTORY_ACCESS, true)
            .field(RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, true)
            .build();
        factory.add_role_from_structure(&role);
    }
    server.mount_points().unwrap().add_factory("/test", factory);
    let _source = server.attach(None).unwrap();
    println!("READY");
    gst::glib::MainLoop::new(None, false).run();
}

/// The child process serving on a port; killed when dropped.
struct Server {
    child: Child,
    /// What it serves (`SERVE`), to start it again.
    spec: String,
}

impl Server {
    fn start(spec: &str) -> Server {
        Server::start_sized(spec, "160x120")
    }

    fn start_sized(spec: &str, size: &str) -> Server {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "rtsp::serve", "--nocapture", "--test-threads=1"])
            .env(SERVE, spec)
            .env(SIZE, size)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // libtest may print the test's name on the same line first.
        assert!(lines.any(|l| l.is_ok_and(|l| l.ends_with("READY"))), "the RTSP server did not start");
        Server { child, spec: spec.to_string() }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn digits() -> String {
    model("digits_mlp_nchw.toml").display().to_string()
}

/// A server on a free port, and a run reading from it over TCP with `extra` flags, 10 frames in.
fn watching(extra: &[&str]) -> (Server, String, Child, Lines<BufReader<ChildStdout>>) {
    let port = free_port();
    let server = Server::start(&port.to_string());
    let uri = format!("rtsp://127.0.0.1:{port}/test");
    let digits = digits();
    let args = ["run", "-m", &digits, "--source", &uri, "--rtsp-transport", "tcp", "--json"];
    let (child, mut lines) = spawn(&[&args[..], extra].concat());
    frames(&mut lines, 10);
    (server, uri, child, lines)
}

/// The rest of a run's JSON lines once it has ended, its exit code and its stderr.
fn finish(mut child: Child, lines: Lines<BufReader<ChildStdout>>) -> (Vec<Value>, Option<i32>, String) {
    let rest = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    let code = child.wait().unwrap().code();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    (rest, code, err)
}

/// Reads JSON lines until `n` frames' predictions have come.
fn frames(lines: &mut Lines<BufReader<ChildStdout>>, n: usize) -> Vec<Value> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let line = lines.next().expect("frames before the run ended").unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert!(value.get("prediction").is_some(), "{value}");
        seen.push(value);
    }
    seen
}

#[test]
fn an_rtsp_stream_runs_with_glass_to_glass_from_packet_arrival() {
    let Some(()) = tools("rtsp stream") else { return };
    let port = free_port();
    let _server = Server::start(&port.to_string());
    let uri = format!("rtsp://127.0.0.1:{port}/test");
    let digits = digits();
    let args = ["run", "-m", &digits, "--source", &uri, "--rtsp-transport", "tcp", "--latency-ms", "0"];
    let out = edgert(&[&args[..], &["--duration-s", "2", "--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let s = summary(&lines);
    assert_eq!(s["ending"]["reason"], "duration", "{s}");
    assert!(s["frames_processed"].as_u64().unwrap() >= 20, "{s}");
    assert_eq!(
        (s["width"].as_u64(), s["height"].as_u64(), s["format"].as_str()),
        (Some(160), Some(120), Some("nv12"))
    );
    assert_eq!(s["clock"], "pipeline", "{s}");
    assert_eq!(s["source_fps"], 30.0, "{s}");
    assert!(s["source_delay"]["count"].as_u64().unwrap() >= 20, "{s}");
    assert!(lines[0]["glass_to_glass_ms"].as_f64().unwrap() > 0.0, "{}", lines[0]);
    assert!(stderr(&out).contains("rtspsrc location=\"rtsp://127.0.0.1"), "{}", stderr(&out));
}

#[test]
fn a_server_that_stops_ends_the_run_with_its_report_and_exit_1() {
    let Some(()) = tools("rtsp server stopped") else { return };
    let (mut server, uri, child, lines) = watching(&["--timeout-s", "3"]);
    server.stop();
    let (rest, code, err) = finish(child, lines);
    assert_eq!(code, Some(1), "{err}");
    let s = summary(&rest);
    assert_eq!(s["ending"]["reason"], "failed", "{s}");
    assert!(s["ending"]["error"].as_str().unwrap().contains(&uri), "{s}");
    assert!(s["frames_processed"].as_u64().unwrap() >= 10, "{s}");
}

#[test]
fn reconnect_rides_out_a_server_restart() {
    let Some(()) = tools("rtsp reconnect") else { return };
    let (mut server, _, child, mut lines) = watching(&["--timeout-s", "2", "--reconnect", "10"]);
    server.stop();
    std::thread::sleep(Duration::from_secs(2));
    let _server = Server::start(&server.spec);
    let restarted = Instant::now();
    // Frames again after the restart: the run carried on.
    let after = frames(&mut lines, 20);
    assert!(restarted.elapsed() < Duration::from_secs(30));
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let (rest, code, err) = finish(child, lines);
    assert_eq!(code, Some(130), "{err}");
    let s = summary(&rest);
    assert!(s["reconnects"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["ending"]["reason"], "interrupted", "{s}");
    assert!(err.contains("reconnecting (1 of 10)"), "{err}");
    assert!(after.last().unwrap()["sequence"].as_u64().unwrap() >= 29, "{}", after.last().unwrap());
}

#[test]
fn a_stream_back_at_another_size_ends_the_run_and_its_video_keeps_the_frames_before() {
    let Some(()) = tools("rtsp back at another size") else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = format!("file:{}", dir.path().join("out.mp4").display());
    // Bounded, so a stream taken at its new size fails the test rather than hanging it.
    let flags = [
        "--timeout-s",
        "2",
        "--reconnect",
        "10",
        "--drop",
        "none",
        "--duration-s",
        "30",
        "--output",
        &output,
    ];
    let (mut server, _, child, lines) = watching(&flags);
    server.stop();
    std::thread::sleep(Duration::from_secs(2));
    let _server = Server::start_sized(&server.spec, "320x240");
    let (rest, code, err) = finish(child, lines);
    assert_eq!(code, Some(1), "{err}");
    let s = summary(&rest);
    assert_eq!(s["ending"]["reason"], "failed", "{s}");
    let error = s["ending"]["error"].as_str().unwrap();
    assert!(error.contains("the stream changed from nv12 160x120 to nv12 320x240 mid-run"), "{s}");
    assert!(err.contains("reconnecting (1 of 10)"), "{err}");
    // The video was finished with the frames shown before the change.
    let shown = frames_written(&err, &output);
    assert!(shown >= 10, "{err}");
    assert_eq!(read_back(&output, &["--fps", "0", "--drop", "none"]), (shown, 160, 120));
}

#[test]
fn rtsp_faults_fail_in_one_line_with_exit_2_and_no_password() {
    let Some(()) = tools("rtsp faults") else { return };
    let port = free_port();
    let _server = Server::start(&format!("{port}:viewer:s3cret"));
    let digits = digits();
    let closed = free_port();
    for (uri, says) in [
        (format!("rtsp://127.0.0.1:{closed}/test"), "Could not open resource"),
        (format!("rtsp://127.0.0.1:{port}/test"), "Unauthorized"),
        (format!("rtsp://viewer:wrong@127.0.0.1:{port}/test"), "Unauthorized"),
        (format!("rtsp://viewer:s3cret@127.0.0.1:{port}/nothing"), "Not Found"),
    ] {
        let shown = uri.replace(":wrong@", ":***@").replace(":s3cret@", ":***@");
        fails(&["run", "-m", &digits, "--source", &uri, "--rtsp-transport", "tcp"], 2, &[&shown, says]);
    }
    let uri = format!("rtsp://viewer:s3cret@127.0.0.1:{port}/test");
    let out = edgert(&[
        "run",
        "-m",
        &digits,
        "--source",
        &uri,
        "--rtsp-transport",
        "tcp",
        "--frames",
        "5",
        "--drop",
        "none",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out) + &stderr(&out);
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(summary(&json_lines(&stdout(&out)))["frames_processed"], 5);
}
