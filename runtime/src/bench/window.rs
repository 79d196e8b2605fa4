//! The measured window of a run: power sampling and telemetry snapshots from its start to its end.

use std::sync::Arc;

use super::power::{PowerProbe, PowerReport};
use super::Sensing;
use crate::metrics::cpu_time::process_cpu_s;
use crate::metrics::error::SensorError;
use crate::metrics::periodic::Periodic;
use crate::metrics::power::sampler::Sampler;
use crate::metrics::telemetry::{run::RunTelemetry, Snapshot, Telemetry};

pub struct Window {
    sampler: Result<Sampler, SensorError>,
    snapshots: Option<Periodic<Snapshot>>,
    start: f64,
    cpu_start: Option<f64>,
}

impl Window {
    pub fn open(probe: &PowerProbe, telemetry: &Arc<Telemetry>, sensing: &Sensing) -> Window {
        let sampler = probe.start();
        let reader = telemetry.clone();
        let snapshots =
            Periodic::start("edgert-telemetry", probe.epoch(), sensing.telemetry_interval, move || {
                reader.snapshot()
            })
            .ok();
        Window { sampler, snapshots, start: probe.now(), cpu_start: process_cpu_s() }
    }

    /// Power over the window shared among `inferences`, and the telemetry summary.
    pub fn close(
        self,
        probe: &PowerProbe,
        telemetry: &Telemetry,
        inferences: usize,
    ) -> (PowerReport, RunTelemetry) {
        let end = probe.now();
        let power_samples = self.sampler.and_then(Sampler::finish);
        // A sampler that could not start, or stopped answering, leaves the telemetry empty, not the
        // run failed.
        let snapshots = self.snapshots.and_then(|s| s.finish().ok()).unwrap_or_default();
        let mut run = RunTelemetry::summarize(telemetry.source(), &snapshots, self.start);
        if let (Some(start), Some(end), true) = (self.cpu_start, process_cpu_s(), inferences > 0) {
            run.process_cpu_ms_per_inference = Some((end - start).max(0.0) * 1e3 / inferences as f64);
        }
        (probe.report(power_samples, self.start, end, inferences), run)
    }
}
