//! Writing a bench report: a table for people, CSV and JSON for tools.

use std::path::Path;

use super::report::BenchReport;
use crate::{Error, Result};

pub fn text(report: &BenchReport) -> String {
    let mut out = String::new();
    let m = &report.model;
    out += &format!(
        "model {} ({}, {}, sha256 {}), backend {}, {} thread(s), input {}\n",
        m.path,
        m.task,
        m.precision,
        &m.sha256[..12],
        report.backend.name,
        report.threads,
        report.input
    );
    out += &format!("model read {:.1} ms\n", report.model_read_ms);
    for run in &report.runs {
        out += &format!(
            "\nbatch {}: {} iterations in {:.2} s; load {:.1} ms, first inference {:.1} ms, peak RSS {}\n",
            run.batch,
            run.iterations,
            run.elapsed_s,
            run.load_ms,
            run.first_inference_ms,
            run.peak_rss_bytes.map_or("n/a".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0))
        );
        out += &format!(
            "  {:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n",
            "stage (ms)", "min", "mean", "p50", "p90", "p95", "p99", "max", "CoV"
        );
        for (name, s) in run.stages.named() {
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
        out += &power_line(&run.power);
    }
    if report.runs.len() > 1 {
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
    std::fs::write(path, json + "\n")
        .map_err(|e| Error::Write { path: path.to_owned(), reason: e.to_string() })
}

/// One row per batch size and stage.
pub fn write_csv(report: &BenchReport, path: &Path) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| Error::Write { path: path.to_owned(), reason: e.to_string() };
    let mut writer = csv::Writer::from_path(path).map_err(|e| fail(&e))?;
    writer
        .write_record([
            "batch",
            "stage",
            "count",
            "min_ms",
            "mean_ms",
            "p50_ms",
            "p90_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "cov",
            "inferences_per_s",
            "frames_per_s",
        ])
        .map_err(|e| fail(&e))?;
    for run in &report.runs {
        for (stage, s) in run.stages.named() {
            let row = [
                run.batch.to_string(),
                stage.to_string(),
                s.count.to_string(),
                s.min_ms.to_string(),
                s.mean_ms.to_string(),
                s.p50_ms.to_string(),
                s.p90_ms.to_string(),
                s.p95_ms.to_string(),
                s.p99_ms.to_string(),
                s.max_ms.to_string(),
                s.cov.to_string(),
                run.inferences_per_s.to_string(),
                run.frames_per_s.to_string(),
            ];
            writer.write_record(&row).map_err(|e| fail(&e))?;
        }
    }
    writer.flush().map_err(|e| fail(&e))?;
    Ok(())
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
