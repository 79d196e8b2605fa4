//! The `cpu` backend's pool threads pinned one to a CPU (`Pinning`). Woken with work, a pool
//! thread is put on or near the CPU of the thread that woke it, and Linux does not always look
//! for an idle one first: on a loaded CPU, both of a two-thread pool's threads then take turns
//! on one CPU for a scheduler tick while the other idles, an inference at one thread's speed or
//! worse (benches/RESULTS.md, the two-thread tail). A thread pinned to a CPU of its own is woken
//! there.

use rayon::ThreadPool;
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::backend::Pinning;

/// Pins each of `pool`'s threads to its own CPU as `pinning` says; the CPUs, in the threads'
/// order, or None where they are left to the OS (`cpus`).
pub(super) fn pin(pool: &ThreadPool, pinning: Pinning) -> Result<Option<Vec<usize>>, String> {
    let Some(cpus) = cpus(pool.current_num_threads(), pinning)? else { return Ok(None) };
    let pinned = pool.broadcast(|thread| {
        let cpu = cpus[thread.index()];
        let mut set = CpuSet::new();
        set.set(cpu);
        sched_setaffinity(None, &set)
            .map_err(|e| format!("pinning thread {} to CPU {cpu}: {e}", thread.index()))
    });
    pinned.into_iter().collect::<Result<(), _>>()?;
    Ok(Some(cpus))
}

/// The CPUs a pool of `threads` threads is pinned to under `pinning` on this machine, in the
/// threads' order; None where they are left to the OS: `Pinning::Off`, or fewer CPUs from the
/// first than threads, since two threads pinned to one CPU could only take turns there.
pub fn cpus(threads: usize, pinning: Pinning) -> Result<Option<Vec<usize>>, String> {
    let Pinning::From(first) = pinning else { return Ok(None) };
    Ok(consecutive(&allowed()?, first, threads).map(<[usize]>::to_vec))
}

/// The CPUs this process may run on (its affinity: `taskset`, a container's cpuset), in order.
fn allowed() -> Result<Vec<usize>, String> {
    let set = sched_getaffinity(None).map_err(|e| format!("reading this process's CPUs: {e}"))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&cpu| set.is_set(cpu)).collect())
}

/// `threads` CPUs from the `first`th of `allowed`; None where they do not all fit.
fn consecutive(allowed: &[usize], first: usize, threads: usize) -> Option<&[usize]> {
    allowed.get(first..first.checked_add(threads)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_consecutive_allowed_cpus_from_the_first_or_none_where_they_do_not_fit() {
        let allowed = [2, 3, 5, 7];
        assert_eq!(consecutive(&allowed, 0, 2), Some(&[2, 3][..]));
        assert_eq!(consecutive(&allowed, 2, 2), Some(&[5, 7][..]));
        assert_eq!(consecutive(&allowed, 0, 4), Some(&allowed[..]));
        assert_eq!(consecutive(&allowed, 3, 2), None);
        assert_eq!(consecutive(&allowed, 0, 5), None);
        assert_eq!(consecutive(&allowed, usize::MAX, 2), None);
    }

    fn affinity_of_each(pool: &ThreadPool) -> Vec<Vec<usize>> {
        pool.broadcast(|_| allowed().unwrap())
    }

    fn pool(threads: usize) -> ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn each_thread_of_a_pinned_pool_may_run_on_its_own_cpu_only() {
        let allowed = allowed().unwrap();
        let pool = pool(2);
        let pinned = pin(&pool, Pinning::From(0)).unwrap();
        if allowed.len() < 2 {
            assert_eq!(pinned, None, "one CPU cannot take two pinned threads");
            return;
        }
        let cpus = pinned.expect("two threads fit");
        assert_eq!(cpus, allowed[..2]);
        assert_eq!(affinity_of_each(&pool), vec![vec![allowed[0]], vec![allowed[1]]]);
    }

    #[test]
    fn threads_that_do_not_fit_and_pinning_off_are_left_to_the_os() {
        let allowed = allowed().unwrap();
        let pool = pool(2);
        assert_eq!(pin(&pool, Pinning::From(allowed.len() - 1)).unwrap(), None);
        assert_eq!(pin(&pool, Pinning::Off).unwrap(), None);
        assert_eq!(affinity_of_each(&pool), vec![allowed.clone(), allowed]);
    }
}
