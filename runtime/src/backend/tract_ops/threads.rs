//! The `cpu` backend's threads (`--threads`): one rayon pool per prepared model, which each
//! inference runs on (`TractPrepared::on_pool`), and which edgert's operators split their work
//! over. tract's own operators use it too only with the `tract-threads` feature: its threaded
//! matrix products make the aarch64 binary larger (benches/RESULTS.md, aarch64 size),
//! and edgert's operators already cover the convolutions and max pooling, where CNNs spend
//! their time.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::{ThreadPool, ThreadPoolBuilder};
use tract_onnx::prelude::{TractError, TractResult};
use tract_onnx::tract_core::runtime::RunOptions;

use super::pin;
use crate::backend::{Pinning, Unavailable};
use crate::{panics, Error};

/// Below this many multiply-adds (or values, for an element-wise pass) one thread does the
/// whole operator: splitting costs more than it saves. tract's own threshold.
pub(super) const SPLIT_WORK: usize = 32 * 1024;

/// A pool of `threads` threads, or none for one thread (inferences run on the caller's), pinned
/// as `pinning` says (`pin`). Its threads run nothing but parts of inferences, so a panic on one
/// is that inference's, as `panicked` makes it (`panics::contain_thread`).
pub fn pool(
    threads: usize,
    pinning: Pinning,
    panicked: impl Fn(String) -> Error + Clone + Send + Sync + 'static,
) -> Result<Option<Arc<ThreadPool>>, Unavailable> {
    if threads < 2 {
        return Ok(None);
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("edgert-cpu-{i}"))
        .start_handler(move |_| panics::contain_thread(panicked.clone()))
        .build()
        .map_err(|e| Unavailable::Threads { threads, reason: e.to_string() })?;
    pin::pin(&pool, pinning).map_err(|reason| Unavailable::Threads {
        threads,
        reason: format!("{reason} (--no-pin leaves them to the OS)"),
    })?;
    Ok(Some(Arc::new(pool)))
}

/// The plan's options: tract's operators on `pool` too, where tract was built threaded.
pub fn run_options(pool: &Option<Arc<ThreadPool>>) -> RunOptions {
    #[cfg(feature = "tract-threads")]
    let executor = pool.clone().map(tract_linalg::multithread::Executor::MultiThread);
    #[cfg(not(feature = "tract-threads"))]
    let executor = {
        let _ = pool;
        None
    };
    RunOptions { executor, ..Default::default() }
}

/// How many threads the calling operator may use: its pool's when it runs on one (an inference
/// on `pool`), else 1.
pub(super) fn available() -> usize {
    match rayon::current_thread_index() {
        Some(_) => rayon::current_num_threads(),
        None => 1,
    }
}

/// Calls `each(first row, block)` on consecutive blocks of `rows_per_block` whole rows (`row`
/// values each) of `out`, on the calling operator's pool; the whole of `out` at once when it
/// has one thread or `out` is one block.
///
/// The blocks are claimed, not handed out: the calling thread starts on them at once, and each
/// other thread of the pool takes the next unclaimed one when it is awake to. Waking a sleeping
/// thread takes longer than many of a model's blocks do (benches/RESULTS.md, threads), so the
/// caller never waits for a thread that has not started: it waits only for blocks already being
/// worked on, spinning, as rayon's own wait would put it to sleep and need waking in turn.
pub(super) fn on_row_blocks<T: Send>(
    out: &mut [T],
    row: usize,
    rows_per_block: usize,
    each: impl Fn(usize, &mut [T]) -> TractResult<()> + Send + Sync,
) -> TractResult<()> {
    let block = rows_per_block.max(1) * row;
    let threads = available();
    if threads < 2 || block >= out.len() {
        return each(0, out);
    }
    let count = out.len().div_ceil(block);
    let blocks = Mutex::new(out.chunks_mut(block).enumerate());
    with_helpers(threads.min(count) - 1, |claims| {
        claims.each(
            || blocks.lock().unwrap_or_else(PoisonError::into_inner).next(),
            |(i, values)| each(i * rows_per_block, values),
        )
    })
}

