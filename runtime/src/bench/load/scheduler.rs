//! The dynamic batcher. Queries arrive at their scheduled times whatever the workers are doing; a
//! free worker takes the oldest waiting query, waits up to the max queue delay for more to fill
//! its batch (Triton's dynamic batcher), and serves them. One batch forms at a time.
//!
//! Each query's latency runs from its scheduled arrival, not from when a worker took it, so a
//! stall shows in every query that waited behind it (no coordinated omission).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::Result;

/// One query: when it arrives (from the run's start) and how many samples it carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Query {
    pub arrival: Duration,
    pub samples: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Batching {
    /// Samples in one batch, at most; a query is never split across batches.
    pub max_batch: usize,
    /// How long the oldest waiting query may wait for others to join its batch.
    pub max_queue_delay: Duration,
}

/// An inference worker: its own session(s), serving one batch at a time.
pub trait Worker: Send {
    /// Serves one batch of `samples` samples (at most the max batch).
    fn serve(&mut self, samples: usize) -> Result<StageTimes>;
}

impl<W: Worker + ?Sized> Worker for Box<W> {
    fn serve(&mut self, samples: usize) -> Result<StageTimes> {
        (**self).serve(samples)
    }
}

/// Where one batch spent its time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimes {
    pub preprocess: Duration,
    pub inference: Duration,
    pub postprocess: Duration,
}

/// One served query; times from the run's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    pub arrival: Duration,
    /// When a worker took it into a batch.
    pub dequeued: Duration,
    pub done: Duration,
    /// Samples in the batch it was served in.
    pub batch: usize,
}

impl Served {
    pub fn latency(&self) -> Duration {
        self.done.saturating_sub(self.arrival)
    }

    pub fn queued(&self) -> Duration {
        self.dequeued.saturating_sub(self.arrival)
    }
}

/// A batch as served: its samples and stage times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServedBatch {
    pub samples: usize,
    pub times: StageTimes,
}

#[derive(Debug, Clone, Default)]
pub struct Record {
    /// In arrival order.
    pub queries: Vec<Served>,
    pub batches: Vec<ServedBatch>,
    /// Queries not served because the run was stopped.
    pub unserved: usize,
}

