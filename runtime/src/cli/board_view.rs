//! The board's state as `info` and `monitor` show it: power per rail, memory, clocks, GPU load and
//! temperatures, as JSON-ready values and as short text lines.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::metrics::clocks::Clocks;
use crate::metrics::deadline::{within, SENSOR_DEADLINE};
use crate::metrics::error::SensorError;
use crate::metrics::power::{OpenSensors, PowerSensors, PowerSource};
use crate::metrics::telemetry::{Snapshot, Telemetry, TelemetrySource};
use crate::metrics::thermal::Zone;

/// The board's power sensors and telemetry under a root, opened once and read on a thread given
/// `SENSOR_DEADLINE` each time (`metrics::deadline`): a driver stuck on its bus ends the command
/// with one line instead of holding it.
#[derive(Clone)]
pub struct Board {
    root: PathBuf,
    open: Arc<Mutex<Opened>>,
}

struct Opened {
    power: Result<(PowerSensors, OpenSensors), SensorError>,
    telemetry: Telemetry,
}

impl Board {
    pub fn open(root: &Path) -> Result<Board, SensorError> {
        let at = root.to_owned();
        let opened = within(&what(root), SENSOR_DEADLINE, move || {
            let power = PowerSensors::discover(&at).and_then(|sensors| {
                let open = sensors.open()?;
                Ok((sensors, open))
            });
            Opened { power, telemetry: Telemetry::open(&at) }
        })?;
        Ok(Board { root: root.to_owned(), open: Arc::new(Mutex::new(opened)) })
    }

    /// Every rail's power and a telemetry snapshot, read now.
    pub fn read(&self) -> Result<(PowerNow, Snapshot, TelemetrySource), SensorError> {
        let open = self.open.clone();
        within(&what(&self.root), SENSOR_DEADLINE, move || {
            let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
            let Opened { power, telemetry } = &mut *open;
            let power = match power {
                Ok((sensors, open)) => PowerNow::read(sensors, open),
                Err(reason) => PowerNow::unavailable(reason.to_string()),
            };
            (power, telemetry.snapshot(), telemetry.source())
        })
    }
}

fn what(root: &Path) -> String {
    format!("the board's sensors under {}", root.display())
}

#[derive(Serialize)]
pub struct RailNow {
    pub name: String,
    pub watts: Option<f64>,
    /// Why the rail could not be read.
    pub error: Option<String>,
}

/// The power sensors and a reading of each, or why there are none.
#[derive(Serialize)]
pub struct PowerNow {
    pub available: bool,
    pub reason: Option<String>,
    pub source: Option<PowerSource>,
    /// The total's rail, or `sum of rails`.
    pub total: Option<String>,
    pub total_w: Option<f64>,
    pub rails: Vec<RailNow>,
}

impl PowerNow {
    pub fn unavailable(reason: String) -> PowerNow {
        PowerNow {
            available: false,
            reason: Some(reason),
            source: None,
            total: None,
            total_w: None,
            rails: vec![],
        }
    }

    /// One reading of every rail. Read once: a second read would give a RAPL counter's rate over
    /// microseconds.
    pub fn read(sensors: &PowerSensors, open: &mut OpenSensors) -> PowerNow {
        let detailed = open.read_detailed();
        let watts: Vec<Option<f64>> = detailed.iter().map(|r| r.as_ref().ok().copied()).collect();
        let total_w = open.total(&watts);
        PowerNow {
            available: true,
            reason: None,
            source: Some(sensors.source),
            total: Some(sensors.total_rail.clone().unwrap_or_else(|| "sum of rails".into())),
            total_w,
            rails: sensors
                .rails
                .iter()
                .zip(detailed)
                .map(|(rail, reading)| RailNow {
                    name: rail.name.clone(),
                    watts: reading.as_ref().ok().copied(),
                    error: reading.err().map(|e| e.to_string()),
                })
                .collect(),
        }
    }
}

fn watts(w: Option<f64>) -> String {
    w.map_or("n/a".into(), |w| format!("{w:.2} W"))
}

fn gib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 30) as f64)
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

pub fn power_text(p: &PowerNow) -> String {
    match &p.reason {
        Some(reason) => format!("power n/a: {reason}"),
        None => {
            let rails: Vec<String> =
                p.rails.iter().map(|r| format!("{} {}", r.name, watts(r.watts))).collect();
            format!(
                "power {} ({} via {}): {}",
                watts(p.total_w),
                p.total.as_deref().unwrap_or(""),
                p.source.map_or("", PowerSource::name),
                rails.join(", ")
            )
        }
    }
}

pub fn memory_text(s: &Snapshot) -> String {
    let rss = s.rss_bytes.map_or("n/a".into(), mib);
    match &s.memory {
        None => format!("memory n/a; edgert RSS {rss}"),
        Some(m) => {
            let nvmap = m.nvmap_used_bytes.map_or(String::new(), |b| format!(", nvmap {}", mib(b)));
            format!(
                "memory {}/{} GiB used, swap {}/{} GiB{nvmap}; edgert RSS {rss}",
                gib(m.used_bytes),
                gib(m.total_bytes),
                gib(m.swap_used_bytes),
                gib(m.swap_total_bytes)
            )
        }
    }
}

pub fn clocks_text(c: &Clocks) -> String {
    let locked = match c.locked() {
        Some(true) => "locked",
        Some(false) => "not locked",
        None => "n/a",
    };
    let cpus: Vec<String> = c
        .cpus
        .iter()
        .map(|core| match (&core.clock, core.online) {
            (Some(k), _) => format!("{:.0}", k.cur_mhz),
            (None, true) => "?".into(),
            (None, false) => "off".into(),
        })
        .collect();
    let mut text = format!("clocks {locked}; CPU [{}] MHz", cpus.join(","));
    if let Some(gpu) = &c.gpu {
        let load = gpu.load_pct.map_or("n/a".into(), |l| format!("{l:.0} %"));
        let mhz = gpu.clock.as_ref().map_or(String::new(), |k| format!(" @ {:.0} MHz", k.cur_mhz));
        text += &format!("; GPU {load}{mhz}");
    }
    if let Some(emc) = c.emc_mhz {
        text += &format!("; EMC {emc:.0} MHz");
    }
    text
}

pub fn thermal_text(zones: &[Zone]) -> String {
    if zones.is_empty() {
        return "thermal n/a".into();
    }
    let list: Vec<String> = zones.iter().map(|z| format!("{} {:.1} °C", z.name, z.celsius)).collect();
    format!("thermal {}", list.join(", "))
}
