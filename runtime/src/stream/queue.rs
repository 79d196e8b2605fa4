//! What joins the pipeline's stage threads: bounded queues that either wait for room or drop
//! their oldest item, and pools that hand the same buffers round again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, TrySendError};

use crate::choice::Choice;

/// How often a waiting stage looks at the abort flag, so nothing waits on a stage that died.
const POLL: Duration = Duration::from_millis(20);

/// What a stage does when the next one is busy and its queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DropPolicy {
    Latest,
    None,
}

impl Choice for DropPolicy {
    const ALL: &'static [Self] = &[DropPolicy::Latest, DropPolicy::None];

    fn name(self) -> &'static str {
        match self {
            DropPolicy::Latest => "latest",
            DropPolicy::None => "none",
        }
    }

    fn help(self) -> Option<&'static str> {
        Some(match self {
            DropPolicy::Latest => {
                "Drop the oldest queued item for the new one: a live camera's results stay fresh"
            }
            DropPolicy::None => "Wait for room: every frame is processed, and a slow stage slows the source",
        })
    }
}

/// One producer's end of a bounded queue. It keeps a receiver too, to drop the oldest item.
pub struct Queue<T> {
    sender: Sender<T>,
    oldest: Receiver<T>,
    policy: DropPolicy,
    dropped: Arc<AtomicU64>,
}

impl<T> Queue<T> {
    /// The queue and the consumer's end.
    pub fn bounded(depth: usize, policy: DropPolicy) -> (Queue<T>, Receiver<T>) {
        let (sender, receiver) = crossbeam_channel::bounded(depth.max(1));
        (Queue { sender, oldest: receiver.clone(), policy, dropped: Arc::default() }, receiver)
    }

    /// Queues `item`; items dropped to make room go to `recycle`. False when aborted.
    pub fn push(&self, mut item: T, abort: &AtomicBool, mut recycle: impl FnMut(T)) -> bool {
        loop {
            if abort.load(Ordering::Relaxed) {
                recycle(item);
                return false;
            }
            item = match self.policy {
                DropPolicy::Latest => match self.sender.try_send(item) {
                    Ok(()) => return true,
                    Err(TrySendError::Full(item)) => {
                        if let Ok(old) = self.oldest.try_recv() {
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                            recycle(old);
                        }
                        item
                    }
                    Err(TrySendError::Disconnected(item)) => item,
                },
                DropPolicy::None => match self.sender.send_timeout(item, POLL) {
                    Ok(()) => return true,
                    Err(SendTimeoutError::Timeout(item) | SendTimeoutError::Disconnected(item)) => item,
                },
            };
        }
    }

    /// Items dropped so far to make room for newer ones.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The count of dropped items, to read while the queue runs.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.dropped.clone()
    }
}

/// The next item; `None` once the producer is gone and the queue is empty, or on abort.
pub fn pop<T>(receiver: &Receiver<T>, abort: &AtomicBool) -> Option<T> {
    loop {
        if abort.load(Ordering::Relaxed) {
            return None;
        }
        match receiver.recv_timeout(POLL) {
            Ok(item) => return Some(item),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Buffers handed out and given back. Sized so a stage never waits for one; if one is ever
/// missing, a new one is made and counted, so a test can check that none were.
pub struct Pool<T> {
    free: Mutex<Vec<T>>,
    make: Box<dyn Fn() -> T + Send + Sync>,
    made: AtomicU64,
}

impl<T> Pool<T> {
    pub fn new(count: usize, make: impl Fn() -> T + Send + Sync + 'static) -> Pool<T> {
        let free = (0..count).map(|_| make()).collect();
        Pool { free: Mutex::new(free), make: Box::new(make), made: AtomicU64::new(count as u64) }
    }

    pub fn take(&self) -> T {
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        reused.unwrap_or_else(|| {
            self.made.fetch_add(1, Ordering::Relaxed);
            (self.make)()
        })
    }

    pub fn give(&self, item: T) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(item);
    }

    /// Whether every buffer in the pool now is as `check` wants.
    pub fn all(&self, check: impl Fn(&T) -> bool) -> bool {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).iter().all(check)
    }

    /// Buffers made, the first ones included.
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_keeps_the_newest_items_and_counts_the_dropped() {
        let abort = AtomicBool::new(false);
        let (queue, receiver) = Queue::bounded(2, DropPolicy::Latest);
        let mut recycled = Vec::new();
        for i in 0..5 {
            assert!(queue.push(i, &abort, |old| recycled.push(old)));
        }
        assert_eq!(recycled, [0, 1, 2]);
        assert_eq!(queue.dropped(), 3);
        assert_eq!(receiver.try_iter().collect::<Vec<_>>(), [3, 4]);
    }

    #[test]
    fn none_waits_for_room_and_gives_up_on_abort() {
        let abort = AtomicBool::new(false);
        let (queue, receiver) = Queue::bounded(1, DropPolicy::None);
        assert!(queue.push(1, &abort, |_| panic!("nothing is dropped")));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                assert_eq!(pop(&receiver, &abort), Some(1));
            });
            assert!(queue.push(2, &abort, |_| panic!("nothing is dropped")));
        });
        assert_eq!(queue.dropped(), 0);
        abort.store(true, Ordering::Relaxed);
        let mut recycled = None;
        assert!(!queue.push(3, &abort, |item| recycled = Some(item)));
        assert_eq!(recycled, Some(3));
        assert_eq!(pop(&receiver, &abort), None);
    }

    #[test]
    fn pop_ends_when_the_producer_is_gone_and_the_queue_is_empty() {
        let abort = AtomicBool::new(false);
        let (queue, receiver) = Queue::bounded(4, DropPolicy::None);
        queue.push(7, &abort, drop);
        drop(queue);
        assert_eq!(pop(&receiver, &abort), Some(7));
        assert_eq!(pop(&receiver, &abort), None);
    }

    #[test]
    fn a_pool_reuses_what_is_given_back_and_counts_what_it_had_to_make() {
        let pool = Pool::new(1, || vec![0u8; 16]);
        let first = pool.take();
        let address = first.as_ptr();
        pool.give(first);
        let again = pool.take();
        assert_eq!(again.as_ptr(), address);
        let _extra = pool.take();
        assert_eq!(pool.made(), 2);
    }
}
