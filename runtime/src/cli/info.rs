//! `edgert info`: the host, this build, and which backends it can use here.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::emit;
use crate::backend;
use crate::metrics::host::Host;

#[derive(Args)]
pub struct InfoArgs {
    /// Print as JSON (schema edgert.info/1).
    #[arg(long)]
    json: bool,
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
    let info = Info { schema: "edgert.info/1", version: crate::VERSION, host: Host::describe(), backends };
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
    Ok(ExitCode::SUCCESS)
}
