//! A manifest, beside a real model.
#![no_main]
use edgert::model::{BareModelOptions, Model};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (dir, path) = edgert_fuzz::in_file(bytes, "model.toml");
    std::fs::copy(edgert_fuzz::model("digits_mlp_nchw.onnx"), dir.path().join("digits_mlp_nchw.onnx"))
        .unwrap();
    let _ = Model::load(&path, &BareModelOptions::default());
});
