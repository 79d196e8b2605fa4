//! Memory does not grow with the length of a run: a minute of `bench` on the digits MLP, its
//! resident memory sampled every second, may not grow by more than 1 % after its first ten
//! seconds (warm-up, allocator pools). A longer run is in benches/RESULTS.md (soak).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Resident memory of a running process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_minute_of_bench_holds_its_memory_within_one_percent() {
    if emulated() {
        // Under qemu the process measured would be the emulator's.
        return eprintln!("skipped: RSS under an emulator is the emulator's");
    }
    let manifest = model("digits_mlp_nchw.toml");
    let data = model("digits_test.npz");
    let args = ["bench", "-m", manifest.to_str().unwrap(), "--input", data.to_str().unwrap()];
    let child = command(&args)
        .args(["--duration-s", "60", "--idle-s", "0", "--warmup-ms", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut samples = Vec::new();
    while let Some(kib) = rss_kib(child.id()).filter(|_| started.elapsed() < Duration::from_secs(58)) {
        samples.push((started.elapsed().as_secs_f64(), kib));
        std::thread::sleep(Duration::from_secs(1));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // "batch 1: N iterations in 60.00 s; ..."
    let text = stdout(&out);
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "iterations").unwrap_or(0);
    let iterations: u64 = words.get(at.wrapping_sub(1)).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(iterations >= 20_000, "{text}");
    let after_warmup: Vec<u64> = samples.iter().filter(|(t, _)| *t >= 10.0).map(|s| s.1).collect();
    assert!(after_warmup.len() >= 40, "{samples:?}");
    let (first, peak) = (after_warmup[0], *after_warmup.iter().max().unwrap());
    let growth = (peak - first) as f64 / first as f64;
    eprintln!(
        "soak: {iterations} iterations, RSS {first} KiB at 10 s, peak {peak} KiB after: {:.2} %",
        growth * 100.0
    );
    assert!(growth <= 0.01, "RSS grew {:.2} % after warm-up: {samples:?}", growth * 100.0);
}
