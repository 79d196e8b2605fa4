use super::*;
use crate::metrics::clocks::{Clock, Clocks, CpuCore, Gpu};
use crate::metrics::system_memory::SystemMemory;
use crate::metrics::thermal::Zone;

fn snapshot(cpu_mhz: f64, locked: bool, gpu_load: f64, tj_c: f64, rss: u64) -> Snapshot {
    let clock = |cur: f64| Clock {
        cur_mhz: cur,
        min_mhz: Some(if locked { 1500.0 } else { 100.0 }),
        max_mhz: Some(1500.0),
    };
    Snapshot {
        rss_bytes: Some(rss),
        memory: Some(SystemMemory {
            total_bytes: 8 << 30,
            available_bytes: (8 << 30) - rss,
            used_bytes: rss,
            swap_total_bytes: 0,
            swap_used_bytes: 0,
            nvmap_used_bytes: Some(rss / 2),
            gpu_visible_bytes: Some(8 << 30),
        }),
        clocks: Clocks {
            cpus: vec![
                CpuCore { core: 0, online: true, clock: Some(clock(cpu_mhz)), load_pct: None },
                CpuCore { core: 1, online: false, clock: None, load_pct: None },
            ],
            gpu: Some(Gpu {
                device: "17000000.ga10b".into(),
                clock: Some(clock(1500.0)),
                load_pct: Some(gpu_load),
                gpc_mhz: Vec::new(),
            }),
            emc_mhz: None,
            emc_load_pct: None,
        },
        zones: vec![Zone { name: "tj-thermal".into(), celsius: tj_c, trip_c: Some(99.0) }],
    }
}

fn summarize(snaps: Vec<Snapshot>) -> RunTelemetry {
    let readings: Vec<(f64, Snapshot)> =
        snaps.into_iter().enumerate().map(|(i, s)| (i as f64 * 0.1, s)).collect();
    RunTelemetry::summarize(TelemetrySource::Sysfs, &readings, 0.0)
}

#[test]
fn a_steady_locked_run_has_ranges_peaks_and_no_throttling() {
    let t = summarize(vec![snapshot(1500.0, true, 20.0, 50.0, 100), snapshot(1500.0, true, 60.0, 52.5, 300)]);
    assert_eq!(t.clocks_locked, Some(true));
    assert!(!t.throttled && t.throttle_reasons.is_empty() && t.warnings().is_empty(), "{t:?}");
    assert_eq!(t.cpu_mhz, [Some(Range { min: 1500.0, max: 1500.0 }), None]);
    assert_eq!((t.gpu_load_mean_pct, t.gpu_load_max_pct), (Some(40.0), Some(60.0)));
    assert_eq!(t.rss_series, [(0.0, 100), (0.1, 300)]);
    assert_eq!((t.memory_used_max_bytes, t.nvmap_used_max_bytes), (Some(300), Some(150)));
    assert_eq!(t.zones[0].max_c, 52.5);
}

#[test]
fn a_locked_clock_that_falls_is_throttling() {
    let t = summarize(vec![snapshot(1500.0, true, 0.0, 50.0, 1), snapshot(1100.0, true, 0.0, 50.0, 1)]);
    assert!(t.throttled);
    assert_eq!(t.throttle_reasons, ["cpu0 fell from 1500 to 1100 MHz with clocks locked"]);
    assert!(t.warnings()[0].starts_with("throttled: cpu0 fell"), "{:?}", t.warnings());
}

#[test]
fn an_unlocked_clock_that_falls_is_a_warning_about_dvfs_not_throttling() {
    let t = summarize(vec![snapshot(1500.0, false, 0.0, 50.0, 1), snapshot(800.0, false, 0.0, 50.0, 1)]);
    assert!(!t.throttled);
    assert_eq!(t.clock_drops, ["cpu0 fell from 1500 to 800 MHz"]);
    let warnings = t.warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("not locked") && warnings[0].contains("cpu0 fell"),
        "{warnings:?}"
    );
}

#[test]
fn a_zone_past_its_trip_point_is_throttling() {
    let t = summarize(vec![snapshot(1500.0, true, 0.0, 90.0, 1), snapshot(1500.0, true, 0.0, 99.5, 1)]);
    assert!(t.throttled);
    assert_eq!(t.throttle_reasons, ["tj-thermal reached 99.5 °C, past its trip point 99.0 °C"]);
}

#[test]
fn no_readings_summarize_to_nothing_known() {
    let t = RunTelemetry::summarize(TelemetrySource::Sysfs, &[], 0.0);
    assert_eq!((t.samples, t.clocks_locked, t.throttled), (0, None, false));
    assert!(t.zones.is_empty() && t.cpu_mhz.is_empty() && t.warnings().is_empty());
}
