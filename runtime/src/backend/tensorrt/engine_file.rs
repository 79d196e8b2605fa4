//! Serialized engines on disk: a bare TensorRT plan (`trtexec --saveEngine`) or an Ultralytics
//! `.engine`, whose JSON header (`model::engine_header`) comes before the plan.

use std::path::Path;

use crate::model::engine_header;
use crate::{Error, Result};

/// The plan of the engine file at `path`, without any Ultralytics header.
pub fn read_plan(path: &Path) -> Result<Vec<u8>> {
    let bytes = crate::infile::read(path, crate::infile::MODEL)?;
    if bytes.is_empty() {
        return Err(Error::read(path, "the file is empty: not a TensorRT engine"));
    }
    Ok(plan(bytes))
}

fn plan(bytes: Vec<u8>) -> Vec<u8> {
    match engine_header::split(&bytes) {
        Some((_, offset)) => bytes[offset..].to_vec(),
        None => bytes,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_plan_is_what_follows_an_ultralytics_header_or_the_whole_file() {
        let json = br#"{"imgsz": [640, 640], "batch": 1}"#;
        let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(json);
        bytes.extend_from_slice(b"PLAN BYTES");
        assert_eq!(super::plan(bytes), b"PLAN BYTES");
        assert_eq!(super::plan(b"ftrt\x00\x00\x00\x01rest".to_vec()), b"ftrt\x00\x00\x00\x01rest");
    }

    #[test]
    fn an_empty_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.engine");
        std::fs::write(&path, b"").unwrap();
        let message = super::read_plan(&path).unwrap_err().to_string();
        assert!(message.contains("empty.engine") && message.contains("empty"), "{message}");
    }
}
