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
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (Some(0.0), Some(76.0)));
    assert_eq!(l.cpu_mhz, [Some(102.0); 4]);
    assert_eq!(l.temperatures_c["GPU"], 24.0);
    assert_eq!(l.temperatures_c.len(), 6, "{:?}", l.temperatures_c);
}

#[test]
fn jetpack_5_milliwatts_and_offline_cores() {
    let l = line("jp5-xavier-nx.txt");
    assert_eq!(rails(&l), [("VDD_IN", 3432.0), ("VDD_CPU_GPU_CV", 474.0), ("VDD_SOC", 1264.0)]);
    assert_eq!(l.cpu_mhz, [Some(1190.0), Some(1190.0), Some(1190.0), Some(1190.0), None, None]);
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (Some(12.0), Some(114.0)));
    assert_eq!(l.temperatures_c["Tdiode"], 35.25);
}

#[test]
fn jetpack_6_current_not_average_and_bracketed_gpu_clock() {
    let l = line("jp6-orin-nano.txt");
    assert_eq!(l.total_w(), (Some("VDD_IN"), Some(4.977)));
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (Some(3.0), Some(305.0)));
    assert_eq!(l.ram_used_mb, Some(2338));
    assert_eq!(l.temperatures_c["tj"], 45.5);
}

#[test]
fn agx_orin_sums_its_rails_and_drops_absent_sensors() {
    let l = line("jp6-agx-orin.txt");
    let (rail, total) = l.total_w();
    assert_eq!(rail, None);
    assert!((total.unwrap() - (2387.0 + 397.0 + 2623.0 + 503.0) / 1e3).abs() < 1e-9);
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (Some(45.0), Some(1300.0)));
    assert!(!l.temperatures_c.contains_key("cv0"), "−256 °C is no sensor");
    assert_eq!(l.cpu_mhz.len(), 8);
}

#[test]
fn jetpack_4_tx2_rails_and_denver_cores_off() {
    let l = line("jp4-tx2.txt");
    assert_eq!(l.total_w(), (Some("VDD_IN"), Some(1.224)));
    assert_eq!(l.rails_mw.len(), 6, "{:?}", l.rails_mw);
    assert_eq!(l.cpu_mhz, [Some(345.0), None, None, Some(345.0), Some(345.0), Some(345.0)]);
    assert_eq!(l.cpu_load_pct, [Some(2.0), None, None, Some(1.0), Some(0.0), Some(0.0)]);
    assert_eq!((l.emc_load_pct, l.emc_mhz), (Some(0.0), Some(1600.0)));
    assert_eq!(l.temperatures_c["BCPU"], 34.0);
}

#[test]
fn jetpack_7_thor_three_values_per_rail_two_per_zone_and_no_nc_rail() {
    let l = line("jp7-thor.txt");
    assert_eq!(rails(&l), [("VDD_GPU_SOC", 5139.0), ("VDD_CPU_SOC_MSS", 3206.0), ("VIN_SYS_5V0", 4820.0)]);
    let (rail, total) = l.total_w();
    assert_eq!(rail, None, "no module-input rail: the sum");
    assert!((total.unwrap() - (5139.0 + 3206.0 + 4820.0) / 1e3).abs() < 1e-9);
    assert_eq!(l.temperatures_c["cpu"], 52.968);
    assert_eq!(l.temperatures_c.len(), 4, "{:?}", l.temperatures_c);
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (Some(7.0), Some(1575.0)));
    assert_eq!(l.gpc_mhz, [1575.0; 3]);
    assert_eq!((l.emc_load_pct, l.emc_mhz), (Some(1.0), Some(4266.0)));
    assert_eq!(l.cpu_mhz.len(), 14);
    assert_eq!(l.cpu_mhz[..2], [Some(2601.0); 2]);
    assert_eq!(l.cpu_mhz[12..], [None, None]);
    assert_eq!(l.cpu_load_pct[0], Some(3.0));
    assert_eq!(l.ram_total_mb, Some(125772));
}

#[test]
fn every_clock_and_load_of_the_earlier_lines() {
    let l = line("jp6-agx-orin.txt");
    assert_eq!(l.gpc_mhz, [1300.0, 1300.0]);
    assert_eq!((l.emc_load_pct, l.emc_mhz), (Some(0.0), Some(2133.0)));
    assert_eq!(l.cpu_load_pct[0], Some(2.0));
    assert_eq!(l.cpu_mhz[4], Some(2201.0));
    let nano = line("jp4-nano.txt");
    assert_eq!(nano.cpu_load_pct, [Some(3.0), Some(2.0), Some(0.0), Some(0.0)]);
    assert_eq!(nano.emc_mhz, Some(1600.0));
}

#[test]
fn the_older_form_with_one_clock_for_every_core() {
    let l = parse("RAM 1000/3994MB (lfb 1x4MB) CPU [3%,2%,off,off]@1420 EMC_FREQ 4%@1600 GR3D_FREQ 0%@76");
    assert_eq!(l.cpu_load_pct, [Some(3.0), Some(2.0), None, None]);
    assert_eq!(l.cpu_mhz, [Some(1420.0), Some(1420.0), None, None]);
}

#[test]
fn rails_with_one_two_or_three_values_and_what_is_not_a_rail() {
    let rails_of =
        |text: &str| rails(&parse(text)).into_iter().map(|(n, w)| (n.to_string(), w)).collect::<Vec<_>>();
    assert_eq!(rails_of("VDD_IN 4977mW"), [("VDD_IN".to_string(), 4977.0)]);
    assert_eq!(rails_of("VDD_IN 4977mW/4000mW"), [("VDD_IN".to_string(), 4977.0)]);
    assert_eq!(rails_of("VDD_IN 4977/4000/5000"), [("VDD_IN".to_string(), 4977.0)]);
    for not_rail in [
        "APE 150",
        "VDD_IN 12",
        "VDD_IN 1/2/3/4",
        "VDD_IN 1mW/xmW",
        "VDD_IN 1mW/NaNmW/2mW",
        "NC 0mW/0mW",
        "VDD_IN -2000mW",
        "IRAM 0/252kB(lfb 252kB)",
    ] {
        assert_eq!(rails_of(not_rail), [], "{not_rail}");
    }
    let zones = |text: &str| parse(text).temperatures_c.into_keys().collect::<Vec<_>>();
    assert_eq!(zones("a@1C b@1C/2C c@1C/2C/3C d@1C/xC e@-256C/-256C"), ["a", "b"]);
}

#[test]
fn a_gpu_clock_list_with_a_bad_entry_gives_no_clock() {
    let l = parse("GR3D_FREQ 5%@[1300,x]");
    assert_eq!((l.gpu_load_pct, l.gpu_mhz()), (None, None));
    assert!(l.gpc_mhz.is_empty());
}

#[test]
fn garbage_gives_an_empty_line_not_a_panic() {
    for text in [
        "",
        "RAM",
        "RAM x/yMB GR3D_FREQ %@ CPU [",
        "VDD_IN 12",
        "@C @ a@bC",
        "CPU [",
        "CPU []@",
        "CPU [,,]@x",
    ] {
        let l = parse(text);
        assert!(l.rails_mw.is_empty() && l.ram_used_mb.is_none(), "{text}: {l:?}");
    }
}
