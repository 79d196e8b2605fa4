//! The platform: board, L4T and JetPack, kernel, power mode, and the versions of CUDA, TensorRT,
//! cuDNN and ONNX Runtime. On a Jetson what JetPack installs is expected; elsewhere its absence is
//! a skip.

use super::{Area, Check, Facts, Options, Outcome};
use crate::metrics::provenance::library_version;

const JETPACK_FIX: &str = "install JetPack's libraries: sudo apt install nvidia-jetpack";

pub fn checks() -> Vec<Check> {
    vec![
        Check::new(Area::Platform, "board", 50, |_, f| board(f)),
        Check::new(Area::Platform, "L4T", 50, l4t),
        Check::new(Area::Platform, "kernel", 50, kernel),
        Check::new(Area::Platform, "power mode", 500, |_, f| power_mode(f)),
        Check::new(Area::Platform, "CUDA", 50, |o, f| {
            installed(
                "CUDA",
                f.provenance.cuda.clone(),
                f,
                &o.root.join("usr/local/cuda").display().to_string(),
            )
        }),
        Check::new(Area::Platform, "TensorRT", 50, |o, f| {
            installed("TensorRT", f.provenance.tensorrt.clone(), f, &libraries(o, "libnvinfer"))
        }),
        Check::new(Area::Platform, "cuDNN", 50, |o, f| {
            installed("cuDNN", library_version(&o.root, "libcudnn"), f, &libraries(o, "libcudnn"))
        }),
        Check::new(Area::Platform, "ONNX Runtime", 1_000, |o, _| onnx_runtime(o)),
        Check::new(Area::Platform, "GStreamer", 200, |_, f| gstreamer(f)),
    ]
}

/// The GStreamer edgert links, and on a Jetson the elements its CSI, decode and encode paths use.
#[cfg(feature = "gstreamer")]
fn gstreamer(facts: &Facts) -> Outcome {
    let installed = match crate::capture::source::gst::describe() {
        Ok(installed) => installed,
        Err(e) => {
            return Outcome::fail(
                "GStreamer initialises",
                e,
                "install GStreamer: sudo apt install libgstreamer1.0-0",
            )
        }
    };
    let encoder = crate::output::h264::encoder().map_or("none", |e| e.element);
    let missing: Vec<&str> =
        installed.jetson_elements.iter().filter(|(_, present)| !present).map(|(name, _)| *name).collect();
    if facts.jetson && !missing.is_empty() {
        return Outcome::fail(
            "JetPack's GStreamer elements (nvarguscamerasrc, nvv4l2decoder, nvvidconv)",
            format!("{}; missing {}", installed.version, missing.join(", ")),
            "install JetPack's GStreamer plugins: sudo apt install nvidia-l4t-gstreamer",
        );
    }
    let jetson = if missing.len() == installed.jetson_elements.len() { "none" } else { "present" };
    Outcome::pass(format!("{}; Jetson elements {jetson}; H.264 encoder {encoder}", installed.version))
}

#[cfg(not(feature = "gstreamer"))]
fn gstreamer(_: &Facts) -> Outcome {
    Outcome::skip(
        "built without the gstreamer feature (video files, RTSP, CSI cameras and video out need it)",
    )
}

fn libraries(options: &Options, library: &str) -> String {
    options.root.join(format!("usr/lib/*/{library}.so.X.Y.Z")).display().to_string()
}

fn not_a_jetson() -> Outcome {
    Outcome::skip("not a Jetson (no /proc/device-tree/model naming one, no /etc/nv_tegra_release)")
}

fn board(facts: &Facts) -> Outcome {
    match (&facts.provenance.board, facts.jetson) {
        (Some(board), true) => Outcome::pass(board.clone()),
        (Some(board), false) => Outcome::skip(format!("{board}: not a Jetson")),
        (None, true) => Outcome::fail(
            "the board's name in /proc/device-tree/model",
            "L4T is installed but the device tree names no board",
            "a kernel without the board's device tree: reflash L4T for this board",
        ),
        (None, false) => not_a_jetson(),
    }
}

fn l4t(options: &Options, facts: &Facts) -> Outcome {
    let p = &facts.provenance;
    match (&p.l4t, p.jetpack) {
        (Some(l4t), Some(jetpack)) => Outcome::pass(format!("L4T {l4t} (JetPack {jetpack})")),
        (Some(l4t), None) => Outcome::fail(
            "an L4T release of JetPack 4 to 7 (R32 to R39)",
            format!("L4T {l4t}"),
            "an L4T this edgert does not know: update edgert",
        ),
        (None, _) if facts.jetson => Outcome::fail(
            "the L4T release in /etc/nv_tegra_release",
            format!("{} missing or unreadable", options.root.join("etc/nv_tegra_release").display()),
            "an image without L4T's release file: flash JetPack with NVIDIA's SDK Manager",
        ),
        (None, _) => not_a_jetson(),
    }
}

fn kernel(options: &Options, facts: &Facts) -> Outcome {
    match &facts.provenance.kernel {
        Some(kernel) => Outcome::pass(kernel.clone()),
        None => Outcome::fail(
            "the kernel release in /proc/sys/kernel/osrelease",
            format!("{} unreadable", options.root.join("proc/sys/kernel/osrelease").display()),
            "is --sysfs-root the board's root folder? /proc must be mounted",
        ),
    }
}

fn power_mode(facts: &Facts) -> Outcome {
    match (&facts.provenance.nvpmodel, facts.jetson) {
        (Some(mode), _) => Outcome::pass(mode.clone()),
        (None, true) => Outcome::fail(
            "`nvpmodel -q` to print the power mode",
            "nvpmodel is not on the PATH or printed no mode",
            "install L4T's nvpmodel (sudo apt install nvidia-l4t-nvpmodel); run as a user who may query it",
        ),
        (None, false) => not_a_jetson(),
    }
}

/// A JetPack library: its version, a failure on a Jetson without it, a skip elsewhere.
fn installed(what: &str, version: Option<String>, facts: &Facts, looked: &str) -> Outcome {
    match (version, facts.jetson) {
        (Some(version), _) => Outcome::pass(version),
        (None, true) => Outcome::fail(format!("{what} installed"), format!("none at {looked}"), JETPACK_FIX),
        (None, false) => Outcome::skip(format!("{what} is not installed (looked at {looked})")),
    }
}

#[cfg(feature = "ort")]
fn onnx_runtime(options: &Options) -> Outcome {
    use crate::backend::Backend;
    let backend = crate::backend::ort::OrtBackend::new(options.backends.ort.clone());
    if let Err(why) = backend.check() {
        return Outcome::skip(format!("not usable here: {why}"));
    }
    let version = backend.version().unwrap_or_default();
    match crate::backend::ort::providers(&options.backends.ort) {
        Ok(providers) => Outcome::pass(format!("{version}; execution providers: {}", providers.join(", "))),
        Err(e) => Outcome::fail("its execution providers listed", e.to_string(), "reinstall ONNX Runtime"),
    }
}

#[cfg(not(feature = "ort"))]
fn onnx_runtime(_: &Options) -> Outcome {
    Outcome::skip("not compiled in (build with --features ort)")
}
