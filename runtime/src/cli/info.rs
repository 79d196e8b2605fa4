//! `edgert info`: the host, this build, and which backends it can use here.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::emit;
use crate::backend;
use crate::metrics::host::Host;
use crate::metrics::power::PowerSensors;

#[derive(Args)]
pub struct InfoArgs {
    /// Print as JSON (schema edgert.info/1).
    #[arg(long)]
    json: bool,
    /// Root of sysfs for the power sensors (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: std::path::PathBuf,
}

/// The board's power sensors and a reading of each, or why there are none.
#[derive(Serialize)]
struct PowerInfo {
    available: bool,
    reason: Option<String>,
    source: Option<&'static str>,
    total: Option<String>,
    total_w: Option<f64>,
    rails: Vec<(String, Option<f64>)>,
}

fn power(root: &std::path::Path) -> PowerInfo {
    match PowerSensors::discover(root) {
        Err(reason) => PowerInfo {
            available: false,
            reason: Some(reason),
            source: None,
            total: None,
            total_w: None,
            rails: vec![],
        },
        Ok(sensors) => {
            let (watts, total_w) = sensors.read();
            PowerInfo {
                available: true,
                reason: None,
                source: Some(sensors.source),
                total: Some(sensors.total_rail.clone().unwrap_or_else(|| "sum of rails".into())),
                total_w,
                rails: sensors.rails.iter().map(|r| r.name.clone()).zip(watts).collect(),
            }
        }
    }
}

#[derive(Serialize)]
struct BackendStatus {
    name: String,
    compiled: bool,
    usable: bool,
    /// Why it is not compiled in or not usable.
    reason: Option<String>,
}

#[derive(Serialize)]
struct Info {
    schema: &'static str,
    version: &'static str,
    host: Host,
    backends: Vec<BackendStatus>,
    power: PowerInfo,
}

pub fn main(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let mut backends: Vec<BackendStatus> = backend::registry()
        .iter()
        .map(|b| {
            let check = b.check();
            BackendStatus {
                name: b.name().into(),
                compiled: true,
                usable: check.is_ok(),
                reason: check.err(),
            }
        })
        .collect();
    backends.extend(backend::NOT_COMPILED.iter().map(|(name, feature)| BackendStatus {
        name: name.to_string(),
        compiled: false,
        usable: false,
        reason: Some(format!("not compiled in (build with --features {feature})")),
    }));
    let info = Info {
        schema: "edgert.info/1",
        version: crate::VERSION,
        host: Host::describe(),
        backends,
        power: power(&args.sysfs_root),
    };
    if args.json {
        emit(&serde_json::to_string_pretty(&info)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let h = &info.host;
    emit(&format!("edgert {} ({} {})", info.version, h.arch, h.os))?;
    emit(&format!("host     {}, {} logical CPUs, kernel {}", h.cpu, h.logical_cpus, h.kernel))?;
    emit(&format!("board    {}", h.board.as_deref().unwrap_or("none (not a Jetson or no device tree)")))?;
    emit("backends")?;
    for b in &info.backends {
        let state = match (b.compiled, b.usable) {
            (true, true) => "compiled in, usable here".to_string(),
            (_, _) => b.reason.clone().unwrap_or_default(),
        };
        emit(&format!("  {:<9} {state}", b.name))?;
    }
    emit("  (gpu picks the best usable GPU backend or fails; gpu-or-cpu falls back to cpu and says so)")?;
    let p = &info.power;
    match (&p.reason, p.total_w) {
        (Some(reason), _) => emit(&format!("power    n/a: {reason}"))?,
        (None, total) => {
            let w = |w: Option<f64>| w.map_or("n/a".to_string(), |w| format!("{w:.2} W"));
            emit(&format!(
                "power    {} via {}: {}",
                p.total.as_deref().unwrap_or(""),
                p.source.unwrap_or(""),
                w(total)
            ))?;
            for (name, watts) in &p.rails {
                emit(&format!("  {name:<18} {}", w(*watts)))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
