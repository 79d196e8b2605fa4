//! `bench`: warm up, then run the whole pipeline for at least a duration and a count of
//! iterations, per batch size, timing each stage.

pub(crate) mod formats;
pub mod load;
pub(crate) mod power;
pub(crate) mod report;
pub(crate) mod scenario;
mod stream;
mod window;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use image::DynamicImage;

use crate::backend::tract_ops::pin;
use crate::backend::{self, BackendOptions, PrepareOptions};
use crate::capture::source::SourceOptions;
use crate::capture::{self, npz::TensorSet, pattern};
use crate::choice::Choice;
use crate::metrics::provenance::Provenance;
use crate::metrics::stats::Stages;
use crate::metrics::telemetry::Telemetry;
use crate::metrics::{
    host::Host,
    memory,
    stats::{ms, Latencies},
};
use crate::model::{inspect, Model};
use crate::pipeline::{Pipeline, Sample};
use crate::{Error, Result};
use report::{BackendInfo, BatchRun, BenchReport, ModelInfo, Settings};

/// A stage's CoV above this gets a warning: the run is too noisy to compare against another.
pub const COV_WARNING: f64 = 0.01;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub backend: String,
    pub backend_options: BackendOptions,
    pub batches: Vec<usize>,
    /// Threads and the memory limit; the batch is each of `batches` in turn.
    pub prepare: PrepareOptions,
    pub warmup: Duration,
    pub duration: Duration,
    pub min_iterations: usize,
    /// `None` for synthetic input.
    pub input: Option<PathBuf>,
    /// Frames from a source through the camera pipeline instead of `input`.
    pub source: Option<SourceBench>,
    pub sensing: Sensing,
    /// How work is sent: one query at a time (the default), or on a schedule.
    pub scenario: scenario::Scenario,
    /// Workers, queries and the latency bound of the scenarios that send queries.
    pub load: scenario::Load,
    /// Set (by Ctrl-C) to stop: the run so far is reported and later batch sizes are skipped.
    pub stop: Arc<AtomicBool>,
}

/// A frame source to bench through the pipeline, reopened for each phase so a paced source
/// starts on time.
#[derive(Debug, Clone)]
pub struct SourceBench {
    pub uri: String,
    pub options: SourceOptions,
    pub stream: crate::stream::StreamConfig,
    /// Where annotated frames go, in every phase (`--output`, `--preview`).
    pub outputs: crate::output::SharedOutputs,
}

/// How to read the board while measuring.
#[derive(Debug, Clone)]
pub struct Sensing {
    /// Where sysfs, procfs and `/etc` are (`/` on a board, a fixture tree in tests).
    pub sysfs_root: PathBuf,
    /// Power sampling interval (raised to the sensors' own update interval).
    pub power_interval: Duration,
    /// Idle power is measured this long before the first batch.
    pub idle: Duration,
    /// Memory, clock and temperature sampling interval.
    pub telemetry_interval: Duration,
}

/// Where a run stands, for a progress line.
pub struct Progress {
    pub batch: usize,
    pub elapsed: Duration,
    pub iterations: usize,
}

/// Inputs decoded once, outside the timed loop.
enum Inputs {
    Images(Vec<DynamicImage>),
    Tensors(TensorSet),
}

impl Inputs {
    fn load(model: &Model, path: Option<&PathBuf>) -> Result<Inputs> {
        let item_shape: Vec<usize> = model.manifest.input.shape[1..].to_vec();
        match path {
            None if model.manifest.image_geometry().is_some()
                && model.manifest.task.kind() != crate::model::Task::Raw =>
            {
                Ok(Inputs::Images(vec![pattern::frame()]))
            }
            None => {
                let len = item_shape.iter().product();
                Ok(Inputs::Tensors(TensorSet { item_shape, samples: pattern::tensor(len), labels: None }))
            }
            Some(p) if capture::is_npz(p) => Ok(Inputs::Tensors(capture::npz::load(p, &item_shape)?)),
            Some(p) => {
                let files = capture::list_images(p)?;
                Ok(Inputs::Images(files.iter().map(|f| capture::load_image(f)).collect::<Result<_>>()?))
            }
        }
    }

    fn samples(&self) -> Vec<Sample<'_>> {
        match self {
            Inputs::Images(images) => images.iter().map(Sample::Image).collect(),
            Inputs::Tensors(set) => (0..set.len()).map(|i| Sample::Tensor(set.item(i))).collect(),
        }
    }
}

