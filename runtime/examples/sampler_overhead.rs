//! CPU cost of the samplers a bench runs: power at an interval, then power plus telemetry (memory,
//! clocks, temperatures; every 250 ms by default, as `bench`), each as the process CPU time as a
//! share of one core, against the same wait without sampling.
//!
//!     cargo run --release --example sampler_overhead -- SYSFS_ROOT [INTERVAL_MS] [SECONDS] [TELEMETRY_MS]

use std::time::{Duration, Instant};

use edgert::metrics::periodic::Periodic;
use edgert::metrics::power::sampler::Sampler;
use edgert::metrics::power::PowerSensors;
use edgert::metrics::telemetry::Telemetry;

/// User + system CPU seconds of this process, from /proc/self/stat (fields 14 and 15, in ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("procfs");
    let fields: Vec<&str> = stat.rsplit_once(')').expect("stat format").1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn share_of_one_core(run: impl FnOnce()) -> (f64, f64) {
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    run();
    let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
    (100.0 * cpu / wall, wall)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(root) = args.get(1) else {
        eprintln!("usage: sampler_overhead SYSFS_ROOT [INTERVAL_MS] [SECONDS] [TELEMETRY_MS]");
        std::process::exit(2);
    };
    let interval = Duration::from_millis(args.get(2).map_or(10, |v| v.parse().expect("INTERVAL_MS")));
    let seconds = Duration::from_secs_f64(args.get(3).map_or(10.0, |v| v.parse().expect("SECONDS")));
    let every = Duration::from_millis(args.get(4).map_or(250, |v| v.parse().expect("TELEMETRY_MS")));
    let sensors = PowerSensors::discover(std::path::Path::new(root)).unwrap_or_else(|e| {
        eprintln!("sampler_overhead: {e}");
        std::process::exit(2);
    });
    let (idle, _) = share_of_one_core(|| std::thread::sleep(seconds));
    let start_power = || {
        Sampler::start(&sensors, Instant::now(), interval).unwrap_or_else(|e| {
            eprintln!("sampler_overhead: {e}");
            std::process::exit(1);
        })
    };
    let mut samples = 0;
    let (sampling, wall) = share_of_one_core(|| {
        let sampler = start_power();
        std::thread::sleep(seconds);
        samples = sampler.finish().map_or(0, |s| s.len());
    });
    println!(
        "{} rails, interval {} ms: {samples} samples in {wall:.2} s ({:.1} Hz); CPU {sampling:.3} % of one core \
         sampling, {idle:.3} % waiting without sampling",
        sensors.rails.len(),
        interval.as_millis(),
        samples as f64 / wall
    );
    let telemetry = std::sync::Arc::new(Telemetry::open(std::path::Path::new(root)));
    let mut snapshots = 0;
    let (both, _) = share_of_one_core(|| {
        let power = start_power();
        let reader = telemetry.clone();
        let periodic = Periodic::start("telemetry", Instant::now(), every, move || reader.snapshot())
            .expect("a thread starts");
        std::thread::sleep(seconds);
        samples = power.finish().map_or(0, |s| s.len());
        snapshots = periodic.finish().map_or(0, |s| s.len());
    });
    println!(
        "  plus telemetry every {} ms: {samples} power samples and {snapshots} snapshots; CPU {both:.3} % of one core",
        every.as_millis()
    );
}
