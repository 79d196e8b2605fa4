//! Power during a bench: idle power first, then samples over each measured window, reduced to
//! mean and peak watts per rail and in total, and energy per inference. Where no sensor can be
//! read the report says `available: false` and why: never a made-up number.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::metrics::error::SensorError;
use crate::metrics::power::energy;
use crate::metrics::power::sampler::{PowerSample, Sampler};
use crate::metrics::power::{PowerSensors, PowerSource};

#[derive(Debug, Clone, Serialize)]
pub struct RailPower {
    pub name: String,
    pub mean_w: Option<f64>,
    pub peak_w: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PowerReport {
    pub available: bool,
    /// Why there is no figure, when `available` is false.
    pub reason: Option<String>,
    pub source: Option<PowerSource>,
    /// The rail the total comes from, or `sum of rails` (boards without a module-input rail).
    pub total: Option<String>,
    pub sample_interval_ms: Option<u64>,
    pub samples: usize,
    pub idle_w: Option<f64>,
    pub mean_w: Option<f64>,
    pub peak_w: Option<f64>,
    pub energy_per_inference_mj: Option<f64>,
    pub energy_above_idle_per_inference_mj: Option<f64>,
    pub rails: Vec<RailPower>,
}

impl PowerReport {
    fn unavailable(reason: String) -> PowerReport {
        PowerReport {
            available: false,
            reason: Some(reason),
            source: None,
            total: None,
            sample_interval_ms: None,
            samples: 0,
            idle_w: None,
            mean_w: None,
            peak_w: None,
            energy_per_inference_mj: None,
            energy_above_idle_per_inference_mj: None,
            rails: Vec::new(),
        }
    }
}

/// The board's sensors, the sampling interval and the idle power, set up once per bench.
pub struct PowerProbe {
    sensors: Result<PowerSensors, SensorError>,
    epoch: Instant,
    interval: Duration,
    idle_w: Option<f64>,
}

impl PowerProbe {
    /// Finds the sensors under `root` and measures idle power for `idle` (none if zero).
    pub fn new(root: &Path, interval: Duration, idle: Duration) -> PowerProbe {
        let sensors = PowerSensors::discover(root);
        // Not faster than the sensors average: faster sampling only repeats their values.
        let floor = sensors
            .as_ref()
            .ok()
            .and_then(|s| s.update_interval_ms)
            .map_or(Duration::ZERO, Duration::from_millis);
        let mut probe =
            PowerProbe { sensors, epoch: Instant::now(), interval: interval.max(floor), idle_w: None };
        if !idle.is_zero() {
            if let Ok(sampler) = probe.start() {
                let start = probe.now();
                std::thread::sleep(idle);
                let end = probe.now();
                probe.idle_w = sampler
                    .finish()
                    .ok()
                    .and_then(|samples| energy::mean_and_peak(&totals(&samples), start, end))
                    .map(|(mean, _)| mean);
            }
        }
        probe
    }

    /// The instant every sample's time counts from.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Seconds since the probe's epoch, the clock of every sample.
    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Starts sampling, or says why it cannot.
    pub fn start(&self) -> Result<Sampler, SensorError> {
        Sampler::start(self.sensors.as_ref().map_err(Clone::clone)?, self.epoch, self.interval)
    }

    /// The report for the window `start..end` (seconds since the epoch) holding `inferences`.
    pub fn report(
        &self,
        samples: Result<Vec<PowerSample>, SensorError>,
        start: f64,
        end: f64,
        inferences: usize,
    ) -> PowerReport {
        let (sensors, samples) = match (&self.sensors, samples) {
            (Ok(s), Ok(samples)) => (s, samples),
            (Err(reason), _) => return PowerReport::unavailable(reason.to_string()),
            (_, Err(reason)) => return PowerReport::unavailable(reason.to_string()),
        };
        let total = totals(&samples);
        let Some((mean, peak)) = energy::mean_and_peak(&total, start, end) else {
            return PowerReport::unavailable("the power samples do not cover the measured window".into());
        };
        let joules = mean * (end - start);
        let per_inference = |j: f64| 1e3 * j / inferences.max(1) as f64;
        let rails = sensors
            .rails
            .iter()
            .enumerate()
            .map(|(i, rail)| {
                let series: Vec<(f64, f64)> =
                    samples.iter().filter_map(|s| Some((s.t, s.rails[i]?))).collect();
                let stats = energy::mean_and_peak(&series, start, end);
                RailPower { name: rail.name.clone(), mean_w: stats.map(|s| s.0), peak_w: stats.map(|s| s.1) }
            })
            .collect();
        PowerReport {
            available: true,
            reason: None,
            source: Some(sensors.source),
            total: Some(sensors.total_rail.clone().unwrap_or_else(|| "sum of rails".into())),
            sample_interval_ms: Some(self.interval.as_millis() as u64),
            samples: total.iter().filter(|s| s.0 >= start && s.0 <= end).count(),
            idle_w: self.idle_w,
            mean_w: Some(mean),
            peak_w: Some(peak),
            energy_per_inference_mj: Some(per_inference(joules)),
            energy_above_idle_per_inference_mj: self
                .idle_w
                .map(|idle| per_inference(joules - idle * (end - start))),
            rails,
        }
    }
}

/// The total of each sample that has one (a sample with a failed total rail is left out).
fn totals(samples: &[PowerSample]) -> Vec<(f64, f64)> {
    samples.iter().filter_map(|s| Some((s.t, s.total?))).collect()
}
