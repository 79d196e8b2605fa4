//! `edgert run --source URI`: frames through the pipeline, one line per prediction as it comes,
//! then a summary. Ctrl-C, an unplugged or stalled source, or a failing stage stop the run with
//! the summary of what ran, and a non-zero exit.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::json_out::Lines;
use super::prediction_text::prediction_text;
use super::source_args::SourceArgs;
use super::stop::INTERRUPTED;
use crate::capture::source;
use crate::choice::Choice;
use crate::metrics::stats::ms;
use crate::pipeline::Pipeline;
use crate::stream::{self, Ending, FrameResult, StreamRun};
use crate::Error;

pub fn main(
    pipeline: &mut Pipeline,
    args: &SourceArgs,
    frames: Option<u64>,
    duration_s: Option<f64>,
    mut lines: Lines,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<ExitCode> {
    let uri = args.source.as_deref().expect("clap requires --source without --input");
    let mut outputs = args.show.open(std::path::Path::new("/"))?;
    let mut source = source::open(uri, &args.open.options())?;
    // As the source shows itself: without an RTSP password.
    let uri = &source.info().uri.clone();
    if let Some(detail) = &source.info().detail {
        eprintln!("edgert: {uri}: {detail}");
    }
    let mut config = args.stream();
    config.frames = frames;
    config.duration = duration_s.map(Duration::from_secs_f64);
    let mut print = |r: &FrameResult| {
        lines
            .result(
                || {
                    format!(
                        "{uri}#{}: {} ({:.1} ms)",
                        r.sequence,
                        prediction_text(r.prediction),
                        ms(r.glass_to_glass)
                    )
                },
                || {
                    json!({
                        "source": uri,
                        "sequence": r.sequence,
                        "timestamp_ms": ms(r.timestamp),
                        "glass_to_glass_ms": ms(r.glass_to_glass),
                        "prediction": r.prediction,
                    })
                },
            )
            .map_err(|e| match e.downcast::<Error>() {
                Ok(e) => e,
                Err(e) => Error::Write { path: "stdout".into(), reason: e.to_string() },
            })
    };
    let run = stream::run(pipeline, source.as_mut(), &config, &stop, &mut print, &mut outputs)?;
    // A video output's file is finished (and named) after the last frame.
    let finished = outputs.finish();
    lines.json_only(|| json!({ "summary": run.stats, "stages": run.stages }))?;
    eprintln!("edgert: {}", summary(&run));
    if let Some(output) = &run.stats.output {
        eprintln!("edgert: output: {}", output.summary());
    }
    Ok(match (&run.stats.ending, finished) {
        (Ending::Failed(reason), _) => {
            eprintln!("edgert: error: {reason}");
            ExitCode::FAILURE
        }
        (_, Err(e)) => {
            eprintln!("edgert: error: {}", crate::error::one_line(&e));
            ExitCode::FAILURE
        }
        (Ending::Interrupted, _) => ExitCode::from(INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// One line: frames, rates, drops, glass-to-glass latency and why the run ended.
pub fn summary(run: &StreamRun) -> String {
    let s = &run.stats;
    let latency = run.stages.as_ref().map_or(String::new(), |stages| {
        let g = &stages.end_to_end;
        format!(", glass to glass p50 {:.1} ms p99 {:.1} ms", g.p50_ms, g.p99_ms)
    });
    let source_fps = s.source_fps.map_or(String::new(), |fps| format!(" (source paced at {fps:.1})"));
    let reconnects = match s.reconnects {
        0 => String::new(),
        n => format!(", {n} reconnects"),
    };
    let ending = match &s.ending {
        Ending::Frames => "frame limit",
        Ending::Duration => "duration",
        Ending::EndOfStream => "end of stream",
        Ending::Interrupted => "interrupted",
        Ending::Failed(_) => "failed",
    };
    format!(
        "{} of {} frames predicted in {:.2} s: {:.1} fps, captured at {:.1}{source_fps}; {} dropped (drop {}){latency}{reconnects}; ended: {ending}",
        s.frames_processed,
        s.frames_captured,
        s.elapsed_s,
        s.achieved_fps,
        s.capture_fps,
        s.dropped_before_preprocess + s.dropped_before_inference,
        s.drop_policy.name(),
    )
}
