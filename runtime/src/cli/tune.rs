//! `edgert tune`: bench and validate each variant on each backend; the Pareto front and the pick.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;

use super::load_model;
use super::measure_args::{PowerArgs, TimingArgs};
use super::validate::DataArgs;
use crate::tune::{self, plot, TuneConfig, TuneReport};

#[derive(Args)]
pub struct TuneArgs {
    #[command(flatten)]
    backend_flags: super::backend_args::BackendFlags,
    /// The base model (usually FP32) every variant is validated against.
    #[arg(long, short, value_name = "M")]
    model: PathBuf,
    /// Variants to try, comma-separated (manifests or .onnx).
    #[arg(long, value_delimiter = ',', required = true, value_name = "V1,V2,...")]
    variants: Vec<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpu",
        help = super::backend_args::backend_help("Backends to try, comma-separated; the first also runs the base for validation")
    )]
    backends: Vec<String>,
    #[command(flatten)]
    timing: TimingArgs,
    /// Draw accuracy drop against p99 with the Pareto front (SVG).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// The report as JSON (schema edgert.tune/1): alone, on stdout with the table on stderr; with
    /// FILE, written there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
    #[command(flatten)]
    power: PowerArgs,
}

pub fn main(args: TuneArgs, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    super::json_out::check(args.json.as_ref())?;
    super::check_outputs([&args.plot])?;
    let timing = args.timing.settings()?;
    let base = load_model(&args.model)?;
    let variants = args.variants.iter().map(|v| load_model(v)).collect::<crate::Result<Vec<_>>>()?;
    let data = args.data.load(&base)?;
    let sensing = args.power.settings()?;
    let config = TuneConfig {
        backends: args.backends.clone(),
        backend_options: args.backend_flags.options(),
        budget: args.data.budget,
        prepare: args.backend_flags.prepare(),
        warmup: timing.warmup,
        duration: timing.duration,
        min_iterations: timing.min_iterations,
        bench_input: Some(args.data.data.clone()),
        sensing,
        stop,
    };
    let report = tune::tune(&base, &variants, &data, &config, &mut |step| eprintln!("edgert: {step}"))?;
    super::json_out::summary(args.json.as_ref(), text(&report).trim_end())?;
    if report.interrupted {
        eprintln!("edgert: interrupted: {} rows done; the one under way is left out", report.rows.len());
    }
    // An interrupted run may have no row to plot.
    if let Some(path) = args.plot.as_ref().filter(|_| !report.rows.is_empty()) {
        plot::write_svg(&report, path)?;
    }
    if let Some(json) = &args.json {
        super::json_out::document(json, &report)?;
    }
    Ok(if report.interrupted { ExitCode::from(super::stop::INTERRUPTED) } else { ExitCode::SUCCESS })
}

fn text(r: &TuneReport) -> String {
    let mut out = format!("base {} on {}, budget {:.2} %\n\n", r.base, r.data, r.budget * 100.0);
    out += &format!(
        "  {:<44} {:<8} {:<9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}  {}\n",
        "variant",
        "backend",
        "precision",
        "p50 ms",
        "p99 ms",
        "frames/s",
        "energy",
        "peak MiB",
        "size MB",
        "drop %",
        "front/budget"
    );
    for (i, row) in r.rows.iter().enumerate() {
        let marks = format!(
            "{}{}{}",
            if row.pareto { "* " } else { "  " },
            if row.within_budget { "ok" } else { "over" },
            if Some(i) == r.pick { "  <- pick" } else { "" }
        );
        out += &format!(
            "  {:<44} {:<8} {:<9} {:>9.3} {:>9.3} {:>9.1} {:>9} {:>9} {:>8.2} {:>9.2}  {marks}\n",
            row.variant,
            row.backend,
            row.precision,
            row.p50_ms,
            row.p99_ms,
            row.frames_per_s,
            row.energy_mj.map_or("n/a".into(), |e| format!("{e:.2} mJ")),
            row.peak_rss_bytes.map_or("n/a".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            row.model_bytes as f64 / 1e6,
            row.accuracy_drop * 100.0,
        );
    }
    out += "  (* on the Pareto front of p99 and drop; drop is 1 - the validation gate: accuracy kept with labels,\n";
    out += "   else top-1 agreement or mAP@0.5 against the base)\n";
    for s in &r.skipped {
        out += &format!("skipped {} on {}: {}\n", s.variant, s.backend, s.reason);
    }
    if let Some(note) = &r.energy_note {
        out += &format!("energy: {note}\n");
    }
    match r.pick {
        Some(i) => {
            out +=
                &format!("pick: {} on {} (fastest p99 within budget)\n", r.rows[i].variant, r.rows[i].backend)
        }
        None => out += "pick: none (no variant within budget)\n",
    }
    out
}
