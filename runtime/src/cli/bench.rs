//! `edgert bench`: the latency report, as a table on stdout and optionally JSON and CSV files.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use super::{emit, ModelArgs};
use crate::bench::{self, output, BenchConfig, Progress};
use crate::Error;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// cpu, gpu (strict) or gpu-or-cpu (falls back to the CPU and says so).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Batch sizes, comma-separated; more than one gives a sweep of throughput against p99.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch: Vec<usize>,
    /// Intra-op threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Warm-up before measuring, per batch size.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    warmup_ms: u64,
    /// Measure at least this long, per batch size.
    #[arg(long, default_value_t = 3.0, value_name = "S")]
    duration_s: f64,
    /// And at least this many iterations.
    #[arg(long, default_value_t = 10, value_name = "N")]
    min_iterations: usize,
    /// An image, a folder of images, an .npz tensor set, or `synthetic`.
    #[arg(long, default_value = "synthetic", value_name = "PATH|synthetic")]
    input: String,
    /// Also write the report as JSON (schema edgert.bench/1).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write one CSV row per batch size and stage.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    #[command(flatten)]
    power: PowerArgs,
}

/// Where and how to read the board's power sensors.
#[derive(Args, Clone)]
pub struct PowerArgs {
    /// Root of sysfs for the power sensors (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: PathBuf,
    /// Power sampling interval (never faster than the sensors' own update interval).
    #[arg(long, default_value_t = 10, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    power_interval_ms: u64,
    /// Idle power is measured this long before the first batch.
    #[arg(long, default_value_t = 0.5, value_name = "S")]
    idle_s: f64,
}

impl PowerArgs {
    /// (sysfs root, sampling interval, idle time).
    pub fn settings(&self) -> Result<(PathBuf, Duration, Duration), Error> {
        if !(self.idle_s.is_finite() && self.idle_s >= 0.0) {
            return Err(Error::Usage(format!("--idle-s {} is not a duration", self.idle_s)));
        }
        Ok((
            self.sysfs_root.clone(),
            Duration::from_millis(self.power_interval_ms),
            Duration::from_secs_f64(self.idle_s),
        ))
    }
}

impl BenchArgs {
    fn config(&self) -> Result<BenchConfig, Error> {
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0) {
            return Err(Error::Usage(format!("--duration-s {} is not a duration", self.duration_s)));
        }
        if self.batch.contains(&0) {
            return Err(Error::Usage("--batch sizes must be at least 1".into()));
        }
        let (sysfs_root, power_interval, idle) = self.power.settings()?;
        Ok(BenchConfig {
            backend: self.backend.clone(),
            batches: self.batch.clone(),
            threads: self.threads as usize,
            warmup: Duration::from_millis(self.warmup_ms),
            duration: Duration::from_secs_f64(self.duration_s),
            min_iterations: self.min_iterations.max(1),
            input: (self.input != "synthetic").then(|| PathBuf::from(&self.input)),
            sysfs_root,
            power_interval,
            idle,
        })
    }
}

pub fn main(args: BenchArgs) -> anyhow::Result<ExitCode> {
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
