//! Writing a bench report: a table for people, CSV and JSON for tools.

use std::io::Write;
use std::path::Path;

use super::report::{cpu_list, BatchRun, BenchReport};
use super::scenario::{self, text::run_title, Kind};
use crate::choice::Choice;
use crate::metrics::stats::LatencyStats;
use crate::metrics::telemetry::run::RunTelemetry;
use crate::{Error, Result};

pub fn text(report: &BenchReport) -> String {
    let mut out = String::new();
    let m = &report.model;
    out += &format!(
        "model {} ({}, {}, sha256 {}), backend {}, {} thread(s){}, input {}\n",
        m.path,
        m.task,
        m.precision,
        &m.sha256[..12],
        report.backend.name,
        report.threads,
        report
            .pinned_cpus
            .as_ref()
            .map_or(String::new(), |cpus| format!(" pinned to CPUs {}", cpu_list(cpus))),
        report.input
    );
    let p = &report.provenance;
    let or_na = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    out += &format!(
        "board {}, L4T {}, power mode {}, CUDA {}, TensorRT {}; edgert {} (git {})\n",
        p.board.as_deref().unwrap_or("none"),
        or_na(&p.l4t),
        or_na(&p.nvpmodel),
        or_na(&p.cuda),
        or_na(&p.tensorrt),
        p.edgert_version,
        p.edgert_git
    );
    out += &format!("model read {:.1} ms\n", report.model_read_ms);
    for run in &report.runs {
        out += &format!(
            "\n{}: {} {} in {:.2} s; load {:.1} ms, first inference {:.1} ms, peak RSS {}\n",
            run_title(run.batch, run.scenario.as_ref()),
            run.iterations,
            if run.kind() == Kind::SingleStream { "iterations" } else { "batches" },
            run.elapsed_s,
            run.load_ms,
            run.first_inference_ms,
            run.peak_rss_bytes.map_or("n/a".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0))
        );
        out += &format!(
            "  {:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n",
            "stage (ms)", "min", "mean", "p50", "p90", "p95", "p99", "max", "CoV"
        );
        let device = run.device.iter().flat_map(|d| d.named());
        for (name, s) in run.stages.named().into_iter().chain(device) {
            out += &format!(
                "  {:<12} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6.1}%\n",
                name,
                s.min_ms,
                s.mean_ms,
                s.p50_ms,
                s.p90_ms,
                s.p95_ms,
                s.p99_ms,
                s.max_ms,
                s.cov * 100.0
            );
        }
        out += &format!(
            "  throughput {:.1} inferences/s, {:.1} frames/s\n",
            run.inferences_per_s, run.frames_per_s
        );
        if let Some(s) = &run.stream {
            out += &stream_line(s);
            if let Some(output) = &s.output {
                out += &format!("  output: {}\n", output.summary());
            }
        }
        if let Some(s) = &run.scenario {
            out += &scenario::text::lines(s);
        }
        out += &power_line(&run.power);
        out += &telemetry_lines(&run.telemetry);
    }
    out += &scenario::text::summary(report);
    let batch_runs = report.runs.iter().filter(|r| r.kind() != Kind::Server).count();
    if batch_runs > 1 {
        out += "\nbatch sweep\n  batch   frames/s   p99 end-to-end (ms)   p99 per frame (ms)\n";
        for run in &report.runs {
            let p99 = run.stages.end_to_end.p99_ms;
            out += &format!(
                "  {:>5} {:>10.1} {:>21.3} {:>20.3}\n",
                run.batch,
                run.frames_per_s,
                p99,
                p99 / run.batch as f64
            );
        }
    }
    out
}

/// Writes any report as pretty JSON with a final newline.
pub fn write_json(report: &impl serde::Serialize, path: &Path) -> Result<()> {
    let json = serde_json::to_string_pretty(report).expect("reports serialize");
    crate::outfile::write_atomically(path, |file| writeln!(file, "{json}"))
        .map_err(|e| Error::Write { path: path.to_owned(), reason: e.to_string() })
}

