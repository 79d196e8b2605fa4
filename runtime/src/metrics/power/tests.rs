use std::path::{Path, PathBuf};

use super::*;

fn fixture(board: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs").join(board)
}

fn names(s: &PowerSensors) -> Vec<&str> {
    s.rails.iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn jetson_nano_jetpack_4_iio_in_milliwatts() {
    let s = PowerSensors::discover(&fixture("jetson-nano-jp4")).unwrap();
    assert_eq!(s.source, "ina3221x iio");
    assert_eq!(names(&s), ["POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"]);
    assert_eq!(s.total_rail.as_deref(), Some("POM_5V_IN"));
    let (watts, total) = s.read().unwrap();
    assert_eq!(watts, [Some(2.52), Some(0.04), Some(0.603)]);
    assert_eq!(total, Some(2.52));
    assert_eq!(s.open().unwrap().read(), (watts, total), "open files read the same");
}

#[test]
fn xavier_nx_jetpack_5_hwmon_volts_times_amps_without_the_sum_channel() {
    let s = PowerSensors::discover(&fixture("xavier-nx-jp5")).unwrap();
    assert_eq!(s.source, "ina3221 hwmon");
    assert_eq!(names(&s), ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]);
    assert_eq!(s.update_interval_ms, Some(140));
    let (_, total) = s.read().unwrap();
    assert!((total.unwrap() - 5.008 * 1.040).abs() < 1e-9);
}

#[test]
fn orin_nano_jetpack_6_totals_on_vdd_in() {
    let s = PowerSensors::discover(&fixture("orin-nano-jp6")).unwrap();
    assert_eq!(s.total_rail.as_deref(), Some("VDD_IN"));
    assert!((s.read().unwrap().1.unwrap() - 5.072 * 1.192).abs() < 1e-9);
}

#[test]
fn agx_orin_two_sensors_no_input_rail_totals_the_rails() {
    let s = PowerSensors::discover(&fixture("agx-orin-jp6")).unwrap();
    assert_eq!(names(&s), ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"]);
    assert_eq!(s.total_rail, None, "the total is the sum of rails");
    let expected = 5.008 * 1.2 + 5.008 * 0.4 + 5.0 * 0.6 + 5.0 * 0.2;
    assert!((s.read().unwrap().1.unwrap() - expected).abs() < 1e-9);
}

#[test]
fn no_sensors_is_an_error_that_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let err = PowerSensors::discover(dir.path()).unwrap_err();
    assert!(
        err.contains("no INA3221 power sensors") && err.contains(&dir.path().display().to_string()),
        "{err}"
    );
}

/// Copies a fixture tree so a test can break it.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_sensor_that_vanishes_or_returns_garbage_is_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("agx-orin-jp6"), dir.path());
    let s = PowerSensors::discover(dir.path()).unwrap();
    let hwmon1 = dir.path().join("sys/class/hwmon/hwmon1");
    std::fs::remove_file(hwmon1.join("curr2_input")).unwrap();
    std::fs::write(hwmon1.join("in3_input"), "garbage\n").unwrap();
    for (watts, total) in [s.read().unwrap(), s.open().unwrap().read()] {
        assert_eq!(watts[1], None);
        assert_eq!(watts[2], None);
        assert!(watts[0].is_some() && watts[3].is_some());
        assert_eq!(total, None, "a sum with a missing rail is not a total");
    }
    let err = s.open().unwrap().read_detailed().remove(2).unwrap_err();
    assert!(err.contains("in3_input") && err.contains("not a number"), "{err}");
}

#[test]
fn rapl_packages_and_dram_without_psys_or_subzones() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("x86-rapl"), dir.path());
    let s = PowerSensors::discover(dir.path()).unwrap();
    assert_eq!((s.source, s.total_rail.as_deref()), ("rapl", None));
    assert_eq!(names(&s), ["package-0", "dram"]);
    let mut open = s.open().unwrap();
    let zones = dir.path().join("sys/class/powercap");
    std::fs::write(zones.join("intel-rapl:0/energy_uj"), "124456789\n").unwrap();
    // The DRAM counter wraps: 65712999613 − 2222222 + 5 µJ later it reads 5.
    std::fs::write(zones.join("intel-rapl:0:1/energy_uj"), "5\n").unwrap();
    let (watts, total) = open.read();
    let (package, dram) = (watts[0].unwrap(), watts[1].unwrap());
    // 1 J and (65712999613 − 2222222 + 5) µJ over the same few ms: the ratio is exact.
    let wrapped_j = (65_712_999_613.0 - 2_222_222.0 + 5.0) / 1e6;
    assert!((dram / package - wrapped_j).abs() < 1e-6 * wrapped_j, "{package} {dram}");
    assert!((total.unwrap() - package - dram).abs() < 1e-9);
}

#[test]
fn unreadable_rapl_counters_are_a_reason_not_a_zero() {
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("sys/class/powercap/intel-rapl:0");
    std::fs::create_dir_all(zone.join("energy_uj")).unwrap(); // a folder: reading it fails, even as root
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    let err = PowerSensors::discover(dir.path()).unwrap_err();
    assert!(err.contains("RAPL counters not readable") && err.contains("energy_uj"), "{err}");
}
