//! Serialized engines on disk: a bare TensorRT plan (`trtexec --saveEngine`) or an Ultralytics
//! `.engine`, which puts a 4-byte little-endian length and that many bytes of JSON metadata before
//! the plan.

use std::path::Path;

use crate::{Error, Result};

#[derive(Debug)]
pub struct EngineFile {
    pub plan: Vec<u8>,
    /// The Ultralytics header, when the file has one (`imgsz`, `names`, `batch`, ...).
    pub metadata: Option<serde_json::Value>,
}

pub fn read(path: &Path) -> Result<EngineFile> {
    let bytes = std::fs::read(path).map_err(|e| Error::read(path, e.to_string()))?;
    if bytes.is_empty() {
        return Err(Error::read(path, "the file is empty: not a TensorRT engine"));
    }
    Ok(split(bytes))
}

/// Separates an Ultralytics header from the plan; anything else is all plan.
pub fn split(bytes: Vec<u8>) -> EngineFile {
    let header = bytes.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let metadata = header.and_then(|length| {
        let json = bytes.get(4..4usize.checked_add(length)?)?;
        if json.first() != Some(&b'{') {
            return None;
        }
        let value: serde_json::Value = serde_json::from_slice(json).ok()?;
        value.is_object().then_some((length, value))
    });
    match metadata {
        Some((length, value)) => EngineFile { plan: bytes[4 + length..].to_vec(), metadata: Some(value) },
        None => EngineFile { plan: bytes, metadata: None },
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn an_ultralytics_header_is_read_and_skipped() {
        let json = br#"{"imgsz": [640, 640], "batch": 1, "names": {"0": "person"}}"#;
        let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(json);
        bytes.extend_from_slice(b"PLAN BYTES");
        let file = split(bytes);
        assert_eq!(file.plan, b"PLAN BYTES");
        assert_eq!(file.metadata.unwrap()["imgsz"][0], 640);
    }

    #[test]
    fn a_bare_plan_is_kept_whole() {
        // A plan whose first four bytes read as a length the file cannot hold, and one that does
        // but is not followed by JSON.
        for bytes in [b"ftrt\x00\x00\x00\x01rest".to_vec(), vec![2, 0, 0, 0, b'x', b'y', b'z']] {
            let file = split(bytes.clone());
            assert_eq!(file.plan, bytes);
            assert!(file.metadata.is_none());
        }
    }

    #[test]
    fn an_empty_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.engine");
        std::fs::write(&path, b"").unwrap();
        let message = super::read(&path).unwrap_err().to_string();
        assert!(message.contains("empty.engine") && message.contains("empty"), "{message}");
    }
}
