//! `--preview`: the page, the MJPEG stream and the figures over plain HTTP, two viewers and a
//! stalled one, the token, and the refusals.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::common::{cpus_to_myself, emulated, fails, model};
use super::{json_lines, previewing};

/// The preview's `http://ADDRESS/?token=…` as its address and its query (`?token=…`).
fn address_and_query(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("{url}"));
    let (address, query) = rest.split_once('/').unwrap_or_else(|| panic!("{url}"));
    (address.to_string(), query.to_string())
}

/// GET `path` from `address`: the status and the body.
fn get(address: &str, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let head_end = reply.windows(4).position(|w| w == b"\r\n\r\n").expect("a header");
    let status = String::from_utf8_lossy(&reply[9..12]).parse().unwrap();
    (status, reply[head_end + 4..].to_vec())
}

/// Opens the MJPEG stream and reads `n` JPEG parts from it.
fn frames(address: &str, query: &str, n: usize) -> Vec<Vec<u8>> {
    let (line, mut reader) = open_stream(address, query);
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    (0..n).map(|_| next_jpeg(&mut reader)).collect()
}

/// The next JPEG part of an MJPEG stream.
fn next_jpeg(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let (mut line, mut length) = (String::new(), None);
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = Some(value.trim().parse::<usize>().unwrap());
        } else if line == "\r\n" {
            if let Some(n) = length.take() {
                let mut jpeg = vec![0; n];
                reader.read_exact(&mut jpeg).unwrap();
                return jpeg;
            }
        }
    }
}

#[test]
fn two_viewers_get_frames_a_stalled_one_slows_nothing_and_the_token_is_required() {
    let _alone = cpus_to_myself();
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let (child, mut errors, url) = previewing(&[
        "run",
        "-m",
        &digits,
        "--source",
        "synthetic:160x120@30",
        "--duration-s",
        "6",
        "--json",
    ]);
    let (address, query) = address_and_query(&url);
    assert!(query.starts_with("?token=") && query.len() == "?token=".len() + 32, "{query}");

    // Without the token, or with another, nothing is served.
    for path in ["/", "/stream.mjpg", "/stats.json", "/frame.jpg", "/?token=", "/stats.json?token=0123"] {
        assert_eq!(get(&address, path).0, 403, "{path}");
    }
    let (status, page) = get(&address, &format!("/{query}"));
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&page).contains("edgert preview"));
    assert_eq!(get(&address, &format!("/nothing{query}")).0, 404);

    // A viewer that goes away in the middle of a frame.
    let mut gone = TcpStream::connect(&address).unwrap();
    write!(gone, "GET /stream.mjpg{query} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
    let mut some = [0u8; 300];
    gone.read_exact(&mut some).unwrap();
    drop(gone);
    // A viewer that connects and never reads.
    let mut stalled = TcpStream::connect(&address).unwrap();
    write!(stalled, "GET /stream.mjpg{query} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();

    // Two viewers at once, each getting new frames.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| frames(&address, &query, 5));
        let b = s.spawn(|| frames(&address, &query, 5));
        (a.join().unwrap(), b.join().unwrap())
    });
    for parts in [&a, &b] {
        assert!(parts.iter().all(|jpeg| jpeg.starts_with(&[0xff, 0xd8])), "JPEG parts");
        assert_ne!(parts[0], parts[4], "the picture changes");
        let decoded = image::load_from_memory(&parts[4]).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (160, 120));
    }
    let started = Instant::now();
    let figures = loop {
        let (status, body) = get(&address, &format!("/stats.json{query}"));
        assert_eq!(status, 200);
        let figures: serde_json::Value = serde_json::from_slice(&body).unwrap();
        if figures["fps"].as_f64().unwrap() > 0.0 || started.elapsed() > Duration::from_secs(3) {
            break figures;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (status, jpeg) = get(&address, &format!("/frame.jpg{query}"));
    assert!(status == 200 && jpeg.starts_with(&[0xff, 0xd8]) || status == 503, "{status}");

    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    errors.read_to_string(&mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    drop(stalled);
    let lines = json_lines(&String::from_utf8_lossy(&out.stdout));
    let summary = &lines.last().unwrap()["summary"];
    let achieved = summary["achieved_fps"].as_f64().unwrap();
    // Paced at 30: a stalled viewer costs the pipeline nothing it could see (natively: under an
    // emulator the pipeline itself may not keep up).
    if !emulated() {
        assert!(achieved >= 0.95 * 30.0, "{summary}");
        let fps = figures["fps"].as_f64().unwrap();
        assert!((fps - achieved).abs() <= 0.2 * achieved, "figures {fps} vs report {achieved}: {figures}");
    }
    let preview = &summary["output"]["outputs"][0];
    assert!(preview["output"].as_str().unwrap().starts_with("preview:http://127.0.0.1:"), "{summary}");
    assert!(preview["most_clients"].as_u64().unwrap() >= 3, "{summary}");
}

#[test]
fn previews_are_refused_off_loopback_without_the_flag_and_on_a_taken_port() {
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-m", &digits, "--source", "synthetic:32x32", "--frames", "1"];
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let refused = |extra: &[&str], code, says: &str| {
        let args = run(extra);
        fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), code, &[says]);
    };
    refused(&["--preview", "0.0.0.0:0"], 2, "add --preview-public");
    refused(&["--preview", "localhost"], 2, "not an address like 127.0.0.1:8090");
    refused(&["--preview-public"], 2, "--preview-public needs --preview");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    refused(&["--preview", &address], 1, &address);
}

