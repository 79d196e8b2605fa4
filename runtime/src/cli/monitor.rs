//! `edgert monitor`: the board's power, memory, clocks, GPU load and temperatures, live, one
//! compact line per interval (like tegrastats, with names), and optionally as Prometheus gauges.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::board_view::{self, Board, PowerNow};
use super::prometheus::Exporter;
use crate::metrics::telemetry::Snapshot;

#[derive(Args)]
pub struct MonitorArgs {
    /// Time between readings.
    #[arg(long, default_value_t = 1000, value_name = "N", value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    interval_ms: u64,
    /// Stop after this many readings (default: run until interrupted).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// One JSON object per reading (JSON Lines): alone, on stdout in place of the text lines; with
    /// FILE, written there as they come.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
    /// Serve the readings as Prometheus gauges at http://ADDR/metrics (loopback only; port 0 picks one).
    #[arg(long, value_name = "ADDR")]
    prometheus: Option<String>,
    /// Root of sysfs, procfs and /etc for the board's sensors (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: std::path::PathBuf,
}

#[derive(Serialize)]
struct Reading<'a> {
    t_s: f64,
    power: &'a PowerNow,
    telemetry: &'a Snapshot,
}

pub fn main(args: MonitorArgs) -> anyhow::Result<ExitCode> {
    super::json_out::check(args.json.as_ref())?;
    let exporter = args.prometheus.as_deref().map(Exporter::start).transpose()?;
    if let Some(e) = &exporter {
        eprintln!("edgert: serving Prometheus metrics at http://{}/metrics", e.address);
    }
    let mut lines = super::json_out::Lines::new(args.json.as_ref());
    let board = Board::open(&args.sysfs_root)?;
    let interval = Duration::from_millis(args.interval_ms);
    let started = Instant::now();
    let mut next = started;
    for n in 0.. {
        if args.count.is_some_and(|count| n >= count) {
            break;
        }
        let (power, snapshot, _) = board.read()?;
        if let Some(e) = &exporter {
            e.update(&power, &snapshot);
        }
        let t_s = started.elapsed().as_secs_f64();
        lines.result(
            || {
                format!(
                    "{t_s:7.1}s | {} | {} | {} | {}",
                    board_view::power_text(&power),
                    board_view::memory_text(&snapshot),
                    board_view::clocks_text(&snapshot.clocks),
                    board_view::thermal_text(&snapshot.zones)
                )
            },
            || serde_json::json!(Reading { t_s, power: &power, telemetry: &snapshot }),
        )?;
        next += interval;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok(ExitCode::SUCCESS)
}
