//! The output stage: each predicted frame converted to RGB, annotated, encoded once and handed to
//! the outputs, on a thread of its own after postprocessing, each step only where some output
//! wants it. Its queue follows `--drop`: with `latest` a slow output skips pictures, never
//! inferences, and counts them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::error::StageError;
use super::frames::{Drops, FrameSlot};
use super::queue::{pop, Pool};
use crate::annotate::canvas::Canvas;
use crate::annotate::{annotate, rgb, Overlay};
use crate::capture::source::SourceInfo;
use crate::frame::Frame;
use crate::metrics::stats::{ms, Latencies};
use crate::output::recent::Recent;
use crate::output::{encode, OutputError, OutputStats, Outputs, Shown, SinkStats, Wants};
use crate::postprocess::Prediction;

/// The overlay's power figure is read this often: a sensor read per frame would cost more than
/// it tells.
const POWER_EVERY: Duration = Duration::from_secs(1);

/// A predicted frame on its way to the outputs.
pub(super) struct ToShow {
    pub frame: FrameSlot,
    pub sequence: u64,
    pub glass_to_glass: Duration,
    pub inference: Duration,
    pub prediction: Prediction,
}

/// Frames shown and what each step cost; the outputs' own counts.
pub(super) struct Shows {
    frames: u64,
    annotate: Latencies,
    encode: Latencies,
    writes: Vec<(u64, Latencies)>,
}

impl Shows {
    pub fn stats(&self, outputs: &Outputs, dropped_before_output: u64) -> OutputStats {
        OutputStats {
            outputs: (outputs.sinks.iter().zip(&self.writes))
                .map(|(sink, (frames, write))| SinkStats {
                    output: sink.name(),
                    frames: *frames,
                    write: write.stats(),
                    most_clients: sink.most_clients(),
                })
                .collect(),
            frames_shown: self.frames,
            dropped_before_output,
            annotate: self.annotate.stats(),
            encode: self.encode.stats(),
        }
    }
}

pub(super) fn output_stage(
    info: &SourceInfo,
    outputs: &mut Outputs,
    abort: &AtomicBool,
    frames: &Pool<FrameSlot>,
    input: Receiver<ToShow>,
    drops: &Drops,
) -> (Shows, Result<(), StageError>) {
    let mut shows = Shows {
        frames: 0,
        annotate: Latencies::default(),
        encode: Latencies::default(),
        writes: outputs.sinks.iter().map(|_| (0, Latencies::default())).collect(),
    };
    let (mut canvas, mut jpeg, mut scratch) = (Canvas::default(), Vec::new(), Vec::new());
    let (mut recent, mut overlay) = (Recent::default(), Overlay::default());
    let mut power_read: Option<Instant> = None;
    let fail = |sink: String, error: OutputError| {
        abort.store(true, Ordering::Relaxed);
        Err(StageError::Output { sink, error })
    };
    while let Some(show) = pop(&input, abort) {
        // Outside the annotation's time: a sensor read is the board's, not the drawing's.
        if let Some(power) =
            outputs.power.as_mut().filter(|_| power_read.is_none_or(|at| at.elapsed() >= POWER_EVERY))
        {
            let (watts, total) = power.read();
            overlay.power_w = total.or_else(|| watts.iter().flatten().copied().reduce(|a, b| a + b));
            power_read = Some(Instant::now());
        }
        let started = Instant::now();
        // Nothing is drawn for sinks that take only the figures (a preview nobody watches).
        let wants = outputs.sinks.iter().map(|s| s.wants()).max().unwrap_or(Wants::Figures);
        let draws = wants >= Wants::Picture;
        let drawn = if draws {
            Frame::new(info.format, info.width, info.height, show.frame.stride, &show.frame.data)
                .map_err(OutputError::from)
                .and_then(|frame| {
                    rgb::frame_into(&mut canvas, &frame, &mut scratch).map_err(OutputError::from)
                })
        } else {
            Ok(())
        };
        frames.give(show.frame);
        if let Err(reason) = drawn {
            return (shows, fail(info.uri.clone(), reason));
        }
        recent.record(started, ms(show.glass_to_glass), ms(show.inference));
        recent.fill(&mut overlay);
        overlay.frame = show.sequence;
        if draws {
            annotate(&mut canvas, &show.prediction, &overlay);
            shows.annotate.record(ms(started.elapsed()));
        }
        let encoded = if wants == Wants::Jpeg {
            let started = Instant::now();
            if let Err(reason) = encode::jpeg(&canvas, outputs.quality, &mut jpeg) {
                return (shows, fail(info.uri.clone(), reason));
            }
            shows.encode.record(ms(started.elapsed()));
            Some(jpeg.as_slice())
        } else {
            None
        };
        let shown = Shown {
            sequence: show.sequence,
            canvas: draws.then_some(&canvas),
            jpeg: encoded,
            overlay: &overlay,
            dropped: drops.total(),
            source_fps: info.fps,
        };
        for (sink, (count, write)) in outputs.sinks.iter_mut().zip(&mut shows.writes) {
            let started = Instant::now();
            if let Err(reason) = sink.write(&shown) {
                return (shows, fail(sink.name(), reason));
            }
            write.record(ms(started.elapsed()));
            *count += 1;
        }
        shows.frames += 1;
    }
    (shows, Ok(()))
}