/// A column of the CSV: its header and how to read it from a run and a stage.
type Column = (&'static str, fn(&BenchReport, &BatchRun, &LatencyStats) -> String);

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// Stage statistics, then the run's throughput, memory, power, clocks, temperatures and provenance
/// (repeated on each stage's row, so every row stands alone in a spreadsheet).
const COLUMNS: &[Column] = &[
    ("batch", |_, r, _| r.batch.to_string()),
    ("stage", |_, _, _| String::new()),
    ("count", |_, _, s| s.count.to_string()),
    ("min_ms", |_, _, s| s.min_ms.to_string()),
    ("mean_ms", |_, _, s| s.mean_ms.to_string()),
    ("p50_ms", |_, _, s| s.p50_ms.to_string()),
    ("p90_ms", |_, _, s| s.p90_ms.to_string()),
    ("p95_ms", |_, _, s| s.p95_ms.to_string()),
    ("p99_ms", |_, _, s| s.p99_ms.to_string()),
    ("max_ms", |_, _, s| s.max_ms.to_string()),
    ("cov", |_, _, s| s.cov.to_string()),
    ("inferences_per_s", |_, r, _| r.inferences_per_s.to_string()),
    ("frames_per_s", |_, r, _| r.frames_per_s.to_string()),
    ("scenario", |_, r, _| opt(r.scenario.as_ref().map(|s| s.name.name()))),
    ("offered_qps", |_, r, _| opt(r.scenario.as_ref().and_then(|s| s.offered_qps))),
    ("achieved_qps", |_, r, _| opt(r.scenario.as_ref().map(|s| s.achieved_qps))),
    ("query_p999_ms", |_, r, _| opt(r.scenario.as_ref().map(|s| s.latency_ms.p999_ms))),
    ("over_bound", |_, r, _| opt(r.scenario.as_ref().and_then(|s| s.over_bound))),
    ("source", |b, r, _| r.stream.as_ref().map_or(String::new(), |_| b.input.clone())),
    ("source_fps", |_, r, _| opt(r.stream.as_ref().and_then(|s| s.source_fps))),
    ("frames_dropped", |_, r, _| {
        opt(r.stream.as_ref().map(|s| s.dropped_before_preprocess + s.dropped_before_inference))
    }),
    ("peak_rss_bytes", |_, r, _| opt(r.peak_rss_bytes)),
    ("power_mean_w", |_, r, _| opt(r.power.mean_w)),
    ("power_peak_w", |_, r, _| opt(r.power.peak_w)),
    ("energy_per_inference_mj", |_, r, _| opt(r.power.energy_per_inference_mj)),
    ("energy_above_idle_per_inference_mj", |_, r, _| opt(r.power.energy_above_idle_per_inference_mj)),
    ("memory_used_max_bytes", |_, r, _| opt(r.telemetry.memory_used_max_bytes)),
    ("nvmap_used_max_bytes", |_, r, _| opt(r.telemetry.nvmap_used_max_bytes)),
    ("swap_used_max_bytes", |_, r, _| opt(r.telemetry.swap_used_max_bytes)),
    ("gpu_load_mean_pct", |_, r, _| opt(r.telemetry.gpu_load_mean_pct)),
    ("gpu_mhz_min", |_, r, _| opt(r.telemetry.gpu_mhz.map(|g| g.min))),
    ("cpu_mhz_min", |_, r, _| opt(r.telemetry.cpu_mhz.iter().flatten().map(|c| c.min).reduce(f64::min))),
    ("clocks_locked", |_, r, _| opt(r.telemetry.clocks_locked)),
    ("temperature_max_c", |_, r, _| opt(r.telemetry.zones.iter().map(|z| z.max_c).reduce(f64::max))),
    ("throttled", |_, r, _| r.telemetry.throttled.to_string()),
    ("board", |b, _, _| opt(b.provenance.board.clone())),
    ("l4t", |b, _, _| opt(b.provenance.l4t.clone())),
    ("nvpmodel", |b, _, _| opt(b.provenance.nvpmodel.clone())),
    ("backend", |b, _, _| b.backend.name.clone()),
    ("precision", |b, _, _| b.model.precision.clone()),
    ("model_sha256", |b, _, _| b.model.sha256.clone()),
    ("edgert_git", |b, _, _| b.provenance.edgert_git.to_string()),
];

/// One row per batch size and stage.
pub fn write_csv(report: &BenchReport, path: &Path) -> Result<()> {
    let written = crate::outfile::write_atomically(path, |file| {
        let mut writer = csv::Writer::from_writer(file);
        writer.write_record(COLUMNS.iter().map(|c| c.0))?;
        for run in &report.runs {
            for (stage, stats) in run.stages.named() {
                let row = COLUMNS.iter().map(|(name, value)| match *name {
                    "stage" => stage.to_string(),
                    _ => value(report, run, stats),
                });
                writer.write_record(row)?;
            }
        }
        writer.flush()
    });
    written.map_err(|e| Error::Write { path: path.to_owned(), reason: e.to_string() })
}

/// The camera pipeline's frames: end to end above is then glass to glass.
fn stream_line(s: &crate::stream::StreamStats) -> String {
    format!(
        "  stream {} {} {}x{}: {} captured at {:.1} fps{}, {} predicted at {:.1} fps, {} dropped (drop {}, queue depth {}); end to end is glass to glass\n",
        s.source,
        s.format,
        s.width,
        s.height,
        s.frames_captured,
        s.capture_fps,
        s.source_fps.map_or(String::new(), |fps| format!(" (paced at {fps:.1})")),
        s.frames_processed,
        s.achieved_fps,
        s.dropped_before_preprocess + s.dropped_before_inference,
        s.drop_policy.name(),
        s.queue_depth
    )
}

/// Memory, clocks, GPU and temperatures of a run, in two lines.
fn telemetry_lines(t: &RunTelemetry) -> String {
    let mib = |b: u64| format!("{:.0} MiB", b as f64 / 1048576.0);
    let mut memory = format!(
        "  memory used max {}, swap max {}",
        t.memory_used_max_bytes.map_or("n/a".into(), mib),
        t.swap_used_max_bytes.map_or("n/a".into(), mib)
    );
    if let Some(nvmap) = t.nvmap_used_max_bytes {
        memory += &format!(", nvmap max {}", mib(nvmap));
    }
    if let Some(cpu) = t.process_cpu_ms_per_inference {
        memory += &format!("; process CPU {cpu:.2} ms per inference");
    }
    let locked = match t.clocks_locked {
        Some(true) => "locked",
        Some(false) => "not locked",
        None => "n/a",
    };
    let mut clocks = format!("  clocks {locked}");
    if let Some(g) = t.gpu_mhz {
        clocks += &format!(", GPU {:.0}-{:.0} MHz", g.min, g.max);
    }
    if let Some(load) = t.gpu_load_mean_pct {
        clocks += &format!(", GPU load {load:.0} % mean");
    }
    if let Some(hot) = t.zones.iter().max_by(|a, b| a.max_c.total_cmp(&b.max_c)) {
        clocks += &format!(", hottest {} {:.1} °C", hot.name, hot.max_c);
    }
    clocks += if t.throttled { ", THROTTLED" } else { ", not throttled" };
    format!("{memory}\n{clocks}\n")
}

fn power_line(p: &super::power::PowerReport) -> String {
    let watts = |w: Option<f64>| w.map_or("n/a".to_string(), |w| format!("{w:.2} W"));
    let mj = |e: Option<f64>| e.map_or("n/a".to_string(), |e| format!("{e:.2} mJ"));
    if !p.available {
        return format!("  power n/a: {}\n", p.reason.as_deref().unwrap_or("no sensors"));
    }
    let mut line = format!(
        "  power {} mean {}, peak {}, idle {}; {}/inference, {} above idle ({} samples)\n",
        p.total.as_deref().unwrap_or("total"),
        watts(p.mean_w),
        watts(p.peak_w),
        watts(p.idle_w),
        mj(p.energy_per_inference_mj),
        mj(p.energy_above_idle_per_inference_mj),
        p.samples
    );
    for rail in &p.rails {
        line += &format!("    {:<18} mean {}, peak {}\n", rail.name, watts(rail.mean_w), watts(rail.peak_w));
    }
    line
}
