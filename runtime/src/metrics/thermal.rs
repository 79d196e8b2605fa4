//! Thermal zones: temperature and the lowest trip point that slows the chip down. Jetson kernels
//! expose some zones whose sensor is absent as −256 °C; those are left out. Names and trip points
//! are read once; a sample re-reads only the temperatures.

use std::path::Path;

use serde::Serialize;

use super::sysfs::{entries, read_number, read_trimmed, NumberFile};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Zone {
    /// The zone's `type`, e.g. `gpu-thermal`, `CPU-therm`, `tj-thermal`.
    pub name: String,
    pub celsius: f64,
    /// The lowest passive, hot or critical trip point: past it the kernel throttles or shuts down.
    pub trip_c: Option<f64>,
}

/// Readings at or below this are "no sensor" (Jetson reports −256 °C), not a temperature.
const ABSENT_C: f64 = -255.0;

/// The zones of a root, with their temperature files open.
pub struct ZoneReader {
    zones: Vec<(String, NumberFile, Option<f64>)>,
}

impl ZoneReader {
    pub fn open(root: &Path) -> ZoneReader {
        let zones = entries(&root.join("sys/class/thermal"))
            .iter()
            .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("thermal_zone")))
            .filter_map(|dir| {
                let trip = (0..16)
                    .filter(|k| {
                        read_trimmed(&dir.join(format!("trip_point_{k}_type")))
                            .is_some_and(|t| matches!(t.as_str(), "passive" | "hot" | "critical"))
                    })
                    .filter_map(|k| read_number::<f64>(&dir.join(format!("trip_point_{k}_temp"))))
                    .map(|m| m / 1e3)
                    .reduce(f64::min);
                Some((read_trimmed(&dir.join("type"))?, NumberFile::new(&dir.join("temp")), trip))
            })
            .collect();
        ZoneReader { zones }
    }

    /// Zones whose sensor reads a temperature now.
    pub fn read(&self) -> Vec<Zone> {
        self.zones
            .iter()
            .filter_map(|(name, temp, trip)| {
                let celsius = temp.read().ok()? / 1e3;
                // Absent sensors read far below zero; a value past physics is no reading either.
                (celsius > ABSENT_C && crate::limits::CELSIUS.check("", celsius).is_ok()).then(|| Zone {
                    name: name.clone(),
                    celsius,
                    trip_c: *trip,
                })
            })
            .collect()
    }
}

pub fn zones(root: &Path) -> Vec<Zone> {
    ZoneReader::open(root).read()
}
