//! `report merge`: one row per report and batch size, across boards and runs, as a markdown table
//! for people and CSV for spreadsheets.

use std::path::Path;

use serde::Serialize;

use super::doctor::{self, DoctorFile};
use super::read::{read_json, BenchFile};
use crate::bench::report::cpu_list;
use crate::choice::Choice;
use crate::Result;

/// What `report merge` reads: bench reports, and doctor results listed beside them.
pub enum Merged {
    Bench(BenchFile),
    Doctor(DoctorFile),
}

pub fn read_for_merge(path: &Path) -> Result<Merged> {
    let value = read_json(path)?;
    if value.get("schema").and_then(|s| s.as_str()) == Some(doctor::SCHEMA) {
        return DoctorFile::from_value(path, value).map(Merged::Doctor);
    }
    BenchFile::from_value(path, value).map(Merged::Bench)
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub file: String,
    pub board: String,
    pub l4t: String,
    pub power_mode: String,
    pub model: String,
    pub precision: String,
    pub backend: String,
    pub threads: usize,
    /// The CPUs the threads were pinned to (`0,1`); empty where the OS placed them.
    pub pinned_cpus: String,
    /// `single-stream` for reports before scenarios.
    pub scenario: &'static str,
    pub batch: usize,
    /// The server's and multi-stream's offered rate; null for the others.
    pub offered_qps: Option<f64>,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: Option<f64>,
    pub cov: f64,
    pub frames_per_s: f64,
    pub peak_rss_mib: Option<f64>,
    pub mean_power_w: Option<f64>,
    pub energy_per_inference_mj: Option<f64>,
}

pub fn rows(files: &[BenchFile]) -> Vec<Row> {
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    files
        .iter()
        .flat_map(|f| {
            f.runs.iter().map(move |run| {
                let e2e = &run.stages.end_to_end;
                Row {
                    file: f.path.display().to_string(),
                    board: f.board.clone(),
                    l4t: text(&f.l4t),
                    power_mode: text(&f.power_mode),
                    model: f.model_name(),
                    precision: f.precision.clone(),
                    backend: f.backend.clone(),
                    threads: f.threads,
                    pinned_cpus: f.pinned_cpus.as_deref().map_or(String::new(), cpu_list),
                    scenario: run.scenario.as_ref().map_or("single-stream", |s| s.name.name()),
                    batch: run.batch,
                    offered_qps: run.scenario.as_ref().and_then(|s| s.offered_qps),
                    p50_ms: e2e.p50_ms,
                    p90_ms: e2e.p90_ms,
                    p99_ms: e2e.p99_ms,
                    p999_ms: run.scenario.as_ref().map(|s| s.latency_ms.p999_ms),
                    cov: e2e.cov,
                    frames_per_s: run.frames_per_s,
                    peak_rss_mib: run.peak_rss_bytes.map(|b| b as f64 / 1_048_576.0),
                    mean_power_w: run.power.mean_w,
                    energy_per_inference_mj: run.power.energy_per_inference_mj,
                }
            })
        })
        .collect()
}

pub fn markdown(rows: &[Row]) -> String {
    let opt = |v: Option<f64>, digits: usize| v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"));
    let mut out = String::from(
        "| board | L4T | power mode | model | precision | backend | threads | scenario | batch | offered QPS | p50 ms | p90 ms | p99 ms | p99.9 ms | CoV | frames/s | peak RSS MiB | power W | mJ/inference |\n\
         |---|---|---|---|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {:.1} % | {:.1} | {} | {} | {} |\n",
            r.board.replace('|', "/"),
            r.l4t,
            r.power_mode.replace('|', "/"),
            r.model,
            r.precision,
            r.backend,
            if r.pinned_cpus.is_empty() { r.threads.to_string() } else { format!("{} pinned", r.threads) },
            r.scenario,
            r.batch,
            opt(r.offered_qps, 1),
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            opt(r.p999_ms, 3),
            r.cov * 100.0,
            r.frames_per_s,
            opt(r.peak_rss_mib, 1),
            opt(r.mean_power_w, 2),
            opt(r.energy_per_inference_mj, 1),
        );
    }
    out
}

pub fn write_csv(rows: &[Row], out: impl std::io::Write) -> csv::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}
