//! A query scenario's record summed up as a bench run: per-batch stage times, each query's latency
//! from its scheduled arrival as end to end, and the scenario section (`ScenarioRun`).

use std::time::Duration;

use super::Load;
use crate::backend::DeviceTiming;
use crate::bench::load::scheduler::Record;
use crate::bench::load::{tail::Tail, Batching, Query};
use crate::bench::power::PowerReport;
use crate::bench::report::{BatchCount, BatchRun, DeviceStages, Kind, ScenarioRun};
use crate::metrics::memory;
use crate::metrics::stats::{ms, percentile_curve, Latencies, LatencyStats, Stages};
use crate::metrics::telemetry::run::RunTelemetry;

/// The scenario section of a single-stream run (`bench::measure`): each iteration is a query,
/// sent when the one before it completed, so nothing queues.
pub fn single_stream(
    total: &Latencies,
    batch: usize,
    elapsed_s: f64,
    bound: Option<Duration>,
) -> ScenarioRun {
    let stats = total.stats().expect("at least one iteration");
    let bound_ms = bound.map(ms);
    ScenarioRun {
        name: Kind::SingleStream,
        arrivals: "on completion".into(),
        queries: stats.count,
        unserved: 0,
        samples_per_query: batch,
        workers: 1,
        max_batch: batch,
        max_queue_delay_ms: 0.0,
        offered_qps: None,
        achieved_qps: stats.count as f64 / elapsed_s,
        latency_ms: Tail::from_percentiles(stats.count, stats.mean_ms, |p| total.percentile(p))
            .expect("at least one iteration"),
        queue_ms: None,
        batch_sizes: vec![BatchCount { size: batch, batches: stats.count }],
        latency_bound_ms: bound_ms,
        over_bound: bound_ms.map(|b| total.share_above(b)),
        interval_ms: None,
        missed_intervals: None,
    }
}

/// What a run sent, before it ran.
pub struct Setting {
    name: Kind,
    arrivals: String,
    batching: Batching,
    load: Load,
    offered_qps: Option<f64>,
    interval: Option<Duration>,
}

impl Setting {
    pub fn offline(batching: Batching, load: Load) -> Setting {
        Setting {
            name: Kind::Offline,
            arrivals: "all at once".into(),
            batching,
            load,
            offered_qps: None,
            interval: None,
        }
    }

    pub fn multi_stream(batching: Batching, load: Load, interval: Duration) -> Setting {
        Setting {
            name: Kind::MultiStream,
            arrivals: format!("every {} ms", ms(interval)),
            batching,
            load,
            offered_qps: Some(1.0 / interval.as_secs_f64()),
            interval: Some(interval),
        }
    }

    pub fn server(batching: Batching, load: Load, offered_qps: Option<f64>, arrivals: String) -> Setting {
        Setting { name: Kind::Server, arrivals, batching, load, offered_qps, interval: None }
    }
}

/// What was measured around the run.
pub struct Measured<'a> {
    pub load_ms: f64,
    pub first_inference_ms: f64,
    pub elapsed: Duration,
    pub power: PowerReport,
    pub telemetry: RunTelemetry,
    pub device: &'a [DeviceTiming],
}

/// `None` when no query was served (stopped at once).
pub fn batch_run(record: &Record, sent: &[Query], setting: Setting, measured: Measured) -> Option<BatchRun> {
    let latencies: Vec<f64> = record.queries.iter().map(|q| ms(q.latency())).collect();
    let queued: Vec<f64> = record.queries.iter().map(|q| ms(q.queued())).collect();
    let latency_ms = Tail::from_ms(&latencies)?;
    let first_arrival = record.queries.iter().map(|q| q.arrival).min()?;
    let last_done = record.queries.iter().map(|q| q.done).max()?;
    let span = last_done.saturating_sub(first_arrival).as_secs_f64().max(1e-9);
    let bound_ms = setting.load.latency_bound.map(ms);
    let share_over = |bound: f64, values: &[f64]| {
        values.iter().filter(|&&v| v > bound).count() as f64 / values.len() as f64
    };
    let interval_ms = setting.interval.map(ms);
    let stage = |f: fn(&crate::bench::load::StageTimes) -> Duration| {
        let values: Vec<f64> = record.batches.iter().map(|b| ms(f(&b.times))).collect();
        LatencyStats::from_ms(&values).expect("a served query was in a batch")
    };
    let mut sizes: Vec<BatchCount> = Vec::new();
    for batch in &record.batches {
        match sizes.iter_mut().find(|c| c.size == batch.samples) {
            Some(count) => count.batches += 1,
            None => sizes.push(BatchCount { size: batch.samples, batches: 1 }),
        }
    }
    sizes.sort_by_key(|c| c.size);
    let samples: usize = record.batches.iter().map(|b| b.samples).sum();
    let elapsed = measured.elapsed.as_secs_f64();
    let scenario = ScenarioRun {
        name: setting.name,
        arrivals: setting.arrivals,
        queries: sent.len(),
        unserved: record.unserved,
        samples_per_query: sent.first().map_or(1, |q| q.samples),
        workers: setting.load.workers,
        max_batch: setting.batching.max_batch,
        max_queue_delay_ms: ms(setting.batching.max_queue_delay),
        offered_qps: setting.offered_qps,
        achieved_qps: record.queries.len() as f64 / span,
        queue_ms: Tail::from_ms(&queued),
        batch_sizes: sizes,
        latency_bound_ms: bound_ms,
        over_bound: bound_ms.map(|b| share_over(b, &latencies)),
        interval_ms,
        missed_intervals: interval_ms.map(|i| latencies.iter().filter(|&&l| l > i).count()),
        latency_ms,
    };
    Some(BatchRun {
        batch: setting.batching.max_batch,
        load_ms: measured.load_ms,
        first_inference_ms: measured.first_inference_ms,
        iterations: record.batches.len(),
        elapsed_s: elapsed,
        inferences_per_s: record.batches.len() as f64 / elapsed,
        frames_per_s: samples as f64 / elapsed,
        peak_rss_bytes: memory::peak_rss_bytes(),
        power: measured.power,
        telemetry: measured.telemetry,
        stages: Stages {
            preprocess: stage(|t| t.preprocess),
            inference: stage(|t| t.inference),
            postprocess: stage(|t| t.postprocess),
            end_to_end: LatencyStats::from_ms(&latencies)?,
        },
        end_to_end_cdf_ms: percentile_curve(&latencies),
        stream: None,
        device: DeviceStages::from_timings(measured.device),
        scenario: Some(scenario),
    })
}
