//! `edgert doctor --json` results read back, for `report merge` to list a fleet's boards: what
//! each board is, and which of its checks failed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::read::{printable, RawHost, RawProvenance};
use crate::{Error, Result};

pub const SCHEMA: &str = "edgert.doctor/1";

#[derive(Debug, Clone)]
pub struct DoctorFile {
    pub path: PathBuf,
    /// The board, or the CPU on a machine that is not a board.
    pub board: String,
    pub l4t: Option<String>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// `area check` of each failed check.
    pub failures: Vec<String>,
}

#[derive(Deserialize)]
struct Raw {
    host: RawHost,
    provenance: RawProvenance,
    checks: Vec<RawCheck>,
}

#[derive(Deserialize)]
struct RawCheck {
    area: String,
    name: String,
    status: String,
}

impl DoctorFile {
    /// A doctor report, already known to be of `SCHEMA`; counts are taken from its checks.
    pub fn from_value(path: &Path, value: serde_json::Value) -> Result<DoctorFile> {
        let raw: Raw = serde_json::from_value(value)
            .map_err(|e| Error::input(path, format!("malformed {SCHEMA} report: {e}")))?;
        let count = |status: &str| raw.checks.iter().filter(|c| c.status == status).count();
        if let Some(c) = raw.checks.iter().find(|c| !matches!(c.status.as_str(), "pass" | "fail" | "skip")) {
            return Err(Error::input(
                path,
                format!("check '{} {}' has status '{}'", c.area, c.name, c.status),
            ));
        }
        Ok(DoctorFile {
            path: path.to_owned(),
            board: printable(raw.provenance.board.unwrap_or(raw.host.cpu)),
            l4t: raw.provenance.l4t.map(printable),
            passed: count("pass"),
            failed: count("fail"),
            skipped: count("skip"),
            failures: raw
                .checks
                .iter()
                .filter(|c| c.status == "fail")
                .map(|c| printable(format!("{} {}", c.area, c.name)))
                .collect(),
        })
    }
}

/// One markdown table, a row per doctor report.
pub fn markdown(files: &[DoctorFile]) -> String {
    let mut out =
        String::from("| doctor report | board | L4T | passed | failed | skipped | failed checks |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for f in files {
        let name = f.path.file_name().map_or(String::new(), |n| printable(n.to_string_lossy().into_owned()));
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} |\n",
            f.board,
            f.l4t.as_deref().unwrap_or("n/a"),
            f.passed,
            f.failed,
            f.skipped,
            if f.failures.is_empty() { "none".to_string() } else { f.failures.join(", ") }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(checks: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "schema": SCHEMA,
            "host": { "cpu": "Cortex-A78AE" },
            "provenance": { "board": "NVIDIA Jetson Orin Nano Developer Kit", "l4t": "36.3.0" },
            "checks": checks,
        })
    }

    #[test]
    fn counts_and_failed_checks_come_from_the_checks_and_fill_a_row() {
        let checks = serde_json::json!([
            { "area": "gpu", "name": "memory", "status": "pass" },
            { "area": "tensorrt", "name": "fp16 engine", "status": "fail" },
            { "area": "cameras", "name": "/dev/video0", "status": "fail" },
            { "area": "power", "name": "sensors", "status": "skip" },
        ]);
        let file = DoctorFile::from_value(Path::new("reports/orin-01.doctor.json"), report(checks)).unwrap();
        assert_eq!((file.passed, file.failed, file.skipped), (1, 2, 1));
        let table = markdown(&[file]);
        assert!(
            table.contains("| orin-01.doctor.json | NVIDIA Jetson Orin Nano Developer Kit | 36.3.0 | 1 | 2 | 1 | tensorrt fp16 engine, cameras /dev/video0 |"),
            "{table}"
        );
    }

    #[test]
    fn an_unknown_status_or_a_missing_field_is_refused_naming_the_file() {
        let odd = report(serde_json::json!([{ "area": "gpu", "name": "memory", "status": "maybe" }]));
        let err = DoctorFile::from_value(Path::new("a.json"), odd).unwrap_err().to_string();
        assert!(err.contains("a.json") && err.contains("'maybe'"), "{err}");
        let missing = serde_json::json!({ "schema": SCHEMA, "checks": [] });
        let err = DoctorFile::from_value(Path::new("b.json"), missing).unwrap_err().to_string();
        assert!(err.contains("b.json") && err.contains("malformed edgert.doctor/1"), "{err}");
    }
}
