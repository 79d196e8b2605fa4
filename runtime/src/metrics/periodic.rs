//! A background thread that reads something at a fixed interval, timestamped against one epoch so
//! its readings line up with a benchmark's measured window. Power and telemetry both sample this way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::deadline::{self, SENSOR_DEADLINE};
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
#[cfg(test)]
pub fn collect<T>(
    read: &mut dyn FnMut() -> T,
    clock: &mut dyn Clock,
    interval: f64,
    stop: &AtomicBool,
    until: Option<f64>,
) -> Vec<(f64, T)> {
    let mut readings = Vec::new();
    sample(read, clock, interval, stop, until, &mut |t, value| readings.push((t, value)));
    readings
}

/// `collect`, handing each reading to `keep` as it is taken.
fn sample<T>(
    read: &mut dyn FnMut() -> T,
    clock: &mut dyn Clock,
    interval: f64,
    stop: &AtomicBool,
    until: Option<f64>,
    keep: &mut dyn FnMut(f64, T),
) {
    let mut next = clock.now();
    loop {
        let value = read();
        keep(clock.now(), value);
        if stop.load(Ordering::Acquire) || until.is_some_and(|u| clock.now() >= u) {
            return;
        }
        next += interval;
        let wait = next - clock.now();
        clock.sleep(wait);
    }
}

/// `collect` on its own thread, with a first reading taken before `start` returns, so a window
/// opened after it is covered from its start. Readings are kept as they come, so a read that never
/// returns (`metrics::deadline`) costs the readings after it, not the caller's wait.
pub struct Periodic<T> {
    name: String,
    stop: Arc<AtomicBool>,
    readings: Arc<Mutex<Vec<(f64, T)>>>,
    /// Disconnected when the thread ends.
    ended: mpsc::Receiver<()>,
    thread: Thread,
}

impl<T: Send + 'static> Periodic<T> {
    pub fn start(
        name: &str,
        epoch: Instant,
        interval: Duration,
        mut read: impl FnMut() -> T + Send + 'static,
    ) -> Result<Periodic<T>, SensorError> {
        let stop = Arc::new(AtomicBool::new(false));
        let readings = Arc::new(Mutex::new(Vec::new()));
        let (first_taken, first) = mpsc::sync_channel(1);
        let (ending, ended) = mpsc::channel::<()>();
        let (flag, kept) = (stop.clone(), readings.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ending = ending;
                let mut clock = SystemClock { epoch };
                sample(&mut read, &mut clock, interval.as_secs_f64(), &flag, None, &mut |t, value| {
                    lock(&kept).push((t, value));
                    let _ = first_taken.try_send(());
                });
            })
            .map_err(|e| SensorError::Thread { name: name.into(), reason: e.to_string() })?;
        let periodic = Periodic { name: name.into(), stop, readings, ended, thread: thread.thread().clone() };
        match deadline::answer(first.recv_timeout(SENSOR_DEADLINE), name, SENSOR_DEADLINE) {
            Ok(()) => Ok(periodic),
            Err(e) => {
                periodic.stop.store(true, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Stops (after one last reading) and returns every reading in time order, or why the last
    /// did not come within `SENSOR_DEADLINE`.
    pub fn finish(self) -> Result<Vec<(f64, T)>, SensorError> {
        self.stop.store(true, Ordering::Release);
        self.thread.unpark();
        match self.ended.recv_timeout(SENSOR_DEADLINE) {
            Err(RecvTimeoutError::Disconnected) => Ok(std::mem::take(&mut *lock(&self.readings))),
            _ => Err(SensorError::Stuck { what: self.name, seconds: SENSOR_DEADLINE.as_secs_f64() }),
        }
    }
}

/// The readings so far; a reader that panicked while pushing left them whole.
fn lock<T>(readings: &Mutex<Vec<T>>) -> std::sync::MutexGuard<'_, Vec<T>> {
    readings.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader whose `stuck_at`th read blocks until `release` is dropped.
    fn reader(stuck_at: u32, release: mpsc::Receiver<()>) -> impl FnMut() -> u32 + Send + 'static {
        let mut n = 0;
        move || {
            n += 1;
            if n == stuck_at {
                let _ = release.recv();
            }
            n
        }
    }

    #[test]
    fn readings_come_back_in_order_when_stopped() {
        let (_release, never) = mpsc::channel();
        let periodic =
            Periodic::start("edgert-test", Instant::now(), Duration::from_millis(2), reader(0, never));
        std::thread::sleep(Duration::from_millis(30));
        let readings = periodic.unwrap().finish().unwrap();
        let values: Vec<u32> = readings.iter().map(|(_, n)| *n).collect();
        assert!(values.len() >= 3 && values.iter().copied().eq(1..=values.len() as u32), "{values:?}");
    }

    #[test]
    fn a_read_that_never_returns_costs_its_readings_not_the_callers_wait() {
        let (_release, never) = mpsc::channel();
        let periodic =
            Periodic::start("edgert-power", Instant::now(), Duration::from_millis(2), reader(3, never))
                .unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let started = Instant::now();
        let err = periodic.finish().unwrap_err();
        assert!(started.elapsed() < SENSOR_DEADLINE + Duration::from_millis(500));
        assert_eq!(err, SensorError::Stuck { what: "edgert-power".into(), seconds: 2.0 });
    }

    #[test]
    fn a_first_read_that_never_returns_fails_the_start() {
        let (_release, never) = mpsc::channel();
        let started = Instant::now();
        let err =
            Periodic::start("edgert-telemetry", Instant::now(), Duration::from_millis(2), reader(1, never))
                .err()
                .unwrap();
        assert!(started.elapsed() < SENSOR_DEADLINE + Duration::from_millis(500));
        assert!(err.to_string().starts_with("reading edgert-telemetry did not finish within 2 s"), "{err}");
    }
}
