//! Telemetry on fixture boards: provenance, memory, clocks, GPU load and temperatures in `info`
//! and in bench reports; throttling; the tegrastats fallback; `monitor` and its Prometheus endpoint.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;

use common::*;
use serde_json::Value;

fn info(root: &Path) -> Value {
    let out = edgert(&["info", "--json", "--sysfs-root", root.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn zone_names(info: &Value) -> Vec<String> {
    info["telemetry"]["zones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn info_describes_each_fixture_board() {
    // (board, model, L4T, CUDA, TensorRT, clocks locked, GPU load %, online cores)
    let boards = [
        ("jetson-nano-jp4", "NVIDIA Jetson Nano Developer Kit", "32.7.1", "10.2.300", "8.2.1", false, 0.0, 4),
        (
            "xavier-nx-jp5",
            "NVIDIA Jetson Xavier NX Developer Kit",
            "35.4.1",
            "11.4.315",
            "8.5.2",
            true,
            12.3,
            4,
        ),
        (
            "orin-nano-jp6",
            "NVIDIA Jetson Orin Nano Developer Kit",
            "36.3.0",
            "12.2.140",
            "8.6.2",
            false,
            3.0,
            6,
        ),
        (
            "agx-orin-jp6",
            "NVIDIA Jetson AGX Orin Developer Kit",
            "36.4.0",
            "12.6.68",
            "10.3.0",
            true,
            45.0,
            12,
        ),
    ];
    for (board, model, l4t, cuda, trt, locked, load, online) in boards {
        let i = info(&fixture(board));
        let p = &i["provenance"];
        assert_eq!((p["board"].as_str(), p["l4t"].as_str()), (Some(model), Some(l4t)), "{board}");
        assert_eq!((p["cuda"].as_str(), p["tensorrt"].as_str()), (Some(cuda), Some(trt)), "{board}");
        assert!(p["kernel"].as_str().unwrap().ends_with("-tegra"), "{board}: {p}");
        assert_eq!(i["power"]["available"], true, "{board}");
        let t = &i["telemetry"];
        assert!(t["memory"]["nvmap_used_bytes"].as_u64().unwrap() > 0, "{board}: {t}");
        let clocks = &t["clocks"];
        let cpus = clocks["cpus"].as_array().unwrap();
        assert_eq!(cpus.iter().filter(|c| c["clock"].is_object()).count(), online, "{board}");
        let gpu = &clocks["gpu"];
        assert_eq!(gpu["load_pct"].as_f64(), Some(load), "{board}: {gpu}");
        let gpu_locked = gpu["clock"]["min_mhz"] == gpu["clock"]["max_mhz"];
        assert_eq!(gpu_locked, locked, "{board}");
        assert!(zone_names(&i).iter().all(|z| !z.starts_with("cv")), "{board}: −256 °C zones are dropped");
        assert!(!zone_names(&i).is_empty(), "{board}");
    }
    let nano = info(&fixture("jetson-nano-jp4"));
    assert_eq!(nano["telemetry"]["clocks"]["emc_mhz"], 1600.0);
    assert_eq!(nano["telemetry"]["clocks"]["gpu"]["device"], "57000000.gpu");
    let xavier = info(&fixture("xavier-nx-jp5"));
    let offline = &xavier["telemetry"]["clocks"]["cpus"][5];
    assert_eq!((offline["online"].as_bool(), offline["clock"].is_null()), (Some(false), true));
}

#[test]
fn info_text_shows_provenance_memory_clocks_and_temperatures() {
    let out = edgert(&["info", "--sysfs-root", fixture("orin-nano-jp6").to_str().unwrap()]);
    let text = stdout(&out);
    for expected in [
        "board    NVIDIA Jetson Orin Nano Developer Kit",
        "L4T 36.3.0 (JetPack 6), power mode n/a, CUDA 12.2.140, TensorRT 8.6.2",
        "nvmap 256 MiB",
        "clocks not locked; CPU [730,730,730,730,730,730] MHz; GPU 3 % @ 305 MHz; EMC 2133 MHz",
        "thermal cpu-thermal 45.5 °C, gpu-thermal 44.8 °C, soc0-thermal 45.4 °C, tj-thermal 45.5 °C",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
}

fn bench(root: &Path, extra: &[&str]) -> (Value, String, String) {
    let mut args = vec!["--idle-s", "0"];
    args.extend(extra);
    bench_on_board(root, &args)
}

#[test]
fn a_bench_on_locked_clocks_reports_telemetry_without_warnings() {
    let (report, csv, _) = bench(&fixture("agx-orin-jp6"), &["--telemetry-interval-ms", "50"]);
    assert_eq!(report["provenance"]["l4t"], "36.4.0");
    assert!(report["model"]["weight_bytes"].as_u64().unwrap() > 0);
    assert!(
        report["model"]["file_bytes"].as_u64().unwrap() >= report["model"]["weight_bytes"].as_u64().unwrap()
    );
    let t = &report["runs"][0]["telemetry"];
    assert_eq!((t["clocks_locked"].as_bool(), t["throttled"].as_bool()), (Some(true), Some(false)), "{t}");
    assert!(t["samples"].as_u64().unwrap() >= 4, "0.3 s at 50 ms: {t}");
    let rss = t["rss_series"].as_array().unwrap();
    assert_eq!(rss.len() as u64, t["samples"].as_u64().unwrap());
    assert!(rss.iter().all(|p| p[1].as_u64().unwrap() > 1 << 20), "{t}");
    assert_eq!(t["gpu_mhz"]["min"], 1300.5);
    assert_eq!(t["gpu_visible_bytes"], 31_432_072u64 * 1024, "unified memory: the GPU sees MemTotal");
    assert_eq!(t["cpu_mhz"].as_array().unwrap().len(), 12);
    assert_eq!(t["zones"].as_array().unwrap().len(), 4, "two absent cv zones dropped: {t}");
    let warnings: Vec<&str> =
        report["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(!warnings.iter().any(|w| w.contains("clocks") || w.contains("throttled")), "{warnings:?}");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!((cell("clocks_locked"), cell("throttled"), cell("l4t")), ("true", "false", "36.4.0"));
    assert_eq!(cell("temperature_max_c"), "47.5");
    assert!(cell("energy_per_inference_mj").parse::<f64>().unwrap() > 0.0);
}

#[test]
fn a_zone_past_its_trip_point_and_unlocked_clocks_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("orin-nano-jp6"), dir.path());
    // tj-thermal (zone 4) at 100 °C, past its 99 °C passive trip point.
    std::fs::write(dir.path().join("sys/class/thermal/thermal_zone4/temp"), "100000\n").unwrap();
    let (report, _, log) = bench(dir.path(), &[]);
    let t = &report["runs"][0]["telemetry"];
    assert_eq!(t["throttled"], true, "{t}");
    assert_eq!(t["throttle_reasons"][0], "tj-thermal reached 100.0 °C, past its trip point 99.0 °C");
    assert!(log.contains("warning: batch 1: throttled: tj-thermal reached 100.0 °C"), "{log}");
    assert!(log.contains("clocks are not locked"), "{log}");
}

#[test]
fn without_sysfs_tegrastats_gives_power_gpu_load_and_temperatures() {
    let fake = fake_tegrastats("jp6-orin-nano.txt");
    let empty = tempfile::tempdir().unwrap();
    let out = command(&["info", "--json", "--sysfs-root", empty.path().to_str().unwrap()])
        .env("PATH", path_with(fake.path()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let i: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let p = &i["power"];
    assert_eq!((p["source"].as_str(), p["total"].as_str()), (Some("tegrastats"), Some("VDD_IN")), "{p}");
    assert_eq!(p["total_w"], 4.977);
    assert_eq!(i["telemetry_source"], "tegrastats");
    assert_eq!(i["telemetry"]["clocks"]["gpu"]["load_pct"], 3.0);
    assert_eq!(i["telemetry"]["zones"].as_array().unwrap().len(), 6);
    assert_eq!(i["telemetry"]["memory"]["used_bytes"], 2338u64 << 20, "no meminfo under the root");

    bench_through_tegrastats(empty.path(), fake.path(), 4.977);
}

/// A short `bench` with `tegrastats` from `fake` on the PATH: its report, whose power came from
/// tegrastats at `watts`.
fn bench_through_tegrastats(root: &Path, fake: &Path, watts: f64) -> Value {
    let model = model("digits_mlp_nchw.toml");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args =
        ["bench", "-m", model.to_str().unwrap(), "--duration-s", "0.3", "--warmup-ms", "0", "--idle-s", "0"];
    let out = command(&args)
        .args(["--sysfs-root", root.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .env("PATH", path_with(fake))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let power = &report["runs"][0]["power"];
    assert_eq!(
        (power["available"].as_bool(), power["source"].as_str()),
        (Some(true), Some("tegrastats")),
        "{power}"
    );
    assert!((power["mean_w"].as_f64().unwrap() - watts).abs() < 1e-9, "{power}");
    assert_eq!(report["runs"][0]["telemetry"]["source"], "tegrastats");
    report
}

/// Thor (JetPack 7) reads no INA3221 through sysfs: its power, clocks, loads and temperatures come
/// from tegrastats, and the text and the report say so.
#[test]
fn thor_is_a_board_like_the_others_through_tegrastats() {
    let fake = fake_tegrastats("jp7-thor.txt");
    let root = fixture("thor-jp7");
    let run = |args: &[&str]| {
        let out = command(args)
            .args(["--sysfs-root", root.to_str().unwrap()])
            .env("PATH", path_with(fake.path()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let i: Value = serde_json::from_str(&run(&["info", "--json"])).unwrap();
    let p = &i["provenance"];
    assert_eq!(p["board"], "NVIDIA Jetson AGX Thor Developer Kit");
    assert_eq!((p["l4t"].as_str(), p["jetpack"].as_str()), (Some("38.2.0"), Some("7")));
    assert_eq!((p["cuda"].as_str(), p["tensorrt"].as_str()), (Some("13.0.48"), Some("10.13.3")));
    let power = &i["power"];
    assert_eq!(
        (power["source"].as_str(), power["total"].as_str()),
        (Some("tegrastats"), Some("sum of rails"))
    );
    assert_eq!(power["total_w"], 13.165, "the sum of the three rails, NC left out: {power}");
    let clocks = &i["telemetry"]["clocks"];
    assert_eq!(clocks["cpus"].as_array().unwrap().len(), 14);
    assert_eq!(clocks["cpus"][0]["clock"]["cur_mhz"], 2601.0);
    assert_eq!(clocks["cpus"][0]["load_pct"], 3.0);
    assert_eq!(clocks["cpus"][13]["online"], false);
    assert_eq!(
        (clocks["gpu"]["clock"]["cur_mhz"].as_f64(), clocks["gpu"]["load_pct"].as_f64()),
        (Some(1575.0), Some(7.0))
    );
    assert_eq!((clocks["emc_mhz"].as_f64(), clocks["emc_load_pct"].as_f64()), (Some(4266.0), Some(1.0)));
    assert_eq!(clocks["gpu"]["gpc_mhz"], serde_json::json!([1575.0, 1575.0, 1575.0]), "every GPC kept");
    assert_eq!(i["telemetry"]["zones"].as_array().unwrap().len(), 4);

    let text = run(&["info"]);
    let cores = format!("{}off,off", "2601,".repeat(12));
    for expected in [
        "board    NVIDIA Jetson AGX Thor Developer Kit".to_string(),
        "L4T 38.2.0 (JetPack 7), power mode n/a, CUDA 13.0.48, TensorRT 10.13.3".to_string(),
        format!("clocks n/a; CPU [{cores}] MHz; GPU 7 % @ 1575 MHz; EMC 4266 MHz"),
        "cpu 53.0 °C".to_string(),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in\n{text}");
    }

    let report = bench_through_tegrastats(&root, fake.path(), 13.165);
    assert_eq!(report["provenance"]["jetpack"], "7");
    assert_eq!(report["runs"][0]["telemetry"]["gpu_mhz"]["max"], 1575.0);
}

#[test]
fn the_power_mode_comes_from_nvpmodel() {
    let fake = fake_tool("nvpmodel", "[ \"$1\" = -q ] && printf 'NV Power Mode: 15W\\n2\\n'");
    let out = command(&["info", "--json", "--sysfs-root", fixture("orin-nano-jp6").to_str().unwrap()])
        .env("PATH", path_with(fake.path()))
        .output()
        .unwrap();
    let i: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(i["provenance"]["nvpmodel"], "15W (2)");
}

#[test]
fn monitor_prints_a_line_per_reading() {
    let root = fixture("xavier-nx-jp5");
    let out =
        edgert(&["monitor", "--count", "3", "--interval-ms", "20", "--sysfs-root", root.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .all(|l| l.contains("power 5.21 W (VDD_IN via ina3221 hwmon)") && l.contains("clocks locked")),
        "{text}"
    );
    let out = edgert(&[
        "monitor",
        "--count",
        "2",
        "--interval-ms",
        "20",
        "--json",
        "--sysfs-root",
        root.to_str().unwrap(),
    ]);
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[1]["t_s"].as_f64().unwrap() >= 0.02);
    assert_eq!(lines[0]["telemetry"]["clocks"]["gpu"]["device"], "17000000.gv11b");
}

fn http_get(address: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn monitor_serves_prometheus_gauges_on_loopback() {
    let root = fixture("agx-orin-jp6");
    let mut child = command(&["monitor", "--interval-ms", "50", "--prometheus", "127.0.0.1:0"])
        .args(["--sysfs-root", root.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut first).unwrap();
    let address =
        first.trim().split("http://").nth(1).and_then(|u| u.strip_suffix("/metrics")).unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // Scrapes are answered while 50 clients hold requests they never finish.
    let held: Vec<std::net::TcpStream> = (0..50)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&address).unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost:").unwrap();
            c
        })
        .collect();
    let scraped = std::time::Instant::now();
    let metrics = http_get(&address, "/metrics");
    let scrape_took = scraped.elapsed();
    let missing = http_get(&address, "/");
    drop(held);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(metrics.starts_with("HTTP/1.0 200") || metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains("text/plain; version=0.0.4"), "{metrics}");
    for expected in [
        "# TYPE edgert_power_watts gauge",
        "edgert_power_watts{rail=\"VDD_GPU_SOC\",source=\"rail\"} 6.0096",
        "edgert_power_watts{rail=\"total\",source=\"sum of rails\"}",
        "edgert_temperature_celsius{zone=\"tj-thermal\"} 47.5",
        "edgert_gpu_load_percent{device=\"17000000.gpu\"} 45",
        "edgert_clocks_locked 1",
        "edgert_memory_bytes{kind=\"nvmap_used\"} 536870912",
    ] {
        assert!(metrics.contains(expected), "missing {expected:?} in\n{metrics}");
    }
    assert!(missing.contains(" 404 "), "{missing}");
    let within = std::time::Duration::from_secs(if emulated() { 5 } else { 1 });
    assert!(scrape_took < within, "a scrape took {scrape_took:?}");
}

#[test]
fn monitor_refuses_a_non_loopback_or_busy_address() {
    let out = edgert(&["monitor", "--count", "1", "--prometheus", "0.0.0.0:9101"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--prometheus 0.0.0.0:9101: not a loopback address"), "{}", stderr(&out));
    let out = edgert(&["monitor", "--count", "1", "--prometheus", "localhost"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = busy.local_addr().unwrap().to_string();
    let out = edgert(&["monitor", "--count", "1", "--prometheus", &address]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("edgert: error: {address}: cannot serve:")) && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn sensors_that_vanish_or_return_garbage_are_left_out_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("orin-nano-jp6"), dir.path());
    let sys = dir.path().join("sys");
    std::fs::write(sys.join("class/thermal/thermal_zone0/temp"), "garbage\n").unwrap();
    std::fs::remove_file(sys.join("devices/system/cpu/cpu2/cpufreq/scaling_cur_freq")).unwrap();
    std::fs::remove_file(sys.join("class/devfreq/17000000.ga10b/device/load")).unwrap();
    std::fs::write(dir.path().join("proc/meminfo"), "MemTotal: nonsense\n").unwrap();
    let i = info(dir.path());
    let t = &i["telemetry"];
    assert!(
        !zone_names(&i).contains(&"cpu-thermal".to_string())
            && zone_names(&i).contains(&"gpu-thermal".to_string())
    );
    assert!(t["clocks"]["cpus"][2]["clock"].is_null() && t["clocks"]["cpus"][3]["clock"].is_object(), "{t}");
    assert!(t["clocks"]["gpu"]["load_pct"].is_null() && t["clocks"]["gpu"]["clock"].is_object(), "{t}");
    assert!(t["memory"].is_null(), "{t}");
}

/// What an inference costs the CPU, waits for the GPU included, is in every bench report: the
/// measure by which `--gpu-sync spin` and `block` differ on a board. Only GPU runs record the mode.
#[test]
fn bench_reports_the_process_cpu_time_per_inference_and_takes_gpu_sync() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let m = model("digits_mlp_nchw.toml");
    let out = edgert(&[
        "bench",
        "-m",
        m.to_str().unwrap(),
        "--duration-s",
        "0.3",
        "--warmup-ms",
        "0",
        "--idle-s",
        "0",
        "--gpu-sync",
        "spin",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(schema().is_valid(&report));
    let cpu = report["runs"][0]["telemetry"]["process_cpu_ms_per_inference"].as_f64().unwrap();
    assert!(cpu > 0.0 && cpu.is_finite(), "{cpu}");
    assert!(report["backend"].get("gpu_sync").is_none(), "{}", report["backend"]);
    assert!(stdout(&out).contains("ms per inference"), "{}", stdout(&out));
    fails(
        &["bench", "-m", m.to_str().unwrap(), "--gpu-sync", "sideways"],
        2,
        &["invalid value 'sideways' for '--gpu-sync <HOW>'", "[possible values: spin, block, yield]"],
    );
}
