//! The overlay's live figures: frames, glass to glass and inference over the last second.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::annotate::Overlay;

const SPAN: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Recent {
    frames: VecDeque<(Instant, f64, f64)>,
    sorted: Vec<f64>,
}

impl Recent {
    /// A frame shown at `now`, with its glass-to-glass and inference times in ms.
    pub fn record(&mut self, now: Instant, glass_to_glass_ms: f64, inference_ms: f64) {
        self.frames.push_back((now, glass_to_glass_ms, inference_ms));
        while self.frames.front().is_some_and(|&(at, ..)| now.duration_since(at) > SPAN) {
            self.frames.pop_front();
        }
    }

    /// Fills the overlay's rate and tails from the last second's frames.
    pub fn fill(&mut self, overlay: &mut Overlay) {
        let n = self.frames.len();
        overlay.fps = match (self.frames.front(), self.frames.back()) {
            (Some(first), Some(last)) if n > 1 => {
                let span = last.0.duration_since(first.0).as_secs_f64();
                if span > 0.0 {
                    (n - 1) as f64 / span
                } else {
                    0.0
                }
            }
            _ => 0.0,
        };
        let mut quantile = |pick: fn(&(Instant, f64, f64)) -> f64, q: f64| {
            self.sorted.clear();
            self.sorted.extend(self.frames.iter().map(pick));
            self.sorted.sort_by(f64::total_cmp);
            (n > 0).then(|| self.sorted[((n - 1) as f64 * q).round() as usize])
        };
        overlay.glass_to_glass_p50_ms = quantile(|f| f.1, 0.5);
        overlay.glass_to_glass_p99_ms = quantile(|f| f.1, 0.99);
        overlay.inference_p99_ms = quantile(|f| f.2, 0.99);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_tails_cover_the_last_second_only() {
        let mut recent = Recent::default();
        let start = Instant::now();
        // Ten frames in the first 0.9 s (slow ones), then ten at 20 fps.
        for i in 0..10 {
            recent.record(start + Duration::from_millis(i * 100), 500.0, 50.0);
        }
        for i in 0..20 {
            recent.record(start + Duration::from_millis(2000 + i * 50), 10.0 + i as f64, 5.0);
        }
        let mut overlay = Overlay::default();
        recent.fill(&mut overlay);
        assert!((overlay.fps - 20.0).abs() < 0.01, "{}", overlay.fps);
        assert_eq!(overlay.glass_to_glass_p99_ms, Some(29.0));
        assert_eq!(overlay.glass_to_glass_p50_ms, Some(20.0));
        assert_eq!(overlay.inference_p99_ms, Some(5.0));
        let mut empty = Overlay::default();
        Recent::default().fill(&mut empty);
        assert_eq!((empty.fps, empty.glass_to_glass_p99_ms), (0.0, None));
    }
}
