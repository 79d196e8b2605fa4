//! `bench --scenario`: MLPerf's four ways of sending work. Single-stream is the bench loop
//! itself (`bench::measure`); the others send queries on a schedule through the dynamic batcher
//! (`bench::load`) over inference workers, and time each query from its scheduled arrival.

mod summary;
pub(crate) mod text;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::load::{arrivals, peak, serve, Batching, Query};
use super::report::{BackendInfo, BatchRun, PeakReport};
pub use super::report::{Kind, ScenarioRun};
use super::{power::PowerProbe, window::Window, BenchConfig, Progress};
use crate::metrics::stats::ms;
use crate::metrics::telemetry::Telemetry;
use crate::model::Model;
use crate::pipeline::Sample;
use crate::Result;
pub use summary::single_stream;
use worker::PipelineWorker;

#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    /// One query at a time, the next on completion: `bench` as it always was.
    SingleStream,
    /// A query of `samples` samples every `interval` (a multi-camera box).
    MultiStream {
        samples: usize,
        interval: Duration,
    },
    /// Every sample available at the start, in batches of each `--batch` size.
    Offline,
    Server(Server),
}

impl Scenario {
    /// Every batch size its pipelines are compiled for: `--batch`'s, a multi-stream query's
    /// samples, or each dynamic batch size up to the server's max.
    pub fn batch_sizes(&self, batches: &[usize]) -> Vec<usize> {
        match self {
            Scenario::SingleStream | Scenario::Offline => batches.to_vec(),
            Scenario::MultiStream { samples, .. } => vec![*samples],
            Scenario::Server(server) => (1..=server.batching.max_batch).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub arrivals: ServerArrivals,
    pub batching: Batching,
    /// Search for the highest rate within the latency bound instead of running the rates given.
    pub find_peak: Option<PeakSearch>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ServerArrivals {
    /// A Poisson process at each rate in turn (queries per second), from one seed.
    Poisson { qps: Vec<f64>, seed: u64 },
    /// Arrival times read from a file, replayed once.
    Replay { path: PathBuf, times: Vec<Duration> },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakSearch {
    /// Where to start; `None` starts from half what the warm-up says one batch of one can do.
    pub start_qps: Option<f64>,
    pub precision: f64,
}

/// What the query scenarios share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Inference workers, each with its own session(s).
    pub workers: usize,
    /// Each run sends at least this many queries (and at least `--duration-s` of them).
    pub min_queries: usize,
    /// Queries over it are counted; `--find-peak`'s p99 must stay within it.
    pub latency_bound: Option<Duration>,
}

impl Default for Load {
    fn default() -> Load {
        Load { workers: 1, min_queries: P99_MIN_QUERIES, latency_bound: None }
    }
}

/// p99 rests on the slowest 1 %: below this many queries fewer than 10 lie beyond it.
pub const P99_MIN_QUERIES: usize = 1000;
/// Doubling, halving and bisecting, at most.
const PEAK_MAX_STEPS: usize = 24;
/// The search halves from its start to 1/64 of it at most (six halvings), and never to a rate at
/// which a step's queries would take more than an hour.
const PEAK_MAX_HALVING: f64 = 64.0;
const PEAK_STEP_MAX_S: f64 = 3600.0;

/// The query scenarios' runs, and the peak where one was searched for.
pub struct Outcome {
    pub runs: Vec<BatchRun>,
    /// What the workers run on; set once the first opens.
    pub backend: Option<BackendInfo>,
    pub peak: Option<PeakReport>,
    pub warnings: Vec<String>,
}

/// Runs a query scenario (not single-stream, which `bench::run` measures itself).
pub fn run(
    model: &Model,
    samples: &[Sample],
    config: &BenchConfig,
    probe: &PowerProbe,
    telemetry: &Arc<Telemetry>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome> {
    let context = Context { model, samples, config, probe, telemetry };
    let load = config.load;
    // Their memory was checked by `bench::run`; a fixed batch dimension only matters here.
    for size in config.scenario.batch_sizes(&config.batches) {
        let asked = match &config.scenario {
            Scenario::Server(server) => {
                format!("--max-batch {0} (batches of 1 to {0})", server.batching.max_batch)
            }
            Scenario::MultiStream { samples, .. } => format!("--samples-per-query {samples}"),
            _ => format!("--batch {size}"),
        };
        model.check_batch(size, &asked)?;
    }
    let mut outcome = Outcome { runs: Vec::new(), backend: None, peak: None, warnings: Vec::new() };
    match &config.scenario {
        Scenario::SingleStream => unreachable!("bench::run measures single-stream"),
        Scenario::Offline => {
            for &batch in &config.batches {
                let mut workers = context.open(&[batch])?;
                outcome.backend.get_or_insert_with(|| BackendInfo::of(workers.workers[0].pipeline()));
                let rate =
                    (load.workers * batch) as f64 / workers.warmed.mean[&batch].as_secs_f64().max(1e-9);
                let count = queries_for(rate, config.duration, load.min_queries).div_ceil(batch) * batch;
                let queries = vec![Query { arrival: Duration::ZERO, samples: 1 }; count];
                let batching = Batching { max_batch: batch, max_queue_delay: Duration::ZERO };
                let setting = summary::Setting::offline(batching, load);
                outcome.runs.push(context.measure(&mut workers, &queries, batching, setting, progress)?);
                if context.stopped() {
                    break;
                }
            }
        }
        Scenario::MultiStream { samples, interval } => {
            let mut workers = context.open(&[*samples])?;
            outcome.backend.get_or_insert_with(|| BackendInfo::of(workers.workers[0].pipeline()));
            let count = queries_for(1.0 / interval.as_secs_f64(), config.duration, load.min_queries);
            let queries: Vec<Query> = arrivals::periodic(*interval, count)
                .into_iter()
                .map(|arrival| Query { arrival, samples: *samples })
                .collect();
            let batching = Batching { max_batch: *samples, max_queue_delay: Duration::ZERO };
            let setting = summary::Setting::multi_stream(batching, load, *interval);
            outcome.runs.push(context.measure(&mut workers, &queries, batching, setting, progress)?);
        }
        Scenario::Server(server) => context.server(server, &mut outcome, progress)?,
    }
    Ok(outcome)
}

/// At least `min` queries, and at least `duration` of them at `qps`; never more than a run may
/// keep (`limits::MAX_QUERIES`), which a peak search's doubling could otherwise reach.
fn queries_for(qps: f64, duration: Duration, min: usize) -> usize {
    ((qps * duration.as_secs_f64()).ceil() as usize).max(min).clamp(1, crate::limits::MAX_QUERIES)
}

struct Context<'a> {
    model: &'a Model,
    samples: &'a [Sample<'a>],
    config: &'a BenchConfig,
    probe: &'a PowerProbe,
    telemetry: &'a Arc<Telemetry>,
}

/// Opened and warmed workers, with what opening them took.
struct Workers<'a> {
    workers: Vec<PipelineWorker<'a>>,
    load_ms: f64,
    warmed: worker::Warmed,
}

impl<'a> Context<'a> {
    fn stopped(&self) -> bool {
        self.config.stop.load(Ordering::Relaxed)
    }