/// Calls `each(state, range)` on consecutive ranges of `per_range` of `0..total`, claimed by up
/// to `threads` of the calling operator's pool as `on_row_blocks` claims blocks; each thread that
/// takes any makes its `state` once (a scratch buffer), with `init`. For work whose output is not
/// one slice cut in whole rows (a channel-first convolution's columns).
pub(super) fn on_ranges<S>(
    total: usize,
    per_range: usize,
    threads: usize,
    init: impl Fn() -> S + Sync,
    each: impl Fn(&mut S, Range<usize>) -> TractResult<()> + Send + Sync,
) -> TractResult<()> {
    let per_range = per_range.max(1);
    let count = total.div_ceil(per_range);
    let range = |i: usize| i * per_range..((i + 1) * per_range).min(total);
    let threads = threads.min(available()).min(count);
    if threads < 2 {
        let mut state = init();
        return (0..count).try_for_each(|i| each(&mut state, range(i)));
    }
    let claimed = AtomicUsize::new(0);
    with_helpers(threads - 1, |claims| {
        let mut state = None;
        claims.each(
            || Some(claimed.fetch_add(1, Ordering::Relaxed)).filter(|&i| i < count),
            |i| each(state.get_or_insert_with(&init), range(i)),
        )
    })
}

/// Runs `work` (which claims blocks through its `Claims`) on the calling thread at once and on
/// `helpers` more of the pool as they wake, then waits, spinning, for the blocks already being
/// worked on; the first error of any.
fn with_helpers(helpers: usize, work: impl Fn(&Claims) + Sync) -> TractResult<()> {
    let claims = Claims { working: AtomicUsize::new(0), failed: OnceLock::new() };
    rayon::scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| work(&claims));
        }
        work(&claims);
        // Helpers not started yet find nothing left when they do; the scope runs those itself.
        while claims.working.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
    });
    claims.failed.into_inner().map_or(Ok(()), Err)
}

/// The claims on the blocks of one `on_row_blocks`: how many blocks are being worked on, and
/// the first error.
struct Claims {
    working: AtomicUsize,
    failed: OnceLock<TractError>,
}

impl Claims {
    /// Claims blocks with `next` until none is left, calling `run` on each. A block counts as
    /// worked on from before its claim until `run` returns or panics, so that a waiter who saw
    /// every block claimed sees every block not yet finished.
    fn each<B>(&self, next: impl Fn() -> Option<B>, mut run: impl FnMut(B) -> TractResult<()>) {
        loop {
            self.working.fetch_add(1, Ordering::SeqCst);
            let _done = Done(&self.working);
            let Some(block) = next() else { return };
            if let Err(e) = run(block) {
                let _ = self.failed.set(e);
            }
        }
    }
}

