//! Board power from INA3221 sensors, found through sysfs (never by fixed path): JetPack 4's
//! `ina3221x` IIO devices (rail names, mW) and JetPack 5/6's `ina3221` hwmon devices (labels,
//! mV × mA). Every reader takes a root folder, so fixture trees stand in for boards in tests.

pub mod energy;
pub mod ina3221;
pub mod sampler;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where sysfs is: `/`, or a fixture tree; `EDGERT_SYSFS_ROOT` overrides.
pub fn sysfs_root() -> PathBuf {
    std::env::var_os("EDGERT_SYSFS_ROOT").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

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
}

impl Rail {
    /// Watts now, or why not (a sensor that vanished or returned garbage).
    pub fn watts(&self) -> Result<f64, String> {
        match &self.reading {
            Reading::Milliwatts(path) => Ok(read_number(path)? / 1e3),
            Reading::VoltsAmps { millivolts, milliamps } => {
                Ok(read_number(millivolts)? * read_number(milliamps)? / 1e6)
            }
        }
    }
}

fn read_number(path: &Path) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_number(path, &text)
}

fn parse_number(path: &Path, text: &str) -> Result<f64, String> {
    let value: f64 =
        text.trim().parse().map_err(|_| format!("{}: not a number: {:?}", path.display(), text.trim()))?;
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("{}: implausible reading {value}", path.display()))
    }
}

/// A sensor file kept open and re-read from offset 0: one `pread` a reading instead of
/// open, read and close, which keeps the sampler cheap at 100 Hz.
struct OpenFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl OpenFile {
    fn new(path: &Path) -> OpenFile {
        OpenFile { path: path.to_owned(), file: std::fs::File::open(path).ok() }
    }

    fn number(&self) -> Result<f64, String> {
        use std::os::unix::fs::FileExt;
        let file = self.file.as_ref().ok_or_else(|| format!("{}: cannot open", self.path.display()))?;
        let mut buffer = [0u8; 32];
        let n = file.read_at(&mut buffer, 0).map_err(|e| format!("{}: {e}", self.path.display()))?;
        parse_number(&self.path, &String::from_utf8_lossy(&buffer[..n]))
    }
}

enum OpenReading {
    Milliwatts(OpenFile),
    VoltsAmps(OpenFile, OpenFile),
}

/// The sensors with their files open, for sampling.
pub struct OpenSensors {
    readings: Vec<OpenReading>,
    total: Option<usize>,
}

impl OpenSensors {
    /// Watts per rail (`None` for a rail that failed) and the total, as `PowerSensors::read`.
    pub fn read(&self) -> (Vec<Option<f64>>, Option<f64>) {
        let watts: Vec<Option<f64>> = self
            .readings
            .iter()
            .map(|r| match r {
                OpenReading::Milliwatts(f) => f.number().ok().map(|mw| mw / 1e3),
                OpenReading::VoltsAmps(v, a) => Some(v.number().ok()? * a.number().ok()? / 1e6),
            })
            .collect();
        let total = match self.total {
            Some(i) => watts[i],
            None => watts.iter().copied().sum::<Option<f64>>(),
        };
        (watts, total)
    }
}

/// The rails of a board and which one, if any, is the module's input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerSensors {
    /// `ina3221 hwmon` or `ina3221x iio`.
    pub source: &'static str,
    pub rails: Vec<Rail>,
    /// The rail that measures the whole module (`VDD_IN`, `POM_5V_IN`); `None`: the total is the
    /// sum of rails (AGX Xavier, AGX Orin), which leaves out what no rail measures.
    pub total_rail: Option<String>,
    /// The sensors' own averaging period, when they say: sampling faster repeats values.
    pub update_interval_ms: Option<u64>,
}

/// Names of module-input rails, by JetPack generation.
const TOTAL_RAILS: &[&str] = &["VDD_IN", "POM_5V_IN"];

impl PowerSensors {
    /// Discovers INA3221 sensors under `root`; `Err` says why none can be read.
    pub fn discover(root: &Path) -> Result<PowerSensors, String> {
        let (source, rails, update_interval_ms) = match ina3221::hwmon(root) {
            Some(found) => ("ina3221 hwmon", found.0, found.1),
            None => match ina3221::iio(root) {
                Some(rails) => ("ina3221x iio", rails, None),
                None => {
                    return Err(format!("no INA3221 power sensors under {} (not a Jetson?)", root.display()))
                }
            },
        };
        let total_rail =
            TOTAL_RAILS.iter().find(|t| rails.iter().any(|r| r.name == **t)).map(|t| t.to_string());
        Ok(PowerSensors { source, rails, total_rail, update_interval_ms })
    }

    /// Opens every sensor file once, for repeated reading.
    pub fn open(&self) -> OpenSensors {
        let readings = self
            .rails
            .iter()
            .map(|r| match &r.reading {
                Reading::Milliwatts(p) => OpenReading::Milliwatts(OpenFile::new(p)),
                Reading::VoltsAmps { millivolts, milliamps } => {
                    OpenReading::VoltsAmps(OpenFile::new(millivolts), OpenFile::new(milliamps))
                }
            })
            .collect();
        let total = self.total_rail.as_ref().and_then(|t| self.rails.iter().position(|r| &r.name == t));
        OpenSensors { readings, total }
    }

    /// Watts per rail now (`None` for a rail that failed), and the total.
    pub fn read(&self) -> (Vec<Option<f64>>, Option<f64>) {
        let watts: Vec<Option<f64>> = self.rails.iter().map(|r| r.watts().ok()).collect();
        let total = match &self.total_rail {
            Some(name) => self.rails.iter().position(|r| &r.name == name).and_then(|i| watts[i]),
            None => watts.iter().copied().sum::<Option<f64>>(),
        };
        (watts, total)
    }
}

#[cfg(test)]
mod tests;
