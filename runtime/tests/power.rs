//! Power in bench reports: a fixture board's sensors give watts and energy per inference over the
//! measured window; a machine without sensors says so.

mod common;

use std::path::Path;

use common::*;
use edgert::metrics::error::SensorError;
use edgert::metrics::power::{PowerSensors, PowerSource};
use serde_json::Value;

fn bench(root: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--idle-s", "0.1"];
    args.extend(extra);
    bench_on_board(root, &args).0
}

#[test]
fn orin_nano_fixture_gives_watts_and_energy_per_inference() {
    let report = bench(&fixture("orin-nano-jp6"), &[]);
    let run = &report["runs"][0];
    let p = &run["power"];
    assert_eq!(p["available"], true, "{p}");
    assert_eq!(p["total"], "VDD_IN");
    assert_eq!(p["sample_interval_ms"], 140, "raised to the sensors' update interval");
    let watts = 5.072 * 1.192;
    for key in ["mean_w", "peak_w", "idle_w"] {
        assert!((p[key].as_f64().unwrap() - watts).abs() < 1e-9, "{key}: {p}");
    }
    // Energy per inference is the mean power over the window divided by the inferences in it.
    let per_inference_j = p["energy_per_inference_mj"].as_f64().unwrap() / 1e3;
    let window_s = per_inference_j * run["iterations"].as_f64().unwrap() / watts;
    let elapsed = run["elapsed_s"].as_f64().unwrap();
    assert!((window_s - elapsed).abs() < 0.02, "window {window_s} s, elapsed {elapsed} s");
    assert!(
        p["energy_above_idle_per_inference_mj"].as_f64().unwrap().abs() < 1e-9,
        "constant power: nothing above idle"
    );
    let rails: Vec<&str> =
        p["rails"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(rails, ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]);
}

#[test]
fn agx_orin_fixture_totals_the_rails() {
    let report = bench(&fixture("agx-orin-jp6"), &["--power-interval-ms", "200"]);
    let p = &report["runs"][0]["power"];
    assert_eq!(p["total"], "sum of rails");
    assert_eq!(p["sample_interval_ms"], 200);
    let expected = 5.008 * 1.2 + 5.008 * 0.4 + 5.0 * 0.6 + 5.0 * 0.2;
    assert!((p["mean_w"].as_f64().unwrap() - expected).abs() < 1e-9, "{p}");
}

#[test]
fn without_sensors_the_report_says_so_and_gives_no_number() {
    let empty = tempfile::tempdir().unwrap();
    let report = bench(empty.path(), &[]);
    let p = &report["runs"][0]["power"];
    assert_eq!(p["available"], false);
    assert!(p["reason"].as_str().unwrap().contains("no INA3221 power sensors"), "{p}");
    assert!(p["energy_per_inference_mj"].is_null() && p["mean_w"].is_null());
}

#[test]
fn info_reads_the_rails_of_a_fixture_board() {
    let out = edgert(&["info", "--sysfs-root", fixture("jetson-nano-jp4").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("power 2.52 W (POM_5V_IN via ina3221x iio): POM_5V_IN 2.52 W, POM_5V_GPU 0.04 W"),
        "{text}"
    );
    let nowhere = missing("root");
    let here = stdout(&edgert(&["info", "--sysfs-root", nowhere.to_str().unwrap()]));
    let message = format!("power n/a: no INA3221 power sensors under {}", nowhere.display());
    assert!(here.contains(&message), "{here}");
}

fn rail_names(s: &PowerSensors) -> Vec<&str> {
    s.rails.iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn a_sensor_that_vanishes_or_returns_garbage_is_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("agx-orin-jp6"), dir.path());
    let s = PowerSensors::discover(dir.path()).unwrap();
    let hwmon1 = dir.path().join("sys/class/hwmon/hwmon1");
    std::fs::remove_file(hwmon1.join("curr2_input")).unwrap();
    std::fs::write(hwmon1.join("in3_input"), "garbage\n").unwrap();
    for (watts, total) in [s.read().unwrap(), s.open().unwrap().read()] {
        assert_eq!(watts[1], None);
        assert_eq!(watts[2], None);
        assert!(watts[0].is_some() && watts[3].is_some());
        assert_eq!(total, None, "a sum with a missing rail is not a total");
    }
    let err = s.open().unwrap().read_detailed().remove(2).unwrap_err();
    assert!(
        matches!(&err, SensorError::NotANumber { path, text } if path.ends_with("in3_input") && text == "garbage"),
        "{err:?}"
    );
}

#[test]
fn rapl_packages_and_dram_without_psys_or_subzones() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("x86-rapl"), dir.path());
    let s = PowerSensors::discover(dir.path()).unwrap();
    assert_eq!((s.source, s.total_rail.as_deref()), (PowerSource::Rapl, None));
    assert_eq!(rail_names(&s), ["package-0", "dram"]);
    let mut open = s.open().unwrap();
    let zones = dir.path().join("sys/class/powercap");
    std::fs::write(zones.join("intel-rapl:0/energy_uj"), "124456789\n").unwrap();
    // The DRAM counter wraps: 65712999613 − 2222222 + 5 µJ later it reads 5.
    std::fs::write(zones.join("intel-rapl:0:1/energy_uj"), "5\n").unwrap();
    let (watts, total) = open.read();
    let (package, dram) = (watts[0].unwrap(), watts[1].unwrap());
    // 1 J and (65712999613 − 2222222 + 5) µJ over the same few ms: the ratio is exact.
    let wrapped_j = (65_712_999_613.0 - 2_222_222.0 + 5.0) / 1e6;
    assert!((dram / package - wrapped_j).abs() < 1e-6 * wrapped_j, "{package} {dram}");
    assert!((total.unwrap() - package - dram).abs() < 1e-9);
}
