//! Sensor reads that cannot hold their caller. Sysfs files are served by drivers, and a driver
//! stuck on its bus (an I2C power monitor that stopped answering) never returns from `read`; the
//! type check of `infile` cannot see that. So the callers that wait on a board's sensors (`info`,
//! `monitor`, `doctor`, a run's samplers) wait at most `SENSOR_DEADLINE`; a read past it is left
//! to its thread, which returns when, if ever, the driver does.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use super::error::SensorError;

/// Far longer than any healthy sensor read (microseconds for sysfs, milliseconds over I2C).
pub const SENSOR_DEADLINE: Duration = Duration::from_secs(2);

/// `read`'s value, if it comes within `limit`; `what` names the reading in the error.
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<T, SensorError> {
    let (sender, receiver) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("edgert-sensors".into())
        .spawn(move || {
            // The caller may have gone on: nobody to tell then.
            let _ = sender.send(read());
        })
        .map_err(|e| SensorError::Thread { name: "edgert-sensors".into(), reason: e.to_string() })?;
    answer(receiver.recv_timeout(limit), what, limit)
}

/// What a wait on a sensor thread came to: its value, `Stuck` past the deadline, or the thread's
/// end without one (a panic, already printed).
pub fn answer<T>(waited: Result<T, RecvTimeoutError>, what: &str, limit: Duration) -> Result<T, SensorError> {
    waited.map_err(|e| match e {
        RecvTimeoutError::Timeout => SensorError::Stuck { what: what.into(), seconds: limit.as_secs_f64() },
        RecvTimeoutError::Disconnected => SensorError::Ended { what: what.into() },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_read_that_returns_gives_its_value() {
        assert_eq!(within("a sensor", SENSOR_DEADLINE, || 42), Ok(42));
    }

    #[test]
    fn a_read_that_never_returns_is_given_up_at_the_deadline() {
        // Blocks for good: its sender lives on in the test's frame until the test ends.
        let (_keep, never) = mpsc::channel::<()>();
        let started = Instant::now();
        let err = within("the power rails", Duration::from_millis(200), move || never.recv()).unwrap_err();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(200) && waited < Duration::from_secs(2), "{waited:?}");
        assert_eq!(
            err.to_string(),
            "reading the power rails did not finish within 0.2 s: a sensor's driver may be stuck (see dmesg)"
        );
    }

    #[test]
    fn a_read_that_panics_is_an_error_not_a_wait() {
        let started = Instant::now();
        let err = within("a sensor", SENSOR_DEADLINE, || -> u32 { panic!("driver said no") }).unwrap_err();
        assert!(started.elapsed() < SENSOR_DEADLINE);
        assert!(err.to_string().contains("ended without a reading"), "{err}");
    }
}
