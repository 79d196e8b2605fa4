//! `report compare`: every figure of two reports, run by run (matched by batch, or by scenario and
//! offered load), with its change. A change smaller
//! than the runs' own spread (the larger end-to-end CoV of the two runs) is marked as noise: a
//! 2 % "gain" on a run whose iterations vary by 5 % says nothing.

use serde::Serialize;

use super::read::{BenchFile, Run};

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    Same,
    /// Changed, but by less than the runs' own spread.
    Noise,
    /// One side has no figure (no power sensor, say).
    Missing,
}

#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The run: `batch 4`, `server at 50.0 QPS, max batch 4`.
    pub run: String,
    pub batch: usize,
    pub metric: &'static str,
    pub unit: &'static str,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub change_pct: Option<f64>,
    /// The spread a change must exceed to count, in percent; null where the run measures none.
    pub spread_pct: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub before: String,
    pub after: String,
    /// Differences between the two that make the comparison less direct (model, board, backend).
    pub notes: Vec<String>,
    pub changes: Vec<Change>,
    /// Runs (batch sizes, offered loads) measured on one side only.
    pub unmatched_batches: Vec<String>,
}

struct Metric {
    name: &'static str,
    unit: &'static str,
    better: Better,
    /// Whether the run's latency spread applies (memory has no per-iteration spread).
    noisy: bool,
    value: fn(&Run) -> Option<f64>,
}

const METRICS: [Metric; 15] = [
    Metric {
        name: "min",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.min_ms),
    },
    Metric {
        name: "mean",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.mean_ms),
    },
    Metric {
        name: "p50",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.p50_ms),
    },
    Metric {
        name: "p90",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.p90_ms),
    },
    Metric {
        name: "p95",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.p95_ms),
    },
    Metric {
        name: "p99",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.p99_ms),
    },
    Metric {
        name: "p99.9",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| r.scenario.as_ref().map(|s| s.latency_ms.p999_ms),
    },
    Metric {
        name: "max",
        unit: "ms",
        better: Better::Lower,
        noisy: true,
        value: |r| Some(r.stages.end_to_end.max_ms),
    },
    Metric {
        name: "achieved QPS",
        unit: "1/s",
        better: Better::Higher,
        noisy: true,
        value: |r| r.scenario.as_ref().filter(|_| r.is_server()).map(|s| s.achieved_qps),
    },
    Metric {
        name: "over bound",
        unit: "%",
        better: Better::Lower,
        noisy: false,
        value: |r| r.scenario.as_ref().and_then(|s| s.over_bound).map(|o| o * 100.0),
    },
    Metric {
        name: "inferences/s",
        unit: "1/s",
        better: Better::Higher,
        noisy: true,
        value: |r| Some(r.inferences_per_s),
    },
    Metric {
        name: "frames/s",
        unit: "1/s",
        better: Better::Higher,
        noisy: true,
        value: |r| Some(r.frames_per_s),
    },
    Metric {
        name: "peak RSS",
        unit: "MiB",
        better: Better::Lower,
        noisy: false,
        value: |r| r.peak_rss_bytes.map(|b| b as f64 / 1_048_576.0),
    },
    Metric { name: "mean power", unit: "W", better: Better::Lower, noisy: true, value: |r| r.power.mean_w },
    Metric {
        name: "energy/inference",
        unit: "mJ",
        better: Better::Lower,
        noisy: true,
        value: |r| r.power.energy_per_inference_mj,
    },
];

