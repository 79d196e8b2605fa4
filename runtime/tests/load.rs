//! Latency under load. The scheduler against queueing theory, in real time, with workers whose
//! service time is known (they wait it out; no model runs); then `bench --scenario` end to end on
//! the digits MLP, its reports and its errors.

mod common;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::{edgert, fails, model, stderr, stdout};
use edgert::bench::load::{arrivals, peak, serve, Batching, Query, StageTimes, Worker};
use edgert::Result;
use serde_json::Value;

/// Serves a batch of n in `fixed + per_sample × n`, once stalling for `stall` on its call
/// number `stall_at`. Sleeps most of the time and spins the last stretch, so the service time is
/// what it says to a few microseconds rather than a sleep's overshoot.
struct Known {
    fixed: Duration,
    per_sample: Duration,
    stall: Option<(usize, Duration)>,
    calls: usize,
}

impl Known {
    fn new(fixed_ms: f64, per_sample_ms: f64) -> Known {
        Known {
            fixed: Duration::from_secs_f64(fixed_ms / 1e3),
            per_sample: Duration::from_secs_f64(per_sample_ms / 1e3),
            stall: None,
            calls: 0,
        }
    }
}

impl Worker for Known {
    fn serve(&mut self, samples: usize) -> Result<StageTimes> {
        let mut time = self.fixed + self.per_sample * samples as u32;
        if let Some((at, stall)) = self.stall {
            if self.calls == at {
                time += stall;
            }
        }
        self.calls += 1;
        let until = Instant::now() + time;
        let spin = Duration::from_micros(300);
        if time > spin {
            std::thread::sleep(time - spin);
        }
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        Ok(StageTimes { inference: time, ..StageTimes::default() })
    }
}

/// Whether the real-time tests can run: under an emulator every thread's timing is the
/// emulator's, and what they compare against theory is wake-ups of a few microseconds.
fn real_time(test: &str) -> bool {
    if common::emulated() {
        eprintln!("SKIPPED {test}: real-time scheduling under an emulator measures the emulator");
    }
    !common::emulated()
}

fn poisson(qps: f64, count: usize, seed: u64) -> Vec<Query> {
    arrivals::poisson(qps, count, seed).into_iter().map(|arrival| Query { arrival, samples: 1 }).collect()
}

fn one_at_a_time() -> Batching {
    Batching { max_batch: 1, max_queue_delay: Duration::ZERO }
}

