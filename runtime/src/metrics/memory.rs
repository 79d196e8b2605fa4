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

fn read_status(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
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
    fn this_process_has_a_peak() {
        assert!(peak_rss_bytes().unwrap() > 1024 * 1024);
    }
}
