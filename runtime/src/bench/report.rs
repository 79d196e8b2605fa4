//! The bench report, schema `edgert.bench/2` (documented in docs/reports.md and in
//! `runtime/schema/edgert.bench-2.schema.json`). Change the schema name when a field changes meaning.

use serde::Serialize;

use crate::metrics::host::Host;
use crate::metrics::provenance::Provenance;
use crate::metrics::stats::{LatencyStats, Stages};
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
    /// On a GPU backend: inference split as trtexec splits it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStages>,
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
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/edgert.bench-2.schema.json");
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
