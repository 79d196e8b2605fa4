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
use super::ModelArgs;
use crate::bench::{self, formats, BenchConfig, Progress, SourceBench};
use crate::output::SharedOutputs;
use crate::stream::Ending;
use crate::Error;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    backend_flags: super::backend_args::BackendFlags,
    #[command(flatten)]
    model: ModelArgs,
    #[arg(long, default_value = "cpu", help = super::backend_args::backend_help("The backend that runs the model"))]
    backend: String,
    /// Batch sizes, comma-separated; more than one gives a sweep of throughput against p99.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch: Vec<usize>,
    #[command(flatten)]
    scenario: super::scenario_args::ScenarioArgs,
    #[command(flatten)]
    timing: TimingArgs,
    /// An image, a folder of images or an .npz tensor set [default: --synthetic].
    #[arg(long, short, value_name = "PATH", conflicts_with_all = ["source", "synthetic"])]
    input: Option<PathBuf>,
    /// A generated input of the model's shape: latency without a file's decode.
    #[arg(long, conflicts_with = "source")]
    synthetic: bool,
    /// With --source, each stage runs on its own thread and end to end is glass to glass.
    #[command(flatten)]
    source: super::source_args::SourceArgs,
    /// The report as JSON (schema edgert.bench/3): alone, on stdout with the table on stderr; with
    /// FILE, written there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
    /// Also write one CSV row per batch size and stage.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    #[command(flatten)]
    power: PowerArgs,
}

impl BenchArgs {
    /// `--input`, where `--input synthetic` (the old spelling of `--synthetic`, kept until 0.2) is
    /// no input when no file has that name.
    fn input(&self) -> Option<PathBuf> {
        let input = self.input.as_ref()?;
        if input.as_os_str() == "synthetic" && !input.exists() {
            eprintln!("edgert: warning: bench --input synthetic is now --synthetic; the old spelling goes in edgert 0.2");
            return None;
        }
        Some(input.clone())
    }

    fn config(&self, stop: Arc<AtomicBool>) -> Result<BenchConfig, Error> {
        self.source.check(&[])?;
        super::json_out::check(self.json.as_ref())?;
        super::check_outputs([&self.csv])?;
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
            input: self.input(),
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
    super::json_out::summary(args.json.as_ref(), formats::text(&report).trim_end())?;
    if let Some(json) = &args.json {
        super::json_out::document(json, &report)?;
    }
    if let Some(path) = &args.csv {
        formats::write_csv(&report, path)?;
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
