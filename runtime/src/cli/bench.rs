//! `edgert bench`: the latency report, as a table on stdout and optionally JSON and CSV files.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;

use super::measure_args::{PowerArgs, TimingArgs};
use super::{emit, ModelArgs};
use crate::bench::{self, output, BenchConfig, Progress};
use crate::Error;

#[derive(Args)]
pub struct BenchArgs {
    #[cfg(feature = "ort")]
    #[command(flatten)]
    ort: super::ort_args::OrtArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// cpu, gpu (strict) or gpu-or-cpu (falls back to the CPU and says so).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Batch sizes, comma-separated; more than one gives a sweep of throughput against p99.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch: Vec<usize>,
    #[command(flatten)]
    timing: TimingArgs,
    /// An image, a folder of images, an .npz tensor set, or `synthetic`.
    #[arg(long, default_value = "synthetic", value_name = "PATH|synthetic")]
    input: String,
    /// Also write the report as JSON (schema edgert.bench/2).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write one CSV row per batch size and stage.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    #[command(flatten)]
    power: PowerArgs,
}

impl BenchArgs {
    fn config(&self) -> Result<BenchConfig, Error> {
        if self.batch.contains(&0) {
            return Err(Error::Usage("--batch sizes must be at least 1".into()));
        }
        let timing = self.timing.settings()?;
        let sensing = self.power.settings()?;
        Ok(BenchConfig {
            backend: self.backend.clone(),
            batches: self.batch.clone(),
            threads: timing.threads,
            warmup: timing.warmup,
            duration: timing.duration,
            min_iterations: timing.min_iterations,
            input: (self.input != "synthetic").then(|| PathBuf::from(&self.input)),
            sensing,
        })
    }
}

pub fn main(args: BenchArgs) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "ort")]
    args.ort.apply();
    let config = args.config()?;
    let read = Instant::now();
    let model = args.model.load()?;
    let model_read = read.elapsed();
    let terminal = std::io::stderr().is_terminal();
    let duration = config.duration.as_secs_f64();
    let mut progress = |p: &Progress| {
        if terminal {
            eprint!(
                "\r\x1b[K  batch {}: {:.1}/{duration:.1} s, {} iterations",
                p.batch,
                p.elapsed.as_secs_f64(),
                p.iterations
            );
        }
    };
    let report = bench::run(&model, model_read, &config, &mut progress);
    if terminal {
        eprint!("\r\x1b[K");
    }
    let report = report?;
    for warning in &report.warnings {
        eprintln!("edgert: warning: {warning}");
    }
    emit(output::text(&report).trim_end())?;
    if let Some(path) = &args.json {
        output::write_json(&report, path)?;
    }
    if let Some(path) = &args.csv {
        output::write_csv(&report, path)?;
    }
    Ok(ExitCode::SUCCESS)
}