    /// `--workers` workers with a pipeline for each of `sizes`, warmed up.
    fn open(&self, sizes: &[usize]) -> Result<Workers<'a>> {
        let started = Instant::now();
        let mut workers = (0..self.config.load.workers)
            .map(|i| PipelineWorker::open(i, self.model, self.config, sizes, self.samples))
            .collect::<Result<Vec<_>>>()?;
        let load_ms = ms(started.elapsed());
        let mut warmed = None;
        for worker in &mut workers {
            let w = worker.warm(self.config.warmup, &self.config.stop)?;
            warmed.get_or_insert(w);
        }
        Ok(Workers { workers, load_ms, warmed: warmed.expect("at least one worker") })
    }

    /// One run of `queries`, measured with power and telemetry over exactly its window.
    fn measure(
        &self,
        workers: &mut Workers,
        queries: &[Query],
        batching: Batching,
        setting: summary::Setting,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<BatchRun> {
        progress(&Progress { batch: batching.max_batch, elapsed: Duration::ZERO, iterations: 0 });
        let window = Window::open(self.probe, self.telemetry, &self.config.sensing);
        let started = Instant::now();
        let record = serve(queries, batching, &mut workers.workers, &self.config.stop)?;
        let elapsed = started.elapsed();
        let (power, telemetry) = window.close(self.probe, self.telemetry, record.batches.len());
        let device: Vec<_> = workers.workers.iter_mut().flat_map(|w| std::mem::take(&mut w.device)).collect();
        progress(&Progress { batch: batching.max_batch, elapsed, iterations: record.batches.len() });
        summary::batch_run(
            &record,
            queries,
            setting,
            summary::Measured {
                load_ms: workers.load_ms,
                first_inference_ms: ms(workers.warmed.first),
                elapsed,
                power,
                telemetry,
                device: &device,
            },
        )
        .ok_or_else(|| crate::Error::Interrupted("stopped before a query was served".into()))
    }

    fn server(
        &self,
        server: &Server,
        outcome: &mut Outcome,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let load = self.config.load;
        let batching = server.batching;
        let mut workers = self.open(&self.config.scenario.batch_sizes(&self.config.batches))?;
        outcome.backend.get_or_insert_with(|| BackendInfo::of(workers.workers[0].pipeline()));
        let mut run_at = |qps: f64, seed: u64, workers: &mut Workers| -> Result<BatchRun> {
            let count = queries_for(qps, self.config.duration, load.min_queries);
            let queries = as_queries(&arrivals::poisson(qps, count, seed));
            let setting =
                summary::Setting::server(batching, load, Some(qps), format!("poisson, seed {seed}"));
            self.measure(workers, &queries, batching, setting, progress)
        };
        match (&server.arrivals, server.find_peak) {
            (ServerArrivals::Replay { path, times }, _) => {
                let queries = as_queries(times);
                let setting = summary::Setting::server(
                    batching,
                    load,
                    arrivals::offered_qps(times),
                    format!("replay of {}", path.display()),
                );
                outcome.runs.push(self.measure(&mut workers, &queries, batching, setting, progress)?);
            }
            (ServerArrivals::Poisson { qps, seed }, None) => {
                for &rate in qps {
                    outcome.runs.push(run_at(rate, *seed, &mut workers)?);
                    if self.stopped() {
                        break;
                    }
                }
            }
            (ServerArrivals::Poisson { seed, .. }, Some(search)) => {
                let bound = load.latency_bound.expect("--find-peak needs a bound (checked)");
                // Half of what one query at a time could do on every worker: below the knee.
                let start = search.start_qps.unwrap_or_else(|| {
                    0.5 * load.workers as f64 / workers.warmed.mean[&1].as_secs_f64().max(1e-6)
                });
                let search_at = peak::Search {
                    start_qps: start,
                    precision: search.precision,
                    max_steps: PEAK_MAX_STEPS,
                    min_qps: (start / PEAK_MAX_HALVING).max(load.min_queries as f64 / PEAK_STEP_MAX_S),
                };
                let found = peak::find(search_at, |qps| {
                    if self.stopped() {
                        return Err(crate::Error::Interrupted("the peak search was stopped".into()));
                    }
                    let run = run_at(qps, *seed, &mut workers)?;
                    let within = run.scenario.as_ref().is_some_and(|s| s.latency_ms.p99_ms <= ms(bound));
                    outcome.runs.push(run);
                    Ok(within)
                });
                let found = match found {
                    Err(e) if self.stopped() && !outcome.runs.is_empty() => {
                        outcome.warnings.push(format!("{e}: the peak is not known"));
                        return Ok(());
                    }
                    other => other?,
                };
                outcome.runs.sort_by(|a, b| offered(a).total_cmp(&offered(b)));
                if load.min_queries < P99_MIN_QUERIES {
                    outcome.warnings.push(format!(
                        "--min-queries {} is under {P99_MIN_QUERIES}: each step's p99 rests on fewer than 10 queries",
                        load.min_queries
                    ));
                }
                outcome.peak = Some(PeakReport::new(found, bound, search.precision, load.min_queries));
            }
        }
        Ok(())
    }
}

fn offered(run: &BatchRun) -> f64 {
    run.scenario.as_ref().and_then(|s| s.offered_qps).unwrap_or(0.0)
}

fn as_queries(times: &[Duration]) -> Vec<Query> {
    times.iter().map(|&arrival| Query { arrival, samples: 1 }).collect()
}
