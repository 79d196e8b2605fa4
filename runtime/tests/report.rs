//! `edgert report merge|compare|plot` on real bench reports from the fixture boards.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// Benches the digits MLP on a fixture board and writes the report into `dir` as `name`.
fn report_on(board: &str, batches: &str, dir: &Path, name: &str) -> (PathBuf, Value) {
    let (report, _, _) = bench_on_board(&fixture(board), &["--batch", batches]);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&report).unwrap()).unwrap();
    (path, report)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn merge_puts_boards_and_batches_in_one_table_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (orin, orin_report) = report_on("orin-nano-jp6", "1,4", dir.path(), "orin.json");
    let (xavier, _) = report_on("xavier-nx-jp5", "2", dir.path(), "xavier.json");
    let csv = dir.path().join("merged.csv");
    let out = edgert(&["report", "merge", arg(&orin), arg(&xavier), "--csv", arg(&csv)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("digits_mlp_nchw")).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(rows[0].contains("Orin Nano") && rows[0].contains("| 1 |"), "{}", rows[0]);
    assert!(rows[1].contains("| 4 |") && rows[2].contains("Xavier NX"), "{table}");

    let mut reader = csv::Reader::from_path(&csv).unwrap();
    let headers = reader.headers().unwrap().clone();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 3);
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let p99: f64 = records[1][column("p99_ms")].parse().unwrap();
    let expected = orin_report["runs"][1]["stages"]["end_to_end"]["p99_ms"].as_f64().unwrap();
    assert_eq!(p99, expected);
    assert_eq!(&records[1][column("batch")], "4");
    // The fixture board has power sensors, so energy is filled in, not left empty.
    assert!(records[0][column("energy_per_inference_mj")].parse::<f64>().unwrap() > 0.0);
}

