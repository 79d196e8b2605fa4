//! What the stages hand each other besides tensors: captured frames, and the count of those
//! dropped on the way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::gpu::PinnedFrame;

/// A captured frame, copied out of the source's buffer.
pub(super) struct FrameSlot {
    /// `data`'s memory registered for the GPU to read in place (`--preprocess gpu` on a
    /// Jetson). Declared before `data`, so that it is unregistered before `data` is freed.
    pub pinned: Option<PinnedFrame>,
    pub data: Vec<u8>,
    pub stride: usize,
    pub sequence: u64,
    pub timestamp: Duration,
    pub captured_at: Instant,
}

impl FrameSlot {
    /// Copies a captured frame in. A frame larger than the memory registered (a source that
    /// changed size) gives the registration up first: the memory is about to be reallocated.
    pub fn fill_from(&mut self, frame: &[u8]) {
        if frame.len() > self.data.capacity() {
            self.pinned = None;
        }
        self.data.clear();
        self.data.extend_from_slice(frame);
    }
}

/// Frames dropped by each queue so far, for the live figures.
#[derive(Default)]
pub(super) struct Drops(pub Vec<Arc<AtomicU64>>);

impl Drops {
    pub fn total(&self) -> u64 {
        self.0.iter().map(|d| d.load(Ordering::Relaxed)).sum()
    }
}
