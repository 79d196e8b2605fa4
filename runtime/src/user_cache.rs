//! Where edgert keeps what it builds for this machine (TensorRT engines, compiled GPU kernels): a
//! variable naming the folder, else `$XDG_CACHE_HOME/edgert/<what>`, else `~/.cache/edgert/<what>`;
//! and how it writes there.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn dir(variable: &str, what: &str) -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(variable)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("edgert").join(what)))
        .or_else(|| var("HOME").map(|d| d.join(".cache/edgert").join(what)))
        .unwrap_or_else(|| PathBuf::from(format!(".edgert-{what}")))
}

/// Writes `path` through a temporary file beside it, filled by `write` and renamed into place, so
/// that a crash, or another edgert writing the same file at the same time, never leaves a
/// half-written file under its name; the temporary file is removed when anything fails.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // Unique to this process and call: threads of one process may write the same file too.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}-{}.partial", std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed)));
    let temporary = PathBuf::from(temporary);
    let written = File::create(&temporary)
        .and_then(|file| {
            let mut writer = BufWriter::new(file);
            write(&mut writer)?;
            writer.into_inner().map(drop).map_err(|e| e.into_error())
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::write_atomically;

    fn names_in(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_write_that_fails_midway_leaves_no_file_under_either_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        let result = write_atomically(&path, |file| {
            // More than BufWriter keeps, so that some of it reached the temporary file.
            file.write_all(&[7; 64 * 1024])?;
            Err(std::io::Error::other("disk full"))
        });
        assert_eq!(result.unwrap_err().to_string(), "disk full");
        assert!(names_in(dir.path()).is_empty(), "{:?}", names_in(dir.path()));
    }

    #[test]
    fn a_failed_write_keeps_the_file_already_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        write_atomically(&path, |file| file.write_all(b"first")).unwrap();
        let result = write_atomically(&path, |file| {
            file.write_all(b"second")?;
            Err(std::io::Error::other("interrupted"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(names_in(dir.path()), ["entry"]);
    }
}
