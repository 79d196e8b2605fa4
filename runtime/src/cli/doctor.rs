//! `edgert doctor`: every hardware path checked, a table as the checks run, and `edgert.doctor/1`
//! with `--json`. Exit 0 when nothing failed, 1 when a check failed, 2 for bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::backend_args::BackendFlags;
use crate::doctor::{self, Area, Done, Options, Outcome};

#[derive(Args)]
pub struct DoctorArgs {
    /// The results as JSON (schema edgert.doctor/1): alone, on stdout with the table on stderr;
    /// with FILE, written there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
    /// Only these areas (comma-separated): platform, cpu, gpu, nvrtc, tensorrt, cuda, power,
    /// clocks, cameras, user.
    #[arg(long, value_name = "AREA,...", value_delimiter = ',', value_parser = Area::parse)]
    only: Vec<Area>,
    /// Your own model too: it runs on cpu, then on every other usable backend against cpu.
    #[arg(long, short, value_name = "M")]
    model: Option<PathBuf>,
    /// The short run (at most 20 s by design): fewer samples and frames, no TensorRT builds.
    #[arg(long)]
    quick: bool,
    /// Root of sysfs, procfs, /etc and /dev (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: PathBuf,
    #[command(flatten)]
    backend: BackendFlags,
}

/// One row of the table: area, check, status, what was seen or why, time.
fn row(d: &Done) -> String {
    let text = match &d.outcome {
        Outcome::Pass { seen } => seen.clone(),
        Outcome::Fail { expected, seen, fix } => format!("expected {expected}; saw {seen}. Fix: {fix}"),
        Outcome::Skip { reason } => reason.clone(),
    };
    let over = if d.over_budget() { format!(" (over its {} ms budget)", d.budget_ms) } else { String::new() };
    // A pipe in a message would split the markdown cell.
    let text = text.replace('|', "\\|");
    format!(
        "| {} | {} | {} | {text} | {:.0}{over} |",
        d.area.name(),
        d.name,
        d.outcome.status(),
        d.elapsed_ms
    )
}

pub fn main(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    // An output that cannot be written is a bad argument here: exit 1 means a check failed.
    super::json_out::check(args.json.as_ref()).map_err(|e| match e {
        crate::Error::Write { path, reason } => crate::Error::input(&path, format!("cannot write: {reason}")),
        other => other,
    })?;
    if let Some(model) = &args.model {
        if !model.is_file() {
            return Err(crate::Error::read(model, "no such file").into());
        }
    }
    if !args.sysfs_root.is_dir() {
        return Err(crate::Error::read(&args.sysfs_root, "--sysfs-root is not a folder").into());
    }
    let options = Options {
        only: args.only,
        quick: args.quick,
        root: args.sysfs_root,
        model: args.model,
        backends: args.backend.options(),
    };
    // The table goes where the JSON does not.
    let line = |text: &str| super::json_out::summary(args.json.as_ref(), text);
    line("| area | check | status | seen, or why | ms |")?;
    line("|---|---|---|---|---|")?;
    let mut failed_to_print = None;
    let report = doctor::run(&options, |d| {
        if let Err(e) = line(&row(d)) {
            failed_to_print.get_or_insert(e);
        }
    });
    if let Some(e) = failed_to_print {
        return Err(e);
    }
    line(&format!(
        "{} passed, {} failed, {} skipped in {:.1} s",
        report.passed,
        report.failed,
        report.skipped,
        report.elapsed_ms / 1e3
    ))?;
    if let Some(json) = &args.json {
        super::json_out::document(json, &report)?;
    }
    Ok(if report.failed() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
