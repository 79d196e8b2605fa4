//! Energy from timestamped power samples: the trapezoidal integral over exactly a window, with
//! the power at the window's edges interpolated between the samples around them.

/// Joules between `start` and `end` (seconds) from `(time s, watts)` samples in time order;
/// `None` when the samples do not cover the window.
pub fn joules(samples: &[(f64, f64)], start: f64, end: f64) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    if first.0 > start || last.0 < end || end < start {
        return None;
    }
    let at = |t: f64| -> f64 {
        let i = samples.partition_point(|s| s.0 < t).clamp(1, samples.len() - 1);
        let (a, b) = (samples[i - 1], samples[i]);
        if b.0 == a.0 {
            b.1
        } else {
            a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0)
        }
    };
    let mut points = vec![(start, at(start))];
    points.extend(samples.iter().copied().filter(|s| s.0 > start && s.0 < end));
    points.push((end, at(end)));
    Some(points.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum())
}

/// Mean and peak watts of the samples inside the window.
pub fn mean_and_peak(samples: &[(f64, f64)], start: f64, end: f64) -> Option<(f64, f64)> {
    let energy = joules(samples, start, end)?;
    let peak = samples.iter().filter(|s| s.0 >= start && s.0 <= end).map(|s| s.1).fold(f64::NAN, f64::max);
    let mean = if end > start { energy / (end - start) } else { samples[0].1 };
    Some((mean, if peak.is_nan() { mean } else { peak }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_five_watts_for_two_seconds_is_ten_joules() {
        let samples: Vec<(f64, f64)> = (0..=200).map(|i| (i as f64 * 0.01, 5.0)).collect();
        assert!((joules(&samples, 0.0, 2.0).unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramp_gives_its_exact_area_also_between_samples() {
        // P(t) = 2t W sampled every 0.1 s; from 0.25 s to 1.75 s the area is t² = 3.0625 − 0.0625.
        let samples: Vec<(f64, f64)> = (0..=20).map(|i| (i as f64 * 0.1, 2.0 * i as f64 * 0.1)).collect();
        assert!((joules(&samples, 0.25, 1.75).unwrap() - 3.0).abs() < 1e-9);
        let (mean, peak) = mean_and_peak(&samples, 0.25, 1.75).unwrap();
        assert!((mean - 2.0).abs() < 1e-9 && (peak - 3.4).abs() < 1e-9, "{mean} {peak}");
    }

    #[test]
    fn a_window_the_samples_do_not_cover_has_no_energy() {
        let samples = [(1.0, 5.0), (2.0, 5.0)];
        assert_eq!(joules(&samples, 0.5, 2.0), None);
        assert_eq!(joules(&samples, 1.0, 2.5), None);
        assert_eq!(joules(&[], 0.0, 1.0), None);
    }
}
