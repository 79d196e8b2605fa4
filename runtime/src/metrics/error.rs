//! Why a sensor, counter or sampler could not give a reading. Each names the file or tool at
//! fault; callers decide whether it is fatal (power asked for) or a gap (one rail, one sample).

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SensorError {
    /// A sensor file that cannot be opened or read (vanished, permission).
    #[error("{}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}: not a number: {text:?}", path.display())]
    NotANumber { path: PathBuf, text: String },
    /// A reading no sensor could make (infinite, or negative where it cannot be).
    #[error("{}: implausible reading {value}", path.display())]
    Implausible { path: PathBuf, value: f64 },
    /// A number outside what the quantity can physically be (`limits::WATTS`, ...).
    #[error(transparent)]
    OutOfRange(#[from] crate::limits::OutOfRange),
    #[error("no RAPL counters under {}", base.display())]
    NoRapl { base: PathBuf },
    #[error("RAPL counters not readable: {}: {reason} (readable by root only since Linux 5.10)", path.display())]
    RaplUnreadable { path: PathBuf, reason: String },
    /// A rate asked of a counter without two readings at different instants.
    #[error("RAPL: {0}")]
    RaplRate(&'static str),
    #[error("tegrastats is not on the PATH")]
    TegrastatsMissing,
    #[error("tegrastats: {0}")]
    Tegrastats(String),
    #[error("tegrastats reports no power rails")]
    TegrastatsNoRails,
    #[error("tegrastats: no {0} in its latest line")]
    TegrastatsNoRail(String),
    /// Nothing under the root measures power: what each other source said.
    #[error("no INA3221 power sensors under {} (not a Jetson?); {rapl}; {tegrastats}", root.display())]
    NoPowerSensors { root: PathBuf, rapl: Box<SensorError>, tegrastats: Box<SensorError> },
    #[error("cannot start the {name} thread: {reason}")]
    Thread { name: String, reason: String },
    /// A read that did not return: a driver stuck on its bus (`metrics::deadline`).
    #[error("reading {what} did not finish within {seconds} s: a sensor's driver may be stuck (see dmesg)")]
    Stuck { what: String, seconds: f64 },
    /// The thread reading ended without a reading (it panicked, and said why).
    #[error("reading {what} failed: its thread ended without a reading")]
    Ended { what: String },
}
