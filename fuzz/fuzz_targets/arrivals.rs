//! A replay file of arrival times (`bench --scenario server --arrivals`).
#![no_main]
use edgert::bench::load::arrivals;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (_dir, path) = edgert_fuzz::in_file(bytes, "arrivals.txt");
    if let Ok(times) = arrivals::read(&path) {
        assert!(!times.is_empty() && times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }
});