/// Each query's wait in a FIFO single-server queue that starts each service the moment it can
/// (Lindley's recursion), for arrivals and service times in seconds.
fn lindley(arrivals: &[f64], service: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut waits = Vec::with_capacity(arrivals.len());
    let mut wait = 0.0;
    for i in 0..arrivals.len() {
        if i > 0 {
            wait = f64::max(0.0, wait + service(i - 1) - (arrivals[i] - arrivals[i - 1]));
        }
        waits.push(wait);
    }
    waits
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn secs(times: &[Duration]) -> Vec<f64> {
    times.iter().map(Duration::as_secs_f64).collect()
}

/// M/D/1: Poisson arrivals, a deterministic service time D = 1/μ, one worker. The mean wait is
/// ρ/(2μ(1−ρ)) (Pollaczek–Khinchine). Checked in two steps, since a real-time run of a few
/// thousand queries varies by 7-14 % from seed to seed around the formula (the waits of an M/D/1
/// queue are strongly correlated), and a run long enough to pin it to 10 % would take minutes:
/// the arrivals and the queue recursion against the formula over a million queries, then the
/// scheduler against the recursion on the very arrivals and service times it ran.
fn md1(rho: f64, queries: usize) {
    let service_s = 0.004;
    let formula = rho * service_s / (2.0 * (1.0 - rho));
    let long = secs(&arrivals::poisson(rho / service_s, 1_000_000, 11));
    let ideal = mean(&lindley(&long, |_| service_s));
    assert!((ideal / formula - 1.0).abs() < 0.03, "ρ {rho}: recursion {ideal}, formula {formula}");

    let queries = poisson(rho / service_s, queries, 1);
    let stop = AtomicBool::new(false);
    let record = serve(&queries, one_at_a_time(), &mut [Known::new(4.0, 0.0)], &stop).unwrap();
    assert_eq!((record.queries.len(), record.unserved), (queries.len(), 0));
    let served = &record.queries;
    let service: Vec<f64> = served.iter().map(|q| (q.done - q.dequeued).as_secs_f64()).collect();
    let waits: Vec<f64> = served.iter().map(|q| q.queued().as_secs_f64()).collect();
    // The stand-in worker does what it says: its sleep overshoots by a thread's wake-up, up to
    // 5 % on a 2-vCPU machine whose host is busy. The check that matters, below, takes the
    // service times it measured.
    assert!((mean(&service) - service_s).abs() < 0.1 * service_s, "service {}", mean(&service));
    // The scheduler is the queue: its waits are the recursion's, give or take a thread's wake-up
    // (which a busy 2-core machine stretches to a tenth of the mean wait here).
    let arrived = secs(&served.iter().map(|q| q.arrival).collect::<Vec<_>>());
    let exact = mean(&lindley(&arrived, |i| service[i]));
    let measured = mean(&waits);
    assert!((measured - exact).abs() < 0.1 * exact + 200e-6, "ρ {rho}: measured {measured}, exact {exact}");
    // Latency is the wait plus the service.
    for q in served {
        assert_eq!(q.latency(), q.queued() + (q.done - q.dequeued));
    }
}

#[test]
fn md1_at_half_load_waits_as_the_formula_says() {
    if !real_time("md1_at_half_load_waits_as_the_formula_says") {
        return;
    }
    md1(0.5, 3000);
}

#[test]
fn md1_at_eight_tenths_load_waits_as_the_formula_says() {
    if !real_time("md1_at_eight_tenths_load_waits_as_the_formula_says") {
        return;
    }
    md1(0.8, 3000);
}

/// Batches cost a + b·n. At a light load a query waits out the whole queue delay for company that
/// rarely comes, so p50 ≈ delay + a + b; at twice what one-at-a-time can serve, batching is what
/// keeps up.
#[test]
fn dynamic_batching_trades_latency_at_light_load_for_throughput_at_heavy_load() {
    if !real_time("dynamic_batching_trades_latency_at_light_load_for_throughput_at_heavy_load") {
        return;
    }
    let stop = AtomicBool::new(false);
    let (a, b) = (3.0, 1.0);
    let light = poisson(20.0, 100, 3);
    let mut p50s = Vec::new();
    for delay_ms in [0.0, 5.0, 10.0] {
        let batching = Batching { max_batch: 8, max_queue_delay: Duration::from_secs_f64(delay_ms / 1e3) };
        let record = serve(&light, batching, &mut [Known::new(a, b)], &stop).unwrap();
        let mut latencies: Vec<f64> =
            record.queries.iter().map(|q| q.latency().as_secs_f64() * 1e3).collect();
        latencies.sort_by(f64::total_cmp);
        let p50 = latencies[latencies.len() / 2];
        let expected = delay_ms + a + b;
        assert!(
            p50 >= expected - 0.05 && p50 < expected + 1.0,
            "delay {delay_ms}: p50 {p50}, expected {expected}"
        );
        p50s.push(p50);
    }
    assert!(p50s.windows(2).all(|w| w[1] > w[0]), "{p50s:?}");

    // One at a time serves 1/(a+b) = 250 QPS; 500 are offered.
    let heavy = poisson(500.0, 1000, 4);
    let achieved = |batching: Batching| {
        let record = serve(&heavy, batching, &mut [Known::new(a, b)], &stop).unwrap();
        let last = record.queries.iter().map(|q| q.done).max().unwrap();
        let mean_batch = heavy.len() as f64 / record.batches.len() as f64;
        let busy: f64 = record.queries.iter().map(|q| (q.done - q.dequeued).as_secs_f64()).sum();
        let served = record.queries.len() as f64;
        (served / (last - heavy[0].arrival).as_secs_f64(), mean_batch, served / busy)
    };
    // The worker sleeps a + b per query, and a busy machine wakes it late, which no scheduler can
    // help: one at a time must keep it busy, at its own measured rate, and never above 250 QPS.
    let (alone, alone_batch, worker) = achieved(one_at_a_time());
    assert!(
        alone <= 250.0 * 1.05 && (alone / worker - 1.0).abs() < 0.05,
        "one at a time: {alone} QPS, the worker's own rate {worker} QPS"
    );
    assert_eq!(alone_batch, 1.0);
    let (batched, batch, _) = achieved(Batching { max_batch: 8, max_queue_delay: Duration::from_millis(2) });
    assert!(batched > 0.95 * 500.0, "batched: {batched} QPS, mean batch {batch}");
    assert!(batch > 1.5, "mean batch {batch}");
}

/// A 200 ms stall once: every query that arrived while the worker was stuck waits until it is
/// free again, and is measured so. Timing from when a worker took a query would hide them.
#[test]
fn a_stall_shows_in_every_query_that_arrived_during_it() {
    let stop = AtomicBool::new(false);
    let queries = poisson(100.0, 200, 5);
    let mut worker = Known::new(2.0, 0.0);
    worker.stall = Some((50, Duration::from_millis(200)));
    let record = serve(&queries, one_at_a_time(), &mut [worker], &stop).unwrap();
    let stalled = record.queries[50];
    let stall_end = stalled.done;
    assert!(stall_end - stalled.dequeued >= Duration::from_millis(202));
    let behind: Vec<_> =
        record.queries.iter().filter(|q| q.arrival > stalled.dequeued && q.arrival < stall_end).collect();
    assert!(behind.len() >= 10, "{} queries arrived during the stall", behind.len());
    for q in &behind {
        assert!(q.latency() >= stall_end - q.arrival, "{q:?} finished before the stall ended?");
    }
    let worst = record.queries.iter().map(|q| q.latency()).max().unwrap();
    assert!(worst >= Duration::from_millis(200), "worst latency {worst:?}");
}

/// `--find-peak`'s search on a worker of known service time finds the rate at which the recursion
/// (an ideal queue on the same arrivals) puts the tail at the bound, within the search's
/// precision. The tail here is p90, not p99: 600 queries put 60 past it, so a test thread
/// preempted a few times by the others running beside it cannot move the answer.
#[test]
fn find_peak_finds_the_rate_where_the_tail_meets_the_bound() {
    if !real_time("find_peak_finds_the_rate_where_the_tail_meets_the_bound") {
        return;
    }
    let (service_s, bound_s, count, seed, precision) = (0.002, 0.012, 600, 2, 0.05);
    let p90 = |waits: Vec<f64>| {
        let mut latencies: Vec<f64> = waits.iter().map(|w| w + service_s).collect();
        latencies.sort_by(f64::total_cmp);
        latencies[(latencies.len() as f64 * 0.9).ceil() as usize - 1]
    };
    // The peak with a worker serving each query in `service` seconds, by bisection on the
    // recursion (the tail grows with the rate at a fixed seed).
    let peak_for = |service: f64| {
        let (mut lo, mut hi) = (1.0, 1.0 / service);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if p90(lindley(&secs(&arrivals::poisson(mid, count, seed)), |_| service)) <= bound_s {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let truth = peak_for(service_s);
    let stop = AtomicBool::new(false);
    let search = peak::Search { start_qps: 100.0, precision, max_steps: 24, min_qps: 1.0 };
    let mut served = vec![];
    let found = peak::find(search, |qps| {
        let queries = poisson(qps, count, seed);
        let record = serve(&queries, one_at_a_time(), &mut [Known::new(service_s * 1e3, 0.0)], &stop)?;
        // What each query held the worker for: from when it could start (its arrival, or the
        // previous query's end) to its own end, the late wake-ups between them included.
        let mut free = Duration::ZERO;
        for q in &record.queries {
            served.push(q.done.saturating_sub(q.arrival.max(free)).as_secs_f64());
            free = q.done;
        }
        let waits = record.queries.iter().map(|q| q.queued().as_secs_f64()).collect();
        Ok(p90(waits) <= bound_s)
    })
    .unwrap();
    assert!(found.converged(precision), "{found:?}");
    let qps = found.qps.unwrap();
    // The worker sleeps its service time, and a busy machine wakes it and the scheduler late: the
    // same recursion with the time each query held the worker is the peak this machine could
    // reach. Wake-ups add a little to every measured wait too, so the measured peak may sit a
    // little lower still.
    let measured_s = mean(&served);
    let reachable = peak_for(measured_s);
    assert!(
        qps <= truth * (1.0 + precision) && qps >= reachable * (1.0 - precision) * 0.95,
        "found {qps}, truth {truth}, reachable with the measured {:.3} ms of service {reachable}",
        measured_s * 1e3
    );
}

// `bench --scenario` end to end.

fn digits() -> String {
    model("digits_mlp_nchw.toml").display().to_string()
}

/// `bench` of the digits model, without idle power, its JSON report into `json`, then `extra`.
fn bench_args<'a>(model: &'a str, json: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["bench", "--model", model, "--idle-s", "0", "--json", json.to_str().unwrap()];
    args.extend(extra);
    args
}

/// The JSON report at `json`, checked against the schema.
fn checked_report(json: &Path) -> Value {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let errors: Vec<String> = common::schema().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    report
}

/// A short bench with `extra` flags: the JSON report, checked against the schema, and stdout.
fn bench(dir: &Path, name: &str, extra: &[&str]) -> (Value, String) {
    let (json, model) = (dir.join(name), digits());
    let out =
        edgert(&bench_args(&model, &json, &[&["--duration-s", "0.2", "--warmup-ms", "20"], extra].concat()));
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    (checked_report(&json), stdout(&out))
}

#[test]
fn single_stream_is_the_default_and_reports_p90() {
    let dir = tempfile::tempdir().unwrap();
    let (report, text) = bench(dir.path(), "single.json", &["--latency-bound-ms", "1000"]);
    let scenario = &report["runs"][0]["scenario"];
    assert_eq!(scenario["name"], "single-stream");
    assert_eq!(scenario["arrivals"], "on completion");
    assert_eq!(scenario["queries"], report["runs"][0]["iterations"]);
    assert_eq!(scenario["over_bound"], 0.0, "nothing takes a second");
    assert!(scenario["queue_ms"].is_null());
    let p90 = scenario["latency_ms"]["p90_ms"].as_f64().unwrap();
    assert!(text.contains(&format!("single-stream: p90 {p90:.3} ms")), "{text}");
    assert!(report["peak"].is_null());
}

/// A server run of `workers` workers of `threads` threads: the CPUs each pool thread could run
/// on while it ran, sorted, and the report's `pinned_cpus`.
fn server_affinities(workers: usize, threads: usize) -> (Vec<Vec<usize>>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let (json, model) = (dir.path().join("w.json"), digits());
    let (workers_flag, threads_flag) = (workers.to_string(), threads.to_string());
    let server = ["--scenario", "server", "--qps", "200", "--duration-s", "1", "--min-queries", "5"];
    let pools = ["--workers", &workers_flag, "--threads", &threads_flag, "--force-threads"];
    let mut child = common::command(&bench_args(&model, &json, &[&server[..], &pools].concat()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let affinities = common::pool_affinities(&mut child, workers * threads);
    assert!(child.wait().unwrap().success());
    (affinities, checked_report(&json)["pinned_cpus"].clone())
}

/// Each worker's threads pinned to CPUs of their own, a second worker's after the first's, where
/// this machine lets a process run on that many CPUs; else none pinned (not some).
#[test]
fn each_workers_threads_are_pinned_to_cpus_of_their_own_or_none_are() {
    let cpus = common::allowed_cpus();
    for (workers, threads) in [(1, 2), (2, 2)] {
        let n = workers * threads;
        let (affinities, pinned) = server_affinities(workers, threads);
        if cpus.len() >= n {
            assert_eq!(affinities, cpus[..n].iter().map(|&c| vec![c]).collect::<Vec<_>>());
            assert_eq!(pinned, serde_json::json!(cpus[..n]));
        } else {
            assert_eq!(affinities, vec![cpus.clone(); n]);
            assert!(pinned.is_null(), "{pinned}");
        }
    }
}

#[test]
fn multi_stream_sends_a_query_of_n_samples_every_interval() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--scenario", "multi-stream", "--samples-per-query", "4", "--interval-ms", "5"];
    let (report, text) = bench(dir.path(), "multi.json", &[&flags[..], &["--min-queries", "60"]].concat());
    let run = &report["runs"][0];
    let scenario = &run["scenario"];
    assert_eq!((run["batch"].as_u64(), scenario["queries"].as_u64()), (Some(4), Some(60)));
    assert_eq!(scenario["batch_sizes"], serde_json::json!([{ "size": 4, "batches": 60 }]));
    assert_eq!(
        (scenario["interval_ms"].as_f64(), scenario["offered_qps"].as_f64()),
        (Some(5.0), Some(200.0))
    );
    let missed = scenario["missed_intervals"].as_u64().unwrap();
    assert!(missed <= 60);
    assert!(text.contains(&format!("{missed} missed their interval")), "{text}");
    // Queries every 5 ms for 60 queries: the run spans at least 295 ms of arrivals.
    assert!(run["elapsed_s"].as_f64().unwrap() >= 0.295, "{}", run["elapsed_s"]);
}

#[test]
fn offline_runs_every_batch_size_with_all_samples_at_once_and_names_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let (report, text) = bench(
        dir.path(),
        "offline.json",
        &["--scenario", "offline", "--batch", "1,4", "--min-queries", "200"],
    );
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, batch) in runs.iter().zip([1, 4]) {
        let scenario = &run["scenario"];
        assert_eq!(scenario["arrivals"], "all at once");
        assert_eq!(scenario["batch_sizes"][0]["size"], batch, "all batches are full");
        assert_eq!(scenario["batch_sizes"].as_array().unwrap().len(), 1);
        assert_eq!(scenario["queries"].as_u64().unwrap() % batch, 0);
    }
    let best = runs
        .iter()
        .max_by(|a, b| a["frames_per_s"].as_f64().unwrap().total_cmp(&b["frames_per_s"].as_f64().unwrap()))
        .unwrap();
    assert!(
        text.contains(&format!(
            "offline: best {:.1} samples/s at batch {}",
            best["frames_per_s"].as_f64().unwrap(),
            best["batch"]
        )),
        "{text}"
    );
}

/// A server sweep, its report through compare, merge and plot.
#[test]
fn server_sweeps_offered_rates_and_its_report_compares_merges_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--scenario", "server", "--qps", "100,400", "--max-batch", "4", "--max-queue-delay-ms", "1"];
    let rest = ["--min-queries", "150", "--latency-bound-ms", "50", "--seed", "9"];
    let (report, text) = bench(dir.path(), "server.json", &[&flags[..], &rest].concat());
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, qps) in runs.iter().zip([100.0, 400.0]) {
        let s = &run["scenario"];
        assert_eq!((s["name"].as_str(), s["offered_qps"].as_f64()), (Some("server"), Some(qps)));
        assert_eq!(s["arrivals"], "poisson, seed 9");
        assert_eq!((s["max_batch"].as_u64(), s["max_queue_delay_ms"].as_f64()), (Some(4), Some(1.0)));
        assert_eq!(s["unserved"], 0);
        let served: u64 = s["batch_sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["size"].as_u64().unwrap() * c["batches"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(served), s["queries"].as_u64(), "every query in exactly one batch");
        assert!(s["batch_sizes"].as_array().unwrap().iter().all(|c| c["size"].as_u64().unwrap() <= 4));
        let tail = &s["latency_ms"];
        let order = ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"].map(|k| tail[k].as_f64().unwrap());
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{tail}");
        assert!(
            tail["p99_low_ms"].as_f64() <= tail["p99_ms"].as_f64()
                && tail["p99_ms"].as_f64() <= tail["p99_high_ms"].as_f64()
        );
        // The latency from arrival includes the queue.
        assert!(tail["p50_ms"].as_f64().unwrap() >= s["queue_ms"]["p50_ms"].as_f64().unwrap());
        assert_eq!(run["stages"]["end_to_end"]["p99_ms"], tail["p99_ms"]);
    }
    assert!(text.contains("server sweep") && text.contains("server at 400.0 QPS, max batch 4"), "{text}");

    let path = dir.path().join("server.json");
    let p = path.to_str().unwrap();
    let out = edgert(&["report", "compare", p, p]);
    assert!(out.status.success(), "{}", stderr(&out));
    let compared = stdout(&out);
    assert!(
        compared.contains("server at 100.0 QPS, max batch 4") && compared.contains("p99.9 (ms)"),
        "{compared}"
    );
    assert!(compared.contains("achieved QPS") && !compared.contains("only in"), "{compared}");
    let out = edgert(&["report", "merge", p]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("| server | 4 | 400.0 |").count(), 1, "{}", stdout(&out));
    let svg = dir.path().join("server.svg");
    let out = edgert(&["report", "plot", p, "--out", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("offered load") && drawn.contains("p99 bound 50 ms"), "not the server chart");
    // A server report and a batch report do not share axes.
    let (_, _) = bench(dir.path(), "batch.json", &[]);
    let batch = dir.path().join("batch.json");
    fails(
        &["report", "plot", p, batch.to_str().unwrap(), "--out", svg.to_str().unwrap()],
        2,
        &["plot server reports"],
    );
}

#[test]
fn find_peak_reports_the_rate_within_the_bound_and_the_knee_is_plotted() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--scenario", "server", "--find-peak", "--latency-bound-ms", "20", "--qps", "200"];
    let rest = ["--min-queries", "100", "--peak-precision-pct", "25"];
    let (report, text) = bench(dir.path(), "peak.json", &[&flags[..], &rest].concat());
    let peak = &report["peak"];
    assert_eq!((peak["latency_bound_ms"].as_f64(), peak["precision"].as_f64()), (Some(20.0), Some(0.25)));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(peak["steps"].as_u64(), Some(runs.len() as u64));
    let offered: Vec<f64> = runs.iter().map(|r| r["scenario"]["offered_qps"].as_f64().unwrap()).collect();
    assert!(offered.windows(2).all(|w| w[0] <= w[1]), "steps sorted by load: {offered:?}");
    // The peak is a step whose p99 was within the bound, and the failing step's was not.
    let p99_at = |qps: f64| {
        let run = runs.iter().find(|r| r["scenario"]["offered_qps"].as_f64() == Some(qps)).unwrap();
        run["scenario"]["latency_ms"]["p99_ms"].as_f64().unwrap()
    };
    assert_eq!(peak["converged"], true, "{peak}");
    let (qps, failed) = (peak["qps"].as_f64().unwrap(), peak["failed_at_qps"].as_f64().unwrap());
    assert!(p99_at(qps) <= 20.0 && p99_at(failed) > 20.0);
    assert!(failed / qps - 1.0 <= 0.25 + 1e-9 && failed > qps);
    assert!(text.contains(&format!("peak: {qps:.1} QPS with p99 within 20 ms")), "{text}");
    let svg = dir.path().join("peak.svg");
    let json = dir.path().join("peak.json");
    let out = edgert(&["report", "plot", json.to_str().unwrap(), "--out", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&svg).unwrap().contains(&format!("knee {qps:.0} QPS")));
    let warned = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("--min-queries 100 is under 1000"));
    assert!(warned, "{}", report["warnings"]);
}

