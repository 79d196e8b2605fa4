//! `bench --source`: the camera pipeline measured per batch size: one batch to time the first
//! result, a warm-up, then the measured window, each on the source reopened.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::report::BatchRun;
use super::{power::PowerProbe, window::Window, BenchConfig, Progress, SourceBench};
use crate::capture::source;
use crate::capture::source::uri::redacted;
use crate::metrics::{memory, telemetry::Telemetry};
use crate::pipeline::Pipeline;
use crate::stream::{self, Ending, FrameResult, StreamConfig, StreamRun};
use crate::{Error, Result};

pub fn measure(
    pipeline: &mut Pipeline,
    bench: &SourceBench,
    config: &BenchConfig,
    probe: &PowerProbe,
    telemetry: &Arc<Telemetry>,
    load_ms: f64,
    progress: &mut dyn FnMut(&Progress),
) -> Result<BatchRun> {
    let batch = pipeline.options.batch;
    let phase =
        |frames, duration, min_frames| StreamConfig { frames, duration, min_frames, ..bench.stream.clone() };
    let first = stream_phase(pipeline, bench, &phase(Some(batch as u64), None, 0), config, &mut |_| {})?;
    let first_inference_ms = first.stages.as_ref().map_or(0.0, |s| s.end_to_end.max_ms);
    if !config.warmup.is_zero() {
        stream_phase(pipeline, bench, &phase(None, Some(config.warmup), 0), config, &mut |_| {})?;
    }
    let min_frames = (config.min_iterations * batch) as u64;
    let measured = phase(None, Some(config.duration), min_frames);
    let window = Window::open(probe, telemetry, &config.sensing);
    let started = Instant::now();
    let mut last_report = started;
    let mut frames = 0;
    let run = stream_phase(pipeline, bench, &measured, config, &mut |_| {
        frames += 1;
        if last_report.elapsed() > Duration::from_millis(250) {
            last_report = Instant::now();
            progress(&Progress { batch, elapsed: started.elapsed(), iterations: frames / batch });
        }
    })?;
    let (power, telemetry) = window.close(probe, telemetry, run.inferences);
    let stages = run.stages.ok_or_else(|| no_frames(bench, &run.stats.ending))?;
    let elapsed = run.stats.elapsed_s;
    Ok(BatchRun {
        batch,
        load_ms,
        first_inference_ms,
        iterations: run.inferences,
        elapsed_s: elapsed,
        inferences_per_s: if elapsed > 0.0 { run.inferences as f64 / elapsed } else { 0.0 },
        frames_per_s: run.stats.achieved_fps,
        peak_rss_bytes: memory::peak_rss_bytes(),
        power,
        telemetry,
        stages,
        end_to_end_cdf_ms: run.glass_to_glass.curve(),
        stream: Some(run.stats),
        // The pipeline's inference thread owns the session; its GPU stages are not collected yet.
        device: None,
        scenario: None,
    })
}

/// One phase on a freshly opened source. Outside the measured window a failure or a stop
/// request ends the bench; inside it, the caller reports what was measured.
fn stream_phase(
    pipeline: &mut Pipeline,
    bench: &SourceBench,
    phase: &StreamConfig,
    config: &BenchConfig,
    each: &mut dyn FnMut(&FrameResult),
) -> Result<StreamRun> {
    let mut source = source::open(&bench.uri, &bench.options)?;
    let mut outputs = bench.outputs.lock();
    let run = stream::run(
        pipeline,
        source.as_mut(),
        phase,
        &config.stop,
        &mut |r| {
            each(r);
            Ok(())
        },
        &mut outputs,
    )?;
    let measuring = phase.min_frames > 0;
    match &run.stats.ending {
        Ending::Failed(_) | Ending::Interrupted if !measuring || run.stages.is_none() => {
            Err(no_frames(bench, &run.stats.ending))
        }
        Ending::EndOfStream if measuring && run.stats.frames_captured < phase.min_frames => {
            Err(Error::input(
                std::path::Path::new(redacted(&bench.uri).as_ref()),
                format!(
                    "the source ended after {} frame(s); bench a file source with --loop",
                    run.stats.frames_captured
                ),
            ))
        }
        _ => Ok(run),
    }
}

fn no_frames(bench: &SourceBench, ending: &Ending) -> Error {
    let why = match ending {
        Ending::Failed(reason) => reason.clone(),
        Ending::Interrupted => "interrupted before anything was measured".into(),
        _ => "no frame reached a prediction".into(),
    };
    Error::input(std::path::Path::new(redacted(&bench.uri).as_ref()), why)
}
