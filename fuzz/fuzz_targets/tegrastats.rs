//! A tegrastats line, as the power and telemetry readers parse it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let line = edgert::metrics::tegrastats::parse(&String::from_utf8_lossy(bytes));
    let _ = line.total_w();
});
