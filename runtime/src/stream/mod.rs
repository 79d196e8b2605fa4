//! A frame source into the model, pipelined: capture, preprocess and inference each on their own
//! thread, postprocessing on the caller's, joined by bounded queues. Buffers come from pools, so
//! after warm-up capture and preprocessing allocate nothing per frame (the backend's run and the
//! prediction still do). Every frame's glass-to-glass time runs from the moment the source
//! delivered it to its prediction.

pub(crate) mod error;
mod frames;
pub(crate) mod gpu;
mod output;
pub(crate) mod queue;
mod stages;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::capture::source::{FrameClock, FrameSource};
use crate::metrics::stats::{Latencies, LatencyStats, Stages};
use crate::output::{OutputStats, Outputs};
use crate::pipeline::Pipeline;
use crate::postprocess::Prediction;
use crate::Result;
pub use queue::DropPolicy;

#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub drop: DropPolicy,
    /// Items each queue between two stages holds.
    pub queue_depth: usize,
    /// Stop after this many frames captured.
    pub frames: Option<u64>,
    /// Stop capturing after this long, once `min_frames` are captured.
    pub duration: Option<Duration>,
    pub min_frames: u64,
    /// A source that gives no frame for this long has stalled: the run ends with an error.
    pub timeout: Duration,
    /// Preprocess on the GPU, into the inference input in GPU memory (`--preprocess gpu`).
    pub gpu_preprocess: bool,
    /// Times a failed or stalled source is opened again, counted from its last frame.
    pub reconnect: u32,
}

/// One frame's prediction, handed to the caller as it comes.
pub struct FrameResult<'a> {
    pub sequence: u64,
    /// The source's own timestamp (a recording's recorded one).
    pub timestamp: Duration,
    pub glass_to_glass: Duration,
    pub prediction: &'a Prediction,
}

/// Why a run ended. Only `Failed` is an error; the report covers what ran before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", content = "error", rename_all = "snake_case")]
pub enum Ending {
    Frames,
    Duration,
    EndOfStream,
    Interrupted,
    Failed(String),
}

/// What a streamed run measured; `runs[].stream` in the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct StreamStats {
    pub source: String,
    pub format: &'static str,
    pub width: usize,
    pub height: usize,
    /// What a camera negotiated: its name, format, size, rate and buffers.
    pub device: Option<String>,
    /// The rate the source is paced to, or the camera's; null when it gives frames as fast as
    /// they are taken.
    pub source_fps: Option<f64>,
    /// What glass to glass starts from: `driver` (V4L2's timestamps), `pipeline` (GStreamer's
    /// buffer times: capture by Argus, RTP arrival), `delivery` (when the source gave the frame).
    pub clock: FrameClock,
    /// From each frame's capture to its delivery to edgert, where the clock is not `delivery`.
    pub source_delay: Option<LatencyStats>,
    /// Times the source was opened again after failing or stalling (`--reconnect`).
    pub reconnects: u64,
    pub drop_policy: DropPolicy,
    pub queue_depth: usize,
    /// `cpu`; `gpu` (each frame copied by the CPU into pinned memory, then to the GPU's);
    /// `gpu-mapped` (an integrated GPU: each frame copied by the CPU into mapped memory, which
    /// the kernels read where it is); or `gpu-in-place` (an integrated GPU that registers host
    /// memory: the kernels read each frame where the capture stage copied it out of the source,
    /// with no copy of their own).
    pub preprocess_on: &'static str,
    pub frames_captured: u64,
    pub frames_processed: u64,
    /// Damaged frames the source skipped (corrupt or truncated MJPEG).
    pub frames_skipped_by_source: u64,
    /// Frames overtaken by newer ones while queued for preprocessing, and for inference.
    pub dropped_before_preprocess: u64,
    pub dropped_before_inference: u64,
    /// From the first capture to the last prediction.
    pub elapsed_s: f64,
    /// Frames captured, and predicted, per second over `elapsed_s`.
    pub capture_fps: f64,
    pub achieved_fps: f64,
    pub frame_buffers: Buffers,
    pub tensor_buffers: Buffers,
    /// The output stage, where `--output` or `--preview` gave it outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputStats>,
    pub ending: Ending,
}

