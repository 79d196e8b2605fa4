//! The bench report, schema `edgert.bench/2` (documented in the README and in
//! `runtime/schema/edgert.bench-2.schema.json`). Change the schema name when a field changes meaning.

use serde::Serialize;

use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;
use crate::metrics::stats::LatencyStats;
use crate::metrics::telemetry::run::RunTelemetry;

pub const SCHEMA: &str = "edgert.bench/2";

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
    /// `synthetic` or the input path.
    pub input: String,
    pub settings: Settings,
    /// Reading and checking the model file (sha256, protobuf), once.
    pub model_read_ms: f64,
    pub runs: Vec<BatchRun>,
    pub warnings: Vec<String>,
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
}

#[derive(Debug, Clone, Serialize)]
pub struct Stages {
    pub preprocess: LatencyStats,
    pub inference: LatencyStats,
    pub postprocess: LatencyStats,
    pub end_to_end: LatencyStats,
}

impl Stages {
    pub fn named(&self) -> [(&'static str, &LatencyStats); 4] {
        [
            ("preprocess", &self.preprocess),
            ("inference", &self.inference),
            ("postprocess", &self.postprocess),
            ("end_to_end", &self.end_to_end),
        ]
    }
}
