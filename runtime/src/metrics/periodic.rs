//! A background thread that reads something at a fixed interval, timestamped against one epoch so
//! its readings line up with a benchmark's measured window. Power and telemetry both sample this way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::SensorError;

pub trait Clock: Send {
    /// Seconds since the epoch.
    fn now(&self) -> f64;
    fn sleep(&mut self, seconds: f64);
}

pub struct SystemClock {
    pub epoch: Instant,
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Parked rather than asleep, so `Periodic::finish` wakes it: a run's end does not wait out
    /// a long interval.
    fn sleep(&mut self, seconds: f64) {
        std::thread::park_timeout(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO));
    }
}

/// Reads every `interval` seconds until `stop` is set or the clock passes `until`, then once
/// more, so the readings cover the time up to the stop. Each reading is timestamped after it is taken.
pub fn collect<T>(
    read: &mut dyn FnMut() -> T,
    clock: &mut dyn Clock,
    interval: f64,
    stop: &AtomicBool,
    until: Option<f64>,
) -> Vec<(f64, T)> {
    let mut readings = Vec::new();
    let mut next = clock.now();
    loop {
        let value = read();
        readings.push((clock.now(), value));
        if stop.load(Ordering::Acquire) || until.is_some_and(|u| clock.now() >= u) {
            return readings;
        }
        next += interval;
        let wait = next - clock.now();
        clock.sleep(wait);
    }
}

/// `collect` on its own thread, with a first reading taken before `start` returns, so a window
/// opened after it is covered from its start.
pub struct Periodic<T> {
    stop: Arc<AtomicBool>,
    first: (f64, T),
    thread: JoinHandle<Vec<(f64, T)>>,
}

impl<T: Send + 'static> Periodic<T> {
    pub fn start(
        name: &str,
        epoch: Instant,
        interval: Duration,
        mut read: impl FnMut() -> T + Send + 'static,
    ) -> Result<Periodic<T>, SensorError> {
        let value = read();
        let first = (epoch.elapsed().as_secs_f64(), value);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut clock = SystemClock { epoch };
                collect(&mut read, &mut clock, interval.as_secs_f64(), &flag, None)
            })
            .map_err(|e| SensorError::Thread { name: name.into(), reason: e.to_string() })?;
        Ok(Periodic { stop, first, thread })
    }

    /// Stops (after one last reading) and returns every reading in time order.
    pub fn finish(self) -> Vec<(f64, T)> {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let mut readings = vec![self.first];
        readings.extend(self.thread.join().unwrap_or_default());
        readings
    }
}
