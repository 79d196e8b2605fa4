//! The bench report, schema `edgert.bench/3` (documented in docs/reports.md and in
//! `runtime/schema/edgert.bench-3.schema.json`). Change the schema name when a field changes meaning.

use serde::{Deserialize, Serialize};

use crate::choice::Choice;
use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;
use crate::metrics::stats::{LatencyStats, Stages};
use crate::metrics::telemetry::run::RunTelemetry;

pub const SCHEMA: &str = "edgert.bench/3";

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub schema: &'static str,
    pub edgert_version: &'static str,
    pub created_unix_s: u64,
    pub host: Host,
    /// Board, L4T, kernel, power mode, CUDA/TensorRT versions, edgert build.
    pub provenance: Provenance,
    pub model: ModelInfo,
    pub backend: BackendInfo,
    pub threads: usize,
    /// The CPUs the `cpu` backend's threads ran pinned to, in order (every worker's, with
    /// `--workers`); null where the OS placed them.
    pub pinned_cpus: Option<Vec<usize>>,
    /// `synthetic` or the input path.
    pub input: String,
    pub settings: Settings,
    /// Reading and checking the model file (sha256, protobuf), once.
    pub model_read_ms: f64,
    pub runs: Vec<BatchRun>,
    /// `--find-peak`: the highest rate found within the latency bound; null otherwise.
    pub peak: Option<PeakReport>,
    pub warnings: Vec<String>,
}

/// `pinned_cpus` as the text and CSV reports write it: `0,1,2`.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeakReport {
    pub latency_bound_ms: f64,
    /// The highest offered rate whose p99 stayed within the bound; null if none did.
    pub qps: Option<f64>,
    /// The lowest offered rate whose p99 did not; null if none failed.
    pub failed_at_qps: Option<f64>,
    /// The search's precision: found when `failed_at_qps / qps - 1` is at most this.
    pub precision: f64,
    pub converged: bool,
    pub steps: usize,
    /// Each step sent at least this many queries.
    pub min_queries: usize,
}

impl PeakReport {
    pub fn new(
        peak: crate::bench::load::peak::Peak,
        bound: std::time::Duration,
        precision: f64,
        min_queries: usize,
    ) -> PeakReport {
        PeakReport {
            latency_bound_ms: crate::metrics::stats::ms(bound),
            qps: peak.qps,
            failed_at_qps: peak.failed_at,
            precision,
            converged: peak.converged(precision),
            steps: peak.steps,
            min_queries,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub path: String,
    pub sha256: String,
    pub task: String,
    pub precision: String,
    pub input_name: String,
    /// The input shape with batch 1.
    pub input_shape: Vec<usize>,
    pub file_bytes: u64,
    /// Bytes of the initializers (weights, biases, quantization parameters).
    pub weight_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    pub requested: String,
    pub name: String,
    /// Why a `gpu-or-cpu` request ran on the CPU; null otherwise.
    pub fallback: Option<String>,
    /// What ran underneath: `tract-onnx 0.23.9`, `ONNX Runtime 1.32.0 (path)`.
    pub version: Option<String>,
    /// How threads waited for the GPU, where one ran (`--gpu-sync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_sync: Option<crate::gpu_sync::GpuSync>,
}

impl BackendInfo {
    /// What a pipeline asked for and what it runs on.
    pub fn of(pipeline: &crate::pipeline::Pipeline) -> BackendInfo {
        BackendInfo {
            requested: pipeline.requested_backend.clone(),
            name: pipeline.backend.clone(),
            fallback: pipeline.fallback.clone(),
            version: pipeline.backend_version.clone(),
            gpu_sync: crate::backend::is_gpu(&pipeline.backend).then_some(pipeline.options.gpu_sync),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub warmup_ms: u64,
    pub duration_s: f64,
    pub min_iterations: usize,
}

/// One batch size's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct BatchRun {
    pub batch: usize,
    /// Compiling the model for this batch (backend `prepare` and `spawn`).
    pub load_ms: f64,
    /// The first full iteration after loading, before warm-up.
    pub first_inference_ms: f64,
    pub iterations: usize,
    pub elapsed_s: f64,
    /// Model executions per second (one per iteration, whatever the batch).
    pub inferences_per_s: f64,
    /// Frames (batch items) per second.
    pub frames_per_s: f64,
    /// Process peak resident set after this run (it never decreases in a sweep).
    pub peak_rss_bytes: Option<u64>,
    /// Board power over exactly the measured window, or why there is none.
    pub power: super::power::PowerReport,
    /// Memory over time, clocks, GPU load, temperatures and throttling over the measured window.
    pub telemetry: RunTelemetry,
    pub stages: Stages,
    /// End-to-end latency at each whole percentile 0..=100, for CDF plots (`edgert report plot`).
    pub end_to_end_cdf_ms: Vec<f64>,
    /// With `--source`: the camera pipeline's frames, rates and drops. Its stages are then per
    /// inference, and end to end is each frame's glass-to-glass time.
    pub stream: Option<crate::stream::StreamStats>,
    /// On a GPU backend: inference split as trtexec splits it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStages>,
    /// How the work was sent (`--scenario`) and each query's latency from its arrival; null with
    /// `--source`, where the stream section says how frames came.
    pub scenario: Option<ScenarioRun>,
}

impl BatchRun {
    /// The scenario it ran; a `--source` run (no scenario section) is single-stream.
    pub fn kind(&self) -> Kind {
        self.scenario.as_ref().map_or(Kind::SingleStream, |s| s.name)
    }
}

/// The scenarios by name, as `--scenario` takes them and reports write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    SingleStream,
    MultiStream,
    Offline,
    Server,
}

impl Choice for Kind {
    const ALL: &'static [Self] = &[Kind::SingleStream, Kind::MultiStream, Kind::Offline, Kind::Server];

    fn name(self) -> &'static str {
        match self {
            Kind::SingleStream => "single-stream",
            Kind::MultiStream => "multi-stream",
            Kind::Offline => "offline",
            Kind::Server => "server",
        }
    }
}

/// A run's scenario: how its queries were sent and what their latencies were.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioRun {
    pub name: Kind,
    /// `on completion` (single-stream), `all at once`, `every N ms`, `poisson, seed N`, `replay of FILE`.
    pub arrivals: String,
    pub queries: usize,
    /// Queries not served because the run was stopped.
    pub unserved: usize,
    pub samples_per_query: usize,
    pub workers: usize,
    pub max_batch: usize,
    pub max_queue_delay_ms: f64,
    /// The rate queries were sent at; null where they were not sent at a rate.
    pub offered_qps: Option<f64>,
    /// Queries served per second, from the first arrival to the last completion.
    pub achieved_qps: f64,
    /// Each query's latency, from its scheduled arrival to its completion.
    pub latency_ms: super::load::tail::Tail,
    /// From arrival until a worker took the query; null for single-stream (no queue).
    pub queue_ms: Option<super::load::tail::Tail>,
    /// How many batches of each size were served.
    pub batch_sizes: Vec<BatchCount>,
    pub latency_bound_ms: Option<f64>,
    /// The share of queries over the bound (0.01 is 1 %).
    pub over_bound: Option<f64>,
    /// Multi-stream: the interval a query should finish within, and how many did not.
    pub interval_ms: Option<f64>,
    pub missed_intervals: Option<usize>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct BatchCount {
    pub size: usize,
    pub batches: usize,
}

/// Inference on a GPU, per stage: host-to-device copies, GPU compute and device-to-host copies
/// timed by CUDA events, and the host time spent enqueueing the work.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceStages {
    pub h2d: LatencyStats,
    pub compute: LatencyStats,
    pub d2h: LatencyStats,
    pub enqueue: LatencyStats,
}

