//! Board power, found by looking (never by fixed path). In order: JetPack 5/6's `ina3221` hwmon
//! devices (labels, mV × mA), JetPack 4's `ina3221x` IIO devices (rail names, mW), an x86 host's
//! RAPL energy counters, and last `tegrastats` when sysfs cannot be read. Every reader takes a root
//! folder, so fixture trees stand in for boards in tests.

pub(crate) mod energy;
pub(crate) mod ina3221;
pub(crate) mod rapl;
pub mod sampler;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::limits;
use crate::metrics::error::SensorError;
use crate::metrics::sysfs::NumberFile as OpenFile;
use crate::metrics::tegrastats;

/// One power rail and how to read it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rail {
    pub name: String,
    #[serde(skip)]
    pub reading: Reading,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// JetPack 4 IIO: a file in milliwatts.
    Milliwatts(PathBuf),
    /// JetPack 5/6 hwmon: bus voltage (mV) and current (mA) files.
    VoltsAmps { millivolts: PathBuf, milliamps: PathBuf },
    /// RAPL: a microjoule counter that wraps at `range_uj`; power is its rate between reads.
    Microjoules { energy: PathBuf, range_uj: u64 },
    /// The rail of that name in tegrastats' latest line.
    Tegrastats,
}

enum OpenReading {
    Milliwatts(OpenFile),
    VoltsAmps(OpenFile, OpenFile),
    Microjoules { file: OpenFile, counter: rapl::Counter },
    Tegrastats(String),
}

/// The sensors with their files open (or tegrastats running), for repeated reading.
pub struct OpenSensors {
    readings: Vec<OpenReading>,
    /// The rails' names, in the readings' order.
    names: Vec<String>,
    total: Option<usize>,
    tegrastats: Option<tegrastats::Stream>,
}

impl OpenSensors {
    /// Watts per rail, or why a rail could not be read.
    pub fn read_detailed(&mut self) -> Vec<Result<f64, SensorError>> {
        let line = self.tegrastats.as_ref().and_then(|s| s.latest());
        // One instant for every counter, so rates over the same interval compare exactly.
        let now = Instant::now();
        self.readings
            .iter_mut()
            .zip(&self.names)
            .map(|(r, name)| {
                // A sensor's reading must be a rail's; a counter's rate over a short interval may
                // be anything its arithmetic gives.
                let reading = |watts: f64| Ok(limits::WATTS.check(&format!("rail {name}: watts"), watts)?);
                match r {
                    OpenReading::Milliwatts(f) => reading(f.number()? / 1e3),
                    OpenReading::VoltsAmps(v, a) => reading(v.number()? * a.number()? / 1e6),
                    OpenReading::Microjoules { file, counter } => counter.watts(file.number()?, now),
                    OpenReading::Tegrastats(name) => line
                        .as_ref()
                        .and_then(|l| l.rails_mw.iter().find(|r| &r.0 == name))
                        .ok_or_else(|| SensorError::TegrastatsNoRail(name.clone()))
                        .and_then(|r| reading(r.1 / 1e3)),
                }
            })
            .collect()
    }

    /// Watts per rail (`None` for a rail that failed), and the total: the module-input rail,
    /// or the sum of rails (none when any rail failed: a partial sum is not a total).
    pub fn read(&mut self) -> (Vec<Option<f64>>, Option<f64>) {
        let watts: Vec<Option<f64>> = self.read_detailed().into_iter().map(Result::ok).collect();
        let total = self.total(&watts);
        (watts, total)
    }

    /// The total of one reading's watts per rail (see `read`).
    pub fn total(&self, watts: &[Option<f64>]) -> Option<f64> {
        match self.total {
            Some(i) => watts[i],
            None => watts.iter().copied().sum::<Option<f64>>(),
        }
    }
}

/// Where a board's power readings come from; reports say its `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerSource {
    /// JetPack 5/6: hwmon devices named `ina3221`.
    Ina3221Hwmon,
    /// JetPack 4: IIO devices named `ina3221x`.
    Ina3221xIio,
    /// An x86 host's energy counters.
    Rapl,
    /// tegrastats' output, where sysfs cannot be read.
    Tegrastats,
}

impl PowerSource {
    /// The name reports and tables show.
    pub fn name(self) -> &'static str {
        match self {
            PowerSource::Ina3221Hwmon => "ina3221 hwmon",
            PowerSource::Ina3221xIio => "ina3221x iio",
            PowerSource::Rapl => "rapl",
            PowerSource::Tegrastats => "tegrastats",
        }
    }
}