/// A pool's buffers: more made than pooled means a stage had to allocate one mid-run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Buffers {
    pub pooled: u64,
    pub made: u64,
}

/// The stats, each stage's latency distribution (inference batches; glass to glass as end to
/// end, per frame), and the glass-to-glass latencies for a CDF.
pub struct StreamRun {
    pub stats: StreamStats,
    pub stages: Option<Stages>,
    pub glass_to_glass: Latencies,
    pub inferences: usize,
}

impl StreamRun {
    #[cfg(test)]
    pub fn failed(&self) -> Option<&str> {
        match &self.stats.ending {
            Ending::Failed(reason) => Some(reason),
            _ => None,
        }
    }
}

/// Runs `source` through `pipeline` until a limit, the end of the stream, `stop` or a failure.
/// `on_result` sees every prediction, in order; an error from it ends the run. Annotated frames go
/// to `outputs` (none: no output stage runs). Errs only when the run cannot start.
pub fn run(
    pipeline: &mut Pipeline,
    source: &mut dyn FrameSource,
    config: &StreamConfig,
    stop: &AtomicBool,
    on_result: &mut dyn FnMut(&FrameResult) -> Result<()>,
    outputs: &mut Outputs,
) -> Result<StreamRun> {
    let info = source.info().clone();
    let plan = pipeline.frame_preprocess(info.format, info.width, info.height)?;
    let input_shape = pipeline.model.input_shape(pipeline.options.batch);
    let input_spec = pipeline.prepared().inputs()[0].clone();
    // The CPU pass writes the manifest's input type (the model's, checked when it loaded).
    let input_dtype = pipeline.model.manifest.input.dtype;
    let backend = pipeline.backend.clone();
    let sync = pipeline.options.gpu_sync;
    let (session, postprocess) = pipeline.split();
    let gpu =
        gpu::open(config.gpu_preprocess, plan.fused(), session, &backend, &input_spec, &input_shape, sync)?;
    let frames = format!("{} {}x{}", info.format.name(), info.width, info.height);
    if let (Some(_), Some(why)) = (&gpu, gpu::differs_from_cpu(&plan, &frames)) {
        eprintln!("edgert: warning: {why}");
    }
    let preprocess_on = match &gpu {
        None => "cpu",
        Some(gpu) if gpu.is_mapped() => "gpu-mapped",
        Some(_) => "gpu",
    };
    let work = stages::Work {
        passes: stages::Passes { plan, gpu },
        input_shape: &input_shape,
        input_dtype,
        session,
        postprocess: &postprocess,
    };
    let measured = stages::run(&info, work, stages::Ends { source, on_result, outputs }, config, stop);
    let preprocess_on = if measured.frames_in_place { "gpu-in-place" } else { preprocess_on };
    let latencies = measured.latencies;
    let stages = (|| {
        Some(Stages {
            preprocess: latencies.preprocess.stats()?,
            inference: latencies.inference.stats()?,
            postprocess: latencies.postprocess.stats()?,
            end_to_end: latencies.glass_to_glass.stats()?,
        })
    })();
    let elapsed = measured.elapsed.as_secs_f64();
    let per_second = |n: u64| if elapsed > 0.0 { n as f64 / elapsed } else { 0.0 };
    let processed = latencies.glass_to_glass.count() as u64;
    Ok(StreamRun {
        stats: StreamStats {
            source: info.uri.clone(),
            format: info.format.name(),
            width: info.width,
            height: info.height,
            device: info.detail.clone(),
            source_fps: info.fps,
            clock: info.clock,
            source_delay: measured.source_delay.stats(),
            reconnects: measured.reconnects,
            drop_policy: config.drop,
            queue_depth: config.queue_depth,
            preprocess_on,
            frames_captured: measured.captured,
            frames_processed: processed,
            frames_skipped_by_source: measured.skipped,
            dropped_before_preprocess: measured.dropped.0,
            dropped_before_inference: measured.dropped.1,
            elapsed_s: elapsed,
            capture_fps: per_second(measured.captured),
            achieved_fps: per_second(processed),
            frame_buffers: measured.frame_buffers,
            tensor_buffers: measured.tensor_buffers,
            output: measured.output,
            ending: measured.ending,
        },
        stages,
        inferences: latencies.inference.count(),
        glass_to_glass: latencies.glass_to_glass,
    })
}