#[test]
fn compare_calls_a_change_within_the_spread_noise_and_a_larger_one_worse() {
    let dir = tempfile::tempdir().unwrap();
    let (before, report) = report_on("orin-nano-jp6", "1", dir.path(), "before.json");
    let mut slower = report.clone();
    let e2e = &mut slower["runs"][0]["stages"]["end_to_end"];
    let cov = e2e["cov"].as_f64().unwrap();
    let p50 = e2e["p50_ms"].as_f64().unwrap();
    // p50 moves by half the spread (noise); p99 and throughput by twice it, and at least doubled:
    // p99 is worse, throughput better. Relative to the spread, as a loaded machine widens it.
    let clear = (2.0 * cov).max(1.0);
    e2e["p50_ms"] = Value::from(p50 * (1.0 + cov / 2.0));
    e2e["p99_ms"] = Value::from(e2e["p99_ms"].as_f64().unwrap() * (1.0 + clear));
    let run = &mut slower["runs"][0];
    run["frames_per_s"] = Value::from(run["frames_per_s"].as_f64().unwrap() * (1.0 + clear));
    let after = dir.path().join("after.json");
    std::fs::write(&after, slower.to_string()).unwrap();

    let out = edgert(&["report", "compare", arg(&before), arg(&after), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let comparison: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let change = |metric: &str| {
        let changes = comparison["changes"].as_array().unwrap();
        changes.iter().find(|c| c["metric"] == metric).unwrap().clone()
    };
    let verdict = |metric: &str| change(metric)["verdict"].as_str().unwrap().to_string();
    assert!(cov > 0.0, "a measured run has some spread");
    assert_eq!(verdict("p50"), "noise");
    assert_eq!(verdict("p99"), "worse");
    assert_eq!(verdict("frames/s"), "better");
    assert_eq!(verdict("peak RSS"), "same");
    assert_eq!(verdict("max"), "same");

    let text = stdout(&edgert(&["report", "compare", arg(&before), arg(&after)]));
    let p99_change = format!("{:+.1} %", change("p99")["change_pct"].as_f64().unwrap());
    assert!((change("p99")["change_pct"].as_f64().unwrap() - clear * 100.0).abs() < 1e-6);
    assert!(text.contains("p99 (ms)") && text.contains(&p99_change) && text.contains("worse"), "{text}");
}

#[test]
fn a_thread_sweep_is_told_apart_in_merge_compare_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let (one, _) = report_on("orin-nano-jp6", "1", dir.path(), "t1.json");
    let (mut report, _, _) =
        bench_on_board(&fixture("orin-nano-jp6"), &["--threads", "2", "--force-threads"]);
    assert_eq!(report["threads"], 2);
    // The same run as it reads pinned and not, whatever this machine's CPUs allowed.
    let (two, unpinned) = (dir.path().join("t2.json"), dir.path().join("t2-unpinned.json"));
    report["pinned_cpus"] = serde_json::json!([0, 1]);
    std::fs::write(&two, report.to_string()).unwrap();
    report["pinned_cpus"] = Value::Null;
    std::fs::write(&unpinned, report.to_string()).unwrap();

    let table = stdout(&edgert(&["report", "merge", arg(&one), arg(&two), arg(&unpinned)]));
    assert!(table.contains("| backend | threads | scenario | batch |"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("digits_mlp_nchw")).collect();
    assert!(
        rows[0].contains("| cpu | 1 | single-stream | 1 |")
            && rows[1].contains("| cpu | 2 pinned | single-stream | 1 |")
            && rows[2].contains("| cpu | 2 | single-stream | 1 |"),
        "{table}"
    );
    let csv = dir.path().join("sweep.csv");
    assert!(edgert(&["report", "merge", arg(&two), "--csv", arg(&csv)]).status.success());
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.contains(",threads,pinned_cpus,") && csv.contains(",2,\"0,1\","), "{csv}");

    let text = stdout(&edgert(&["report", "compare", arg(&one), arg(&two)]));
    assert!(text.contains("different thread counts: 1 and 2"), "{text}");
    let text = stdout(&edgert(&["report", "compare", arg(&unpinned), arg(&two)]));
    assert!(text.contains("different threads: 2 threads and 2 threads pinned"), "{text}");

    let svg = dir.path().join("sweep.svg");
    let out = edgert(&["report", "plot", arg(&one), arg(&two), arg(&unpinned), "--out", arg(&svg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("cpu · 2 threads pinned") && !svg.contains("cpu · 1 threads"),
        "legend of the sweep"
    );
    assert!(svg.contains("cpu · 2 threads, batch 1"), "the unpinned run's own legend");
}

#[test]
fn compare_lists_batches_measured_on_one_side_only() {
    let dir = tempfile::tempdir().unwrap();
    let (before, _) = report_on("xavier-nx-jp5", "1,2", dir.path(), "before.json");
    let (after, _) = report_on("xavier-nx-jp5", "2,8", dir.path(), "after.json");
    let out = edgert(&["report", "compare", arg(&before), arg(&after)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("batch 1 only in") && text.contains("batch 8 only in"), "{text}");
    assert!(text.contains("\nbatch 2\n"), "{text}");
}

#[test]
fn plot_draws_cdfs_and_batch_sweeps_into_one_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (orin, _) = report_on("orin-nano-jp6", "1,2,4", dir.path(), "orin.json");
    let (agx, _) = report_on("agx-orin-jp6", "1,2", dir.path(), "agx.json");
    let svg = dir.path().join("plot.svg");
    let out = edgert(&["report", "plot", arg(&orin), arg(&agx), "--out", arg(&svg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    // One 101-point CDF per run (5), and a marker per run in each of the two sweeps.
    let cdf_lines = text
        .split("<polyline")
        .skip(1)
        .filter(|element| {
            let points = element.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
            points.split_whitespace().count() == 101
        })
        .count();
    assert_eq!(cdf_lines, 5);
    assert_eq!(text.matches("<circle").count(), 2 * 5);
    for label in ["batch 4", "latency CDF", "frames/s", "p99 (ms)", "Orin Nano", "AGX Orin"] {
        assert!(text.contains(label), "no '{label}' in the plot");
    }
}

#[test]
fn a_report_of_another_schema_or_not_a_report_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (good, mut report) = report_on("orin-nano-jp6", "1", dir.path(), "good.json");
    report["schema"] = Value::from("edgert.bench/1");
    let old = dir.path().join("old.json");
    std::fs::write(&old, report.to_string()).unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    let missing = dir.path().join("missing.json");
    let cases: [(&[&str], &Path, &str); 4] = [
        (&["merge", arg(&good), arg(&old)], &old, "schema 'edgert.bench/1' is not edgert.bench/3"),
        (&["compare", arg(&old), arg(&good)], &old, "schema 'edgert.bench/1'"),
        (&["plot", arg(&junk), "--out", "x.svg"], &junk, "not a JSON report"),
        (&["merge", arg(&missing)], &missing, "No such file"),
    ];
    for (args, file, message) in cases {
        let out = edgert(&[&["report"], args].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(arg(file)) && err.contains(message), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let plot = common::missing("dir/plot.svg");
    let out = edgert(&["report", "plot", arg(&good), "--out", arg(&plot)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(arg(&plot)), "{}", stderr(&out));
}

/// A report of the schema before scenarios (`edgert.bench/2`: no `scenario` sections, no `peak`)
/// still reads, its runs single-stream, and compares with one of today's.
#[test]
fn a_report_from_before_scenarios_still_reads_as_single_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (now, mut report) = report_on("orin-nano-jp6", "1", dir.path(), "now.json");
    report["schema"] = Value::from("edgert.bench/2");
    report.as_object_mut().unwrap().remove("peak");
    for run in report["runs"].as_array_mut().unwrap() {
        run.as_object_mut().unwrap().remove("scenario");
    }
    let old = dir.path().join("old.json");
    std::fs::write(&old, report.to_string()).unwrap();
    let out = edgert(&["report", "merge", arg(&old)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("| single-stream | 1 | n/a |"), "{}", stdout(&out));
    let out = edgert(&["report", "compare", arg(&old), arg(&now)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("batch 1") && !text.contains("only in"), "{text}");
    // p99.9 is in today's report only: shown as not measured on both, not as a change.
    assert!(text.lines().any(|l| l.contains("p99.9") && l.contains("not measured on both")), "{text}");
}

/// No query over the bound before and a quarter after has no percentage, but is worse, not
/// "not measured".
#[test]
fn a_change_from_zero_has_a_direction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut report, _, _) = bench_on_board(&fixture("orin-nano-jp6"), &["--latency-bound-ms", "1000"]);
    assert_eq!(report["runs"][0]["scenario"]["over_bound"], 0.0);
    let before = dir.path().join("before.json");
    std::fs::write(&before, report.to_string()).unwrap();
    report["runs"][0]["scenario"]["over_bound"] = Value::from(0.25);
    let after = dir.path().join("after.json");
    std::fs::write(&after, report.to_string()).unwrap();
    let out = edgert(&["report", "compare", arg(&before), arg(&after)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text.lines().find(|l| l.contains("over bound")).unwrap();
    assert!(line.contains("n/a") && line.ends_with("worse"), "{line}");
}
