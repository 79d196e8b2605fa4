//! Files edgert writes for its user (reports, plots, recordings, caches): checked writable before
//! a run spends time on them, and written whole or not at all, so a full disk, an error or a
//! signal midway never leaves a truncated file under the name asked for.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::Error;

/// Writes `path` through a temporary file beside it, filled by `write` and renamed into place, so
/// that a crash, or another edgert writing the same file at the same time, never leaves a
/// half-written file under its name; the temporary file is removed when anything fails.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // A device, a pipe or a terminal (`/dev/stdout`, `/dev/full`) is written in place: renaming a
    // file over it would replace the device itself.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut writer = BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        write(&mut writer)?;
        return writer.into_inner().map(drop).map_err(|e| e.into_error());
    }
    replace(path, write)
}

/// `write_atomically` for a file edgert keeps for itself (a cache entry): whatever is at `path`, a
/// FIFO or a device included, is replaced by the new file, never written through (a FIFO nobody
/// reads would hold the write forever).
pub fn replace(
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

/// Whether `path` can be written: its folder exists and takes a new file, and it is not a folder
/// itself. Checked before a run, so a bad output path does not cost the measurement.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(fail("is a folder".into())),
        // A device or a pipe: opened for writing now, and written in place later.
        Ok(m) if !m.is_file() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(drop)
                .map_err(|e| fail(e.to_string()))
        }
        _ => {}
    }
    write_atomically(&probe_name(path), |_| Ok(())).map_err(|e| fail(e.to_string()))?;
    std::fs::remove_file(probe_name(path)).map_err(|e| fail(e.to_string()))
}

/// A name beside `path` that no one else uses.
fn probe_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.probe", std::process::id()));
    PathBuf::from(name)
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
    fn writable_paths_are_told_from_the_rest_and_the_check_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.json");
        super::check_writable(&file).unwrap();
        assert!(names_in(dir.path()).is_empty(), "{:?}", names_in(dir.path()));
        // A folder under a regular file cannot exist, whoever runs the test.
        std::fs::write(&file, b"x").unwrap();
        let under_a_file = file.join("sub/report.json");
        let err = super::check_writable(&under_a_file).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: cannot write: ", under_a_file.display())), "{err}");
        let err = super::check_writable(dir.path()).unwrap_err().to_string();
        assert!(err.ends_with("cannot write: is a folder"), "{err}");
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
