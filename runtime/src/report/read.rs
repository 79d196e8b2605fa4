//! Reading bench reports back: schemas `edgert.bench/3` and `/2` (which has no scenario
//! sections: its runs are single-stream), and only the fields the tables and plots use. A report
//! of another schema is refused by name rather than half-read.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::bench::report::{PeakReport, SCHEMA};
use crate::bench::scenario::text::run_title;
use crate::bench::scenario::{Kind, ScenarioRun};
use crate::choice::Choice;
use crate::metrics::stats::Stages;
use crate::{Error, Result};

/// One report file: where it ran, what ran, and its runs (one per batch size).
#[derive(Debug, Clone)]
pub struct BenchFile {
    pub path: PathBuf,
    /// The board (`/proc/device-tree/model`), or the CPU on a machine that is not a board.
    pub board: String,
    pub l4t: Option<String>,
    pub power_mode: Option<String>,
    pub model: String,
    pub model_sha256: String,
    pub precision: String,
    pub backend: String,
    /// Intra-op threads (`--threads`).
    pub threads: usize,
    /// The CPUs the `cpu` backend's threads were pinned to; None where the OS placed them (and in
    /// reports of edgert before pinning, which never pinned).
    pub pinned_cpus: Option<Vec<usize>>,
    pub runs: Vec<Run>,
    /// `--find-peak`'s result.
    pub peak: Option<PeakReport>,
}

/// The schema before scenarios, still read.
const SCHEMA_2: &str = "edgert.bench/2";

#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    pub batch: usize,
    pub iterations: usize,
    pub inferences_per_s: f64,
    pub frames_per_s: f64,
    pub peak_rss_bytes: Option<u64>,
    pub power: Power,
    pub stages: Stages,
    /// Absent in reports written before it was added; plots then use the percentiles.
    #[serde(default)]
    pub end_to_end_cdf_ms: Vec<f64>,
    /// Absent in `edgert.bench/2` and with `--source`.
    #[serde(default)]
    pub scenario: Option<ScenarioRun>,
}

impl Run {
    /// What the run is called, and what `report compare` matches runs by.
    pub fn title(&self) -> String {
        run_title(self.batch, self.scenario.as_ref())
    }

    pub fn is_server(&self) -> bool {
        self.scenario.as_ref().is_some_and(|s| s.name == Kind::Server)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Power {
    pub mean_w: Option<f64>,
    pub energy_per_inference_mj: Option<f64>,
}

#[derive(Deserialize)]
struct RawFile {
    host: RawHost,
    provenance: RawProvenance,
    model: RawModel,
    backend: RawBackend,
    threads: usize,
    #[serde(default)]
    pinned_cpus: Option<Vec<usize>>,
    runs: Vec<Run>,
    #[serde(default)]
    peak: Option<PeakReport>,
}

/// Where a report ran, as bench and doctor reports both write it.
#[derive(Deserialize)]
pub(super) struct RawHost {
    pub cpu: String,
}

#[derive(Deserialize)]
pub(super) struct RawProvenance {
    pub board: Option<String>,
    pub l4t: Option<String>,
    pub nvpmodel: Option<String>,
}

#[derive(Deserialize)]
struct RawModel {
    path: String,
    sha256: String,
    precision: String,
}

#[derive(Deserialize)]
struct RawBackend {
    name: String,
}

impl BenchFile {
    pub fn read(path: &Path) -> Result<BenchFile> {
        BenchFile::from_value(path, read_json(path)?)
    }

    pub(super) fn from_value(path: &Path, value: serde_json::Value) -> Result<BenchFile> {
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA | SCHEMA_2) => {}
            Some(other) => {
                return Err(Error::input(
                    path,
                    format!("schema '{other}' is not {SCHEMA} (or {SCHEMA_2}), the schemas this edgert reads; rerun the bench with this edgert"),
                ))
            }
            None => return Err(Error::input(path, format!("no 'schema' field: not an {SCHEMA} bench report"))),
        }
        let raw: RawFile = serde_json::from_value(value)
            .map_err(|e| Error::input(path, format!("malformed {SCHEMA} report: {e}")))?;
        if raw.runs.is_empty() {
            return Err(Error::input(path, "the report has no runs"));
        }
        for run in &raw.runs {
            check_latencies(run)
                .map_err(|reason| Error::input(path, format!("batch {}: {reason}", run.batch)))?;
        }
        Ok(BenchFile {
            path: path.to_owned(),
            board: printable(raw.provenance.board.unwrap_or(raw.host.cpu)),
            l4t: raw.provenance.l4t.map(printable),
            power_mode: raw.provenance.nvpmodel.map(printable),
            model: printable(raw.model.path),
            model_sha256: raw.model.sha256,
            precision: printable(raw.model.precision),
            backend: printable(raw.backend.name),
            threads: raw.threads,
            pinned_cpus: raw.pinned_cpus,
            runs: raw.runs,
            peak: raw.peak,
        })
    }

    /// The model's file name without folder or extension.
    pub fn model_name(&self) -> String {
        Path::new(&self.model).file_stem().map_or(self.model.clone(), |s| s.to_string_lossy().into_owned())
    }

    /// What a legend or a table row calls this report (its threads where more than one, and
    /// whether they were pinned, so the runs of a thread sweep tell apart).
    pub fn label(&self) -> String {
        let threads =
            if self.threads > 1 { format!(" · {}", self.threads_described()) } else { String::new() };
        format!("{} · {} · {}{threads}", self.board, self.model_name(), self.backend)
    }

    /// `2 threads pinned` or `2 threads`.
    pub fn threads_described(&self) -> String {
        let pinned = if self.pinned_cpus.is_some() { " pinned" } else { "" };
        format!("{} threads{pinned}", self.threads)
    }
}

pub(super) fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = crate::infile::read_to_string(path, crate::infile::REPORT)?;
    serde_json::from_str(&text).map_err(|e| Error::input(path, format!("not a JSON report: {e}")))
}

/// Latencies a run can have measured: finite and not negative. Anything else (an edited or
/// damaged report) would compare as a change that never happened.
fn check_latencies(run: &Run) -> std::result::Result<(), String> {
    for (stage, s) in run.stages.named() {
        let values = [s.min_ms, s.mean_ms, s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.max_ms, s.cov];
        if let Some(v) = values.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(format!("{stage} has a latency of {v}: not a duration"));
        }
    }
    if let Some(s) = &run.scenario {
        let rates = [Some(s.achieved_qps), s.offered_qps, s.over_bound, s.latency_bound_ms];
        let figures = s.latency_ms.values().into_iter().map(Some).chain(rates);
        if let Some(v) = figures.flatten().find(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!(
                "the {} scenario has a figure of {v}: not a latency or a rate",
                s.name.name()
            ));
        }
    }
    Ok(())
}

/// Text from a report as it can be shown in a table or a terminal: control characters (which a
/// path may hold) written as escapes.
pub(super) fn printable(text: String) -> String {
    if !text.chars().any(char::is_control) {
        return text;
    }
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// Reads every file; the first bad one is the error.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<BenchFile>> {
    paths.iter().map(|p| BenchFile::read(p)).collect()
}

/// Labels for several reports, made unique with the file name where two would read the same.
pub fn unique_labels(files: &[BenchFile]) -> Vec<String> {
    let labels: Vec<String> = files.iter().map(BenchFile::label).collect();
    labels
        .iter()
        .zip(files)
        .map(|(label, file)| {
            if labels.iter().filter(|l| *l == label).count() > 1 {
                let name = file.path.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
                format!("{label} ({name})")
            } else {
                label.clone()
            }
        })
        .collect()
}
