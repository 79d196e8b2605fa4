//! `bench --scenario` and its flags, checked into a `Scenario` and `Load` before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::load::{arrivals, Batching};
use crate::bench::scenario::{Kind, Load, PeakSearch, Scenario, Server, ServerArrivals, P99_MIN_QUERIES};
use crate::choice::Choice;
use crate::limits::{self, MAX_QUERIES};
use crate::Error;

/// Workers, each with its own sessions and thread: past this it is a mistake, not a machine.
const MAX_WORKERS: usize = 64;
/// A worker compiles one session per batch size up to the max batch.
const MAX_DYNAMIC_BATCH: usize = 64;

/// MLPerf's scenarios: how queries are sent, and what is measured.
#[derive(Args, Clone)]
pub struct ScenarioArgs {
    /// single-stream: one query at a time (p90, p99); multi-stream: --samples-per-query every
    /// --interval-ms (p99, missed intervals); offline: every sample at once, per --batch
    /// (throughput); server: queries at --qps or --arrivals, batched dynamically (tail against load).
    #[arg(long, value_enum, default_value = "single-stream")]
    scenario: Kind,
    /// server: Poisson arrival rates in queries per second, comma-separated, each a run.
    #[arg(long, value_delimiter = ',', value_name = "QPS")]
    qps: Vec<f64>,
    /// server: replay arrival times from a file (seconds, one per line, sorted) instead of --qps.
    #[arg(long, value_name = "FILE", conflicts_with = "qps")]
    arrivals: Option<PathBuf>,
    /// server: seed of the Poisson arrivals (a seed gives the same arrivals everywhere).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// server: samples in one dynamic batch, at most [default: 1].
    #[arg(long, value_name = "B")]
    max_batch: Option<usize>,
    /// server: how long the oldest query may wait for others to join its batch [default: 0].
    #[arg(long, value_name = "MS")]
    max_queue_delay_ms: Option<f64>,
    /// multi-stream, offline, server: inference workers, each with its own session(s) [default: 1].
    #[arg(long, value_name = "W")]
    workers: Option<usize>,
    /// Latency bound: queries over it are counted; --find-peak keeps p99 within it.
    #[arg(long, value_name = "MS")]
    latency_bound_ms: Option<f64>,
    /// server: search for the highest Poisson rate whose p99 is within --latency-bound-ms
    /// (a single --qps is where the search starts).
    #[arg(long, conflicts_with = "arrivals")]
    find_peak: bool,
    /// --find-peak stops when the highest passing and lowest failing rates are this close [default: 5].
    #[arg(long, value_name = "PCT", requires = "find_peak")]
    peak_precision_pct: Option<f64>,
    /// multi-stream, offline, server: each run sends at least this many queries (and at least
    /// --duration-s of them) [default: 1000, under which fewer than 10 queries lie past the p99].
    #[arg(long, value_name = "N")]
    min_queries: Option<usize>,
    /// multi-stream: samples in each query (one per camera, say) [default: 8, MLPerf's].
    #[arg(long, value_name = "N")]
    samples_per_query: Option<usize>,
    /// multi-stream: a query every this many milliseconds [default: 50].
    #[arg(long, value_name = "MS")]
    interval_ms: Option<f64>,
}

/// What else the scenario depends on: the rest of the bench command line.
pub struct Context<'a> {
    pub batches: &'a [usize],
    pub duration: Duration,
    pub source: bool,
    /// Intra-op threads of each worker, and whether they all run on this machine's CPUs.
    pub threads: usize,
    pub on_cpu: bool,
    pub force_threads: bool,
}

impl ScenarioArgs {
    pub fn settings(&self, context: &Context) -> Result<(Scenario, Load), Error> {
        self.only_for()?;
        let workers = self.workers.unwrap_or(1);
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(usage(format!("--workers must be in [1, {MAX_WORKERS}]")));
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if context.on_cpu && workers * context.threads > cpus && !context.force_threads {
            return Err(usage(format!(
                "--workers {workers} of {} thread(s) each need {} CPUs; this machine has {cpus}: workers would take turns on \
                 the cores and the latency measured would be the OS scheduler's (--force-threads to insist)",
                context.threads,
                workers * context.threads
            )));
        }
        let min_queries = self.min_queries.unwrap_or(P99_MIN_QUERIES);
        if min_queries == 0 || min_queries > MAX_QUERIES {
            return Err(usage(format!("--min-queries must be in [1, {MAX_QUERIES}]")));
        }
        let latency_bound = match self.latency_bound_ms {
            Some(b) => Some(positive_ms("--latency-bound-ms", b)?),
            None => None,
        };
        let load = Load { workers, min_queries, latency_bound };
        if self.scenario != Kind::SingleStream && context.source {
            return Err(usage("--source runs single-stream only: a camera sends frames at its own pace"));
        }
        let batch_is_default = context.batches == [1];
        let scenario = match self.scenario {
            Kind::SingleStream => Scenario::SingleStream,
            Kind::Offline => Scenario::Offline,
            Kind::MultiStream => {
                if !batch_is_default {
                    return Err(usage(
                        "--batch is not multi-stream's: a query's --samples-per-query are its batch",
                    ));
                }
                let samples = self.samples_per_query.unwrap_or(8);
                if samples == 0 {
                    return Err(usage("--samples-per-query must be at least 1"));
                }
                let interval = positive_ms("--interval-ms", self.interval_ms.unwrap_or(50.0))?;
                check_run(1.0 / interval.as_secs_f64(), context.duration, min_queries)?;
                Scenario::MultiStream { samples, interval }
            }
            Kind::Server => Scenario::Server(self.server(context, &load, batch_is_default)?),
        };
        Ok((scenario, load))
    }

