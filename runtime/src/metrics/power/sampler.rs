//! Power samples taken on a background thread (see `metrics::periodic`).

use std::time::{Duration, Instant};

use super::PowerSensors;
use crate::metrics::error::SensorError;
use crate::metrics::periodic::Periodic;

/// One reading: seconds since the epoch, watts per rail (`None` for a failed rail), total.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSample {
    pub t: f64,
    pub rails: Vec<Option<f64>>,
    pub total: Option<f64>,
}

type Reading = (Vec<Option<f64>>, Option<f64>);

pub struct Sampler(Periodic<Reading>);

impl Sampler {
    pub fn start(sensors: &PowerSensors, epoch: Instant, interval: Duration) -> Result<Sampler, SensorError> {
        let mut sensors = sensors.open()?;
        Ok(Sampler(Periodic::start("edgert-power", epoch, interval, move || sensors.read())?))
    }

    /// Stops sampling (after one last sample) and returns every sample, or why the samples stopped
    /// short of the stop (a rail's read that never returned).
    pub fn finish(self) -> Result<Vec<PowerSample>, SensorError> {
        let samples = self.0.finish()?;
        Ok(samples.into_iter().map(|(t, (rails, total))| PowerSample { t, rails, total }).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::metrics::periodic::{collect, Clock};
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

    impl<F: Fn(f64) -> f64 + Send> FakeSensor<F> {
        fn read(&mut self) -> (Vec<Option<f64>>, Option<f64>) {
            let watts = (self.1)(self.0.now());
            (vec![Some(watts)], Some(watts))
        }
    }

    fn sample(power: impl Fn(f64) -> f64 + Send, seconds: f64) -> Vec<(f64, f64)> {
        let clock = FakeClock(Arc::new(Mutex::new(0.0)));
        let mut sensor = FakeSensor(clock.clone(), power);
        let samples =
            collect(&mut || sensor.read(), &mut clock.clone(), 0.01, &AtomicBool::new(false), Some(seconds));
        samples.iter().map(|(t, (_, total))| (*t, total.unwrap())).collect()
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
        let sampler = Sampler::start(&sensors, epoch, Duration::from_millis(5)).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let stopped_at = epoch.elapsed().as_secs_f64();
        let samples = sampler.finish().unwrap();
        assert!(samples.len() >= 3, "{}", samples.len());
        assert!(samples.last().unwrap().t >= stopped_at);
        assert!(samples.windows(2).all(|w| w[0].t <= w[1].t));
    }
}
