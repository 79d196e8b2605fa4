//! `edgert info`: the host and board, this build, which backends it can use here, and one reading
//! of power, memory, clocks and temperatures.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::board_view::{self, Board, PowerNow};
use super::emit;
use crate::backend;
use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;
use crate::metrics::telemetry::{Snapshot, TelemetrySource};

#[derive(Args)]
pub struct InfoArgs {
    /// As JSON (schema edgert.info/1): alone, on stdout in place of the text; with FILE, written
    /// there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
    /// Root of sysfs, procfs and /etc for the board's sensors (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: std::path::PathBuf,
}

#[derive(Serialize)]
struct BackendStatus {
    name: String,
    compiled: bool,
    usable: bool,
    /// Why it is not compiled in or not usable.
    reason: Option<String>,
    /// What runs underneath, where it loads.
    version: Option<String>,
}

/// GPU preprocessing (the `cuda` features): what CUDA this build calls and whether it runs here.
#[derive(Serialize)]
struct CudaStatus {
    compiled: bool,
    /// The CUDA API this binary is built for, `11.4`.
    built_for: Option<String>,
    usable: bool,
    reason: Option<String>,
    /// The GPU and driver, when usable.
    device: Option<String>,
}

/// GStreamer sources (the `gstreamer` feature): the library's version and the Jetson elements
/// the CSI and hardware-decode pipelines use.
#[derive(Serialize)]
struct GstStatus {
    compiled: bool,
    /// `GStreamer 1.22.0`, where it loads.
    version: Option<String>,
    jetson_elements: Vec<Element>,
    reason: Option<String>,
}

#[derive(Serialize)]
struct Element {
    name: &'static str,
    present: bool,
}

#[cfg(feature = "gstreamer")]
fn gst_status() -> GstStatus {
    match crate::capture::source::gst::describe() {
        Ok(installed) => GstStatus {
            compiled: true,
            version: Some(installed.version),
            jetson_elements: installed
                .jetson_elements
                .map(|(name, present)| Element { name, present })
                .into(),
            reason: None,
        },
        Err(reason) => {
            GstStatus { compiled: true, version: None, jetson_elements: Vec::new(), reason: Some(reason) }
        }
    }
}

#[cfg(not(feature = "gstreamer"))]
fn gst_status() -> GstStatus {
    GstStatus {
        compiled: false,
        version: None,
        jetson_elements: Vec::new(),
        reason: Some("not compiled in (build with --features gstreamer)".into()),
    }
}

fn gst_text(g: &GstStatus) -> String {
    match &g.version {
        Some(version) => {
            let elements: Vec<String> = g
                .jetson_elements
                .iter()
                .map(|e| format!("{} {}", e.name, if e.present { "present" } else { "absent" }))
                .collect();
            format!("{version}; Jetson elements: {}", elements.join(", "))
        }
        None => g.reason.clone().unwrap_or_default(),
    }
}

#[derive(Serialize)]
struct Info {
    schema: &'static str,
    provenance: Provenance,
    host: Host,
    backends: Vec<BackendStatus>,
    gpu: CudaStatus,
    gstreamer: GstStatus,
    power: PowerNow,
    /// `sysfs`, or `tegrastats` where it fills in for sysfs.
    telemetry_source: TelemetrySource,
    telemetry: Snapshot,
}

fn backends() -> Vec<BackendStatus> {
    let mut list: Vec<BackendStatus> = backend::registry()
        .iter()
        .map(|b| {
            let check = b.check();
            BackendStatus {
                name: b.name().into(),
                compiled: true,
                usable: check.is_ok(),
                reason: check.err().map(|e| e.to_string()),
                version: b.version(),
            }
        })
        .collect();
    list.extend(backend::NOT_COMPILED.iter().map(|(name, feature)| BackendStatus {
        name: name.to_string(),
        compiled: false,
        usable: false,
        reason: Some(format!("not compiled in (build with --features {feature})")),
        version: None,
    }));
    list
}