    fn server(&self, context: &Context, load: &Load, batch_is_default: bool) -> Result<Server, Error> {
        if !batch_is_default {
            return Err(usage("--batch is not the server's: it batches dynamically, up to --max-batch"));
        }
        let max_batch = self.max_batch.unwrap_or(1);
        if !(1..=MAX_DYNAMIC_BATCH).contains(&max_batch) {
            return Err(usage(format!(
                "--max-batch must be in [1, {MAX_DYNAMIC_BATCH}]: each worker holds a session for every batch size up to it"
            )));
        }
        let delay = limits::MILLISECONDS
            .check("--max-queue-delay-ms", self.max_queue_delay_ms.unwrap_or(0.0))
            .map_err(usage)?;
        let batching = Batching { max_batch, max_queue_delay: Duration::from_secs_f64(delay / 1e3) };
        let mut qps = Vec::with_capacity(self.qps.len());
        for &rate in &self.qps {
            qps.push(limits::QPS.check("--qps", rate).map_err(usage)?);
            check_run(rate, context.duration, load.min_queries)?;
        }
        let find_peak = if self.find_peak {
            if load.latency_bound.is_none() {
                return Err(usage("--find-peak needs --latency-bound-ms: the p99 the peak must keep"));
            }
            if qps.len() > 1 {
                return Err(usage("--find-peak takes one --qps, where its search starts, not a list"));
            }
            let precision = self.peak_precision_pct.unwrap_or(5.0);
            if !(0.1..=50.0).contains(&precision) {
                return Err(usage(format!(
                    "--peak-precision-pct {} is not a number in [0.1, 50]",
                    limits::short(precision)
                )));
            }
            Some(PeakSearch { start_qps: qps.first().copied(), precision: precision / 100.0 })
        } else {
            None
        };
        let arrivals = match &self.arrivals {
            Some(path) => ServerArrivals::Replay { path: path.clone(), times: arrivals::read(path)? },
            None if qps.is_empty() && find_peak.is_none() => {
                return Err(usage("--scenario server needs --qps RATES, --arrivals FILE or --find-peak"))
            }
            None => ServerArrivals::Poisson { qps, seed: self.seed.unwrap_or(1) },
        };
        Ok(Server { arrivals, batching, find_peak })
    }

    /// Flags that belong to other scenarios than the one asked for are refused, not ignored.
    fn only_for(&self) -> Result<(), Error> {
        use Kind::{MultiStream, Offline, Server, SingleStream};
        let flags: [(&str, bool, &[Kind]); 12] = [
            ("--qps", !self.qps.is_empty(), &[Server]),
            ("--arrivals", self.arrivals.is_some(), &[Server]),
            ("--seed", self.seed.is_some(), &[Server]),
            ("--max-batch", self.max_batch.is_some(), &[Server]),
            ("--max-queue-delay-ms", self.max_queue_delay_ms.is_some(), &[Server]),
            ("--find-peak", self.find_peak, &[Server]),
            ("--peak-precision-pct", self.peak_precision_pct.is_some(), &[Server]),
            ("--workers", self.workers.is_some(), &[MultiStream, Offline, Server]),
            ("--min-queries", self.min_queries.is_some(), &[MultiStream, Offline, Server]),
            ("--samples-per-query", self.samples_per_query.is_some(), &[MultiStream]),
            ("--interval-ms", self.interval_ms.is_some(), &[MultiStream]),
            (
                "--latency-bound-ms",
                self.latency_bound_ms.is_some(),
                &[SingleStream, MultiStream, Offline, Server],
            ),
        ];
        for (flag, given, scenarios) in flags {
            if given && !scenarios.contains(&self.scenario) {
                let names: Vec<_> = scenarios.iter().map(|s| s.name()).collect();
                return Err(usage(format!("{flag} is for --scenario {}", names.join(" or "))));
            }
        }
        Ok(())
    }
}

/// A duration in milliseconds, above zero.
fn positive_ms(flag: &str, value: f64) -> Result<Duration, Error> {
    let ms = limits::MILLISECONDS.check(flag, value).map_err(usage)?;
    if ms <= 0.0 {
        return Err(usage(format!("{flag} must be above 0")));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

/// A run at `qps` must fit in memory (its queries are kept) and end within a day.
fn check_run(qps: f64, duration: Duration, min_queries: usize) -> Result<(), Error> {
    let queries = (qps * duration.as_secs_f64()).max(min_queries as f64);
    if queries > MAX_QUERIES as f64 {
        return Err(usage(format!(
            "that run would send {queries:.0} queries, more than the {MAX_QUERIES} one run keeps: lower --duration-s"
        )));
    }
    let span_s = queries / qps;
    if span_s > DAY_S {
        return Err(usage(format!(
            "at {} queries/s, {queries:.0} queries take {span_s:.0} s, more than a day: raise the rate or lower --min-queries",
            limits::short(qps)
        )));
    }
    Ok(())
}

const DAY_S: f64 = 86_400.0;

fn usage(message: impl std::fmt::Display) -> Error {
    Error::Usage(message.to_string())
}
