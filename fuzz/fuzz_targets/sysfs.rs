//! Sensor files of a board: the Orin Nano fixture tree with the fuzzed bytes in its power, clock,
//! load and temperature files, read as `info` and `bench` read them.
#![no_main]
use std::path::Path;

use edgert::metrics::{clocks, power::PowerSensors, thermal};
use libfuzzer_sys::fuzz_target;

const FILES: [&str; 6] = [
    "sys/class/hwmon/hwmon1/in1_input",
    "sys/class/hwmon/hwmon1/curr1_input",
    "sys/class/hwmon/hwmon1/update_interval",
    "sys/class/thermal/thermal_zone0/temp",
    "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
    "sys/class/devfreq/17000000.ga10b/device/load",
];

fuzz_target!(|bytes: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/fixtures/sysfs/orin-nano-jp6");
    let status = std::process::Command::new("cp").arg("-r").arg(&fixture).arg(dir.path().join("b")).status();
    assert!(status.is_ok_and(|s| s.success()));
    let root = dir.path().join("b");
    let mut parts = bytes.split(|&b| b == b'\n');
    for file in FILES {
        let _ = std::fs::write(root.join(file), parts.next().unwrap_or_default());
    }
    if let Ok(sensors) = PowerSensors::discover(&root) {
        let _ = sensors.read();
    }
    let _ = clocks::ClockReader::open(&root).read();
    let _ = thermal::zones(&root);
});
