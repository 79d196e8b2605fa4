//! The JSON header Ultralytics puts before the TensorRT plan in its `.engine` files: a 4-byte
//! little-endian length, then that many bytes of JSON metadata (`imgsz`, `names`, `batch`, ...).
//! A bare plan (`trtexec --saveEngine`) has none.

use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// The longest header read: Ultralytics' are a few kilobytes, most of it class names.
pub const MAX_HEADER: usize = 1 << 20;

/// The header's JSON object and the offset of the plan after it, when `bytes` start with one.
pub fn split(bytes: &[u8]) -> Option<(serde_json::Value, usize)> {
    let length = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let json = bytes.get(4..4usize.checked_add(length)?)?;
    if json.first() != Some(&b'{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(json).ok()?;
    value.is_object().then_some((value, 4 + length))
}

/// The header of the engine file at `path`, reading no more than it can hold.
pub fn read(path: &Path) -> Result<Option<serde_json::Value>> {
    let file = crate::infile::open(path, crate::infile::MODEL)?;
    let mut head = Vec::new();
    file.take(4 + MAX_HEADER as u64).read_to_end(&mut head).map_err(|e| Error::read(path, e))?;
    if head.is_empty() {
        return Err(Error::read(path, "the file is empty: not a TensorRT engine"));
    }
    Ok(split(&head).map(|(value, _)| value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(json: &[u8], plan: &[u8]) -> Vec<u8> {
        let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(json);
        bytes.extend_from_slice(plan);
        bytes
    }

    #[test]
    fn an_ultralytics_header_is_read_and_the_plan_found_after_it() {
        let json = br#"{"imgsz": [640, 640], "batch": 1, "names": {"0": "person"}}"#;
        let bytes = with_header(json, b"PLAN BYTES");
        let (value, offset) = split(&bytes).unwrap();
        assert_eq!(&bytes[offset..], b"PLAN BYTES");
        assert_eq!(value["imgsz"][0], 640);
    }

    #[test]
    fn a_bare_plan_has_no_header() {
        // A plan whose first four bytes read as a length the file cannot hold, one that does but
        // is not followed by JSON, JSON that is not an object, and fewer than four bytes.
        let cases = [
            b"ftrt\x00\x00\x00\x01rest".to_vec(),
            vec![2, 0, 0, 0, b'x', b'y', b'z'],
            with_header(b"[1]", b""),
            vec![1],
        ];
        for bytes in cases {
            assert!(split(&bytes).is_none(), "{bytes:?}");
        }
    }

    #[test]
    fn a_header_longer_than_the_limit_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.engine");
        let mut json = br#"{"pad": ""#.to_vec();
        json.resize(MAX_HEADER + 10, b'a');
        json.extend_from_slice(br#""}"#);
        std::fs::write(&path, with_header(&json, b"plan")).unwrap();
        assert!(read(&path).unwrap().is_none());
        let empty = dir.path().join("empty.engine");
        std::fs::write(&empty, b"").unwrap();
        let message = read(&empty).unwrap_err().to_string();
        assert!(message.contains("empty.engine") && message.contains("empty"), "{message}");
    }
}
