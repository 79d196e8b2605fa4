//! What any input may ask of the process, checked before anything is allocated or scheduled: a
//! ceiling on memory (a batch, a model's tensors) and ranges for the numbers that become
//! durations, rates and sensor readings. An input past them gets an error that says the allowed
//! range, not an aborted process, a panic or a run that never ends.

use std::fmt;

/// The most memory one input may ask for: one batch, or one tensor of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
}

impl MemoryLimit {
    /// Half of the machine's physical memory: an edge board shares it with the GPU, the camera
    /// and the rest of the system, and a single tensor past it could only thrash or abort.
    pub fn of_machine() -> MemoryLimit {
        MemoryLimit { bytes: physical_memory().map_or(FALLBACK_BYTES, |b| b / 2) }
    }

    pub fn from_mib(mib: u64) -> MemoryLimit {
        MemoryLimit { bytes: mib.saturating_mul(1 << 20) }
    }

    /// Refuses a tensor of `shape` with `element_bytes` each (overflow included) past the limit;
    /// `what` names it, made only for the error.
    pub fn check(
        &self,
        what: impl FnOnce() -> String,
        shape: &[usize],
        element_bytes: usize,
    ) -> Result<(), TooLarge> {
        self.check_bytes(what, elements(shape).saturating_mul(element_bytes as u128))
    }

    /// Refuses `bytes` past the limit; `what` names what would take them, made only for the error.
    pub fn check_bytes(&self, what: impl FnOnce() -> String, bytes: u128) -> Result<(), TooLarge> {
        if bytes > self.bytes as u128 {
            return Err(TooLarge { what: what(), bytes, limit: self.bytes });
        }
        Ok(())
    }
}

impl Default for MemoryLimit {
    fn default() -> Self {
        MemoryLimit::of_machine()
    }
}

/// Where the machine's size cannot be read: the smallest Jetson's memory, halved.
const FALLBACK_BYTES: u64 = 2 << 30;

fn physical_memory() -> Option<u64> {
    // SAFETY: sysinfo writes only into the zeroed struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable sysinfo struct for the call's duration.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return None;
    }
    (info.totalram as u64).checked_mul(info.mem_unit.max(1) as u64).filter(|&b| b > 0)
}

/// An input that would need more memory than the limit allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} would take {}, more than the memory limit of {} (--max-memory-mb)", size(*.bytes), size(*.limit as u128))]
pub struct TooLarge {
    pub what: String,
    pub bytes: u128,
    pub limit: u64,
}

/// How many values a tensor of `shape` holds, without overflow.
pub fn elements(shape: &[usize]) -> u128 {
    shape.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128))
}

/// `bytes` in the unit a person reads best: bytes below a MiB, then MiB, then GiB.
pub fn size(bytes: u128) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.1} MiB")
    }
}

/// A number in `[min, max]`, finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// Seconds anything may last or wait: up to about 11 days.
pub const SECONDS: Range = Range { min: 0.0, max: 1e6 };
/// What a board's sensors can read, with room to spare: a value outside is a damaged sensor or a
/// hostile tree, and becomes a gap rather than a reading. A rail may read a little below zero.
pub const WATTS: Range = Range { min: -1.0, max: 1e3 };
pub const MHZ: Range = Range { min: 0.0, max: 1e4 };
pub const CELSIUS: Range = Range { min: -60.0, max: 200.0 };
pub const PERCENT: Range = Range { min: 0.0, max: 100.0 };
/// Query rates a scenario may offer: one query per 1000 s up to a million a second.
pub const QPS: Range = Range { min: 1e-3, max: 1e6 };
/// Latency bounds, intervals and queue delays, in milliseconds: up to an hour.
pub const MILLISECONDS: Range = Range { min: 0.0, max: 3.6e6 };
/// Queries one scenario run may send, and replay files may hold: each is kept until the run ends.
pub const MAX_QUERIES: usize = 2_000_000;
/// Frame rates a source may be paced to: one frame per 1000 s up to 10,000 frames per second.
pub const FPS: Range = Range { min: 1e-3, max: 1e4 };

impl Range {
    pub fn check(&self, what: &str, value: f64) -> Result<f64, OutOfRange> {
        if value.is_finite() && (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(OutOfRange { what: what.to_string(), value, range: *self })
        }
    }

    /// `text` as a number in range.
    pub fn parse(&self, what: &str, text: &str) -> Result<f64, OutOfRange> {
        self.check(what, text.trim().parse().unwrap_or(f64::NAN))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.min, self.max)
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} {} is not a number in {range}", short(*.value))]
pub struct OutOfRange {
    pub what: String,
    pub value: f64,
    pub range: Range,
}

/// Text from a file cut to a length an error line can hold.
pub fn clip(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// A number as a person would write it: 2.5, 1e300, 1e-300.
pub fn short<T: Copy + Into<f64> + fmt::Display + fmt::LowerExp>(value: T) -> String {
    let v: f64 = value.into();
    if v != 0.0 && v.is_finite() && !(1e-3..1e7).contains(&v.abs()) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_a_limit_and_overflow_is_refused() {
        let limit = MemoryLimit::of_machine();
        assert!(limit.bytes >= 1 << 20, "{limit:?}");
        assert!(limit.check(|| "t".into(), &[usize::MAX, usize::MAX], 4).is_err());
        let small = MemoryLimit::from_mib(1);
        assert!(small.check(|| "t".into(), &[1 << 18], 4).is_ok());
        let err = small.check(|| "tensor 'x'".into(), &[3, 1 << 18], 4).unwrap_err();
        let text = "tensor 'x' would take 3.0 MiB, more than the memory limit of 1.0 MiB (--max-memory-mb)";
        assert_eq!(err.to_string(), text);
    }

    #[test]
    fn ranges_refuse_what_durations_cannot_hold() {
        for bad in ["nan", "inf", "-1", "1e300", "", "x"] {
            assert!(SECONDS.parse("--duration-s", bad).is_err(), "{bad}");
        }
        assert_eq!(SECONDS.parse("--duration-s", "2.5").unwrap(), 2.5);
        let tiny = FPS.check("fps", 1e-300).unwrap_err().to_string();
        assert_eq!(tiny, "fps 1e-300 is not a number in [0.001, 10000]");
        let err = FPS.check("fps", 0.0).unwrap_err().to_string();
        assert_eq!(err, "fps 0 is not a number in [0.001, 10000]");
    }
}
