//! `edgert doctor` on this machine (no GPU, no camera) and on the boards' fixture trees, with
//! fake board tools on the PATH; its bad arguments; and boards where a check must fail.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use serde_json::Value;

fn fixture(board: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs").join(board)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `doctor --json -` with `args`, PATH starting at `tools` when given: the report and the output.
fn doctor(args: &[&str], tools: Option<&Path>) -> (Value, Output) {
    let cache = tempfile::tempdir().unwrap();
    let mut command = command(&[&["doctor", "--json", "-"], args].concat());
    command.env("EDGERT_ENGINE_CACHE", cache.path().join("engines"));
    command.env("EDGERT_KERNEL_CACHE", cache.path().join("kernels"));
    if let Some(tools) = tools {
        command.env("PATH", path_with(tools));
    }
    let out = command.output().unwrap();
    let report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    assert_fits_schema(&report);
    (report, out)
}

/// Every report these tests make must fit `schema/edgert.doctor-1.schema.json`.
fn assert_fits_schema(report: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/edgert.doctor-1.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{report:#}");
}

#[test]
fn the_schema_refuses_a_failure_without_its_fix_and_an_unknown_status() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/edgert.doctor-1.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let check = serde_json::json!({ "$defs": schema["$defs"], "$ref": "#/$defs/check" });
    let validator = jsonschema::validator_for(&check).unwrap();
    let base = serde_json::json!({ "area": "gpu", "name": "memory", "elapsed_ms": 1.0, "budget_ms": 1000 });
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    assert!(validator
        .is_valid(&with(serde_json::json!({ "status": "fail", "expected": "a", "seen": "b", "fix": "c" }))));
    assert!(!validator.is_valid(&with(serde_json::json!({ "status": "fail", "expected": "a", "seen": "b" }))));
    assert!(!validator.is_valid(&with(serde_json::json!({ "status": "maybe", "reason": "x" }))));
    assert!(!validator.is_valid(&with(serde_json::json!({ "status": "skip", "reason": "x", "extra": 1 }))));
}

fn check<'a>(report: &'a Value, area: &str, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["area"] == area && c["name"] == name)
        .unwrap_or_else(|| panic!("no check {area} {name} in {report:#}"))
}

fn status(report: &Value, area: &str, name: &str) -> String {
    check(report, area, name)["status"].as_str().unwrap().to_string()
}

/// What a check saw (pass, fail) or why it skipped.
fn said(report: &Value, area: &str, name: &str) -> String {
    let c = check(report, area, name);
    ["seen", "reason"].iter().find_map(|k| c[k].as_str()).unwrap_or_default().to_string()
}

/// The board tools L4T puts on the PATH, faked: nvpmodel, jetson_clocks, and tegrastats printing
/// a fixture line where the board's sysfs shows too little.
fn board_tools(tegrastats: Option<&str>) -> tempfile::TempDir {
    let nvpmodel = "[ \"$1\" = -q ] && printf 'NV Power Mode: 15W\\n2\\n'";
    let mut tools = vec![("nvpmodel", nvpmodel.to_string()), ("jetson_clocks", "exit 0".to_string())];
    if let Some(line) = tegrastats {
        tools.push(("tegrastats", tegrastats_body(line)));
    }
    let tools: Vec<(&str, &str)> = tools.iter().map(|(n, b)| (*n, b.as_str())).collect();
    fake_tools(&tools)
}

#[test]
fn on_this_machine_every_gpu_and_camera_check_skips_with_its_reason_and_the_cpu_backend_passes() {
    // An empty /dev under the root: no camera, whatever this machine has.
    let root = tempfile::tempdir().unwrap();
    let (report, out) = doctor(&["--sysfs-root", root.path().to_str().unwrap(), "--quick"], None);
    assert_eq!(report["schema"], "edgert.doctor/1");
    let failed = report["failed"].as_u64().unwrap();
    assert_eq!(out.status.code(), Some(if failed == 0 { 0 } else { 1 }), "{}", stderr(&out));
    assert_eq!(status(&report, "cpu", "cpu backend"), "pass", "{report:#}");
    assert!(said(&report, "cpu", "cpu backend").starts_with("10/10 digits right"), "{report:#}");
    let gpu_areas = ["gpu", "nvrtc", "tensorrt", "cuda"];
    for c in report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| gpu_areas.contains(&c["area"].as_str().unwrap()))
    {
        assert_eq!(c["status"], "skip", "{c}");
        let reason = c["reason"].as_str().unwrap();
        assert!(reason.starts_with("not compiled in (build with --features"), "{c}");
    }
    assert_eq!(status(&report, "cameras", "cameras"), "skip");
    assert!(said(&report, "cameras", "cameras").starts_with("no camera: nothing at"), "{report:#}");
    for (area, name) in [("platform", "board"), ("platform", "L4T"), ("platform", "power mode")] {
        assert_eq!(status(&report, area, name), "skip", "{area} {name}");
    }
    // Every check says how long it took, and its budget.
    for c in report["checks"].as_array().unwrap() {
        assert!(c["elapsed_ms"].as_f64().unwrap() >= 0.0 && c["budget_ms"].as_u64().unwrap() > 0, "{c}");
    }
    // The table went to stderr, the JSON alone to stdout.
    let table = stderr(&out);
    assert!(table.contains("| cpu | cpu backend | pass |"), "{table}");
    assert!(table.contains("skipped in"), "{table}");
}

