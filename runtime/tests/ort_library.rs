//! One process holds one ONNX Runtime: once the `ort` backend has loaded a library, a backend that
//! names another is refused with both paths, and one that names the same is served. In a test
//! binary of its own, since whichever test loads ONNX Runtime first decides for the process.

#![cfg(feature = "ort")]
use std::path::PathBuf;

use edgert::backend::{self, BackendOptions};

#[test]
fn a_second_ort_library_in_one_process_is_refused() {
    let Some(library) = std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from).filter(|p| p.is_file()) else {
        let why = "ORT_DYLIB_PATH does not name an ONNX Runtime library (pip install onnxruntime)";
        assert!(std::env::var("EDGERT_REQUIRE_ORT").as_deref() != Ok("1"), "{why}");
        return eprintln!("SKIPPED a_second_ort_library_in_one_process_is_refused: {why}");
    };
    let with = |path: PathBuf| {
        let mut options = BackendOptions::default();
        options.ort.library = Some(path);
        backend::select_with("ort", &options)
    };
    with(library.clone()).expect("the first library loads");
    with(library.clone()).expect("the same library again is the one loaded");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(library.file_name().unwrap());
    std::fs::copy(&library, &copy).unwrap();
    let error = with(copy.clone()).err().expect("another library is refused").to_string();
    assert!(error.contains(&copy.display().to_string()), "{error}");
    assert!(error.contains(&format!("already loaded from {}", library.display())), "{error}");
}
