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
    assert_eq!(s.source, PowerSource::Ina3221xIio);
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
    assert_eq!(s.source, PowerSource::Ina3221Hwmon);
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
    assert!(matches!(&err, SensorError::NoPowerSensors { root, .. } if root == dir.path()), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("no INA3221 power sensors") && text.contains(&dir.path().display().to_string()),
        "{text}"
    );
}

#[test]
fn unreadable_rapl_counters_are_a_reason_not_a_zero() {
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("sys/class/powercap/intel-rapl:0");
    std::fs::create_dir_all(zone.join("energy_uj")).unwrap(); // a folder: reading it fails, even as root
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    let err = PowerSensors::discover(dir.path()).unwrap_err();
    let SensorError::NoPowerSensors { rapl, .. } = &err else { panic!("{err:?}") };
    assert!(
        matches!(&**rapl, SensorError::RaplUnreadable { path, .. } if path.ends_with("energy_uj")),
        "{err:?}"
    );
    assert!(err.to_string().contains("RAPL counters not readable"), "{err}");
}
