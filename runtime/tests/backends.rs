//! Conformance: every usable backend gives the same answers as `cpu` on the shipped models, and
//! `--backend ort`'s library errors. ONNX Runtime comes from `ORT_DYLIB_PATH` (`.ci/run` installs
//! the PyPI wheel); where it is absent the ort cases say SKIPPED, unless `EDGERT_REQUIRE_ORT=1`
//! (set by CI) makes that a failure.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use edgert::backend;
use edgert::capture;
use edgert::pipeline::Sample;
use edgert::validate::compare::cosine;

/// The ONNX Runtime library the tests use, or `None` after saying why (a failure under CI).
fn ort_library(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from).filter(|p| p.is_file());
    let why = "ORT_DYLIB_PATH does not name an ONNX Runtime library (pip install onnxruntime)";
    or_skipped(found, "EDGERT_REQUIRE_ORT", test, why)
}

const PHOTOS: &[&str] = &["astronaut.png", "bus.jpg", "chelsea.png", "coffee.png", "zidane.jpg"];

/// (manifest, least cosine of the raw outputs against cpu, least share of inputs with the same top-1
/// class: classifiers only). FP32 must match; INT8 QDQ is rounded differently by each runtime
/// (ONNX Runtime sums in integers, `cpu` in float, and its values often sit on rounding ties), so
/// its bounds are what was measured on these inputs with some margin (MobileNetV2: cosine
/// 0.959–0.986, 3 of 5 top-1, astronaut and zidane being the photos where INT8 runs leave FP32's
/// class; tract's own kernels gave 0.959–0.989 and 4 of 5; YOLO ≥ 0.9991).
const CASES: &[(&str, f64, Option<f64>)] = &[
    ("mobilenetv2_fp32.toml", 0.999, Some(1.0)),
    ("mobilenetv2_int8_qdq.toml", 0.95, Some(0.6)),
    ("yolov3_tiny_coco_int8_qdq.toml", 0.998, None),
    ("digits_mlp_nchw.toml", 0.999, Some(1.0)),
    ("mnist_mlp_nchw.toml", 0.999, Some(1.0)),
];

#[test]
fn every_usable_backend_agrees_with_cpu_on_the_shipped_models() {
    let usable: Vec<&'static str> = backend::registry()
        .iter()
        .filter(|b| b.name() != "cpu" && b.check().is_ok())
        .map(|b| b.name())
        .collect();
    if !usable.contains(&"ort") {
        ort_library("conformance");
    }
    if usable.is_empty() {
        return eprintln!("SKIPPED conformance: no backend besides cpu is usable here");
    }
    let images: Vec<_> = PHOTOS.iter().map(|p| capture::load_image(&image(p)).unwrap()).collect();
    let digits = capture::npz::load(&model("digits_test.npz"), &[1, 8, 8]).unwrap();
    let mnist = capture::npz::load(&model("mnist_test.npz"), &[1, 28, 28]).unwrap();
    for &(manifest, least_cosine, least_top1) in CASES {
        let inputs: Vec<Sample> = match manifest {
            m if m.starts_with("digits") => (0..40).map(|i| Sample::Tensor(digits.item(i))).collect(),
            m if m.starts_with("mnist") => (0..40).map(|i| Sample::Tensor(mnist.item(i))).collect(),
            _ => images.iter().map(Sample::Image).collect(),
        };
        let reference = raw_outputs(backend::select("cpu").unwrap(), manifest, &inputs);
        for &name in &usable {
            let other = raw_outputs(backend::select(name).unwrap(), manifest, &inputs);
            let mut agree = 0;
            for (i, (a, b)) in reference.iter().zip(&other).enumerate() {
                let c = cosine(a, b);
                assert!(c >= least_cosine, "{manifest} on {name}, input {i}: cosine {c:.6} < {least_cosine}");
                agree += usize::from(top1(a) == top1(b));
            }
            if let Some(share) = least_top1 {
                let n = reference.len();
                assert!(
                    agree as f64 >= share * n as f64,
                    "{manifest} on {name}: top-1 agrees on {agree}/{n}"
                );
            }
        }
    }
}

fn run_ort(extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let manifest = model("digits_mlp_nchw.toml");
    let data = model("digits_test.npz");
    let mut command = command(&[
        "run",
        "-m",
        manifest.to_str().unwrap(),
        "--input",
        data.to_str().unwrap(),
        "--backend",
        "ort",
    ]);
    command.args(extra);
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    (out.status.code(), stderr(&out))
}