/// Ends a block's "worked on" however its work ends.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `on_row_blocks` in four blocks per thread (uneven rows even out), or in one block below
/// `SPLIT_WORK`.
pub(super) fn on_rows<T: Send>(
    out: &mut [T],
    row: usize,
    work: usize,
    each: impl Fn(usize, &mut [T]) -> TractResult<()> + Send + Sync,
) -> TractResult<()> {
    let rows = out.len() / row.max(1);
    let blocks = if work < SPLIT_WORK { 1 } else { 4 * available() };
    on_row_blocks(out, row, rows.div_ceil(blocks), each)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(panic: String) -> Error {
        Error::Inference { path: "m.onnx".into(), reason: format!("tract failed unexpectedly: {panic}") }
    }

    #[test]
    fn a_panic_on_a_pool_thread_is_the_inferences_error_and_reaches_the_caller() {
        let pool = pool(2, Pinning::From(0), failed).unwrap().unwrap();
        // What the panic hook sees on a pool's thread, which no `contained` call is on.
        let seen =
            |payload: &'static str| panics::contained_error(&payload).map(|e| crate::error::one_line(&e));
        let on_pool = pool.install(|| seen("boom")).expect("contained on the pool");
        assert_eq!(on_pool, "m.onnx: inference failed: tract failed unexpectedly: boom");
        // And the panic itself travels back to the call that handed the work over.
        let caught = panics::contained(
            || -> crate::Result<()> { pool.install(|| panic!("index out of bounds")) },
            |panic| Error::Inference { path: "caller.onnx".into(), reason: panic },
        );
        assert!(crate::error::one_line(&caught.unwrap_err()).ends_with("index out of bounds"));
        assert_eq!(seen("boom"), None, "the test's own thread is not contained");
    }

    #[test]
    fn one_thread_needs_no_pool() {
        assert!(pool(1, Pinning::From(0), failed).unwrap().is_none());
        assert_eq!(pool(3, Pinning::From(0), failed).unwrap().unwrap().current_num_threads(), 3);
    }

    #[test]
    fn operators_run_on_one_thread_outside_a_pool_and_on_all_of_it_inside() {
        assert_eq!(available(), 1);
        let pool = pool(3, Pinning::From(0), failed).unwrap().unwrap();
        assert_eq!(pool.install(available), 3);
    }

    /// Each row is handed over once, with its index, in blocks of whole rows.
    fn rows_seen(rows: usize, row: usize, work: usize) -> (Vec<usize>, usize) {
        let mut out = vec![0usize; rows * row];
        let blocks = std::sync::atomic::AtomicUsize::new(0);
        on_rows(&mut out, row, work, |first, block| {
            assert_eq!(block.len() % row, 0);
            blocks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            for (i, values) in block.chunks_exact_mut(row).enumerate() {
                values.iter_mut().for_each(|v| *v += first + i + 1);
            }
            Ok(())
        })
        .unwrap();
        let rows: Vec<usize> = out.chunks_exact(row).map(|r| r[0] - 1).collect();
        (rows, blocks.into_inner())
    }

    #[test]
    fn rows_are_split_on_a_pool_above_the_threshold_only() {
        let want: Vec<usize> = (0..10).collect();
        assert_eq!(rows_seen(10, 3, SPLIT_WORK), (want.clone(), 1));
        let pool = pool(2, Pinning::From(0), failed).unwrap().unwrap();
        assert_eq!(pool.install(|| rows_seen(10, 3, SPLIT_WORK - 1)), (want.clone(), 1));
        // Four blocks per thread: 8 asked for, so 2 rows a block, and 10 rows make 5.
        assert_eq!(pool.install(|| rows_seen(10, 3, SPLIT_WORK)), (want, 5));
    }

    #[test]
    fn ranges_are_each_taken_once_with_a_state_per_thread_that_takes_any() {
        let pool = pool(2, Pinning::From(0), failed).unwrap().unwrap();
        for (total, per, threads) in [(10, 3, 2), (10, 3, 1), (1, 5, 2), (0, 4, 2), (64, 1, 2)] {
            let seen = Mutex::new(Vec::new());
            let states = AtomicUsize::new(0);
            pool.install(|| {
                on_ranges(
                    total,
                    per,
                    threads,
                    || states.fetch_add(1, Ordering::Relaxed),
                    |_, range| {
                        assert!(range.len() <= per && !range.is_empty());
                        seen.lock().unwrap().extend(range);
                        Ok(())
                    },
                )
            })
            .unwrap();
            let mut seen = seen.into_inner().unwrap();
            seen.sort();
            assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{total} by {per}");
            assert!(states.into_inner() <= threads.max(1));
        }
        let result = pool.install(|| {
            on_ranges(
                8,
                1,
                2,
                || (),
                |_, range| match range.start {
                    5 => tract_onnx::tract_core::internal::bail!("range at 5"),
                    _ => Ok(()),
                },
            )
        });
        assert_eq!(result.unwrap_err().to_string(), "range at 5");
    }

    #[test]
    fn an_error_in_a_block_is_the_operators_error() {
        let pool = pool(2, Pinning::From(0), failed).unwrap().unwrap();
        let mut out = vec![0f32; 64];
        let result = pool.install(|| {
            on_row_blocks(&mut out, 8, 2, |first, _| match first {
                4 => tract_onnx::tract_core::internal::bail!("block at row 4"),
                _ => Ok(()),
            })
        });
        assert_eq!(result.unwrap_err().to_string(), "block at row 4");
    }

    /// The pool's threads that worked on the blocks of one `on_row_blocks` over 8 blocks of which
    /// each takes `block_ms`, and whether every block was done once.
    fn workers(pool: &ThreadPool, block_ms: u64) -> (std::collections::BTreeSet<usize>, bool) {
        let mut out = vec![0u8; 8];
        let seen = Mutex::new(std::collections::BTreeSet::new());
        pool.install(|| {
            on_row_blocks(&mut out, 1, 1, |_, block| {
                std::thread::sleep(std::time::Duration::from_millis(block_ms));
                seen.lock().unwrap().insert(rayon::current_thread_index().unwrap());
                block[0] += 1;
                Ok(())
            })
        })
        .unwrap();
        (seen.into_inner().unwrap(), out.iter().all(|&v| v == 1))
    }

    #[test]
    fn the_other_threads_take_blocks_when_free_and_are_not_waited_for_when_busy() {
        let pool = pool(2, Pinning::From(0), failed).unwrap().unwrap();
        let (threads, once) = workers(&pool, 5);
        assert!(once);
        assert_eq!(threads.len(), 2, "both threads took blocks");

        // The other thread busy until the split is over: the caller does every block itself
        // rather than wait for it.
        let (release, busy) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel();
        pool.spawn(move || {
            started.send(()).unwrap();
            let _ = busy.recv();
        });
        running.recv().unwrap();
        let (threads, once) = workers(&pool, 1);
        release.send(()).unwrap();
        assert!(once);
        assert_eq!(threads.len(), 1, "{threads:?}");
    }
}
