use std::path::Path;

use super::*;

fn line(file: &str) -> Line {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tegrastats").join(file);
    parse(&std::fs::read_to_string(path).unwrap())
}

fn rails(l: &Line) -> Vec<(&str, f64)> {
    l.rails_mw.iter().map(|(n, w)| (n.as_str(), *w)).collect()
}

#[test]
fn jetpack_4_rails_have_no_units() {
    let l = line("jp4-nano.txt");
    assert_eq!(rails(&l), [("POM_5V_IN", 1191.0), ("POM_5V_GPU", 40.0), ("POM_5V_CPU", 160.0)]);
    assert_eq!(l.total_w(), (Some("POM_5V_IN"), Some(1.191)));
    assert_eq!((l.ram_used_mb, l.ram_total_mb, l.swap_total_mb), (Some(1645), Some(3956), Some(1978)));
    assert_eq!((l.gpu_load_pct, l.gpu_mhz), (Some(0.0), Some(76.0)));
    assert_eq!(l.cpu_mhz, [Some(102.0); 4]);
    assert_eq!(l.temperatures_c["GPU"], 24.0);
    assert_eq!(l.temperatures_c.len(), 6, "{:?}", l.temperatures_c);
}

#[test]
fn jetpack_5_milliwatts_and_offline_cores() {
    let l = line("jp5-xavier-nx.txt");
    assert_eq!(rails(&l), [("VDD_IN", 3432.0), ("VDD_CPU_GPU_CV", 474.0), ("VDD_SOC", 1264.0)]);
    assert_eq!(l.cpu_mhz, [Some(1190.0), Some(1190.0), Some(1190.0), Some(1190.0), None, None]);
    assert_eq!((l.gpu_load_pct, l.gpu_mhz), (Some(12.0), Some(114.0)));
    assert_eq!(l.temperatures_c["Tdiode"], 35.25);
}

#[test]
fn jetpack_6_current_not_average_and_bracketed_gpu_clock() {
    let l = line("jp6-orin-nano.txt");
    assert_eq!(l.total_w(), (Some("VDD_IN"), Some(4.977)));
    assert_eq!((l.gpu_load_pct, l.gpu_mhz), (Some(3.0), Some(305.0)));
    assert_eq!(l.ram_used_mb, Some(2338));
    assert_eq!(l.temperatures_c["tj"], 45.5);
}

#[test]
fn agx_orin_sums_its_rails_and_drops_absent_sensors() {
    let l = line("jp6-agx-orin.txt");
    let (rail, total) = l.total_w();
    assert_eq!(rail, None);
    assert!((total.unwrap() - (2387.0 + 397.0 + 2623.0 + 503.0) / 1e3).abs() < 1e-9);
    assert_eq!((l.gpu_load_pct, l.gpu_mhz), (Some(45.0), Some(1300.0)));
    assert!(!l.temperatures_c.contains_key("cv0"), "−256 °C is no sensor");
    assert_eq!(l.cpu_mhz.len(), 8);
}

#[test]
fn garbage_gives_an_empty_line_not_a_panic() {
    for text in ["", "RAM", "RAM x/yMB GR3D_FREQ %@ CPU [", "VDD_IN 12mW", "@C @ a@bC"] {
        let l = parse(text);
        assert!(l.rails_mw.is_empty() && l.ram_used_mb.is_none(), "{text}: {l:?}");
    }
}
