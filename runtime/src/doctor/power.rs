//! Power: the sensors are found, one reading is plausible for the board, and the sampler keeps up
//! with the sensors' own update interval.

use std::time::{Duration, Instant};

use super::{Area, Check, Facts, Options, Outcome};
use crate::metrics::power::sampler::Sampler;
use crate::metrics::power::PowerSensors;

pub fn checks() -> Vec<Check> {
    vec![
        Check::new(Area::Power, "sensors", 200, sensors),
        Check::new(Area::Power, "reading", 200, reading).needs("sensors"),
        Check::new(Area::Power, "sampler rate", 1_500, |o, _| sampler_rate(o)).needs("sensors"),
    ]
}

fn discover(options: &Options) -> Result<PowerSensors, String> {
    PowerSensors::discover(&options.root).map_err(|e| e.to_string())
}

fn sensors(options: &Options, facts: &Facts) -> Outcome {
    match discover(options) {
        Ok(s) => {
            let names: Vec<&str> = s.rails.iter().map(|r| r.name.as_str()).collect();
            let total = s.total_rail.as_deref().unwrap_or("the sum of rails");
            Outcome::pass(format!("{}: {} (total: {total})", s.source.name(), names.join(", ")))
        }
        Err(e) if facts.jetson => Outcome::fail(
            "INA3221 sensors under /sys/class/hwmon (JetPack 5/6) or /sys/bus/iio (JetPack 4), or tegrastats",
            e,
            "load the ina3221 driver (a JetPack kernel has it) or put tegrastats on the PATH",
        ),
        Err(e) => Outcome::skip(e),
    }
}

/// The most a board draws at its module input, from its name: a reading above it is a wrong scale
/// or a wrong sensor, not a load.
fn board_limit_w(board: Option<&str>) -> f64 {
    let board = board.unwrap_or_default();
    let limits: [(&str, f64); 7] = [
        ("Thor", 180.0),
        ("AGX Orin", 75.0),
        ("AGX Xavier", 40.0),
        ("Orin NX", 40.0),
        ("Orin Nano", 30.0),
        ("Xavier NX", 25.0),
        ("Nano", 20.0),
    ];
    limits.iter().find(|(name, _)| board.contains(name)).map_or(1000.0, |(_, w)| *w)
}

fn reading(options: &Options, facts: &Facts) -> Outcome {
    let sensors = match discover(options) {
        Ok(s) => s,
        Err(e) => return Outcome::fail("the sensors found again", e, "see `power sensors`"),
    };
    let mut open = match sensors.open() {
        Ok(o) => o,
        Err(e) => {
            return Outcome::fail(
                "the sensors opened",
                e.to_string(),
                "run as root or see `user power sensors readable`",
            )
        }
    };
    let watts = open.read_detailed();
    let limit = board_limit_w(facts.provenance.board.as_deref());
    let mut problems = Vec::new();
    let mut values = Vec::new();
    for (rail, w) in sensors.rails.iter().zip(&watts) {
        match w {
            Ok(w) if (0.0..=limit).contains(w) => values.push((rail.name.as_str(), *w)),
            Ok(w) => problems.push(format!("{} reads {w:.2} W, outside 0–{limit:.0} W", rail.name)),
            Err(e) => problems.push(format!("{}: {e}", rail.name)),
        }
    }
    // The module input feeds every other rail: their sum cannot exceed it (beyond the sensors'
    // own error, a few percent).
    if let Some(total_name) = &sensors.total_rail {
        if let Some(&(_, total)) = values.iter().find(|(n, _)| n == total_name) {
            let others: f64 = values.iter().filter(|(n, _)| n != total_name).map(|(_, w)| w).sum();
            if others > total * 1.05 + 0.2 {
                problems
                    .push(format!("the rails sum to {others:.2} W, more than {total_name}'s {total:.2} W"));
            }
        }
    }
    let shown: Vec<String> = values.iter().map(|(n, w)| format!("{n} {w:.2} W")).collect();
    if problems.is_empty() {
        Outcome::pass(shown.join(", "))
    } else {
        Outcome::fail(
            format!(
                "every rail readable, within 0–{limit:.0} W for this board, no more in sum than the input"
            ),
            problems.join("; "),
            "a sensor on the wrong scale or a wrong rail: report it with `edgert info --json`",
        )
    }
}

/// Samples for a while at the sensors' interval and compares the rate reached with the one asked.
fn sampler_rate(options: &Options) -> Outcome {
    let sensors = match discover(options) {
        Ok(s) => s,
        Err(e) => return Outcome::fail("the sensors found again", e, "see `power sensors`"),
    };
    let interval = Duration::from_millis(sensors.update_interval_ms.unwrap_or(10).max(1));
    let window = if options.quick { Duration::from_millis(300) } else { Duration::from_millis(1_000) };
    let started = Instant::now();
    let sampler = match Sampler::start(&sensors, started, interval) {
        Ok(s) => s,
        Err(e) => return Outcome::fail("the sampler to start", e.to_string(), "see `power reading`"),
    };
    std::thread::sleep(window);
    let samples = match sampler.finish() {
        Ok(samples) => samples,
        Err(e) => {
            return Outcome::fail("the sampler to stop when asked", e.to_string(), "see `power reading`")
        }
    };
    let elapsed = started.elapsed().as_secs_f64();
    let asked_ms = interval.as_secs_f64() * 1e3;
    let reached_ms =
        if samples.len() > 1 { elapsed * 1e3 / (samples.len() - 1) as f64 } else { f64::INFINITY };
    let seen = format!(
        "{} samples in {:.2} s: one per {reached_ms:.1} ms, asked {asked_ms:.0} ms",
        samples.len(),
        elapsed
    );
    // Half again the interval allows for the scheduler; slower means the readings lag the load.
    if reached_ms <= asked_ms * 1.5 {
        Outcome::pass(seen)
    } else {
        Outcome::fail(
            format!("a sample every {asked_ms:.0} ms (the sensors' update interval)"),
            seen,
            "a busy or throttled CPU, or slow sensor files: measure with a longer --power-interval-ms",
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn board_limits_match_the_longest_name() {
        assert_eq!(super::board_limit_w(Some("NVIDIA Jetson AGX Orin Developer Kit")), 75.0);
        assert_eq!(super::board_limit_w(Some("NVIDIA Jetson Orin Nano Developer Kit")), 30.0);
        assert_eq!(super::board_limit_w(Some("NVIDIA Jetson Nano Developer Kit")), 20.0);
        assert_eq!(super::board_limit_w(None), 1000.0);
    }
}