#[test]
fn the_ort_backend_matches_onnx_runtimes_own_logits_or_says_why_it_cannot_run() {
    let root = tempfile::tempdir().unwrap();
    let (report, _) =
        doctor(&["--sysfs-root", root.path().to_str().unwrap(), "--only", "cpu,platform"], None);
    let ort = status(&report, "cpu", "ort backend");
    if or_skipped(
        (ort == "pass").then_some(()),
        "EDGERT_REQUIRE_ORT",
        "doctor ort",
        &said(&report, "cpu", "ort backend"),
    )
    .is_some()
    {
        assert!(said(&report, "cpu", "ort backend").starts_with("10/10 digits right"), "{report:#}");
        let platform = said(&report, "platform", "ONNX Runtime");
        assert!(
            platform.contains("ONNX Runtime 1.") && platform.contains("execution providers: cpu"),
            "{platform}"
        );
    }
    // Only the areas asked for ran.
    for c in report["checks"].as_array().unwrap() {
        assert!(c["area"] == "cpu" || c["area"] == "platform", "{c}");
    }
}

/// What each board's fixture tree must show: name, L4T, CUDA, TensorRT, the power source and a
/// rail, and the tegrastats line where sysfs shows too little.
struct Board {
    tree: &'static str,
    name: &'static str,
    l4t: &'static str,
    cuda: &'static str,
    tensorrt: &'static str,
    power: &'static str,
    rail: &'static str,
    tegrastats: Option<&'static str>,
}

const fn board(
    tree: &'static str,
    name: &'static str,
    l4t: &'static str,
    (cuda, tensorrt): (&'static str, &'static str),
    (power, rail): (&'static str, &'static str),
    tegrastats: Option<&'static str>,
) -> Board {
    Board { tree, name, l4t, cuda, tensorrt, power, rail, tegrastats }
}

const BOARDS: &[Board] = &[
    board(
        "jetson-nano-jp4",
        "Jetson Nano",
        "L4T 32.7.1 (JetPack 4)",
        ("10.2.300", "8.2.1"),
        ("ina3221x iio", "POM_5V_IN"),
        None,
    ),
    board(
        "xavier-nx-jp5",
        "Xavier NX",
        "L4T 35.4.1 (JetPack 5)",
        ("11.4", "8.5.2"),
        ("ina3221 hwmon", "VDD_IN"),
        None,
    ),
    board(
        "orin-nano-jp6",
        "Orin Nano",
        "L4T 36.3.0 (JetPack 6)",
        ("12.2", "8.6.2"),
        ("ina3221 hwmon", "VDD_IN"),
        None,
    ),
    board(
        "agx-orin-jp6",
        "AGX Orin",
        "L4T 36.4.0 (JetPack 6)",
        ("12.6", "10.3.0"),
        ("ina3221 hwmon", "VDD_GPU_SOC"),
        None,
    ),
    board(
        "thor-jp7",
        "Thor",
        "L4T 38.2.0 (JetPack 7)",
        ("13.0", "10.13.3"),
        ("tegrastats", "VDD_GPU_SOC"),
        Some("jp7-thor.txt"),
    ),
];