#[cfg(feature = "cuda")]
fn cuda_status() -> CudaStatus {
    let described = crate::cuda::device::describe(0);
    CudaStatus {
        compiled: true,
        built_for: Some(crate::cuda::version_text(crate::cuda::BUILT_FOR)),
        usable: described.is_ok(),
        reason: described.as_ref().err().map(|e| e.to_string()),
        device: described.ok(),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_status() -> CudaStatus {
    CudaStatus {
        compiled: false,
        built_for: None,
        usable: false,
        reason: Some(
            "not compiled in (build with --features cuda-11040, cuda-12020, cuda-12060 or cuda-13000)".into(),
        ),
        device: None,
    }
}

fn cuda_text(cuda: &CudaStatus) -> String {
    let reason = cuda.reason.as_deref().unwrap_or_default();
    match (&cuda.built_for, &cuda.device) {
        (Some(built), Some(device)) => format!("built for CUDA {built}; {device}: GPU preprocessing usable"),
        (Some(built), None) => format!("built for CUDA {built}: {reason}"),
        (None, _) => reason.to_string(),
    }
}

pub fn main(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let root = &args.sysfs_root;
    let (power, telemetry, telemetry_source) = Board::open(root)?.read()?;
    let info = Info {
        schema: "edgert.info/1",
        provenance: Provenance::read(root),
        host: Host::describe(),
        backends: backends(),
        gpu: cuda_status(),
        gstreamer: gst_status(),
        power,
        telemetry_source,
        telemetry,
    };
    if let Some(json) = &args.json {
        super::json_out::document(json, &info)?;
        if super::json_out::on_stdout(Some(json)) {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let (p, h) = (&info.provenance, &info.host);
    let or_na = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    emit(&format!("edgert {} (git {}, {} {})", p.edgert_version, p.edgert_git, h.arch, h.os))?;
    emit(&format!("host     {}, {} logical CPUs, kernel {}", h.cpu, h.logical_cpus, or_na(&p.kernel)))?;
    emit(&format!("board    {}", p.board.as_deref().unwrap_or("none (not a Jetson or no device tree)")))?;
    emit(&format!(
        "L4T {}{}, power mode {}, CUDA {}, TensorRT {}",
        or_na(&p.l4t),
        p.jetpack.map_or(String::new(), |j| format!(" (JetPack {j})")),
        or_na(&p.nvpmodel),
        or_na(&p.cuda),
        or_na(&p.tensorrt)
    ))?;
    emit("backends")?;
    for b in &info.backends {
        let state = match (b.compiled, b.usable) {
            (true, true) => format!("compiled in, usable here: {}", b.version.as_deref().unwrap_or("")),
            (_, _) => b.reason.clone().unwrap_or_default(),
        };
        emit(&format!("  {:<9} {state}", b.name))?;
    }
    emit("  (gpu picks the best usable GPU backend or fails; gpu-or-cpu falls back to cpu and says so)")?;
    emit(&format!("gpu      {}", cuda_text(&info.gpu)))?;
    emit(&format!("gstreamer {}", gst_text(&info.gstreamer)))?;
    emit(&board_view::power_text(&info.power))?;
    for rail in info.power.rails.iter().filter(|r| r.error.is_some()) {
        emit(&format!("  {} unreadable: {}", rail.name, rail.error.as_deref().unwrap_or("")))?;
    }
    let t = &info.telemetry;
    emit(&board_view::memory_text(t))?;
    emit(&board_view::clocks_text(&t.clocks))?;
    emit(&board_view::thermal_text(&t.zones))?;
    if info.telemetry_source == TelemetrySource::Tegrastats {
        emit("(thermal, GPU load and missing memory figures from tegrastats: sysfs is not readable here)")?;
    }
    Ok(ExitCode::SUCCESS)
}
