//! A scenario's lines in the bench table: how each run's queries were sent and what their latency
//! was from arrival, then the server sweep, the peak and the best offline batch.

use super::{Kind, ScenarioRun};
use crate::bench::report::{BenchReport, PeakReport};

/// After a run's stage table.
pub fn lines(s: &ScenarioRun) -> String {
    let t = &s.latency_ms;
    let bound = match (s.latency_bound_ms, s.over_bound) {
        (Some(b), Some(o)) => format!("; {:.2} % over the {b} ms bound", o * 100.0),
        _ => String::new(),
    };
    let unserved =
        if s.unserved > 0 { format!(" ({} not served: stopped)", s.unserved) } else { String::new() };
    match s.name {
        Kind::SingleStream => format!("  single-stream: p90 {:.3} ms (MLPerf's figure), p99 {:.3} ms{bound}\n", t.p90_ms, t.p99_ms),
        Kind::MultiStream => format!(
            "  multi-stream: {} samples every {} ms, {} queries{unserved}: p99 {:.3} ms (MLPerf's figure), {} missed their interval{bound}\n",
            s.samples_per_query,
            s.interval_ms.unwrap_or(0.0),
            s.queries,
            t.p99_ms,
            s.missed_intervals.unwrap_or(0)
        ),
        Kind::Offline => format!(
            "  offline: {} samples at once over {} worker(s){unserved}: {:.1} samples/s\n",
            s.queries, s.workers, s.achieved_qps
        ),
        Kind::Server => format!(
            "  server: {} queries{unserved} ({}), offered {}, achieved {:.1} QPS; {} worker(s), max batch {}, max queue delay {} ms\n    \
             latency from arrival: p50 {:.3}, p90 {:.3}, p99 {:.3} (95 % CI {:.3}-{:.3}), p99.9 {:.3}, max {:.3} ms{bound}\n    \
             queued: p50 {:.3}, p99 {:.3} ms; batches {}\n",
            s.queries,
            s.arrivals,
            s.offered_qps.map_or("n/a".into(), |q| format!("{q:.1} QPS")),
            s.achieved_qps,
            s.workers,
            s.max_batch,
            s.max_queue_delay_ms,
            t.p50_ms,
            t.p90_ms,
            t.p99_ms,
            t.p99_low_ms,
            t.p99_high_ms,
            t.p999_ms,
            t.max_ms,
            s.queue_ms.as_ref().map_or(0.0, |q| q.p50_ms),
            s.queue_ms.as_ref().map_or(0.0, |q| q.p99_ms),
            s.batch_sizes.iter().map(|c| format!("{}x{}", c.batches, c.size)).collect::<Vec<_>>().join(" ")
        ),
    }
}

/// What a run is called: its batch, or its scenario and load.
pub fn run_title(batch: usize, scenario: Option<&ScenarioRun>) -> String {
    let Some(s) = scenario else { return format!("batch {batch}") };
    match s.name {
        Kind::SingleStream => format!("batch {batch}"),
        Kind::Offline => format!("offline, batch {batch}"),
        Kind::MultiStream => {
            format!("multi-stream, {} samples every {} ms", s.samples_per_query, s.interval_ms.unwrap_or(0.0))
        }
        Kind::Server => format!(
            "server at {}, max batch {batch}",
            s.offered_qps.map_or("n/a".into(), |q| format!("{q:.1} QPS")),
        ),
    }
}

fn mean_batch(s: &ScenarioRun) -> f64 {
    let batches: usize = s.batch_sizes.iter().map(|c| c.batches).sum();
    let samples: usize = s.batch_sizes.iter().map(|c| c.batches * c.size).sum();
    samples as f64 / batches.max(1) as f64
}

fn peak_line(peak: &PeakReport) -> String {
    let search = format!(
        "{} steps of at least {} queries, precision {} %",
        peak.steps,
        peak.min_queries,
        peak.precision * 100.0
    );
    match (peak.qps, peak.converged) {
        (Some(qps), true) => format!(
            "\npeak: {qps:.1} QPS with p99 within {} ms ({} QPS did not; {search})\n",
            peak.latency_bound_ms,
            peak.failed_at_qps.map_or("n/a".into(), |f| format!("{f:.1}"))
        ),
        (Some(qps), false) => format!(
            "\npeak: not found to the precision; {qps:.1} QPS kept p99 within {} ms ({search})\n",
            peak.latency_bound_ms
        ),
        (None, _) => format!(
            "\npeak: none; p99 was over {} ms at every rate tried, down to {} QPS ({search})\n",
            peak.latency_bound_ms,
            peak.failed_at_qps.map_or("n/a".into(), |f| format!("{f:.3}"))
        ),
    }
}

/// After every run: the server's sweep, the peak and the best offline batch.
pub fn summary(report: &BenchReport) -> String {
    let mut out = String::new();
    let server: Vec<_> =
        report.runs.iter().filter_map(|r| r.scenario.as_ref()).filter(|s| s.name == Kind::Server).collect();
    if server.len() > 1 {
        out += "\nserver sweep (latency from each query's arrival)\n  offered QPS  achieved QPS   p50 (ms)   p99 (ms)  p99.9 (ms)  mean batch  over bound\n";
        for s in &server {
            out += &format!(
                "  {:>11} {:>13.1} {:>10.3} {:>10.3} {:>11.3} {:>11.2} {:>10}\n",
                s.offered_qps.map_or("n/a".into(), |q| format!("{q:.1}")),
                s.achieved_qps,
                s.latency_ms.p50_ms,
                s.latency_ms.p99_ms,
                s.latency_ms.p999_ms,
                mean_batch(s),
                s.over_bound.map_or("-".into(), |o| format!("{:.2} %", o * 100.0))
            );
        }
    }
    if let Some(peak) = &report.peak {
        out += &peak_line(peak);
    }
    let offline = report.runs.iter().filter(|r| r.kind() == Kind::Offline);
    if let Some(best) = offline.max_by(|a, b| a.frames_per_s.total_cmp(&b.frames_per_s)) {
        out += &format!("\noffline: best {:.1} samples/s at batch {}\n", best.frames_per_s, best.batch);
    }
    out
}