#[test]
fn arrivals_replay_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("arrivals.txt");
    let times: String = (0..50).map(|i| format!("{}\n", 1_700_000_000.0 + f64::from(i) * 0.004)).collect();
    std::fs::write(&file, times).unwrap();
    let flags = ["--scenario", "server", "--arrivals", file.to_str().unwrap(), "--min-queries", "1"];
    let (report, _) = bench(dir.path(), "replay.json", &flags);
    let s = &report["runs"][0]["scenario"];
    assert_eq!(s["queries"], 50, "a replay sends the file's queries");
    assert!(s["arrivals"].as_str().unwrap().starts_with("replay of "));
    assert!((s["offered_qps"].as_f64().unwrap() - 250.0).abs() < 0.01, "{}", s["offered_qps"]);
}

#[test]
fn bad_load_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = digits();
    let bench = |extra: &[&str]| -> Vec<String> {
        ["bench", "--model", &m].iter().chain(extra).map(|a| a.to_string()).collect()
    };
    let with = |extra: &[&str]| bench(&[&["--scenario", "server"], extra].concat());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (with(&["--qps", "0"]), "--qps 0 is not a number in"),
        (with(&["--qps=-5"]), "--qps -5 is not a number in"),
        (with(&["--qps", "nan"]), "--qps NaN is not a number in"),
        (with(&["--qps", "inf"]), "--qps inf is not a number in"),
        (with(&["--qps", "10", "--latency-bound-ms", "0"]), "--latency-bound-ms must be above 0"),
        (with(&["--qps", "10", "--latency-bound-ms=-3"]), "--latency-bound-ms -3 is not a number in"),
        (with(&["--qps", "10", "--max-queue-delay-ms=-1"]), "--max-queue-delay-ms -1 is not a number in"),
        (with(&["--qps", "10", "--max-batch", "0"]), "--max-batch must be in [1, 64]"),
        (with(&["--qps", "10", "--max-batch", "100000"]), "--max-batch must be in [1, 64]"),
        (with(&["--qps", "10", "--workers", "0"]), "--workers must be in [1, 64]"),
        (with(&["--qps", "10", "--workers", "18446744073709551615"]), "--workers must be in [1, 64]"),
        (with(&["--qps", "10", "--min-queries", "0"]), "--min-queries must be in"),
        (with(&["--qps", "1000000", "--duration-s", "100"]), "more than the 2000000 one run keeps"),
        (with(&["--qps", "0.001"]), "at 0.001 queries/s, 1000 queries take 1000000 s, more than a day"),
        (with(&[]), "needs --qps RATES, --arrivals FILE or --find-peak"),
        (with(&["--find-peak"]), "--find-peak needs --latency-bound-ms"),
        (with(&["--find-peak", "--latency-bound-ms", "5", "--qps", "1,2"]), "takes one --qps"),
        (
            with(&["--find-peak", "--latency-bound-ms", "5", "--peak-precision-pct", "0"]),
            "--peak-precision-pct 0 is not",
        ),
        (with(&["--qps", "10", "--batch", "4"]), "--batch is not the server's"),
        (with(&["--qps", "10", "--source", "synthetic:64x48@30"]), "--source runs single-stream only"),
        (bench(&["--qps", "10"]), "--qps is for --scenario server"),
        (
            bench(&["--scenario", "offline", "--interval-ms", "5"]),
            "--interval-ms is for --scenario multi-stream",
        ),
        (bench(&["--scenario", "multi-stream", "--interval-ms", "0"]), "--interval-ms must be above 0"),
        (
            bench(&["--scenario", "multi-stream", "--samples-per-query", "0"]),
            "--samples-per-query must be at least 1",
        ),
    ];
    for (args, message) in &cases {
        fails(&strs(args), 2, &[message]);
    }
    // More single-threaded workers than CPUs: they would take turns.
    let cpus = std::thread::available_parallelism().unwrap().get().to_string();
    let too_many = (cpus.parse::<usize>().unwrap() + 1).to_string();
    fails(&strs(&with(&["--qps", "10", "--workers", &too_many])), 2, &[&format!("this machine has {cpus}")]);

    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    for (name, text, message) in [
        ("unsorted.txt", "0.2\n0.1\n", "line 2: '0.1' is earlier than the line before"),
        ("words.txt", "soon\n", "line 1: 'soon' is not a time in seconds"),
        ("empty.txt", "", "no arrival times"),
    ] {
        let path = file(name, text);
        fails(&strs(&with(&["--arrivals", &path])), 2, &[&path, message]);
    }
    let missing = common::missing("arrivals.txt").display().to_string();
    fails(&strs(&with(&["--arrivals", &missing])), 2, &[&missing]);
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A model whose batch dimension is fixed at 1 cannot take dynamic batches of 4.
#[test]
fn a_max_batch_the_model_cannot_take_is_refused_naming_the_model() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let mut proto =
        tract_onnx::pb::ModelProto::decode(&*std::fs::read(model("digits_mlp_nchw.onnx")).unwrap()).unwrap();
    let input = &mut proto.graph.as_mut().unwrap().input[0];
    let Some(tract_onnx::pb::type_proto::Value::TensorType(tensor)) =
        input.r#type.as_mut().unwrap().value.as_mut()
    else {
        panic!("a tensor input")
    };
    tensor.shape.as_mut().unwrap().dim[0].value =
        Some(tract_onnx::pb::tensor_shape_proto::dimension::Value::DimValue(1));
    let path = dir.path().join("fixed_batch.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    let p = path.display().to_string();
    let server = ["bench", "--model", p.as_str(), "--scenario", "server", "--idle-s", "0"];
    fails(
        &[&server[..], &["--qps", "10", "--max-batch", "4", "--min-queries", "5"]].concat(),
        2,
        &["fixed_batch.onnx", "has a fixed batch of 1, so --max-batch 4 (batches of 1 to 4) cannot run"],
    );
    fails(
        &["bench", "--model", &p, "--scenario", "multi-stream", "--min-queries", "5"],
        2,
        &["fixed_batch.onnx", "--samples-per-query 8 cannot run"],
    );
    // At the batch it has, it runs.
    let out =
        edgert(&[&server[..], &["--qps", "200", "--min-queries", "20", "--duration-s", "0.05"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// SIGTERM mid-run: the queries served so far are reported, the rest counted as unserved, and the
/// exit says it was stopped.
#[test]
fn a_stopped_server_run_reports_what_it_served() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stopped.json");
    let model = digits();
    let args = ["bench", "--model", &model, "--scenario", "server", "--qps", "50", "--min-queries", "100000"];
    let child = common::command(&[&args[..], &["--idle-s", "0", "--json", json.to_str().unwrap()]].concat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(if common::emulated() { 20 } else { 3 }));
    // SAFETY: kill(2) on a child this test started and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &report["runs"][0]["scenario"];
    let (queries, unserved) = (s["queries"].as_u64().unwrap(), s["unserved"].as_u64().unwrap());
    assert_eq!(queries, 100_000);
    assert!(unserved > 90_000 && unserved < queries, "{unserved} of {queries} unserved");
    assert_eq!(s["latency_ms"]["count"].as_u64(), Some(queries - unserved));
    assert!(stdout(&out).contains("not served: stopped"), "{}", stdout(&out));
}
