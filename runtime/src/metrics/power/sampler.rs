//! A background thread that samples power at a fixed interval, timestamped against one epoch so
//! samples line up with a benchmark's measured window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{OpenSensors, PowerSensors};

/// One reading: seconds since the epoch, watts per rail (`None` for a failed rail), total.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSample {
    pub t: f64,
    pub rails: Vec<Option<f64>>,
    pub total: Option<f64>,
}

pub trait PowerReader: Send {
    fn read(&mut self) -> (Vec<Option<f64>>, Option<f64>);
}

impl PowerReader for OpenSensors {
    fn read(&mut self) -> (Vec<Option<f64>>, Option<f64>) {
        OpenSensors::read(self)
    }
}

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

    fn sleep(&mut self, seconds: f64) {
        std::thread::sleep(Duration::from_secs_f64(seconds.max(0.0)));
    }
}

/// Samples every `interval` seconds until `stop` is set or the clock passes `until`, then once
/// more, so the samples cover the time up to the stop.
pub fn collect(
    reader: &mut dyn PowerReader,
    clock: &mut dyn Clock,
    interval: f64,
    stop: &AtomicBool,
    until: Option<f64>,
) -> Vec<PowerSample> {
    let mut samples = Vec::new();
    let mut next = clock.now();
    loop {
        let (rails, total) = reader.read();
        samples.push(PowerSample { t: clock.now(), rails, total });
        let done = stop.load(Ordering::Acquire) || until.is_some_and(|u| clock.now() >= u);
        if done {
            return samples;
        }
        next += interval;
        let wait = next - clock.now();
        clock.sleep(wait);
    }
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    /// Taken before `start` returns, so a window opened after it is covered from its start.
    first: PowerSample,
    thread: JoinHandle<Vec<PowerSample>>,
}

impl Sampler {
    pub fn start(sensors: &PowerSensors, epoch: Instant, interval: Duration) -> Sampler {
        let mut sensors = sensors.open();
        let (rails, total) = sensors.read();
        let first = PowerSample { t: epoch.elapsed().as_secs_f64(), rails, total };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("edgert-power".into())
            .spawn(move || {
                let mut clock = SystemClock { epoch };
                collect(&mut sensors, &mut clock, interval.as_secs_f64(), &flag, None)
            })
            .expect("a thread starts");
        Sampler { stop, first, thread }
    }

    /// Stops sampling (after one last sample) and returns every sample.
    pub fn finish(self) -> Vec<PowerSample> {
        self.stop.store(true, Ordering::Release);
        let mut samples = vec![self.first];
        samples.extend(self.thread.join().unwrap_or_default());
        samples
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::metrics::power::energy;

    /// A clock that moves only when slept on, shared with the sensor that reads it.
    #[derive(Clone)]
    struct FakeClock(Arc<Mutex<f64>>);

    impl Clock for FakeClock {
        fn now(&self) -> f64 {
            *self.0.lock().unwrap()
        }
        fn sleep(&mut self, seconds: f64) {
            *self.0.lock().unwrap() += seconds.max(0.0);
        }
    }

    /// A sensor whose power is a function of the fake time.
    struct FakeSensor<F: Fn(f64) -> f64 + Send>(FakeClock, F);

    impl<F: Fn(f64) -> f64 + Send> PowerReader for FakeSensor<F> {
        fn read(&mut self) -> (Vec<Option<f64>>, Option<f64>) {
            let watts = (self.1)(self.0.now());
            (vec![Some(watts)], Some(watts))
        }
    }

    fn sample(power: impl Fn(f64) -> f64 + Send, seconds: f64) -> Vec<(f64, f64)> {
        let clock = FakeClock(Arc::new(Mutex::new(0.0)));
        let mut sensor = FakeSensor(clock.clone(), power);
        let samples = collect(&mut sensor, &mut clock.clone(), 0.01, &AtomicBool::new(false), Some(seconds));
        samples.iter().map(|s| (s.t, s.total.unwrap())).collect()
    }

    #[test]
    fn constant_five_watts_for_two_seconds_integrates_to_ten_joules() {
        let samples = sample(|_| 5.0, 2.0);
        assert!((200..=202).contains(&samples.len()), "{}", samples.len());
        assert!((energy::joules(&samples, 0.0, 2.0).unwrap() - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramp_integrates_to_its_area() {
        // P(t) = 3t: from 0 to 2 s the area is 1.5 × 4 = 6 J; the trapezoid rule is exact on a line.
        let samples = sample(|t| 3.0 * t, 2.0);
        assert!((energy::joules(&samples, 0.0, 2.0).unwrap() - 6.0).abs() < 1e-9);
    }

    #[test]
    fn the_thread_stops_when_asked_and_covers_the_stop() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/orin-nano-jp6");
        let sensors = PowerSensors::discover(&dir).unwrap();
        let epoch = Instant::now();
        let sampler = Sampler::start(&sensors, epoch, Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(60));
        let stopped_at = epoch.elapsed().as_secs_f64();
        let samples = sampler.finish();
        assert!(samples.len() >= 3, "{}", samples.len());
        assert!(samples.last().unwrap().t >= stopped_at);
        assert!(samples.windows(2).all(|w| w[0].t <= w[1].t));
    }
}