#[test]
fn each_boards_facts_power_clocks_and_user_checks_from_its_fixture_tree() {
    for &Board { tree: board, name, l4t, cuda, tensorrt, power: source, rail, tegrastats } in BOARDS {
        let tools = board_tools(tegrastats);
        let root = fixture(board);
        let args =
            ["--sysfs-root", root.to_str().unwrap(), "--only", "platform,power,clocks,user", "--quick"];
        let (report, out) = doctor(&args, Some(tools.path()));
        let context = format!("{board}: {report:#}\n{}", stderr(&out));
        assert!(said(&report, "platform", "board").contains(name), "{context}");
        assert_eq!(said(&report, "platform", "L4T"), l4t, "{context}");
        assert_eq!(said(&report, "platform", "power mode"), "15W (2)", "{context}");
        assert!(said(&report, "platform", "CUDA").starts_with(cuda), "{context}");
        assert_eq!(said(&report, "platform", "TensorRT"), tensorrt, "{context}");
        assert_eq!(status(&report, "platform", "cuDNN"), "pass", "{context}");
        let sensors = said(&report, "power", "sensors");
        assert!(sensors.starts_with(source) && sensors.contains(rail), "{context}");
        assert_eq!(status(&report, "power", "reading"), "pass", "{context}");
        // The rate reached depends on this machine's load: that it was measured is what is checked.
        assert!(said(&report, "power", "sampler rate").contains(" samples in "), "{context}");
        assert_eq!(status(&report, "clocks", "jetson_clocks"), "pass", "{context}");
        assert_eq!(status(&report, "clocks", "thermal zones"), "pass", "{context}");
        assert_eq!(status(&report, "clocks", "throttling"), "pass", "{context}");
        assert_eq!(status(&report, "user", "engine cache"), "pass", "{context}");
        assert_eq!(status(&report, "user", "video group"), "pass", "{context}");
        assert_eq!(status(&report, "user", "power sensors readable"), "pass", "{context}");
        if tegrastats.is_none() {
            assert_eq!(status(&report, "clocks", "governors"), "pass", "{context}");
            assert!(said(&report, "clocks", "thermal zones").contains("from sysfs"), "{context}");
        } else {
            assert_eq!(status(&report, "clocks", "governors"), "skip", "{context}");
            assert!(said(&report, "clocks", "thermal zones").contains("from tegrastats"), "{context}");
        }
    }
}

#[test]
fn clocks_locked_or_not_are_said_as_they_are() {
    let tools = board_tools(None);
    let locked = |board: &str| {
        let root = fixture(board);
        let (report, _) =
            doctor(&["--sysfs-root", root.to_str().unwrap(), "--only", "clocks"], Some(tools.path()));
        said(&report, "clocks", "locked")
    };
    assert!(locked("xavier-nx-jp5").starts_with("locked"));
    assert!(locked("orin-nano-jp6").starts_with("not locked"));
}

