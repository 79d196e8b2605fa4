//! `tune`: for each variant × backend, validate against the base model and bench it; mark the
//! Pareto front of (p99 latency, accuracy drop) and pick the fastest variant within budget.

pub(crate) mod pareto;
pub(crate) mod plot;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::backend::{self, BackendOptions, PrepareOptions};
use crate::bench::{self, BenchConfig, Progress, Sensing};
use crate::metrics::memory;
use crate::model::Model;
use crate::validate::{self, data::Dataset, ValidateConfig};
use crate::{Error, Result};

pub const SCHEMA: &str = "edgert.tune/1";

#[derive(Debug, Clone)]
pub struct TuneConfig {
    pub backends: Vec<String>,
    pub backend_options: BackendOptions,
    pub budget: f64,
    /// Threads and the memory limit; the batch is bench's.
    pub prepare: PrepareOptions,
    pub warmup: Duration,
    pub duration: Duration,
    pub min_iterations: usize,
    /// What `bench` runs on: the data itself, or synthetic input when `None`.
    pub bench_input: Option<PathBuf>,
    pub sensing: Sensing,
    /// Set (by Ctrl-C) to stop: the rows done so far are reported; the one under way is left out.
    pub stop: Arc<AtomicBool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub variant: String,
    pub backend: String,
    pub precision: String,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub frames_per_s: f64,
    /// Energy per inference from the board's power sensors; null without them, never estimated.
    pub energy_mj: Option<f64>,
    /// Peak RSS while this variant ran (the peak is reset first); null where it cannot be reset.
    pub peak_rss_bytes: Option<u64>,
    pub model_bytes: u64,
    /// 1 − the validation gate value: the share of the base's quality lost.
    pub accuracy_drop: f64,
    pub gate_metric: &'static str,
    pub within_budget: bool,
    pub pareto: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub variant: String,
    pub backend: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    pub schema: &'static str,
    pub base: String,
    pub data: String,
    pub budget: f64,
    pub rows: Vec<Row>,
    pub skipped: Vec<Skipped>,
    /// Index into `rows` of the fastest (p99) variant within budget.
    pub pick: Option<usize>,
    /// Why energy is missing, when it is.
    pub energy_note: Option<String>,
    /// Stopped by a signal before every variant ran on every backend.
    pub interrupted: bool,
}

/// Runs the matrix; the base model is always the first variant, so its own row is the baseline.
pub fn tune(
    base: &Model,
    variants: &[Model],
    data: &Dataset,
    config: &TuneConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<TuneReport> {
    if config.backends.is_empty() {
        return Err(Error::Usage("--backends needs at least one backend".into()));
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut energy_note = None;
    'matrix: for model in std::iter::once(base).chain(variants) {
        let variant = model.source_path().display().to_string();
        for backend_name in &config.backends {
            let selected = backend::select_with(backend_name, &config.backend_options)?;
            if let Err(reason) = selected.backend.supports(model.precision()) {
                skipped.push(Skipped {
                    variant: variant.clone(),
                    backend: backend_name.clone(),
                    reason: reason.to_string(),
                });
                continue;
            }
            let Some((row, no_energy)) = measure(base, model, backend_name, data, config, progress)? else {
                break 'matrix;
            };
            if let Some(reason) = no_energy {
                energy_note.get_or_insert(reason);
            }
            rows.push(row);
        }
    }
    let points: Vec<(f64, f64)> = rows.iter().map(|r| (r.p99_ms, r.accuracy_drop)).collect();
    for (row, on_front) in rows.iter_mut().zip(pareto::front(&points)) {
        row.pareto = on_front;
    }
    let pick =
        pareto::fastest_within_budget(&rows.iter().map(|r| (r.p99_ms, r.within_budget)).collect::<Vec<_>>());
    Ok(TuneReport {
        schema: SCHEMA,
        base: base.source_path().display().to_string(),
        data: data.path.display().to_string(),
        budget: config.budget,
        rows,
        skipped,
        pick,
        energy_note,
        interrupted: config.stop.load(Ordering::Relaxed),
    })
}

/// One cell of the matrix: `model` validated against the base (on the first backend) and
/// benchmarked, on `backend`. Its row and why energy is missing, if it is; None when a stop cut
/// the cell short (a part-measured row would not compare with the others).
fn measure(
    base: &Model,
    model: &Model,
    backend: &str,
    data: &Dataset,
    config: &TuneConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<(Row, Option<String>)>> {
    let stopped = || config.stop.load(Ordering::Relaxed);
    if stopped() {
        return Ok(None);
    }
    let variant = model.source_path().display().to_string();
    progress(&format!("{variant} on {backend}: validating"));
    let validation = ValidateConfig {
        reference_backend: config.backends[0].clone(),
        candidate_backend: backend.to_string(),
        backend_options: config.backend_options.clone(),
        prepare: config.prepare,
        budget: config.budget,
        stop: config.stop.clone(),
    };
    let validation = match validate::validate(base, model, data, &validation) {
        Err(Error::Interrupted(_)) => return Ok(None),
        Ok(v) if v.interrupted => return Ok(None),
        other => other?,
    };
    progress(&format!("{variant} on {backend}: benchmarking"));
    let reset = memory::reset_peak_rss();
    let report = bench::run(model, Duration::ZERO, &bench_config(backend, config), &mut |_: &Progress| {});
    let report = match report {
        _ if stopped() => return Ok(None),
        other => other?,
    };
    let run = &report.runs[0];
    let model_bytes = std::fs::metadata(&model.file).map_err(|e| Error::read(&model.file, e))?.len();
    let row = Row {
        variant,
        backend: report.backend.name.clone(),
        precision: model.precision().to_string(),
        p50_ms: run.stages.end_to_end.p50_ms,
        p99_ms: run.stages.end_to_end.p99_ms,
        frames_per_s: run.frames_per_s,
        energy_mj: run.power.energy_per_inference_mj,
        peak_rss_bytes: if reset { run.peak_rss_bytes } else { None },
        model_bytes,
        accuracy_drop: (1.0 - validation.gate.value).max(0.0),
        gate_metric: validation.gate.metric,
        within_budget: validation.gate.within_budget,
        pareto: false,
    };
    Ok(Some((row, run.power.reason.clone())))
}

/// A single-stream bench at batch 1, as `bench` would run it with tune's settings.
fn bench_config(backend: &str, config: &TuneConfig) -> BenchConfig {
    BenchConfig {
        backend: backend.to_string(),
        backend_options: config.backend_options.clone(),
        batches: vec![1],
        prepare: config.prepare,
        warmup: config.warmup,
        duration: config.duration,
        min_iterations: config.min_iterations,
        input: config.bench_input.clone(),
        source: None,
        sensing: config.sensing.clone(),
        scenario: bench::scenario::Scenario::SingleStream,
        load: bench::scenario::Load::default(),
        stop: config.stop.clone(),
    }
}
