//! Clocks and thermals: CPU governors, whether clocks are locked for benchmarks, `jetson_clocks`,
//! thermal zones with their trip points, and whether any zone is throttling now.

use std::path::Path;

use super::{Area, Check, Facts, Options, Outcome};
use crate::metrics::clocks::Clocks;
use crate::metrics::sysfs::{entries, read_trimmed};
use crate::metrics::telemetry::{Telemetry, TelemetrySource};
use crate::metrics::thermal::Zone;

pub fn checks() -> Vec<Check> {
    vec![
        Check::new(Area::Clocks, "governors", 100, |o, f| governors(&o.root, f)),
        Check::new(Area::Clocks, "locked", 100, |o, _| locked(&o.root)),
        Check::new(Area::Clocks, "jetson_clocks", 100, |_, f| jetson_clocks(f)),
        Check::new(Area::Clocks, "thermal zones", 500, zones),
        Check::new(Area::Clocks, "throttling", 500, |o, _| throttling(&o.root)).needs("thermal zones"),
    ]
}

/// Each online CPU's cpufreq governor, counted by name.
fn governors(root: &Path, facts: &Facts) -> Outcome {
    let cpus: Vec<_> = entries(&root.join("sys/devices/system/cpu"))
        .into_iter()
        .filter(|d| {
            let name = d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.strip_prefix("cpu").is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .filter(|d| d.join("cpufreq").exists())
        .collect();
    if cpus.is_empty() {
        let why = "no cpufreq under /sys/devices/system/cpu (a virtual machine, or a kernel without it)";
        return if facts.jetson && crate::metrics::tegrastats::on_path() {
            Outcome::skip(format!("{why}; clocks come from tegrastats, which shows no governors"))
        } else if facts.jetson {
            Outcome::fail(
                "a cpufreq governor per CPU",
                why,
                "a Jetson kernel has cpufreq: is --sysfs-root right?",
            )
        } else {
            Outcome::skip(why)
        };
    }
    let mut counted: Vec<(String, usize)> = Vec::new();
    let mut unreadable = Vec::new();
    for cpu in &cpus {
        match read_trimmed(&cpu.join("cpufreq/scaling_governor")) {
            Some(g) => match counted.iter_mut().find(|(name, _)| *name == g) {
                Some((_, n)) => *n += 1,
                None => counted.push((g, 1)),
            },
            None => unreadable.push(cpu.file_name().unwrap_or_default().to_string_lossy().into_owned()),
        }
    }
    if !unreadable.is_empty() {
        return Outcome::fail(
            "every CPU's scaling_governor readable",
            format!("unreadable on {}", unreadable.join(", ")),
            "read as root, or check the kernel's cpufreq driver",
        );
    }
    let shown: Vec<String> = counted.iter().map(|(g, n)| format!("{g} on {n}")).collect();
    Outcome::pass(shown.join(", "))
}

fn locked(root: &Path) -> Outcome {
    // Unlocked clocks are a state, not a fault: said with what a benchmark needs.
    match Clocks::read(root).locked() {
        Some(true) => Outcome::pass("locked: every governor's minimum is its maximum"),
        Some(false) => Outcome::pass("not locked: benchmarks will vary; sudo jetson_clocks locks them"),
        None => Outcome::skip("no clock with a readable governor"),
    }
}

fn jetson_clocks(facts: &Facts) -> Outcome {
    match (crate::metrics::program::find("jetson_clocks"), facts.jetson) {
        (Some(path), _) => Outcome::pass(path.display().to_string()),
        (None, true) => Outcome::fail(
            "jetson_clocks on the PATH",
            "not found",
            "part of L4T (nvidia-l4t-tools): sudo apt install nvidia-l4t-tools",
        ),
        (None, false) => Outcome::skip("not a Jetson: jetson_clocks is L4T's"),
    }
}

/// The zones sysfs shows, or tegrastats' temperatures where sysfs shows none.
fn read_zones(root: &Path) -> (Vec<Zone>, &'static str) {
    let telemetry = Telemetry::open(root);
    let from = match telemetry.source() {
        TelemetrySource::Sysfs => "sysfs",
        TelemetrySource::Tegrastats => "tegrastats",
    };
    (telemetry.snapshot().zones, from)
}

fn zones(options: &Options, facts: &Facts) -> Outcome {
    let (zones, from) = read_zones(&options.root);
    if zones.is_empty() {
        let why = "no thermal zone with a sensor under /sys/class/thermal, and no tegrastats";
        return if facts.jetson {
            Outcome::fail("the SoC's thermal zones", why, "is --sysfs-root right? a Jetson kernel has them")
        } else {
            Outcome::skip(why)
        };
    }
    let hottest = zones.iter().max_by(|a, b| a.celsius.total_cmp(&b.celsius)).expect("not empty");
    let with_trips = zones.iter().filter(|z| z.trip_c.is_some()).count();
    Outcome::pass(format!(
        "{} zones from {from} ({with_trips} with trip points); hottest {} at {:.1} °C",
        zones.len(),
        hottest.name,
        hottest.celsius
    ))
}

fn throttling(root: &Path) -> Outcome {
    let (zones, _) = read_zones(root);
    let hot: Vec<&Zone> = zones.iter().filter(|z| z.trip_c.is_some_and(|t| z.celsius >= t)).collect();
    if !hot.is_empty() {
        let shown: Vec<String> = hot
            .iter()
            .map(|z| format!("{} {:.1} °C ≥ trip {:.1} °C", z.name, z.celsius, z.trip_c.unwrap_or(0.0)))
            .collect();
        return Outcome::fail(
            "every zone below its trip point",
            shown.join(", "),
            "the board is throttling: improve cooling (a fan: sudo jetson_clocks --fan) before measuring",
        );
    }
    let margin =
        zones.iter().filter_map(|z| Some((z, z.trip_c? - z.celsius))).min_by(|a, b| a.1.total_cmp(&b.1));
    match margin {
        Some((z, m)) => Outcome::pass(format!("none: closest is {} at {m:.1} °C below its trip", z.name)),
        None => Outcome::pass("none: no zone has a trip point"),
    }
}