impl DeviceStages {
    /// None when the backend timed nothing (the CPU backends).
    pub fn from_timings(timings: &[crate::backend::DeviceTiming]) -> Option<DeviceStages> {
        let stats = |f: fn(&crate::backend::DeviceTiming) -> f64| {
            LatencyStats::from_ms(&timings.iter().map(f).collect::<Vec<_>>())
        };
        Some(DeviceStages {
            h2d: stats(|t| t.h2d_ms)?,
            compute: stats(|t| t.compute_ms)?,
            d2h: stats(|t| t.d2h_ms)?,
            enqueue: stats(|t| t.enqueue_ms)?,
        })
    }

    pub fn named(&self) -> [(&'static str, &LatencyStats); 4] {
        [
            ("gpu h2d", &self.h2d),
            ("gpu compute", &self.compute),
            ("gpu d2h", &self.d2h),
            ("enqueue", &self.enqueue),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::DeviceStages;
    use crate::backend::DeviceTiming;

    #[test]
    fn device_stages_summarise_each_timing_and_fit_the_schema() {
        assert!(DeviceStages::from_timings(&[]).is_none(), "a CPU run has no GPU stages");
        let timings: Vec<DeviceTiming> = (1..=4)
            .map(|i| DeviceTiming { h2d_ms: 0.1 * i as f64, compute_ms: 2.0, d2h_ms: 0.05, enqueue_ms: 0.3 })
            .collect();
        let stages = DeviceStages::from_timings(&timings).unwrap();
        assert_eq!((stages.h2d.min_ms, stages.h2d.max_ms), (0.1, 0.4));
        assert_eq!((stages.compute.p50_ms, stages.compute.cov), (2.0, 0.0));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/edgert.bench-3.schema.json");
        let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let device = serde_json::json!({ "$defs": schema["$defs"], "$ref": "#/$defs/device" });
        let validator = jsonschema::validator_for(&device).unwrap();
        let value = serde_json::to_value(&stages).unwrap();
        assert!(validator.is_valid(&value), "{value}");
        assert!(
            !validator.is_valid(&serde_json::json!({ "h2d": value["h2d"] })),
            "all four stages are required"
        );
    }
}
