//! What the stages hand each other besides tensors: captured frames, and the count of those
//! dropped on the way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A captured frame, copied out of the source's buffer.
pub(super) struct FrameSlot {
    pub data: Vec<u8>,
    pub stride: usize,
    pub sequence: u64,
    pub timestamp: Duration,
    pub captured_at: Instant,
}

/// Frames dropped by each queue so far, for the live figures.
#[derive(Default)]
pub(super) struct Drops(pub Vec<Arc<AtomicU64>>);

impl Drops {
    pub fn total(&self) -> u64 {
        self.0.iter().map(|d| d.load(Ordering::Relaxed)).sum()
    }
}