fn assert_one_line_error(result: (Option<i32>, String), expected: &str) {
    let (code, err) = result;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("edgert: error: backend 'ort' is not usable here: "), "{err}");
    assert!(err.contains(expected) && err.lines().count() == 1, "expected {expected:?} in {err}");
}

#[test]
fn a_missing_library_is_named_with_where_it_came_from() {
    let library = missing("libonnxruntime.so");
    let library = library.to_str().unwrap();
    assert_one_line_error(
        run_ort(&["--ort-lib", library], &[]),
        &format!("{library}: no such file (from --ort-lib)"),
    );
    let versioned = missing("libonnxruntime.so.1.20.0");
    let versioned = versioned.to_str().unwrap();
    assert_one_line_error(
        run_ort(&[], &[("ORT_DYLIB_PATH", versioned)]),
        &format!("{versioned}: no such file (from ORT_DYLIB_PATH)"),
    );
    let home = tempfile::tempdir().unwrap();
    let env = [("ORT_DYLIB_PATH", ""), ("LD_LIBRARY_PATH", ""), ("HOME", home.path().to_str().unwrap())];
    assert_one_line_error(run_ort(&[], &env), "libonnxruntime not found (searched /usr/lib/");
}

#[test]
fn a_library_that_is_not_onnx_runtime_for_this_machine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("libonnxruntime.so");
    std::fs::write(&text, "not a library").unwrap();
    assert_one_line_error(
        run_ort(&["--ort-lib", text.to_str().unwrap()], &[]),
        "not a shared library (no ELF header)",
    );
    // A 64-bit ELF header for the other architecture (aarch64 on x86_64, x86_64 on aarch64).
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[4..6].copy_from_slice(&[2, 1]);
    let (other, name) = if cfg!(target_arch = "x86_64") { (183u16, "aarch64") } else { (62u16, "x86_64") };
    header[18..20].copy_from_slice(&other.to_le_bytes());
    let foreign = dir.path().join("libonnxruntime.so.1.20.0");
    std::fs::write(&foreign, header).unwrap();
    assert_one_line_error(
        run_ort(&["--ort-lib", foreign.to_str().unwrap()], &[]),
        &format!("built for {name}, but this edgert runs on"),
    );
}

/// A library exporting `OrtGetApiBase` that says it is ONNX Runtime 1.10.0, built with the C compiler.
fn old_onnxruntime(dir: &Path) -> Option<PathBuf> {
    let source = dir.join("old.c");
    std::fs::write(
        &source,
        "typedef struct { const void* (*get_api)(unsigned); const char* (*version)(void); } Base;\n\
         static const void* get_api(unsigned v) { (void)v; return 0; }\n\
         static const char* version(void) { return \"1.10.0\"; }\n\
         static const Base base = { get_api, version };\n\
         const Base* OrtGetApiBase(void) { return &base; }\n",
    )
    .unwrap();
    let library = dir.join("libonnxruntime.so.1.10.0");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        let why = "no C compiler (cc) to build a stand-in old ONNX Runtime";
        assert!(std::env::var("EDGERT_REQUIRE_ORT").as_deref() != Ok("1"), "{why}");
        eprintln!("SKIPPED an_old_onnx_runtime: {why}");
    }
    built.then_some(library)
}

#[test]
fn an_old_onnx_runtime_is_refused_with_its_version() {
    if cfg!(not(target_arch = "x86_64")) && std::env::var_os("EDGERT_TEST_RUNNER").is_some() {
        return eprintln!(
            "SKIPPED an_old_onnx_runtime: the host's cc builds for the host, not the emulated target"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = old_onnxruntime(dir.path()) else { return };
    assert_one_line_error(
        run_ort(&["--ort-lib", library.to_str().unwrap()], &[]),
        "ONNX Runtime 1.10.0 is too old or not a release; edgert's ort backend needs 1.17 or newer",
    );
}

#[test]
fn a_provider_that_does_not_register_is_an_error_not_a_cpu_run() {
    let Some(library) = ort_library("provider_registration") else { return };
    let (code, err) = run_ort(&["--ort-provider", "cuda"], &[("ORT_DYLIB_PATH", library.to_str().unwrap())]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("execution provider cuda did not register"), "{err}");
    let (code, err) = run_ort(&[], &[("ORT_DYLIB_PATH", library.to_str().unwrap())]);
    assert_eq!(code, Some(0), "the cpu provider runs: {err}");
    assert!(err.contains("accuracy"), "{err}");
}
