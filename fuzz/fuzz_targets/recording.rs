//! A recording: `frames.json` and `frames.raw` (the input split at its first NUL), replayed.
#![no_main]
use std::time::Duration;

use edgert::capture::source::{self, Capture, SourceOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (index, raw) = edgert_fuzz::split(bytes);
    let (dir, _) = edgert_fuzz::in_file(index, "frames.json");
    std::fs::write(dir.path().join("frames.raw"), raw).unwrap();
    let uri = format!("file:{}", dir.path().display());
    let Ok(mut source) = source::open(&uri, &SourceOptions::default()) else { return };
    for _ in 0..64 {
        match source.capture(Duration::from_millis(100)) {
            Ok(Capture::Frame(_)) => {}
            _ => break,
        }
    }
});
