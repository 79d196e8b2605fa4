//! Records the git commit edgert is built from and the tract version it links, for the provenance
//! in every report; with feature `tensorrt`, compiles the TensorRT shim where the headers are.

use std::process::Command;

fn main() {
    let hash = std::env::var("EDGERT_GIT_HASH").ok().or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=EDGERT_GIT_HASH={}", hash.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rerun-if-env-changed=EDGERT_GIT_HASH");
    println!(
        "cargo:rustc-env=EDGERT_TRACT_VERSION={}",
        locked_version("tract-onnx").unwrap_or_else(|| "unknown".into())
    );
    // Only paths that exist: cargo reruns a build script on every build for one that does not
    // (a checkout without packed-refs rebuilt edgert each time).
    for path in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs", "../Cargo.lock"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rustc-check-cfg=cfg(edgert_trt_shim)");
    println!("cargo:rustc-check-cfg=cfg(edgert_trt_shim_check)");
    #[cfg(feature = "tensorrt")]
    tensorrt_shim();
}

/// Compiles `shim/edgert_trt.cpp` against the target's TensorRT and CUDA headers and sets
/// `cfg(edgert_trt_shim)`; without headers the backend is built without it and says so at run time.
#[cfg(feature = "tensorrt")]
fn tensorrt_shim() {
    use std::path::PathBuf;
    let shim = "src/backend/tensorrt/shim";
    println!("cargo:rerun-if-changed={shim}");
    // The structs' layout as C sees it, for the test that `ffi.rs` mirrors the header.
    cc::Build::new().file(format!("{shim}/layout.c")).compile("edgert_trt_layout");
    // The parts of the shim that need no TensorRT (logger, version rule, calibrator), for the test in
    // `ffi.rs`. Needs the target's C++ compiler: required for a native build; a cross build
    // without one (CI type-checks for aarch64 with a C cross compiler only) leaves them out.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    let checks = cc::Build::new()
        .cpp(true)
        .file(format!("{shim}/shim_check.cpp"))
        .flag("-std=c++17")
        .try_compile("edgert_trt_shim_check");
    match checks {
        Ok(()) => println!("cargo:rustc-cfg=edgert_trt_shim_check"),
        Err(e) if native => panic!("the TensorRT shim's checks without TensorRT do not compile: {e}"),
        Err(_) => println!(
            "cargo:warning=tensorrt: no C++ compiler for the target; the shim checks without TensorRT are left out"
        ),
    }
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let folders = |variable: &str, defaults: Vec<String>| -> Vec<PathBuf> {
        println!("cargo:rerun-if-env-changed={variable}");
        match std::env::var_os(variable) {
            Some(value) => std::env::split_paths(&value).collect(),
            None => defaults.into_iter().map(PathBuf::from).collect(),
        }
    };
    let tensorrt = folders(
        "TENSORRT_INCLUDE_DIR",
        vec![
            format!("/usr/include/{arch}-linux-gnu"),
            "/usr/include".into(),
            "/usr/local/tensorrt/include".into(),
        ],
    );
    let cuda = folders(
        "CUDA_INCLUDE_DIR",
        vec!["/usr/local/cuda/include".into(), format!("/usr/local/cuda/targets/{arch}-linux/include")],
    );
    let find = |dirs: &[PathBuf], header: &str| dirs.iter().find(|d| d.join(header).exists()).cloned();
    let (Some(_), Some(_)) = (find(&tensorrt, "NvInfer.h"), find(&cuda, "cuda_runtime_api.h")) else {
        println!(
            "cargo:warning=tensorrt: NvInfer.h or cuda_runtime_api.h not found (set TENSORRT_INCLUDE_DIR and \
             CUDA_INCLUDE_DIR); the TensorRT shim is not compiled and --backend tensorrt will say so"
        );
        return;
    };
    cc::Build::new()
        .cpp(true)
        .file(format!("{shim}/edgert_trt.cpp"))
        .includes(tensorrt.iter().chain(&cuda).filter(|d| d.exists()))
        .flag("-std=c++17")
        // TensorRT's own headers deprecate much of themselves.
        .flag("-Wno-deprecated-declarations")
        .flag("-Wno-unused-parameter")
        .compile("edgert_trt");
    println!("cargo:rustc-cfg=edgert_trt_shim");
}

/// A package's version in the workspace's Cargo.lock.
fn locked_version(package: &str) -> Option<String> {
    let lock = std::fs::read_to_string("../Cargo.lock").ok()?;
    let mut lines = lock.lines();
    lines.find(|l| *l == format!("name = \"{package}\""))?;
    Some(lines.next()?.strip_prefix("version = \"")?.trim_end_matches('"').to_string())
}