/// A copy of a board's fixture tree to change.
fn board_copy(board: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .args(["-r", &format!("{}/.", fixture(board).display()), dir.path().to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

#[test]
fn a_throttling_board_and_a_sensor_on_the_wrong_scale_fail_their_checks_and_exit_1() {
    let tree = board_copy("orin-nano-jp6");
    let zone = tree.path().join("sys/class/thermal/thermal_zone0");
    let trip: f64 = std::fs::read_to_string(zone.join("trip_point_0_temp")).unwrap().trim().parse().unwrap();
    std::fs::write(zone.join("temp"), format!("{}\n", trip + 2000.0)).unwrap();
    // VDD_IN's current ten times what it is: 60 W, past the most an Orin Nano draws.
    let hwmon = tree.path().join("sys/class/hwmon/hwmon1");
    let amps: f64 = std::fs::read_to_string(hwmon.join("curr1_input")).unwrap().trim().parse().unwrap();
    std::fs::write(hwmon.join("curr1_input"), format!("{}\n", amps * 10.0)).unwrap();
    // A rail only root may read: the tests run as root, so the mode is what tells.
    std::fs::set_permissions(hwmon.join("in2_input"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let tools = board_tools(None);
    let root = tree.path().to_str().unwrap();
    let (report, out) = doctor(&["--sysfs-root", root, "--only", "clocks,power,user"], Some(tools.path()));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let readable = check(&report, "user", "power sensors readable");
    assert_eq!(readable["status"], "fail", "{readable}");
    assert!(readable["seen"].as_str().unwrap().contains("in2_input (mode 600)"), "{readable}");
    let throttling = check(&report, "clocks", "throttling");
    assert_eq!(throttling["status"], "fail", "{throttling}");
    assert!(throttling["seen"].as_str().unwrap().contains("≥ trip"), "{throttling}");
    assert!(throttling["fix"].as_str().unwrap().contains("cooling"), "{throttling}");
    let reading = check(&report, "power", "reading");
    assert_eq!(reading["status"], "fail", "{reading}");
    assert!(reading["seen"].as_str().unwrap().contains("VDD_IN reads"), "{reading}");
    assert!(stderr(&out).contains("| clocks | throttling | fail | expected every zone below its trip point"));
}

#[test]
fn a_jetson_without_jetpacks_libraries_or_tools_fails_naming_the_fix() {
    let tree = board_copy("orin-nano-jp6");
    std::fs::remove_dir_all(tree.path().join("usr")).unwrap();
    // A PATH with no nvpmodel or jetson_clocks on it.
    let empty = tempfile::tempdir().unwrap();
    let mut command = command(&[
        "doctor",
        "--json",
        "-",
        "--sysfs-root",
        tree.path().to_str().unwrap(),
        "--only",
        "platform,clocks",
    ]);
    let out = command.env("PATH", empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_fits_schema(&report);
    for (area, name) in [
        ("platform", "CUDA"),
        ("platform", "TensorRT"),
        ("platform", "power mode"),
        ("clocks", "jetson_clocks"),
    ] {
        let c = check(&report, area, name);
        assert_eq!(c["status"], "fail", "{c}");
        assert!(c["fix"].as_str().unwrap().contains("sudo apt install"), "{c}");
    }
}

#[test]
fn a_video_device_that_is_not_a_camera_fails_its_own_check_and_the_others_run() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("dev")).unwrap();
    std::fs::write(root.path().join("dev/video0"), b"not a device").unwrap();
    let (report, out) =
        doctor(&["--sysfs-root", root.path().to_str().unwrap(), "--only", "cameras,cpu"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let camera = check(&report, "cameras", "/dev/video0");
    assert_eq!(camera["status"], "fail", "{camera}");
    assert!(camera["seen"].as_str().unwrap().contains("video0"), "{camera}");
    assert_eq!(status(&report, "cpu", "cpu backend"), "pass");
}

#[test]
fn a_users_model_runs_on_cpu_and_the_other_backends_say_why_not() {
    let root = tempfile::tempdir().unwrap();
    let model = model("mobilenetv2_int8_qdq.toml");
    let (report, _) = doctor(
        &["--sysfs-root", root.path().to_str().unwrap(), "--only", "cpu", "--model", model.to_str().unwrap()],
        None,
    );
    let on_cpu = check(&report, "cpu", "--model on cpu");
    assert_eq!(on_cpu["status"], "pass", "{on_cpu}");
    assert!(on_cpu["seen"].as_str().unwrap().contains("1000 values, all finite"), "{on_cpu}");
    for backend in ["cuda", "tensorrt"] {
        let c = check(&report, "cpu", &format!("--model on {backend}"));
        assert_eq!(c["status"], "skip", "{c}");
    }
    let on_ort = status(&report, "cpu", "--model on ort");
    assert!(on_ort == "pass" || on_ort == "skip", "{report:#}");
}

#[test]
fn a_model_that_does_not_load_fails_its_cpu_check_and_the_others_name_it() {
    let root = tempfile::tempdir().unwrap();
    let junk = root.path().join("junk.onnx");
    std::fs::write(&junk, b"not a protobuf").unwrap();
    let args =
        ["--sysfs-root", root.path().to_str().unwrap(), "--only", "cpu", "--model", junk.to_str().unwrap()];
    let (report, out) = doctor(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let on_cpu = check(&report, "cpu", "--model on cpu");
    assert_eq!(on_cpu["status"], "fail", "{on_cpu}");
    assert_eq!(on_cpu["expected"], "the model to load", "{on_cpu}");
    assert!(on_cpu["seen"].as_str().unwrap().contains("junk.onnx"), "{on_cpu}");
    for backend in ["ort", "cuda", "tensorrt"] {
        assert_eq!(
            said(&report, "cpu", &format!("--model on {backend}")),
            "needs `cpu --model on cpu`, which did not pass"
        );
    }
}

#[test]
fn bad_arguments_are_one_line_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let missing = dir.path().join("missing.toml");
    let unwritable = file.join("out.json");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--only", "gpus"], "'gpus' is not a doctor area"),
        (vec!["--only", ""], "is not a doctor area"),
        (vec!["--sysfs-root", file.to_str().unwrap()], "--sysfs-root is not a folder"),
        (vec!["--model", missing.to_str().unwrap()], "no such file"),
        (vec!["--json", unwritable.to_str().unwrap()], "out.json"),
    ];
    for (args, want) in cases {
        let out = edgert(&[&["doctor"], args.as_slice()].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("edgert: error: ") && err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn the_json_file_is_written_whole_and_the_table_goes_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("doctor.json");
    let root = tempfile::tempdir().unwrap();
    let out = edgert(&[
        "doctor",
        "--only",
        "cpu",
        "--sysfs-root",
        root.path().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("| area | check | status | seen, or why | ms |"));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_fits_schema(&report);
    assert_eq!(report["passed"].as_u64().unwrap() + report["skipped"].as_u64().unwrap(), 2, "{report:#}");
}
