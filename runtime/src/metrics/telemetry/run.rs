//! Telemetry over a measured window: memory peaks, clock ranges, GPU load, temperatures, and
//! whether the run throttled (a clock that fell while clocks were locked, or a zone past its trip).

use serde::Serialize;

use super::{Snapshot, TelemetrySource};

/// Lowest and highest reading of a clock over the window, in MHz.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZoneRun {
    pub name: String,
    pub start_c: f64,
    pub max_c: f64,
    pub trip_c: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunTelemetry {
    /// `sysfs` or `tegrastats`.
    pub source: TelemetrySource,
    pub samples: usize,
    /// This process's resident set over time: (seconds from the window's start, bytes).
    pub rss_series: Vec<(f64, u64)>,
    pub memory_used_max_bytes: Option<u64>,
    pub memory_available_min_bytes: Option<u64>,
    pub swap_used_max_bytes: Option<u64>,
    /// Jetson: the most nvmap (GPU buffers in the shared DRAM) held during the window.
    pub nvmap_used_max_bytes: Option<u64>,
    /// Jetson: what the GPU can address: all of system memory (unified), shared with the CPU.
    pub gpu_visible_bytes: Option<u64>,
    pub gpu_load_mean_pct: Option<f64>,
    pub gpu_load_max_pct: Option<f64>,
    pub gpu_mhz: Option<Range>,
    /// Per core; `None` for a core offline or without cpufreq.
    pub cpu_mhz: Vec<Option<Range>>,
    pub emc_mhz: Option<Range>,
    /// Every governor pinned (min == max) at the window's start; `None` where no clock is readable.
    pub clocks_locked: Option<bool>,
    pub zones: Vec<ZoneRun>,
    /// Clocks that fell more than 5 % below their earlier peak in the window.
    pub clock_drops: Vec<String>,
    /// Locked clocks that dropped, or a zone past its trip point.
    pub throttled: bool,
    pub throttle_reasons: Vec<String>,
    /// This process's CPU time (user and system, every thread) over the window, per inference:
    /// what an inference costs the CPU, waits for the GPU included (`--gpu-sync`).
    pub process_cpu_ms_per_inference: Option<f64>,
}

/// A fall below this share of the clock's earlier peak counts as a drop.
const DROP: f64 = 0.95;

fn range(values: impl Iterator<Item = f64>) -> Option<Range> {
    values.fold(None, |r, v| {
        Some(r.map_or(Range { min: v, max: v }, |r: Range| Range { min: r.min.min(v), max: r.max.max(v) }))
    })
}

/// "cpu3 fell from 1510 to 806 MHz", when the series falls below `DROP` of its running peak.
fn drop_of(name: &str, series: &[f64]) -> Option<String> {
    let mut peak = f64::NAN;
    for &mhz in series {
        if mhz < peak * DROP {
            return Some(format!("{name} fell from {peak:.0} to {mhz:.0} MHz"));
        }
        peak = peak.max(mhz);
    }
    None
}

impl RunTelemetry {
    /// Summarizes `(seconds since the epoch, snapshot)` readings taken over a window from `start`.
    pub fn summarize(source: TelemetrySource, readings: &[(f64, Snapshot)], start: f64) -> RunTelemetry {
        let snaps: Vec<&Snapshot> = readings.iter().map(|r| &r.1).collect();
        let memory = || snaps.iter().filter_map(|s| s.memory.as_ref());
        let gpu_clock =
            |s: &Snapshot| s.clocks.gpu.as_ref().and_then(|g| g.clock.as_ref()).map(|c| c.cur_mhz);
        let gpu_load: Vec<f64> =
            snaps.iter().filter_map(|s| s.clocks.gpu.as_ref().and_then(|g| g.load_pct)).collect();
        let cores = snaps.iter().map(|s| s.clocks.cpus.len()).max().unwrap_or(0);
        let core_clock =
            |s: &Snapshot, i: usize| s.clocks.cpus.get(i).and_then(|c| c.clock.as_ref()).map(|c| c.cur_mhz);

        let mut series: Vec<(String, Vec<f64>)> = (0..cores)
            .map(|i| (format!("cpu{i}"), snaps.iter().filter_map(|s| core_clock(s, i)).collect()))
            .collect();
        series.push(("GPU".into(), snaps.iter().filter_map(|s| gpu_clock(s)).collect()));
        series.push(("EMC".into(), snaps.iter().filter_map(|s| s.clocks.emc_mhz).collect()));
        let clock_drops: Vec<String> = series.iter().filter_map(|(name, s)| drop_of(name, s)).collect();

        let zones = zone_runs(&snaps);
        let clocks_locked = snaps.first().and_then(|s| s.clocks.locked());
        let mut throttle_reasons: Vec<String> = zones
            .iter()
            .filter(|z| z.trip_c.is_some_and(|trip| z.max_c >= trip))
            .map(|z| {
                format!(
                    "{} reached {:.1} °C, past its trip point {:.1} °C",
                    z.name,
                    z.max_c,
                    z.trip_c.unwrap_or_default()
                )
            })
            .collect();
        if clocks_locked == Some(true) {
            throttle_reasons.extend(clock_drops.iter().map(|d| format!("{d} with clocks locked")));
        }
        RunTelemetry {
            source,
            samples: readings.len(),
            rss_series: readings
                .iter()
                .filter_map(|(t, s)| Some(((t - start).max(0.0), s.rss_bytes?)))
                .collect(),
            memory_used_max_bytes: memory().map(|m| m.used_bytes).max(),
            memory_available_min_bytes: memory().map(|m| m.available_bytes).min(),
            swap_used_max_bytes: memory().map(|m| m.swap_used_bytes).max(),
            nvmap_used_max_bytes: memory().filter_map(|m| m.nvmap_used_bytes).max(),
            gpu_visible_bytes: memory().find_map(|m| m.gpu_visible_bytes),
            gpu_load_mean_pct: (!gpu_load.is_empty())
                .then(|| gpu_load.iter().sum::<f64>() / gpu_load.len() as f64),
            gpu_load_max_pct: gpu_load.iter().copied().reduce(f64::max),
            gpu_mhz: range(snaps.iter().filter_map(|s| gpu_clock(s))),
            cpu_mhz: (0..cores).map(|i| range(snaps.iter().filter_map(|s| core_clock(s, i)))).collect(),
            emc_mhz: range(snaps.iter().filter_map(|s| s.clocks.emc_mhz)),
            clocks_locked,
            zones,
            clock_drops,
            throttled: !throttle_reasons.is_empty(),
            throttle_reasons,
            process_cpu_ms_per_inference: None,
        }
    }

    /// Warnings for the report: throttling, and unlocked clocks (results then depend on DVFS).
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> =
            self.throttle_reasons.iter().map(|r| format!("throttled: {r}")).collect();
        if self.clocks_locked == Some(false) {
            let drops = if self.clock_drops.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.clock_drops.join("; "))
            };
            warnings.push(format!(
                "clocks are not locked (min < max): DVFS may change them during the run{drops}; lock them with `sudo jetson_clocks`"
            ));
        }
        warnings
    }
}

fn zone_runs(snaps: &[&Snapshot]) -> Vec<ZoneRun> {
    let Some(first) = snaps.first() else { return Vec::new() };
    first
        .zones
        .iter()
        .map(|zone| {
            let readings = snaps.iter().filter_map(|s| s.zones.iter().find(|z| z.name == zone.name));
            ZoneRun {
                name: zone.name.clone(),
                start_c: zone.celsius,
                max_c: readings.clone().map(|z| z.celsius).fold(zone.celsius, f64::max),
                trip_c: zone.trip_c,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
