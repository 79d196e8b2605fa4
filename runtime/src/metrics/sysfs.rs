//! Reading small sysfs and procfs files under a root folder: `/` on a board, a fixture tree in
//! tests. Every reader in `metrics` goes through here, so every reader can be pointed at a fixture.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::error::SensorError;

/// A file's text without surrounding whitespace or the NULs device-tree strings end with;
/// `None` when unreadable or empty.
pub fn read_trimmed(path: &Path) -> Option<String> {
    let text = crate::infile::read_to_string(path, crate::infile::SENSOR).ok()?;
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!text.is_empty()).then(|| text.to_string())
}

/// A file holding one number.
pub fn read_number<T: FromStr>(path: &Path) -> Option<T> {
    read_trimmed(path)?.parse().ok()
}

fn parse_number(path: &Path, text: &str) -> Result<f64, SensorError> {
    let text = text.trim();
    let value: f64 = text
        .parse()
        .map_err(|_| SensorError::NotANumber { path: path.to_owned(), text: text.to_string() })?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(SensorError::Implausible { path: path.to_owned(), value })
    }
}

/// A file holding one number, kept open and re-read from offset 0: one `pread` a reading instead
/// of open, read and close, which keeps samplers cheap.
pub struct NumberFile {
    path: PathBuf,
    file: Result<std::fs::File, SensorError>,
}

impl NumberFile {
    pub fn new(path: &Path) -> NumberFile {
        let file = crate::infile::try_open(path, crate::infile::SENSOR).map_err(|e| unreadable(path, e));
        NumberFile { path: path.to_owned(), file }
    }

    /// The number now, or why not (a sensor that vanished or returned garbage).
    pub fn read(&self) -> Result<f64, SensorError> {
        use std::os::unix::fs::FileExt;
        let file = self.file.as_ref().map_err(Clone::clone)?;
        let mut buffer = [0u8; 32];
        let n = file.read_at(&mut buffer, 0).map_err(|e| unreadable(&self.path, e))?;
        parse_number(&self.path, &String::from_utf8_lossy(&buffer[..n]))
    }

    /// A reading that must not be negative (power, energy).
    pub fn number(&self) -> Result<f64, SensorError> {
        let value = self.read()?;
        if value >= 0.0 {
            Ok(value)
        } else {
            Err(SensorError::Implausible { path: self.path.clone(), value })
        }
    }
}

pub fn unreadable(path: &Path, err: impl std::fmt::Display) -> SensorError {
    SensorError::Unreadable { path: path.to_owned(), reason: err.to_string() }
}

/// The entries of a folder, sorted by name; none when it cannot be read.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.sort_by_key(|p| natural_key(p));
    found
}

/// Sorts `cpu10` after `cpu9`: the name's text with its trailing number compared as a number.
fn natural_key(path: &Path) -> (String, u64) {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem.to_string(), number.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbered_entries_sort_as_numbers() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["cpu10", "cpu2", "cpu1", "cpufreq"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let names: Vec<String> = super::entries(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["cpu1", "cpu2", "cpu10", "cpufreq"]);
    }
}