impl Serialize for PowerSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The rails of a board and which one, if any, is the module's input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerSensors {
    pub source: PowerSource,
    pub rails: Vec<Rail>,
    /// The rail that measures the whole module (`VDD_IN`, `POM_5V_IN`); `None`: the total is the
    /// sum of rails (AGX Xavier, AGX Orin, RAPL packages), which leaves out what no rail measures.
    pub total_rail: Option<String>,
    /// The sensors' own averaging period, when they say: sampling faster repeats values.
    pub update_interval_ms: Option<u64>,
}

/// Names of module-input rails, by JetPack generation.
const TOTAL_RAILS: &[&str] = &["VDD_IN", "POM_5V_IN"];
/// tegrastats' interval when it is the source.
const TEGRASTATS_INTERVAL_MS: u64 = 100;
/// RAPL counters tick every ~1 ms, but a rate over less than this is mostly rounding.
const RAPL_MIN_INTERVAL_MS: u64 = 10;

impl PowerSensors {
    /// Discovers power sensors under `root`; `Err` says where it looked and why none can be read.
    pub fn discover(root: &Path) -> Result<PowerSensors, SensorError> {
        let (source, rails, update_interval_ms) = if let Some((rails, interval)) = ina3221::hwmon(root) {
            (PowerSource::Ina3221Hwmon, rails, interval)
        } else if let Some(rails) = ina3221::iio(root) {
            (PowerSource::Ina3221xIio, rails, None)
        } else {
            match rapl::zones(root) {
                Ok(rails) => (PowerSource::Rapl, rails, Some(RAPL_MIN_INTERVAL_MS)),
                Err(rapl) => {
                    return tegrastats_rails().map_err(|tegrastats| SensorError::NoPowerSensors {
                        root: root.to_owned(),
                        rapl: Box::new(rapl),
                        tegrastats: Box::new(tegrastats),
                    })
                }
            }
        };
        let total_rail =
            TOTAL_RAILS.iter().find(|t| rails.iter().any(|r| r.name == **t)).map(|t| t.to_string());
        Ok(PowerSensors { source, rails, total_rail, update_interval_ms })
    }

    /// Opens every sensor file once (or starts tegrastats), for repeated reading.
    pub fn open(&self) -> Result<OpenSensors, SensorError> {
        let tegrastats = match self.source {
            PowerSource::Tegrastats => {
                Some(tegrastats::Stream::start(Duration::from_millis(TEGRASTATS_INTERVAL_MS))?)
            }
            _ => None,
        };
        let opened = Instant::now();
        let readings: Vec<OpenReading> = self
            .rails
            .iter()
            .map(|r| match &r.reading {
                Reading::Milliwatts(p) => OpenReading::Milliwatts(OpenFile::new(p)),
                Reading::VoltsAmps { millivolts, milliamps } => {
                    OpenReading::VoltsAmps(OpenFile::new(millivolts), OpenFile::new(milliamps))
                }
                Reading::Microjoules { energy, range_uj } => {
                    let file = OpenFile::new(energy);
                    let counter = rapl::Counter::new(*range_uj, file.number().ok(), opened);
                    OpenReading::Microjoules { file, counter }
                }
                Reading::Tegrastats => OpenReading::Tegrastats(r.name.clone()),
            })
            .collect();
        if readings.iter().any(|r| matches!(r, OpenReading::Microjoules { .. })) {
            // A counter gives power only as a rate: let it run one interval before the first read.
            std::thread::sleep(Duration::from_millis(RAPL_MIN_INTERVAL_MS));
        }
        let total = self.total_rail.as_ref().and_then(|t| self.rails.iter().position(|r| &r.name == t));
        let names = self.rails.iter().map(|r| r.name.clone()).collect();
        Ok(OpenSensors { readings, names, total, tegrastats })
    }

    /// Watts per rail now (`None` for a rail that failed), and the total.
    pub fn read(&self) -> Result<(Vec<Option<f64>>, Option<f64>), SensorError> {
        Ok(self.open()?.read())
    }
}

/// The rails of one tegrastats line, when it is on the PATH.
fn tegrastats_rails() -> Result<PowerSensors, SensorError> {
    if !tegrastats::on_path() {
        return Err(SensorError::TegrastatsMissing);
    }
    let line = tegrastats::Stream::start(Duration::from_millis(TEGRASTATS_INTERVAL_MS))?
        .latest()
        .ok_or(SensorError::Tegrastats("printed no line".into()))?;
    if line.rails_mw.is_empty() {
        return Err(SensorError::TegrastatsNoRails);
    }
    let rails: Vec<Rail> = line
        .rails_mw
        .iter()
        .map(|(name, _)| Rail { name: name.clone(), reading: Reading::Tegrastats })
        .collect();
    Ok(PowerSensors {
        source: PowerSource::Tegrastats,
        total_rail: line.total_w().0.map(String::from),
        rails,
        update_interval_ms: Some(TEGRASTATS_INTERVAL_MS),
    })
}

#[cfg(test)]
mod tests;
