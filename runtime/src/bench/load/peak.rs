//! `--find-peak`: the highest rate whose p99 stays within the latency bound, by doubling from a
//! start until one rate passes and one fails, then bisecting (geometrically) until the highest
//! passing rate and the lowest failing one are within the precision of each other.
//!
//! Each step replays the same seeded arrivals scaled to its rate, so a step's latencies can only
//! grow with the rate and the passing rates form one interval from zero: the bisection cannot be
//! misled by a different draw of arrivals at each step, only by the run's own noise.

use crate::Result;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    pub start_qps: f64,
    /// The peak found lies within this fraction below the lowest failing rate (0.05: 5 %).
    pub precision: f64,
    /// Steps at most, doubling and halving included.
    pub max_steps: usize,
    /// Halving stops below this rate: where nothing passes, the bound is under what the model
    /// can do at any load, and slower rates only take longer to say so.
    pub min_qps: f64,
}

/// Where the search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    /// The highest rate that passed; `None` if every rate tried failed.
    pub qps: Option<f64>,
    /// The lowest rate that failed; `None` if none failed within `max_steps`.
    pub failed_at: Option<f64>,
    pub steps: usize,
}

impl Peak {
    /// Whether the passing and failing rates are within `precision` of each other.
    pub fn converged(&self, precision: f64) -> bool {
        match (self.qps, self.failed_at) {
            (Some(pass), Some(fail)) => fail / pass - 1.0 <= precision + 1e-12,
            _ => false,
        }
    }
}

/// Runs `step(qps)` (true when p99 is within the bound) until the peak is found to `precision`,
/// or the steps run out.
pub fn find(search: Search, mut step: impl FnMut(f64) -> Result<bool>) -> Result<Peak> {
    let mut peak = Peak { qps: None, failed_at: None, steps: 0 };
    let mut qps = search.start_qps;
    while peak.steps < search.max_steps && !peak.converged(search.precision) {
        peak.steps += 1;
        if step(qps)? {
            peak.qps = Some(qps);
        } else {
            peak.failed_at = Some(qps);
        }
        qps = match (peak.qps, peak.failed_at) {
            (Some(pass), Some(fail)) => (pass * fail).sqrt(),
            (Some(pass), None) => pass * 2.0,
            (None, Some(fail)) if fail / 2.0 < search.min_qps => break,
            (None, Some(fail)) => fail / 2.0,
            (None, None) => unreachable!("a step ran"),
        };
    }
    Ok(peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_known_threshold_within_the_precision_from_either_side() {
        for (start, capacity) in [(1.0, 137.0), (1000.0, 137.0), (137.0, 137.0), (5.0, 5.01)] {
            let search = Search { start_qps: start, precision: 0.02, max_steps: 40, min_qps: 0.0 };
            let mut tried = Vec::new();
            let peak = find(search, |qps| {
                tried.push(qps);
                Ok(qps <= capacity)
            })
            .unwrap();
            let found = peak.qps.unwrap();
            assert!(found <= capacity && found >= capacity / 1.02, "start {start}: {found} for {capacity}");
            assert!(peak.converged(0.02) && peak.steps == tried.len(), "{peak:?}");
        }
    }

    #[test]
    fn runs_out_of_steps_honestly() {
        let search = Search { start_qps: 1.0, precision: 0.01, max_steps: 6, min_qps: 0.0 };
        let never = find(search, |_| Ok(false)).unwrap();
        assert_eq!((never.qps, never.steps), (None, 6));
        assert_eq!(never.failed_at, Some(1.0 / 32.0));
        // With a floor, halving stops above it.
        let floored = find(Search { min_qps: 0.2, ..search }, |_| Ok(false)).unwrap();
        assert_eq!((floored.qps, floored.failed_at, floored.steps), (None, Some(0.25), 3));
        let always = find(search, |_| Ok(true)).unwrap();
        assert_eq!((always.qps, always.failed_at), (Some(32.0), None));
        assert!(!always.converged(0.01));
        let error = find(search, |_| Err(crate::Error::Usage("step failed".into())));
        assert!(error.is_err());
    }
}
