//! Power in bench reports: a fixture board's sensors give watts and energy per inference over the
//! measured window; a machine without sensors says so.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn fixture(board: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs").join(board)
}

fn bench(root: &Path, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let model = model("digits_mlp_nchw.toml");
    let mut args = vec![
        "bench",
        "--model",
        model.to_str().unwrap(),
        "--duration-s",
        "0.3",
        "--warmup-ms",
        "0",
        "--idle-s",
        "0.1",
        "--sysfs-root",
        root.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = edgert(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/edgert.bench-2.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    report
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
    let here = stdout(&edgert(&["info", "--sysfs-root", "/nonexistent"]));
    assert!(here.contains("power n/a: no INA3221 power sensors under /nonexistent"), "{here}");
}
