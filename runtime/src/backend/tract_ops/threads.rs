//! The `cpu` backend's threads (`--threads`): one rayon pool per prepared model, which each
//! inference runs on (`TractPrepared::on_pool`), and which edgert's operators split their work
//! over. tract's own operators use it too only with the `tract-threads` feature: its threaded
//! matrix products make the aarch64 binary about 4 MB larger (benches/RESULTS.md, aarch64 size),
//! and edgert's operators already cover the convolutions and max pooling, where CNNs spend
//! their time.

use std::sync::Arc;

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use tract_onnx::prelude::TractResult;
use tract_onnx::tract_core::runtime::RunOptions;

use crate::backend::Unavailable;

/// Below this many multiply-adds (or values, for an element-wise pass) one thread does the
/// whole operator: splitting costs more than it saves. tract's own threshold.
pub(super) const SPLIT_WORK: usize = 32 * 1024;

/// A pool of `threads` threads, or none for one thread (inferences run on the caller's).
pub fn pool(threads: usize) -> Result<Option<Arc<ThreadPool>>, Unavailable> {
    if threads < 2 {
        return Ok(None);
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("edgert-cpu-{i}"))
        .build()
        .map_err(|e| Unavailable::Threads { threads, reason: e.to_string() })?;
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
pub(super) fn on_row_blocks<T: Send>(
    out: &mut [T],
    row: usize,
    rows_per_block: usize,
    each: impl Fn(usize, &mut [T]) -> TractResult<()> + Send + Sync,
) -> TractResult<()> {
    let block = rows_per_block.max(1) * row;
    if available() < 2 || block >= out.len() {
        return each(0, out);
    }
    out.par_chunks_mut(block).enumerate().try_for_each(|(i, values)| each(i * rows_per_block, values))
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

    #[test]
    fn one_thread_needs_no_pool() {
        assert!(pool(1).unwrap().is_none());
        assert_eq!(pool(3).unwrap().unwrap().current_num_threads(), 3);
    }

    #[test]
    fn operators_run_on_one_thread_outside_a_pool_and_on_all_of_it_inside() {
        assert_eq!(available(), 1);
        let pool = pool(3).unwrap().unwrap();
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
        let pool = pool(2).unwrap().unwrap();
        assert_eq!(pool.install(|| rows_seen(10, 3, SPLIT_WORK - 1)), (want.clone(), 1));
        // Four blocks per thread: 8 asked for, so 2 rows a block, and 10 rows make 5.
        assert_eq!(pool.install(|| rows_seen(10, 3, SPLIT_WORK)), (want, 5));
    }

    #[test]
    fn an_error_in_a_block_is_the_operators_error() {
        let pool = pool(2).unwrap().unwrap();
        let mut out = vec![0f32; 64];
        let result = pool.install(|| {
            on_row_blocks(&mut out, 8, 2, |first, _| match first {
                4 => tract_onnx::tract_core::internal::bail!("block at row 4"),
                _ => Ok(()),
            })
        });
        assert_eq!(result.unwrap_err().to_string(), "block at row 4");
    }
}