/// Serves `queries` (sorted by arrival) over the workers, one thread each. `stop` ends the run
/// early: queries served until then are recorded, the rest counted as unserved.
pub fn serve<W: Worker>(
    queries: &[Query],
    batching: Batching,
    workers: &mut [W],
    stop: &AtomicBool,
) -> Result<Record> {
    debug_assert!(queries.windows(2).all(|w| w[0].arrival <= w[1].arrival), "queries in arrival order");
    debug_assert!(queries.iter().all(|q| q.samples <= batching.max_batch), "checked by the caller");
    let queue = Queue {
        queries,
        batching,
        head: Mutex::new(0),
        start: Instant::now(),
        stop,
        failed: AtomicBool::new(false),
    };
    let outcomes: Vec<Result<Record>> = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .iter_mut()
            .enumerate()
            .map(|(i, worker)| {
                let queue = &queue;
                std::thread::Builder::new()
                    .name(format!("edgert-worker-{i}"))
                    .spawn_scoped(scope, move || queue.work(worker))
                    .expect("a worker thread starts")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    let mut record = Record::default();
    for outcome in outcomes {
        let part = outcome?;
        record.queries.extend(part.queries);
        record.batches.extend(part.batches);
    }
    record.queries.sort_by_key(|q| q.arrival);
    record.unserved = queries.len() - record.queries.len();
    Ok(record)
}

struct Queue<'a> {
    queries: &'a [Query],
    batching: Batching,
    /// The oldest query no worker has taken; held while a batch forms.
    head: Mutex<usize>,
    start: Instant,
    stop: &'a AtomicBool,
    /// A worker failed: the others stop too.
    failed: AtomicBool,
}

impl Queue<'_> {
    fn work(&self, worker: &mut impl Worker) -> Result<Record> {
        let mut record = Record::default();
        while let Some((taken, dequeued)) = self.take() {
            let samples = self.queries[taken.clone()].iter().map(|q| q.samples).sum();
            let times = match worker.serve(samples) {
                Ok(times) => times,
                Err(e) => {
                    self.failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            };
            let done = self.start.elapsed();
            record.batches.push(ServedBatch { samples, times });
            record.queries.extend(self.queries[taken].iter().map(|q| Served {
                arrival: q.arrival,
                dequeued,
                done,
                batch: samples,
            }));
        }
        Ok(record)
    }

    fn halted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed)
    }

    /// The next batch's queries and when they were taken; `None` when all are taken or the run
    /// stops.
    fn take(&self) -> Option<(std::ops::Range<usize>, Duration)> {
        let mut head = self.head.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let first = *head;
        let oldest = self.queries.get(first)?;
        self.sleep_until(self.start + oldest.arrival)?;
        let deadline = self.start + oldest.arrival + self.batching.max_queue_delay;
        let (mut end, mut samples) = (first, 0);
        loop {
            let now = Instant::now();
            while let Some(q) = self.queries.get(end) {
                if self.start + q.arrival > now || samples + q.samples > self.batching.max_batch {
                    break;
                }
                samples += q.samples;
                end += 1;
            }
            // Full, or the oldest has waited its delay: the batch leaves. Otherwise it waits for the
            // next arrival, or the deadline where no more queries come (as a server would not know).
            let next = self.queries.get(end);
            if next.is_some_and(|q| samples + q.samples > self.batching.max_batch) || now >= deadline {
                break;
            }
            self.sleep_until(next.map_or(deadline, |q| (self.start + q.arrival).min(deadline)))?;
        }
        *head = end;
        Some((first..end, self.start.elapsed()))
    }

    /// Sleeps in slices short enough to notice a stop; `None` if the run stopped.
    fn sleep_until(&self, when: Instant) -> Option<()> {
        loop {
            if self.halted() {
                return None;
            }
            let now = Instant::now();
            if now >= when {
                return Some(());
            }
            std::thread::sleep((when - now).min(Duration::from_millis(20)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves in no time and records the batch sizes it was given.
    struct Instant0;

    impl Worker for Instant0 {
        fn serve(&mut self, _samples: usize) -> Result<StageTimes> {
            Ok(StageTimes::default())
        }
    }

    fn queries(ms: &[u64], samples: usize) -> Vec<Query> {
        ms.iter().map(|&t| Query { arrival: Duration::from_millis(t), samples }).collect()
    }

    #[test]
    fn queries_waiting_together_are_batched_up_to_the_max_and_never_split() {
        // All arrive at once: batches of 3, 3, 1 with max 3.
        let stop = AtomicBool::new(false);
        let batching = Batching { max_batch: 3, max_queue_delay: Duration::ZERO };
        let mut workers: Vec<Box<dyn Worker>> = vec![Box::new(Instant0)];
        let record = serve(&queries(&[0; 7], 1), batching, &mut workers, &stop).unwrap();
        let sizes: Vec<usize> = record.batches.iter().map(|b| b.samples).collect();
        assert_eq!(sizes, [3, 3, 1]);
        // Queries of 2 samples with max 3: one per batch.
        let record = serve(&queries(&[0; 3], 2), batching, &mut workers, &stop).unwrap();
        assert!(record.batches.iter().all(|b| b.samples == 2), "{:?}", record.batches);
        assert_eq!((record.queries.len(), record.unserved), (3, 0));
    }

    #[test]
    fn the_queue_delay_holds_a_batch_open_for_later_arrivals() {
        let stop = AtomicBool::new(false);
        let mut workers: Vec<Box<dyn Worker>> = vec![Box::new(Instant0)];
        let spread = queries(&[0, 20, 40], 1);
        let without = Batching { max_batch: 4, max_queue_delay: Duration::ZERO };
        let record = serve(&spread, without, &mut workers, &stop).unwrap();
        assert_eq!(record.batches.len(), 3, "no delay: each query alone");
        let with = Batching { max_batch: 4, max_queue_delay: Duration::from_millis(100) };
        let record = serve(&spread, with, &mut workers, &stop).unwrap();
        assert_eq!(record.batches.len(), 1, "a 100 ms delay gathers all three");
        // The batch left when the last arrived, not at the deadline: it was full of what came.
        let first = record.queries[0];
        assert!(first.queued() >= Duration::from_millis(100), "{first:?}");
        let full = Batching { max_batch: 2, max_queue_delay: Duration::from_secs(10) };
        let record = serve(&spread, full, &mut workers, &stop).unwrap();
        let first = record.queries[0];
        assert!(first.queued() < Duration::from_secs(1), "a full batch leaves at once: {first:?}");
        assert_eq!(record.batches.iter().map(|b| b.samples).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn a_stop_ends_the_run_and_counts_what_was_not_served() {
        let stop = AtomicBool::new(true);
        let mut workers: Vec<Box<dyn Worker>> = vec![Box::new(Instant0), Box::new(Instant0)];
        let batching = Batching { max_batch: 1, max_queue_delay: Duration::ZERO };
        let record = serve(&queries(&[0, 10_000], 1), batching, &mut workers, &stop).unwrap();
        assert_eq!((record.queries.len(), record.unserved), (0, 2));
    }

    #[test]
    fn a_failing_worker_fails_the_run_and_stops_the_others() {
        struct Fails;
        impl Worker for Fails {
            fn serve(&mut self, _samples: usize) -> Result<StageTimes> {
                Err(crate::Error::Usage("broken".into()))
            }
        }
        struct Slow;
        impl Worker for Slow {
            fn serve(&mut self, _samples: usize) -> Result<StageTimes> {
                std::thread::sleep(Duration::from_millis(50));
                Ok(StageTimes::default())
            }
        }
        let stop = AtomicBool::new(false);
        let mut workers: Vec<Box<dyn Worker>> = vec![Box::new(Slow), Box::new(Fails)];
        let batching = Batching { max_batch: 1, max_queue_delay: Duration::ZERO };
        // The last query is an hour away: the healthy worker must not wait for it.
        let mut spread = queries(&[0; 20], 1);
        spread.push(Query { arrival: Duration::from_secs(3600), samples: 1 });
        let started = Instant::now();
        let error = serve(&spread, batching, &mut workers, &stop).unwrap_err();
        assert!(error.to_string().contains("broken"));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
