//! `edgert doctor`: a fixed list of checks, in layers (the platform, the CPU backends, the GPU,
//! TensorRT, power, clocks, cameras, the user), each `pass`, `fail` (what was expected, what was
//! seen, the fix) or `skip` (why), so a board's first run says which hardware path works there and
//! which layer broke. A check that errors or panics is that check's failure; the others still run.

mod backends;
mod cameras;
mod clocks;
mod embedded;
mod gpu;
mod platform;
mod power;
mod runner;
mod tensorrt;
mod user;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::backend::BackendOptions;
use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;

pub use runner::run;

/// The layers checks are grouped in, in the order they run: a failure names its layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    Platform,
    Cpu,
    Gpu,
    Nvrtc,
    Tensorrt,
    Cuda,
    Power,
    Clocks,
    Cameras,
    User,
}

impl Area {
    pub const ALL: [Area; 10] = [
        Area::Platform,
        Area::Cpu,
        Area::Gpu,
        Area::Nvrtc,
        Area::Tensorrt,
        Area::Cuda,
        Area::Power,
        Area::Clocks,
        Area::Cameras,
        Area::User,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Area::Platform => "platform",
            Area::Cpu => "cpu",
            Area::Gpu => "gpu",
            Area::Nvrtc => "nvrtc",
            Area::Tensorrt => "tensorrt",
            Area::Cuda => "cuda",
            Area::Power => "power",
            Area::Clocks => "clocks",
            Area::Cameras => "cameras",
            Area::User => "user",
        }
    }

    /// An area from its name, or the list of names.
    pub fn parse(text: &str) -> Result<Area, String> {
        Area::ALL.into_iter().find(|a| a.name() == text).ok_or_else(|| {
            let names: Vec<&str> = Area::ALL.iter().map(|a| a.name()).collect();
            format!("'{text}' is not a doctor area (one of {})", names.join(", "))
        })
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Pass { seen: String },
    Fail { expected: String, seen: String, fix: String },
    Skip { reason: String },
}

impl Outcome {
    pub fn pass(seen: impl Into<String>) -> Outcome {
        Outcome::Pass { seen: seen.into() }
    }

    pub fn fail(expected: impl Into<String>, seen: impl Into<String>, fix: impl Into<String>) -> Outcome {
        Outcome::Fail { expected: expected.into(), seen: seen.into(), fix: fix.into() }
    }

    pub fn skip(reason: impl Into<String>) -> Outcome {
        Outcome::Skip { reason: reason.into() }
    }

    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Pass { .. } => "pass",
            Outcome::Fail { .. } => "fail",
            Outcome::Skip { .. } => "skip",
        }
    }

    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Pass { .. })
    }
}

/// What the checks are given: options as values, read once.
#[derive(Debug, Clone)]
pub struct Options {
    /// Areas to run; empty runs them all.
    pub only: Vec<Area>,
    /// The short run (≤ 20 s): fewer samples and frames, no engine builds.
    pub quick: bool,
    /// Root of sysfs, procfs, /etc and /dev (a fixture tree in tests).
    pub root: PathBuf,
    /// The user's own model, run on every usable backend besides the embedded one.
    pub model: Option<PathBuf>,
    pub backends: BackendOptions,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            only: Vec::new(),
            quick: false,
            root: PathBuf::from("/"),
            model: None,
            backends: BackendOptions::default(),
        }
    }
}

/// The facts every check may read, gathered once before they run.
pub struct Facts {
    pub provenance: Provenance,
    /// A Jetson board: what is optional elsewhere (nvpmodel, power sensors, CUDA) is expected.
    pub jetson: bool,
}

impl Facts {
    pub fn read(options: &Options) -> Facts {
        let provenance = Provenance::read(&options.root);
        let jetson =
            provenance.board.as_deref().is_some_and(|b| b.contains("Jetson")) || provenance.l4t.is_some();
        Facts { provenance, jetson }
    }
}

/// What a check runs, once.
pub type Run = Box<dyn FnOnce(&Options, &Facts) -> Outcome + Send>;

/// One check of the fixed list: its layer, name, time budget, and what it runs.
pub struct Check {
    pub area: Area,
    pub name: String,
    /// The longest it should take on an Orin Nano, by design; over it is reported, not failed.
    pub budget: Duration,
    /// The check's name (same area) that must pass first; skipped, naming it, when it did not.
    pub needs: Option<&'static str>,
    pub run: Run,
}

impl Check {
    pub fn new(
        area: Area,
        name: impl Into<String>,
        budget_ms: u64,
        run: impl FnOnce(&Options, &Facts) -> Outcome + Send + 'static,
    ) -> Check {
        Check {
            area,
            name: name.into(),
            budget: Duration::from_millis(budget_ms),
            needs: None,
            run: Box::new(run),
        }
    }

    pub fn needs(mut self, name: &'static str) -> Check {
        self.needs = Some(name);
        self
    }
}

/// One check as run.
#[derive(Debug, Clone, Serialize)]
pub struct Done {
    pub area: Area,
    pub name: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    pub elapsed_ms: f64,
    pub budget_ms: u64,
}

impl Done {
    pub fn over_budget(&self) -> bool {
        self.elapsed_ms > self.budget_ms as f64
    }
}

/// `edgert.doctor/1`: the platform facts and every check with its timing.
#[derive(Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub provenance: Provenance,
    pub host: Host,
    pub quick: bool,
    /// The areas asked for; empty: all.
    pub only: Vec<Area>,
    pub model: Option<String>,
    pub checks: Vec<Done>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub elapsed_ms: f64,
}

impl Report {
    pub fn failed(&self) -> bool {
        self.failed > 0
    }
}

/// Every check, in order: each area's module lists its own.
fn checks(options: &Options) -> Vec<Check> {
    let mut all = Vec::new();
    all.extend(platform::checks());
    all.extend(backends::checks(options));
    all.extend(gpu::checks());
    all.extend(tensorrt::checks());
    all.extend(power::checks());
    all.extend(clocks::checks());
    all.extend(cameras::checks(&options.root, options.quick));
    all.extend(user::checks());
    // By layer, in `Area`'s order; within one, as listed.
    all.sort_by_key(|c| c.area);
    all
}
