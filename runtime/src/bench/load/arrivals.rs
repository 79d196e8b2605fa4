//! When queries arrive: a seeded Poisson process, a replayed file of timestamps, a fixed interval,
//! or all at once. Times are offsets from the run's start.

use std::path::Path;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp1};

use crate::{Error, Result};

/// `count` arrivals of a Poisson process at `qps` per second. A seed gives the same sequence at
/// every rate, scaled: a faster rate never lets a query arrive later relative to the one before,
/// so a system's latency at a seed can only grow with the rate (what `--find-peak` relies on).
pub fn poisson(qps: f64, count: usize, seed: u64) -> Vec<Duration> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    (0..count)
        .map(|_| {
            let gap: f64 = Exp1.sample(&mut rng);
            t += gap / qps;
            Duration::from_secs_f64(t)
        })
        .collect()
}

/// `count` arrivals every `interval`, the first at the start.
pub fn periodic(interval: Duration, count: usize) -> Vec<Duration> {
    (0..count).map(|i| interval * i as u32).collect()
}

/// Reads a replay file: one arrival time in seconds per line, in order (blank lines and `#`
/// comments skipped). Times are shifted so the first query arrives at the start: a file of
/// Unix timestamps replays as it was recorded.
pub fn read(path: &Path) -> Result<Vec<Duration>> {
    let text = crate::infile::read_to_string(path, crate::infile::ARRIVALS)?;
    let mut times = Vec::new();
    for (number, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| Error::input(path, format!("line {number}: '{line}' {what}"));
        let t: f64 = line.parse().map_err(|_| bad("is not a time in seconds"))?;
        if !t.is_finite() {
            return Err(bad("is not a finite time"));
        }
        if times.last().is_some_and(|&last| t < last) {
            return Err(bad("is earlier than the line before: arrival times must be sorted"));
        }
        times.push(t);
        if times.len() > crate::limits::MAX_QUERIES {
            return Err(Error::input(
                path,
                format!("more than {} arrivals: one run keeps every query", crate::limits::MAX_QUERIES),
            ));
        }
    }
    let Some(&first) = times.first() else {
        return Err(Error::input(path, "no arrival times: the file holds no lines with a time"));
    };
    if times[times.len() - 1] - first > MAX_SPAN_S {
        return Err(Error::input(path, format!("the arrivals span more than {MAX_SPAN_S} s: not seconds?")));
    }
    Ok(times.iter().map(|t| Duration::from_secs_f64(t - first)).collect())
}

/// A day: longer is a unit mistake (milliseconds or microseconds read as seconds).
const MAX_SPAN_S: f64 = 86_400.0;

/// The rate a list of arrivals offers: queries after the first over the time they span.
pub fn offered_qps(arrivals: &[Duration]) -> Option<f64> {
    let span = arrivals.last()?.saturating_sub(*arrivals.first()?).as_secs_f64();
    (arrivals.len() > 1 && span > 0.0).then(|| (arrivals.len() - 1) as f64 / span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_have_the_rate_and_spread_of_an_exponential() {
        let arrivals = poisson(200.0, 100_000, 7);
        let gaps: Vec<f64> = arrivals.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect::<Vec<_>>();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        // An exponential's standard deviation equals its mean; 1e5 gaps pin both to < 1 %.
        assert!((mean * 200.0 - 1.0).abs() < 0.01, "mean gap {mean}");
        assert!((sd / mean - 1.0).abs() < 0.02, "sd {sd}, mean {mean}");
        assert_eq!(poisson(200.0, 10, 7), poisson(200.0, 10, 7), "a seed repeats");
        assert_ne!(poisson(200.0, 10, 7), poisson(200.0, 10, 8));
        // The same seed at twice the rate: the same sequence at half the times.
        let fast = poisson(400.0, 10, 7);
        for (slow, fast) in poisson(200.0, 10, 7).iter().zip(&fast) {
            assert!((slow.as_secs_f64() / 2.0 - fast.as_secs_f64()).abs() < 1e-9);
        }
    }

    #[test]
    fn a_replay_file_is_shifted_to_start_at_zero_and_bad_ones_say_which_line() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let good = write("good.txt", "# recorded\n1700000000.5\n\n1700000000.75 # second\n1700000001.5\n");
        let times = read(&good).unwrap();
        assert_eq!(times, [0.0, 0.25, 1.0].map(Duration::from_secs_f64));
        assert_eq!(offered_qps(&times), Some(2.0));
        for (name, text, says) in [
            ("unsorted.txt", "0.5\n0.25\n", "line 2: '0.25' is earlier than the line before"),
            ("words.txt", "0.1\nsoon\n", "line 2: 'soon' is not a time in seconds"),
            ("nan.txt", "NaN\n", "line 1: 'NaN' is not a finite time"),
            ("inf.txt", "0\ninf\n", "line 2: 'inf' is not a finite time"),
            ("empty.txt", "\n# nothing\n", "no arrival times"),
            ("millis.txt", "0\n100000000\n", "span more than 86400 s"),
        ] {
            let message = read(&write(name, text)).unwrap_err().to_string();
            assert!(message.contains(name) && message.contains(says), "{message}");
        }
        let binary = write("binary.bin", "");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        assert!(read(&binary).unwrap_err().to_string().contains("binary.bin"));
    }
}