pub fn run(
    model: &Model,
    model_read: Duration,
    config: &BenchConfig,
    progress: &mut dyn FnMut(&Progress),
) -> Result<BenchReport> {
    let inputs = checked_inputs(model, config)?;
    let samples = inputs.samples();
    if samples.is_empty() && config.source.is_none() {
        return Err(Error::Usage("the input holds no samples".into()));
    }
    let sensing = &config.sensing;
    let probe = power::PowerProbe::new(&sensing.sysfs_root, sensing.power_interval, sensing.idle);
    let telemetry = Arc::new(Telemetry::open(&sensing.sysfs_root));
    let (runs, backend, peak, mut warnings) = match config.scenario {
        scenario::Scenario::SingleStream => {
            let (runs, backend, warnings) =
                single_stream(model, &samples, config, &probe, &telemetry, progress)?;
            (runs, backend, None, warnings)
        }
        _ => {
            let outcome = scenario::run(model, &samples, config, &probe, &telemetry, progress)?;
            let backend = outcome.backend.expect("a scenario opens its workers before it runs");
            (outcome.runs, backend, outcome.peak, outcome.warnings)
        }
    };
    warnings.extend(runs.iter().flat_map(run_warnings));
    if let Some(reason) = &backend.fallback {
        warnings.push(format!("backend {}: {reason}", backend.requested));
    }
    Ok(BenchReport {
        schema: report::SCHEMA,
        edgert_version: crate::VERSION,
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        host: Host::describe(),
        provenance: Provenance::read(&sensing.sysfs_root),
        model: model_info(model)?,
        pinned_cpus: if backend.name == "cpu" { pinned_cpus(config) } else { None },
        backend,
        threads: config.prepare.threads,
        input: match (&config.source, &config.input) {
            (Some(source), _) => source.uri.clone(),
            (None, Some(path)) => path.display().to_string(),
            (None, None) => "synthetic".into(),
        },
        settings: Settings {
            warmup_ms: config.warmup.as_millis() as u64,
            duration_s: config.duration.as_secs_f64(),
            min_iterations: config.min_iterations,
        },
        model_read_ms: ms(model_read),
        runs,
        peak,
        warnings,
    })
}

/// The inputs, decoded, once the batch sizes are checked against the model and the memory limit.
fn checked_inputs(model: &Model, config: &BenchConfig) -> Result<Inputs> {
    if config.batches.is_empty() || config.batches.contains(&0) {
        return Err(Error::Usage("--batch needs sizes of at least 1".into()));
    }
    for batch in config.scenario.batch_sizes(&config.batches) {
        model.check_input_memory(batch, config.prepare.memory)?;
    }
    match config.source {
        // The frames come from the source.
        Some(_) => Ok(Inputs::Images(Vec::new())),
        None => Inputs::load(model, config.input.as_ref()),
    }
}

/// What a run's telemetry found, and each stage too noisy to compare with care.
fn run_warnings(run: &BatchRun) -> Vec<String> {
    let title = scenario::text::run_title(run.batch, run.scenario.as_ref());
    let mut warnings: Vec<String> =
        run.telemetry.warnings().into_iter().map(|w| format!("{title}: {w}")).collect();
    for (stage, stats) in run.stages.named() {
        // Queueing spreads a query scenario's end to end by design: only its inference is noise.
        let single = run.kind() == scenario::Kind::SingleStream;
        if stats.cov > COV_WARNING && (stage == "inference" || (stage == "end_to_end" && single)) {
            warnings.push(format!(
                "{title}: {stage} CoV is {:.1} % (> 1 %): the machine is noisy or not locked; compare with care",
                stats.cov * 100.0
            ));
        }
    }
    warnings
}

fn model_info(model: &Model) -> Result<ModelInfo> {
    // An engine's weights are inside its plan: only its size is known.
    let (file_bytes, weight_bytes) = if model.is_engine() {
        let path = &model.file;
        (std::fs::metadata(path).map_err(|e| Error::read(path, e))?.len(), 0)
    } else {
        let facts = inspect::inspect(model)?;
        (facts.file_bytes, facts.weight_bytes.values().sum())
    };
    Ok(ModelInfo {
        path: model.source_path().display().to_string(),
        sha256: model.sha256.clone(),
        task: model.manifest.task.kind().name().to_string(),
        precision: model.precision().name().to_string(),
        input_name: model.manifest.input.name.clone(),
        input_shape: model.input_shape(1),
        file_bytes,
        weight_bytes,
    })
}

/// The CPUs the `cpu` backend's threads are pinned to, every worker's in turn (the `i`th
/// worker's are the `i`th `--threads` of them), or None where they are left to the OS: one
/// thread, `--no-pin`, or fewer CPUs than all the workers' threads, when none is pinned.
fn pinned_cpus(config: &BenchConfig) -> Option<Vec<usize>> {
    let threads = config.prepare.threads;
    if threads < 2 {
        return None;
    }
    pin::cpus(config.load.workers * threads, config.prepare.pinning).ok().flatten()
}