pub fn compare(before: &BenchFile, after: &BenchFile) -> Comparison {
    let mut notes = Vec::new();
    if before.model_sha256 != after.model_sha256 {
        notes.push(format!("different models: {} and {}", before.model_name(), after.model_name()));
    }
    for (what, a, b) in
        [("boards", &before.board, &after.board), ("backends", &before.backend, &after.backend)]
    {
        if a != b {
            notes.push(format!("different {what}: {a} and {b}"));
        }
    }
    if before.threads != after.threads {
        notes.push(format!("different thread counts: {} and {}", before.threads, after.threads));
    } else if before.threads > 1 && before.pinned_cpus.is_some() != after.pinned_cpus.is_some() {
        notes.push(format!(
            "different threads: {} and {}",
            before.threads_described(),
            after.threads_described()
        ));
    }
    let mut changes = Vec::new();
    let mut unmatched = Vec::new();
    for b in &before.runs {
        let Some(a) = after.runs.iter().find(|a| a.title() == b.title()) else {
            unmatched.push(format!("{} only in {}", b.title(), before.path.display()));
            continue;
        };
        let spread = b.stages.end_to_end.cov.max(a.stages.end_to_end.cov);
        for m in &METRICS {
            let (before, after) = ((m.value)(b), (m.value)(a));
            // A figure neither run has (p99.9 of a report before scenarios) is no change to show.
            if before.is_some() || after.is_some() {
                changes.push(change(b, m, before, after, m.noisy.then_some(spread)));
            }
        }
    }
    for a in after.runs.iter().filter(|a| !before.runs.iter().any(|b| b.title() == a.title())) {
        unmatched.push(format!("{} only in {}", a.title(), after.path.display()));
    }
    Comparison {
        before: before.path.display().to_string(),
        after: after.path.display().to_string(),
        notes,
        changes,
        unmatched_batches: unmatched,
    }
}

/// A change smaller than this, in percent, is no change: below what any run repeats to.
const SAME_PCT: f64 = 0.5;

fn change(run: &Run, m: &Metric, before: Option<f64>, after: Option<f64>, spread: Option<f64>) -> Change {
    let change_pct = match (before, after) {
        (Some(b), Some(a)) if b != 0.0 => Some((a - b) / b * 100.0),
        (Some(b), Some(a)) if a == b => Some(0.0),
        _ => None,
    };
    let verdict = match (change_pct, before, after) {
        // From zero (no query over the bound before): no percentage, but a direction.
        (None, Some(b), Some(a)) if (a < b) == (m.better == Better::Lower) => Verdict::Better,
        (None, Some(_), Some(_)) => Verdict::Worse,
        (None, _, _) => Verdict::Missing,
        (Some(c), _, _) if c.abs() < SAME_PCT => Verdict::Same,
        (Some(c), _, _) if spread.is_some_and(|s| c.abs() < s * 100.0) => Verdict::Noise,
        (Some(c), _, _) if (c < 0.0) == (m.better == Better::Lower) => Verdict::Better,
        (Some(_), _, _) => Verdict::Worse,
    };
    Change {
        run: run.title(),
        batch: run.batch,
        metric: m.name,
        unit: m.unit,
        before,
        after,
        change_pct,
        spread_pct: spread.map(|s| s * 100.0),
        verdict,
    }
}

pub fn text(c: &Comparison) -> String {
    let mut out = format!("before {}\nafter  {}\n", c.before, c.after);
    for note in &c.notes {
        out += &format!("note: {note}\n");
    }
    let num = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let mut run = None;
    for ch in &c.changes {
        if run != Some(&ch.run) {
            run = Some(&ch.run);
            out += &format!(
                "\n{}\n  {:<18} {:>12} {:>12} {:>9} {:>8}  verdict\n",
                ch.run, "figure", "before", "after", "change", "spread"
            );
        }
        out += &format!(
            "  {:<18} {:>12} {:>12} {:>9} {:>8}  {}\n",
            format!("{} ({})", ch.metric, ch.unit),
            num(ch.before),
            num(ch.after),
            ch.change_pct.map_or("n/a".into(), |p| format!("{p:+.1} %")),
            ch.spread_pct.map_or("-".into(), |s| format!("{s:.1} %")),
            verdict_word(ch.verdict)
        );
    }
    for u in &c.unmatched_batches {
        out += &format!("{u}\n");
    }
    out
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Same => "same",
        Verdict::Noise => "noise (within the runs' spread)",
        Verdict::Missing => "not measured on both",
    }
}
