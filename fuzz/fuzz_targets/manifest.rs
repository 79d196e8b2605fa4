//! A manifest, beside a real model.
#![no_main]
use std::sync::OnceLock;

use edgert::model::{BareModelOptions, Model};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    // One folder with the model for the whole run (a copy per input cost a megabyte of writing
    // each time), each manifest written over the last.
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let model = edgert_fuzz::model("digits_mlp_nchw.onnx");
        std::fs::copy(&model, dir.path().join("digits_mlp_nchw.onnx"))
            .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
        dir
    });
    let path = dir.path().join("model.toml");
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = Model::load(&path, &BareModelOptions::default());
});
