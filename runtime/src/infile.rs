//! Files edgert reads for its user (models, engines, manifests, labels, images, tensors,
//! recordings, arrivals, reports): a regular file, opened without blocking (a FIFO nobody writes
//! would hold `open` forever; a device would give bytes forever), and read no further than its
//! kind may be long (docs/cli.md, "Files edgert reads").

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::limits::size;
use crate::Error;

/// How long a kind of file may be, and the name the error gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub what: &'static str,
    pub bytes: u64,
}

/// An ONNX model, a TensorRT engine, or a library: the largest edge models are a few hundred MB;
/// protobuf itself stops at 2 GiB.
pub const MODEL: Cap = Cap { what: "a model", bytes: 4 << 30 };
/// A manifest, labels, metadata or a recording's index: text a person or a tool wrote.
pub const TEXT: Cap = Cap { what: "a text file", bytes: 16 << 20 };
/// An image to decode: a 16K × 16K 8-bit RGB picture is 768 MiB decoded; compressed, far less.
pub const IMAGE: Cap = Cap { what: "an image", bytes: 256 << 20 };
/// An `.npz` or `.npy` of input tensors, or a conformance case's `.pb` (the memory limit then
/// bounds what its arrays may hold).
pub const TENSORS: Cap = Cap { what: "a tensor file", bytes: 4 << 30 };
/// A list of request arrival times (a line each: millions of requests).
pub const ARRIVALS: Cap = Cap { what: "an arrivals file", bytes: 64 << 20 };
/// A report edgert wrote (hours of per-frame samples stay well under this).
pub const REPORT: Cap = Cap { what: "a report", bytes: 256 << 20 };
/// A shared library, checked before it is loaded.
pub const LIBRARY: Cap = Cap { what: "a library", bytes: 2 << 30 };
/// A sysfs or procfs file, or one of a fixture tree standing in for them: a line or a table.
pub const SENSOR: Cap = Cap { what: "a sensor file", bytes: 1 << 20 };
/// A recording's frames, read a frame at a time: only its type is checked.
pub const STREAMED: Cap = Cap { what: "a recording", bytes: u64::MAX };

/// Opens `path` for reading if it is a regular file no longer than `cap` allows; says which of
/// the two it is not.
pub fn open(path: &Path, cap: Cap) -> Result<File, Error> {
    try_open(path, cap).map_err(|reason| Error::read(path, reason))
}

/// `open`, for callers with errors of their own: why not, without the path.
pub fn try_open(path: &Path, cap: Cap) -> Result<File, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let metadata = file.metadata().map_err(|e| e.to_string())?;
    if let Some(kind) = not_regular(&metadata.file_type()) {
        return Err(format!("is {kind}, not a regular file"));
    }
    if metadata.len() > cap.bytes {
        return Err(too_long(cap, size(metadata.len() as u128)));
    }
    Ok(file)
}

/// The whole of `path` (see `open`); a file that grows past the cap while being read is refused
/// too.
pub fn read(path: &Path, cap: Cap) -> Result<Vec<u8>, Error> {
    let file = open(path, cap)?;
    let mut bytes = Vec::new();
    file.take(cap.bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::read(path, e))?;
    if bytes.len() as u64 > cap.bytes {
        return Err(Error::read(path, too_long(cap, "more".into())));
    }
    Ok(bytes)
}

/// Whether nothing at all is at `path` (a cache entry not made yet); a dangling link is something.
pub fn absent(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// `read`, or `None` where nothing is at `path` (`absent`).
#[cfg(feature = "tensorrt")]
pub fn read_if_present(path: &Path, cap: Cap) -> Result<Option<Vec<u8>>, Error> {
    if absent(path) {
        return Ok(None);
    }
    read(path, cap).map(Some)
}

/// The whole of `path` as UTF-8 text (see `read`).
pub fn read_to_string(path: &Path, cap: Cap) -> Result<String, Error> {
    String::from_utf8(read(path, cap)?).map_err(|_| Error::read(path, "is not UTF-8 text"))
}

fn too_long(cap: Cap, length: String) -> String {
    format!("is {length} long, more than the {} {} may be", size(cap.bytes as u128), cap.what)
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
fn not_regular(kind: &std::fs::FileType) -> Option<&'static str> {
    Some(if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a file"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(path: &Path, cap: Cap) -> String {
        crate::error::one_line(&read(path, cap).unwrap_err())
    }

    #[test]
    fn a_regular_file_within_its_cap_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.txt");
        std::fs::write(&path, "cat\ndog\n").unwrap();
        assert_eq!(read_to_string(&path, TEXT).unwrap(), "cat\ndog\n");
        let cap = Cap { what: "a test file", bytes: 8 };
        assert_eq!(read(&path, cap).unwrap().len(), 8);
    }

    #[test]
    fn fifos_devices_sockets_and_folders_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let cases = [
            (fifo.as_path(), "is a FIFO, not a regular file"),
            (Path::new("/dev/zero"), "is a character device, not a regular file"),
            (dir.path(), "is a folder, not a regular file"),
        ];
        for (path, says) in cases {
            let error = refusal(path, TEXT);
            assert!(error.starts_with(&format!("{}: ", path.display())) && error.ends_with(says), "{error}");
        }
        // A socket cannot be opened at all; the refusal still names it.
        let error = refusal(&socket, TEXT);
        assert!(error.starts_with(&format!("{}: ", socket.display())), "{error}");
    }

    #[test]
    fn a_file_past_its_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.onnx");
        // Sparse: nothing is written, the length alone is past the cap.
        File::create(&path).unwrap().set_len(5 << 30).unwrap();
        let error = refusal(&path, MODEL);
        assert!(error.ends_with("is 5.0 GiB long, more than the 4.0 GiB a model may be"), "{error}");
        let text = dir.path().join("labels.txt");
        std::fs::write(&text, [b'x'; 20]).unwrap();
        let error = refusal(&text, Cap { what: "a test file", bytes: 10 });
        assert!(error.ends_with("is 20 bytes long, more than the 10 bytes a test file may be"), "{error}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.txt");
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        let error = crate::error::one_line(&read_to_string(&path, TEXT).unwrap_err());
        assert!(error.ends_with("is not UTF-8 text"), "{error}");
    }
}
