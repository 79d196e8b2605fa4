//! A labelled tensor set, as `run --input` and `validate --data` read it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (_dir, path) = edgert_fuzz::in_file(bytes, "data.npz");
    let _ = edgert::capture::npz::load(&path, &[1, 8, 8]);
});
