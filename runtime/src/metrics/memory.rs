//! Process memory from procfs: peak resident set (VmHWM) and current (VmRSS).

use std::path::Path;

/// Bytes of a `Vm*` field of a `/proc/<pid>/status` text, e.g. `VmHWM`.
pub fn status_field_bytes(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kib: u64 = line[field.len() + 1..].split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

/// Peak resident set of this process, where procfs is readable.
pub fn peak_rss_bytes() -> Option<u64> {
    read_status(Path::new("/proc/self/status")).and_then(|s| status_field_bytes(&s, "VmHWM"))
}

/// Resident set of this process now.
pub fn rss_bytes() -> Option<u64> {
    read_status(Path::new("/proc/self/status")).and_then(|s| status_field_bytes(&s, "VmRSS"))
}

/// Resets this process's peak RSS to its current RSS (Linux ≥ 4.0), so the next peak is
/// the next phase's own; false where the kernel refuses.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn read_status(path: &Path) -> Option<String> {
    crate::infile::read_to_string(path, crate::infile::SENSOR).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_in_kib() {
        let status = "Name:\tedgert\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(status_field_bytes(status, "VmHWM"), Some(123456 * 1024));
        assert_eq!(status_field_bytes(status, "VmRSS"), Some(1000 * 1024));
        assert_eq!(status_field_bytes(status, "VmSwap"), None);
    }

    #[test]
    fn peak_resets_to_the_current_resident_set() {
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        drop(big);
        let before = peak_rss_bytes().unwrap();
        assert!(reset_peak_rss());
        assert!(peak_rss_bytes().unwrap() < before, "the 64 MiB peak is forgotten");
    }

    #[test]
    fn this_process_has_a_peak() {
        assert!(peak_rss_bytes().unwrap() > 1024 * 1024);
    }
}
