//! The latency tail of a run's queries: the percentiles MLPerf reports, and how far the p99 of
//! this many queries can be trusted.

use serde::{Deserialize, Serialize};

use crate::metrics::stats::percentile;

/// In milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// The p99's 95 % confidence interval by rank (binomial, normal approximation): where another
    /// run of as many queries could put it. Wide when few queries lie beyond the p99.
    pub p99_low_ms: f64,
    pub p99_high_ms: f64,
}

impl Tail {
    /// From every latency; `None` for none.
    pub fn from_ms(samples: &[f64]) -> Option<Tail> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
        Tail::from_percentiles(sorted.len(), mean, |p| percentile(&sorted, p))
    }

    /// From a distribution's nearest-rank percentile function (0 is the minimum, 100 the maximum).
    pub fn from_percentiles(count: usize, mean_ms: f64, at: impl Fn(f64) -> f64) -> Option<Tail> {
        if count == 0 {
            return None;
        }
        let n = count as f64;
        let half_width = 1.96 * (n * 0.99 * 0.01).sqrt();
        let rank_pct = |rank: f64| (100.0 * rank / n).clamp(0.0, 100.0);
        Some(Tail {
            count,
            mean_ms,
            p50_ms: at(50.0),
            p90_ms: at(90.0),
            p99_ms: at(99.0),
            p999_ms: at(99.9),
            max_ms: at(100.0),
            p99_low_ms: at(rank_pct((n * 0.99 - half_width).floor())),
            p99_high_ms: at(rank_pct((n * 0.99 + half_width).ceil())),
        })
    }

    pub fn values(&self) -> [f64; 8] {
        [
            self.mean_ms,
            self.p50_ms,
            self.p90_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.p99_low_ms,
            self.p99_high_ms,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::Tail;

    #[test]
    fn the_tail_of_a_thousand_and_its_p99_interval() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let tail = Tail::from_ms(&samples).unwrap();
        assert_eq!((tail.p50_ms, tail.p90_ms, tail.p99_ms, tail.p999_ms), (500.0, 900.0, 990.0, 999.0));
        assert_eq!((tail.max_ms, tail.mean_ms), (1000.0, 500.5));
        // 1.96 × √(1000 × 0.99 × 0.01) = 6.2 ranks either side of rank 990.
        assert_eq!((tail.p99_low_ms, tail.p99_high_ms), (983.0, 997.0));
        assert!(Tail::from_ms(&[]).is_none());
        let one = Tail::from_ms(&[2.5]).unwrap();
        assert!(one.values().iter().all(|&v| v == 2.5), "{one:?}");
    }
}
