//! Latency distributions: min, mean, percentiles (nearest rank), max and coefficient of variation.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A duration in milliseconds, the unit of every latency figure.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Summary of one stage's latencies, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: usize,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Standard deviation over mean (population); 0.01 is 1 %.
    pub cov: f64,
}

impl LatencyStats {
    /// Statistics of samples in milliseconds; `None` for no samples.
    pub fn from_ms(samples: &[f64]) -> Option<LatencyStats> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let mean = sorted.iter().sum::<f64>() / n;
        let variance = sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Some(LatencyStats {
            count: sorted.len(),
            min_ms: sorted[0],
            mean_ms: mean,
            p50_ms: percentile(&sorted, 50.0),
            p90_ms: percentile(&sorted, 90.0),
            p95_ms: percentile(&sorted, 95.0),
            p99_ms: percentile(&sorted, 99.0),
            max_ms: sorted[sorted.len() - 1],
            cov: if mean > 0.0 { variance.sqrt() / mean } else { 0.0 },
        })
    }
}

/// Latencies recorded as they come, in memory that does not grow with the run: count, minimum,
/// maximum and mean exact (the spread by Welford's method), percentiles from an HDR histogram of
/// three significant digits, so each is within 0.1 % of the nearest-rank value of every sample
/// kept (`from_ms`). Latencies past an hour count as an hour in the percentiles.
#[derive(Debug, Clone)]
pub struct Latencies {
    histogram: hdrhistogram::Histogram<u64>,
    count: usize,
    min: f64,
    max: f64,
    mean: f64,
    /// Sum of squared distances from the mean.
    m2: f64,
}

const NS_PER_MS: f64 = 1e6;
const HOUR_NS: u64 = 3_600_000_000_000;

impl Default for Latencies {
    fn default() -> Self {
        let histogram = hdrhistogram::Histogram::new_with_bounds(1, HOUR_NS, 3).expect("valid bounds");
        Latencies { histogram, count: 0, min: f64::INFINITY, max: f64::NEG_INFINITY, mean: 0.0, m2: 0.0 }
    }
}

impl Latencies {
    pub fn record(&mut self, ms: f64) {
        self.histogram.saturating_record((ms * NS_PER_MS).round().max(1.0) as u64);
        self.count += 1;
        self.min = self.min.min(ms);
        self.max = self.max.max(ms);
        let delta = ms - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (ms - self.mean);
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// `None` before the first latency.
    pub fn stats(&self) -> Option<LatencyStats> {
        (self.count > 0).then(|| {
            let sd = (self.m2 / self.count as f64).sqrt();
            LatencyStats {
                count: self.count,
                min_ms: self.min,
                mean_ms: self.mean,
                p50_ms: self.percentile(50.0),
                p90_ms: self.percentile(90.0),
                p95_ms: self.percentile(95.0),
                p99_ms: self.percentile(99.0),
                max_ms: self.max,
                cov: if self.mean > 0.0 { sd / self.mean } else { 0.0 },
            }
        })
    }

    /// The latency at each whole percentile 0..=100 (`percentile_curve`); empty before the first.
    pub fn curve(&self) -> Vec<f64> {
        if self.count == 0 {
            return Vec::new();
        }
        (0..=100).map(|p| self.percentile(f64::from(p))).collect()
    }

    /// The share of latencies over `ms`, to the histogram's precision.
    pub fn share_above(&self, ms: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        1.0 - self.histogram.quantile_below((ms * NS_PER_MS).round().max(1.0) as u64)
    }

    /// Within the exact minimum and maximum, which the histogram's buckets would round.
    pub fn percentile(&self, p: f64) -> f64 {
        match p {
            0.0 => self.min,
            100.0 => self.max,
            _ => (self.histogram.value_at_quantile(quantile(p)) as f64 / NS_PER_MS).clamp(self.min, self.max),
        }
    }
}

/// The latency at each whole percentile 0..=100 (nearest rank; 0 is the minimum): the run's CDF,
/// small enough to keep in every report and plot later.
pub fn percentile_curve(samples: &[f64]) -> Vec<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return sorted;
    }
    (0..=100).map(|p| percentile(&sorted, f64::from(p))).collect()
}