#[test]
fn the_figures_carry_the_boards_power_and_hottest_zone() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let root = super::common::fixture("orin-nano-jp6").display().to_string();
    let (child, mut errors, url) = previewing(&[
        "bench",
        "-m",
        &digits,
        "--source",
        "synthetic:96x64@30",
        "--duration-s",
        "3",
        "--sysfs-root",
        &root,
        "--json",
        &json.display().to_string(),
    ]);
    let (address, query) = address_and_query(&url);
    let started = Instant::now();
    let figures = loop {
        let (status, body) = get(&address, &format!("/stats.json{query}"));
        assert_eq!(status, 200);
        let figures: serde_json::Value = serde_json::from_slice(&body).unwrap();
        if !figures["power_w"].is_null() || started.elapsed() > Duration::from_secs(8) {
            break figures;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut rest = String::new();
    errors.read_to_string(&mut rest).unwrap();
    assert!(child.wait_with_output().unwrap().status.success(), "{rest}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = &report["runs"][0];
    // The fixture's sensors hold still: the live figure is the report's mean.
    let (live, mean) = (figures["power_w"].as_f64().unwrap(), run["power"]["mean_w"].as_f64().unwrap());
    assert!((live - mean).abs() <= 0.01 * mean, "live {live} W, report {mean} W: {figures}");
    let hottest = run["telemetry"]["zones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["max_c"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    assert_eq!(figures["temperature_c"].as_f64(), Some(hottest), "{figures}");
}

/// Opens the MJPEG stream: its status line, and the connection, open until dropped.
fn open_stream(address: &str, query: &str) -> (String, BufReader<TcpStream>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET /stream.mjpg{query} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    (line, reader)
}

#[test]
fn a_ninth_viewer_is_turned_away_until_one_of_eight_leaves() {
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let (mut child, _errors, url) =
        previewing(&["run", "-m", &digits, "--source", "synthetic:64x48@30", "--duration-s", "10"]);
    let (address, query) = address_and_query(&url);
    let mut viewers: Vec<_> = (0..8).map(|_| open_stream(&address, &query)).collect();
    for (status, _) in &viewers {
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    }
    let (status, body) = get(&address, &format!("/stream.mjpg{query}"));
    assert_eq!(
        (status, String::from_utf8_lossy(&body).as_ref()),
        (503, "too many viewers; close one and reload\n")
    );
    // One leaves: its place is free once the frame after shows it gone.
    drop(viewers.pop());
    let started = Instant::now();
    loop {
        let (status, _) = open_stream(&address, &query);
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no place freed: {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Frames a viewer already watching gets in `window`, from `reader`.
fn frames_within(reader: &mut BufReader<TcpStream>, window: Duration) -> usize {
    let started = Instant::now();
    let mut count = 0;
    while started.elapsed() < window {
        next_jpeg(reader);
        count += 1;
    }
    count
}

/// The ways to stall a preview that a hostile local client has: one client sending requests
/// without the token as fast as it can and reading no reply, 100 clients that never finish a
/// request, and connections opened and dropped; meanwhile a viewer with the token keeps getting
/// frames as before, the figures are served, and the run ends on time.
#[test]
fn a_token_less_flood_and_slow_clients_stall_neither_a_viewer_nor_the_run() {
    let _alone = cpus_to_myself();
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let duration = if emulated() { 16.0 } else { 8.0 };
    let run =
        ["run", "-m", &digits, "--source", "synthetic:160x120@30", "--duration-s", &duration.to_string()];
    let started = Instant::now();
    let (child, mut errors, url) = previewing(&run);
    let (address, query) = address_and_query(&url);
    let window = Duration::from_secs_f64(duration / 5.0);
    let (status, mut viewer) = open_stream(&address, &query);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    frames_within(&mut viewer, Duration::from_millis(300));
    let unloaded = frames_within(&mut viewer, window);

    let stop = std::sync::atomic::AtomicBool::new(false);
    let running = || !stop.load(std::sync::atomic::Ordering::Relaxed);
    let loaded = std::thread::scope(|s| {
        s.spawn(|| {
            let flood = "GET /?token=bad HTTP/1.1\r\nHost: x\r\n\r\n".repeat(1000);
            while running() {
                if let Ok(mut c) = TcpStream::connect(&address) {
                    let _ = c.set_write_timeout(Some(Duration::from_millis(200)));
                    let _ = c.write_all(flood.as_bytes());
                }
            }
        });
        s.spawn(|| {
            let mut slow: Vec<TcpStream> = Vec::new();
            while running() {
                slow.retain(|c| {
                    c.peek(&mut [0u8]).is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
                });
                while slow.len() < 100 {
                    let Ok(mut c) = TcpStream::connect(&address) else { break };
                    let _ = c.write_all(b"GET /stream.mjpg HTTP/1.1\r\nHost:");
                    c.set_nonblocking(true).unwrap();
                    slow.push(c);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        // Ends the clients however this thread ends, so that the scope can.
        let _stop = Stop(&stop);
        std::thread::sleep(Duration::from_millis(300));
        let loaded = frames_within(&mut viewer, window);
        let (status, body) = get(&address, &format!("/stats.json{query}"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        loaded
    });
    drop(viewer);
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    errors.read_to_string(&mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    let took = started.elapsed().as_secs_f64();
    assert!(took < duration + if emulated() { 10.0 } else { 3.0 }, "the run took {took:.1} s of {duration}");
    assert!(loaded > 0, "the viewer got nothing under the flood");
    // Natively the viewer keeps its rate; under an emulator the flood's own CPU slows the pipeline.
    if !emulated() {
        assert!(
            loaded as f64 >= 0.9 * unloaded as f64,
            "{loaded} frames under the flood, {unloaded} without"
        );
    }
}
