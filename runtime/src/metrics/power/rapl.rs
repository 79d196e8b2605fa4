//! RAPL energy counters of x86 hosts (`/sys/class/powercap/intel-rapl:*`, also used on AMD):
//! cumulative microjoules per package (and DRAM), wrapping at `max_energy_range_uj`. Since Linux
//! 5.10 `energy_uj` is readable only by root, so an unreadable counter is a reason, not a zero.

use std::path::Path;
use std::time::Instant;

use super::{Rail, Reading};
use crate::metrics::error::SensorError;
use crate::metrics::sysfs::{entries, read_number, read_trimmed};

/// The package zones (`intel-rapl:N`) and DRAM zones, whose sum is the host's measured power;
/// `psys` is left out because it already contains the packages.
pub fn zones(root: &Path) -> Result<Vec<Rail>, SensorError> {
    let base = root.join("sys/class/powercap");
    let mut rails = Vec::new();
    let mut unreadable = None;
    for dir in entries(&base) {
        let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(name) = read_trimmed(&dir.join("name")) else { continue };
        let top_level = id.starts_with("intel-rapl:") && id.matches(':').count() == 1;
        let wanted =
            (top_level && name != "psys") || (!top_level && name == "dram" && id.starts_with("intel-rapl:"));
        if !wanted {
            continue;
        }
        let energy = dir.join("energy_uj");
        if let Err(e) = crate::infile::read_to_string(&energy, crate::infile::SENSOR) {
            unreadable.get_or_insert(SensorError::RaplUnreadable { path: energy, reason: e.to_string() });
            continue;
        }
        let range_uj = read_number(&dir.join("max_energy_range_uj")).unwrap_or(u64::MAX);
        rails.push(Rail { name, reading: Reading::Microjoules { energy, range_uj } });
    }
    match (rails.is_empty(), unreadable) {
        (false, _) => Ok(rails),
        (true, Some(unreadable)) => Err(unreadable),
        (true, None) => Err(SensorError::NoRapl { base }),
    }
}

/// Turns successive counter readings into watts, across the counter's wrap-around.
#[derive(Debug, Clone)]
pub struct Counter {
    range_uj: u64,
    last: Option<(f64, Instant)>,
}

impl Counter {
    pub fn new(range_uj: u64, first_uj: Option<f64>, at: Instant) -> Counter {
        Counter { range_uj, last: first_uj.map(|uj| (uj, at)) }
    }

    /// The mean power since the previous reading.
    pub fn watts(&mut self, uj: f64, at: Instant) -> Result<f64, SensorError> {
        let previous = self.last.replace((uj, at));
        let (last_uj, last_at) =
            previous.ok_or(SensorError::RaplRate("no earlier reading to take a rate from"))?;
        let seconds = at.duration_since(last_at).as_secs_f64();
        if seconds <= 0.0 {
            return Err(SensorError::RaplRate("two readings at the same instant"));
        }
        Ok(delta_uj(last_uj, uj, self.range_uj) / 1e6 / seconds)
    }
}

/// Microjoules from `before` to `after`, which may have wrapped past `range`.
pub fn delta_uj(before: f64, after: f64, range: u64) -> f64 {
    if after >= before {
        after - before
    } else {
        after + range as f64 - before
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_counter_that_wraps_still_gives_its_rate() {
        assert_eq!(delta_uj(100.0, 300.0, 1000), 200.0);
        assert_eq!(delta_uj(900.0, 100.0, 1000), 200.0);
        let t0 = Instant::now();
        let mut counter = Counter::new(1_000_000, Some(900_000.0), t0);
        // 0.1 s later the counter wrapped: 100 000 + 500 000 µJ = 0.6 J in 0.1 s is 6 W.
        let watts = counter.watts(500_000.0, t0 + Duration::from_millis(100)).unwrap();
        assert!((watts - 6.0).abs() < 1e-9, "{watts}");
        let watts = counter.watts(700_000.0, t0 + Duration::from_millis(200)).unwrap();
        assert!((watts - 2.0).abs() < 1e-9, "{watts}");
        assert!(Counter::new(10, None, t0).watts(1.0, t0).is_err());
    }
}
