//! CPU time this process has used, user and system, all threads: what a run costs the CPU besides
//! its wall time (a GPU wait that spins shows here, one that blocks does not).

/// Seconds of CPU this process has used so far; None where the OS does not say.
pub fn process_cpu_s() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: written by the successful call above.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    #[test]
    fn busy_work_shows_as_cpu_time_and_sleeping_does_not() {
        let before = super::process_cpu_s().unwrap();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let busy = super::process_cpu_s().unwrap() - before;
        std::thread::sleep(std::time::Duration::from_millis(200));
        let slept = super::process_cpu_s().unwrap() - before - busy;
        // Other test threads add to this process's time: only bounds that hold whatever they do.
        assert!(busy >= 0.1, "200 ms of spinning counted {busy} s");
        assert!(slept >= 0.0);
    }
}