/// Single-stream: each batch size in turn, one iteration at a time (or frames from a source).
fn single_stream(
    model: &Model,
    samples: &[Sample],
    config: &BenchConfig,
    probe: &power::PowerProbe,
    telemetry: &Arc<Telemetry>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(Vec<BatchRun>, BackendInfo, Vec<String>)> {
    let mut runs = Vec::new();
    let mut warnings = Vec::new();
    let mut backend_info = None;
    for &batch in &config.batches {
        let selected = backend::select_with(&config.backend, &config.backend_options)?;
        let options = PrepareOptions { batch, ..config.prepare };
        let started = Instant::now();
        let mut pipeline =
            Pipeline::open(model.clone(), selected, options).map_err(|e| model.explain_batch(e, batch))?;
        let load_ms = ms(started.elapsed());
        backend_info.get_or_insert_with(|| BackendInfo::of(&pipeline));
        let run = match &config.source {
            Some(source) => {
                stream::measure(&mut pipeline, source, config, probe, telemetry, load_ms, progress)?
            }
            None => measure(&mut pipeline, samples, config, probe, telemetry, load_ms, progress)?,
        };
        let ending = run.stream.as_ref().map(|s| s.ending.clone());
        runs.push(run);
        if let Some(crate::stream::Ending::Failed(reason)) = ending {
            warnings.push(format!("batch {batch}: the run stopped early: {reason}"));
            break;
        }
        if config.stop.load(Ordering::Relaxed) {
            warnings.push(format!("batch {batch}: interrupted; the run covers what was measured until then"));
            break;
        }
    }
    Ok((runs, backend_info.expect("at least one batch ran"), warnings))
}

/// Times of one iteration's stages.
struct Iteration {
    preprocess: Duration,
    inference: Duration,
    postprocess: Duration,
    device: Option<crate::backend::DeviceTiming>,
}

/// One iteration on the next `batch` samples from `cursor`, cycling through the set, so a
/// run covers the whole input rather than its first item.
fn iterate(pipeline: &mut Pipeline, samples: &[Sample], cursor: &mut usize) -> Result<Iteration> {
    let n = pipeline.options.batch;
    let batch: Vec<Sample> = (0..n).map(|k| samples[(*cursor + k) % samples.len()]).collect();
    *cursor = (*cursor + n) % samples.len();
    let t0 = Instant::now();
    let (input, geometries) = pipeline.preprocess(&batch)?;
    let t1 = Instant::now();
    let outputs = pipeline.infer(&input)?;
    let t2 = Instant::now();
    let device = pipeline.device_timing();
    std::hint::black_box(pipeline.postprocess(&outputs, &geometries)?);
    let t3 = Instant::now();
    Ok(Iteration { preprocess: t1 - t0, inference: t2 - t1, postprocess: t3 - t2, device })
}

fn measure(
    pipeline: &mut Pipeline,
    samples: &[Sample],
    config: &BenchConfig,
    probe: &power::PowerProbe,
    telemetry: &Arc<Telemetry>,
    load_ms: f64,
    progress: &mut dyn FnMut(&Progress),
) -> Result<BatchRun> {
    let batch = pipeline.options.batch;
    let mut cursor = 0;
    let first = Instant::now();
    iterate(pipeline, samples, &mut cursor)?;
    let first_inference_ms = ms(first.elapsed());
    let warmup = Instant::now();
    let stopped = || config.stop.load(Ordering::Relaxed);
    while warmup.elapsed() < config.warmup && !stopped() {
        iterate(pipeline, samples, &mut cursor)?;
    }
    // Fixed memory, however long the run (`Latencies`).
    let [mut pre, mut inf, mut post, mut total] = std::array::from_fn(|_| Latencies::default());
    let mut device = Vec::new();
    let window = window::Window::open(probe, telemetry, &config.sensing);
    let started = Instant::now();
    let mut last_report = started;
    // A stop (Ctrl-C, SIGTERM) ends the window after at least one measured iteration.
    while (started.elapsed() < config.duration || total.count() < config.min_iterations)
        && !(stopped() && total.count() > 0)
    {
        let it = iterate(pipeline, samples, &mut cursor)?;
        pre.record(ms(it.preprocess));
        inf.record(ms(it.inference));
        post.record(ms(it.postprocess));
        total.record(ms(it.preprocess + it.inference + it.postprocess));
        device.extend(it.device);
        if last_report.elapsed() > Duration::from_millis(250) {
            last_report = Instant::now();
            progress(&Progress { batch, elapsed: started.elapsed(), iterations: total.count() });
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (power, telemetry) = window.close(probe, telemetry, total.count());
    let stats = |v: &Latencies| v.stats().expect("at least one iteration");
    let iterations = total.count();
    Ok(BatchRun {
        batch,
        load_ms,
        first_inference_ms,
        iterations,
        elapsed_s: elapsed,
        inferences_per_s: iterations as f64 / elapsed,
        frames_per_s: (iterations * batch) as f64 / elapsed,
        peak_rss_bytes: memory::peak_rss_bytes(),
        power,
        telemetry,
        stages: Stages {
            preprocess: stats(&pre),
            inference: stats(&inf),
            postprocess: stats(&post),
            end_to_end: stats(&total),
        },
        end_to_end_cdf_ms: total.curve(),
        stream: None,
        device: report::DeviceStages::from_timings(&device),
        scenario: Some(scenario::single_stream(&total, batch, elapsed, config.load.latency_bound)),
    })
}
