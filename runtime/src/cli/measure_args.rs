//! Flags shared by the commands that measure (`bench`, `tune`): timing, and sensing power and telemetry.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::Sensing;
use crate::limits;
use crate::Error;

/// How long to measure.
#[derive(Args, Clone)]
pub struct TimingArgs {
    /// Warm-up before measuring, per batch size or variant.
    #[arg(long, default_value_t = 200, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    warmup_ms: u64,
    /// Measure at least this long, per batch size or variant.
    #[arg(long, default_value_t = 3.0, value_name = "S")]
    duration_s: f64,
    /// And at least this many iterations.
    #[arg(long, default_value_t = 10, value_name = "N")]
    min_iterations: usize,
}

pub struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
    pub min_iterations: usize,
}

impl TimingArgs {
    pub fn settings(&self) -> Result<Timing, Error> {
        let duration_s = limits::SECONDS.check("--duration-s", self.duration_s).map_err(usage)?;
        Ok(Timing {
            warmup: Duration::from_millis(self.warmup_ms),
            duration: Duration::from_secs_f64(duration_s),
            min_iterations: self.min_iterations.max(1),
        })
    }
}

/// Where and how to read the board's power sensors, clocks and temperatures.
#[derive(Args, Clone)]
pub struct PowerArgs {
    /// Root of sysfs, procfs and /etc for the board's sensors (a fixture tree to test without a board).
    #[arg(long, env = "EDGERT_SYSFS_ROOT", default_value = "/", value_name = "DIR")]
    sysfs_root: PathBuf,
    /// Power sampling interval (never faster than the sensors' own update interval).
    #[arg(long, default_value_t = 10, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    power_interval_ms: u64,
    /// Idle power is measured this long before the first batch.
    #[arg(long, default_value_t = 0.5, value_name = "S")]
    idle_s: f64,
    /// Interval of the memory, clock, GPU-load and temperature samples.
    #[arg(long, default_value_t = 250, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=60_000))]
    telemetry_interval_ms: u64,
}

impl PowerArgs {
    pub fn settings(&self) -> Result<Sensing, Error> {
        let idle_s = limits::SECONDS.check("--idle-s", self.idle_s).map_err(usage)?;
        Ok(Sensing {
            sysfs_root: self.sysfs_root.clone(),
            power_interval: Duration::from_millis(self.power_interval_ms),
            idle: Duration::from_secs_f64(idle_s),
            telemetry_interval: Duration::from_millis(self.telemetry_interval_ms),
        })
    }
}

fn usage(e: limits::OutOfRange) -> Error {
    Error::Usage(e.to_string())
}
