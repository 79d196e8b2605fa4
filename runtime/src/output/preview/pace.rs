//! When the preview's next picture is due: at most one a period, on a grid so that the average
//! holds, with a quarter period's slack so that a camera at exactly that rate loses none to jitter.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Pace {
    every: Duration,
    /// The grid's next point; none before the first picture.
    next: Option<Instant>,
}

impl Pace {
    pub fn every(every: Duration) -> Pace {
        Pace { every, next: None }
    }

    pub fn due(&self, now: Instant) -> bool {
        self.next.is_none_or(|at| now + self.every / 4 >= at)
    }

    /// A picture went out at `now`: the next is due a period after this one's grid point, or a
    /// period from now where this one came more than a period late (no burst to catch up).
    pub fn sent(&mut self, now: Instant) {
        let on_grid = match self.next {
            Some(at) if now < at + self.every => at,
            _ => now,
        };
        self.next = Some(on_grid + self.every);
    }
}
