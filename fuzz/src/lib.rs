//! What the fuzz targets share: outside bytes put where edgert reads them from, a file.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// `bytes` written to `name` in a new temporary folder (removed when the guard drops).
pub fn in_file(bytes: &[u8], name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("the temporary file");
    (dir, path)
}

/// A file of the repository's models folder.
pub fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models").join(name)
}

/// Splits fuzz bytes in two at the first NUL: two files from one input.
pub fn split(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == 0) {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &[]),
    }
}

/// edgert's panic hook over libFuzzer's: a panic edgert contains (tract's, turned into an error)
/// is its answer, not a finding; any other still aborts, through libFuzzer's hook.
pub fn contain_edgert_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(edgert::panics::install_hook);
}
