//! `edgert info`: the host and board, this build, which backends it can use here, and one reading
//! of power, memory, clocks and temperatures.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::board_view::{self, PowerNow};
use super::emit;
use crate::backend;
use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;
use crate::metrics::telemetry::{Snapshot, Telemetry};

#[derive(Args)]
pub struct InfoArgs {
    /// Print as JSON (schema edgert.info/1).
    #[arg(long)]
    json: bool,
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

#[derive(Serialize)]
struct Info {
    schema: &'static str,
    provenance: Provenance,
    host: Host,
    backends: Vec<BackendStatus>,
    power: PowerNow,
    /// `sysfs`, or `tegrastats` where it fills in for sysfs.
    telemetry_source: &'static str,
    telemetry: Snapshot,
}

/// One reading of the board's power sensors.
pub fn power_now(root: &Path) -> PowerNow {
    match PowerNow::open(root) {
        Ok((sensors, mut open)) => PowerNow::read(&sensors, &mut open),
        Err(reason) => PowerNow::unavailable(reason),
    }
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
                reason: check.err(),
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

pub fn main(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let root = &args.sysfs_root;
    let telemetry = Telemetry::open(root);
    let info = Info {
        schema: "edgert.info/1",
        provenance: Provenance::read(root),
        host: Host::describe(),
        backends: backends(),
        power: power_now(root),
        telemetry_source: telemetry.source(),
        telemetry: telemetry.snapshot(),
    };
    if args.json {
        emit(&serde_json::to_string_pretty(&info)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (p, h) = (&info.provenance, &info.host);
    let or_na = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    emit(&format!("edgert {} (git {}, {} {})", p.edgert_version, p.edgert_git, h.arch, h.os))?;
    emit(&format!("host     {}, {} logical CPUs, kernel {}", h.cpu, h.logical_cpus, or_na(&p.kernel)))?;
    emit(&format!("board    {}", p.board.as_deref().unwrap_or("none (not a Jetson or no device tree)")))?;
    emit(&format!(
        "L4T {}, power mode {}, CUDA {}, TensorRT {}",
        or_na(&p.l4t),
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
    emit(&board_view::power_text(&info.power))?;
    for rail in info.power.rails.iter().filter(|r| r.error.is_some()) {
        emit(&format!("  {} unreadable: {}", rail.name, rail.error.as_deref().unwrap_or("")))?;
    }
    let t = &info.telemetry;
    emit(&board_view::memory_text(t))?;
    emit(&board_view::clocks_text(&t.clocks))?;
    emit(&board_view::thermal_text(&t.zones))?;
    if info.telemetry_source == "tegrastats" {
        emit("(thermal, GPU load and missing memory figures from tegrastats: sysfs is not readable here)")?;
    }
    Ok(ExitCode::SUCCESS)
}
