//! A model file: loaded as a bare .onnx, inspected, and prepared on the CPU backend.
#![no_main]
use edgert::backend::{self, PrepareOptions};
use edgert::model::{inspect, BareModelOptions, Model};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    edgert_fuzz::contain_edgert_panics();
    let (_dir, path) = edgert_fuzz::in_file(bytes, "model.onnx");
    let Ok(model) = Model::load(&path, &BareModelOptions::default()) else { return };
    let _ = inspect::inspect(&model);
    let cpu = backend::select("cpu").expect("the cpu backend");
    // A small limit: the fuzzer's own memory limit is 2 GB.
    let options = PrepareOptions { memory: edgert::limits::MemoryLimit::from_mib(256), ..Default::default() };
    let _ = cpu.backend.prepare(&model, &options);
});