/// Nearest-rank percentile of sorted samples: the smallest value with at least p % of samples
/// at or below it. Always one of the measured values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (quantile(p) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Percentile `p` as a fraction, a hair less, so a rank that is whole on paper stays whole: 99.9 %
/// of 1000 is 999.0000000000001 in floating point, which rounds up to rank 1000. The histogram
/// ranks the same way (`value_at_quantile` rounds up too), so both agree.
fn quantile(p: f64) -> f64 {
    p / 100.0 * (1.0 - 1e-12)
}

/// Latency per stage of the pipeline (bench reports, camera runs), as written and read back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stages {
    pub preprocess: LatencyStats,
    pub inference: LatencyStats,
    pub postprocess: LatencyStats,
    pub end_to_end: LatencyStats,
}

impl Stages {
    pub fn named(&self) -> [(&'static str, &LatencyStats); 4] {
        [
            ("preprocess", &self.preprocess),
            ("inference", &self.inference),
            ("postprocess", &self.postprocess),
            ("end_to_end", &self.end_to_end),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hand_computed_values() {
        // 1..=10 ms: mean 5.5, population variance 8.25, sd 2.8723, CoV 0.52223.
        let samples: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = LatencyStats::from_ms(&samples).unwrap();
        assert_eq!((s.count, s.min_ms, s.max_ms, s.mean_ms), (10, 1.0, 10.0, 5.5));
        assert_eq!((s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms), (5.0, 9.0, 10.0, 10.0));
        assert!((s.cov - 8.25f64.sqrt() / 5.5).abs() < 1e-12);
    }

    #[test]
    fn percentiles_of_a_hundred_samples() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = LatencyStats::from_ms(&samples).unwrap();
        assert_eq!((s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms), (50.0, 90.0, 95.0, 99.0));
    }

    #[test]
    fn percentile_curve_runs_from_min_to_max_through_the_percentiles() {
        let samples: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        let curve = percentile_curve(&samples);
        assert_eq!(curve.len(), 101);
        assert_eq!((curve[0], curve[50], curve[99], curve[100]), (1.0, 100.0, 198.0, 200.0));
        assert!(curve.windows(2).all(|w| w[0] <= w[1]));
        assert!(percentile_curve(&[]).is_empty());
    }

    #[test]
    fn recorded_latencies_match_the_exact_statistics_within_their_stated_error() {
        // A long tail, as real runs have: 10,000 latencies from 1 ms to about 60 ms.
        let samples: Vec<f64> =
            (0..10_000).map(|i| 1.0 + (i as f64 * 0.7919).sin().abs() * (i % 97) as f64 * 0.6).collect();
        let mut recorded = Latencies::default();
        samples.iter().for_each(|&ms| recorded.record(ms));
        let (exact, approx) = (LatencyStats::from_ms(&samples).unwrap(), recorded.stats().unwrap());
        assert_eq!((approx.count, approx.min_ms, approx.max_ms), (exact.count, exact.min_ms, exact.max_ms));
        assert!((approx.mean_ms - exact.mean_ms).abs() < 1e-9 * exact.mean_ms);
        assert!((approx.cov - exact.cov).abs() < 1e-9);
        for (a, e) in
            [(approx.p50_ms, exact.p50_ms), (approx.p90_ms, exact.p90_ms), (approx.p99_ms, exact.p99_ms)]
        {
            assert!((a - e).abs() <= 1e-3 * e, "{a} against {e}");
        }
        let (curve, exact_curve) = (recorded.curve(), percentile_curve(&samples));
        assert_eq!(curve.len(), 101);
        assert!(curve.iter().zip(&exact_curve).all(|(a, e)| (a - e).abs() <= 1e-3 * e), "{curve:?}");
        assert!(Latencies::default().stats().is_none() && Latencies::default().curve().is_empty());
    }

    #[test]
    fn constant_samples_have_no_spread_and_one_sample_is_every_percentile() {
        let s = LatencyStats::from_ms(&[2.0, 2.0, 2.0]).unwrap();
        assert_eq!(s.cov, 0.0);
        let one = LatencyStats::from_ms(&[7.0]).unwrap();
        assert_eq!((one.p50_ms, one.p99_ms, one.min_ms, one.max_ms), (7.0, 7.0, 7.0, 7.0));
        assert!(LatencyStats::from_ms(&[]).is_none());
    }
}
