//! `edgert bench`: the latency report, as a table on stdout and optionally JSON and CSV files.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

use super::measure_args::{PowerArgs, TimingArgs};
use super::stop::INTERRUPTED;
use super::{emit, ModelArgs};
use crate::bench::{self, output, BenchConfig, Progress, SourceBench};
use crate::output::SharedOutputs;
use crate::stream::Ending;
use crate::Error;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    backend_flags: super::backend_args::BackendFlags,
    #[command(flatten)]
    model: ModelArgs,
    #[arg(long, default_value = "cpu", help = super::backend_args::BACKEND_HELP)]
    backend: String,
    /// Batch sizes, comma-separated; more than one gives a sweep of throughput against p99.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch: Vec<usize>,
    #[command(flatten)]
    scenario: super::scenario_args::ScenarioArgs,
    #[command(flatten)]
    timing: TimingArgs,
    /// An image, a folder of images, an .npz tensor set, or `synthetic`.
    #[arg(long, default_value = "synthetic", value_name = "PATH|synthetic", conflicts_with = "source")]
    input: String,
    /// With --source, each stage runs on its own thread and end to end is glass to glass.
    #[command(flatten)]
    source: super::source_args::SourceArgs,
    /// Also write the report as JSON (schema edgert.bench/3).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write one CSV row per batch size and stage.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    #[command(flatten)]
    power: PowerArgs,
}

impl BenchArgs {
    fn config(&self, stop: Arc<AtomicBool>) -> Result<BenchConfig, Error> {
        self.source.check(&[])?;
        super::check_outputs([&self.json, &self.csv])?;
        if self.batch.contains(&0) {
            return Err(Error::Usage("--batch sizes must be at least 1".into()));
        }
        let timing = self.timing.settings()?;
        let sensing = self.power.settings()?;
        let prepare = self.backend_flags.prepare();
        let (scenario, load) = self.scenario.settings(&super::scenario_args::Context {
            batches: &self.batch,
            duration: timing.duration,
            source: self.source.source.is_some(),
            threads: prepare.threads,
            on_cpu: self.backend_flags.on_cpu(&self.backend),
            force_threads: self.backend_flags.force_threads(),
        })?;
        Ok(BenchConfig {
            backend: self.backend.clone(),
            backend_options: self.backend_flags.options(),
            batches: self.batch.clone(),
            prepare,
            warmup: timing.warmup,
            duration: timing.duration,
            min_iterations: timing.min_iterations,
            input: (self.input != "synthetic").then(|| PathBuf::from(&self.input)),
            source: match &self.source.source {
                Some(uri) => Some(SourceBench {
                    uri: uri.clone(),
                    options: self.source.open.options(),
                    stream: self.source.stream(),
                    outputs: SharedOutputs::new(self.source.show.open(&sensing.sysfs_root)?),
                }),
                None => None,
            },
            sensing,
            scenario,
            load,
            stop,
        })
    }
}

pub fn main(args: BenchArgs, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    let config = args.config(stop)?;
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
    let finished = config.source.as_ref().map_or(Ok(()), |source| source.outputs.lock().finish());
    if terminal {
        eprint!("\r\x1b[K");
    }
    let report = match report {
        // Stopped before anything was measured: nothing to write, but still the exit of a stop.
        Err(e) if config.stop.load(Ordering::Relaxed) => {
            eprintln!("edgert: {}", crate::error::one_line(&e));
            return Ok(ExitCode::from(INTERRUPTED));
        }
        other => other?,
    };
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
    if let Err(e) = finished {
        eprintln!("edgert: error: {}", crate::error::one_line(&e));
        return Ok(ExitCode::FAILURE);
    }
    // A streamed run that stopped early was reported as far as it went; the exit code says so.
    if config.stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(INTERRUPTED));
    }
    let failed =
        report.runs.iter().filter_map(|r| r.stream.as_ref()).any(|s| matches!(s.ending, Ending::Failed(_)));
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
