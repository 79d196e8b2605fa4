use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::backend::{self, PrepareOptions};
use crate::capture::source::synthetic::Synthetic;
use crate::capture::source::{Capture, SourceInfo};
use crate::frame::PixelFormat;
use crate::model::Model;
use crate::output::Outputs;
use crate::{Error, Result};

fn pipeline(batch: usize) -> Pipeline {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/digits_mlp_nchw.toml");
    let model = Model::load(&manifest, &Default::default()).unwrap();
    Pipeline::open(model, backend::select("cpu").unwrap(), PrepareOptions { batch, ..Default::default() })
        .unwrap()
}

fn config(drop: DropPolicy, frames: u64) -> StreamConfig {
    StreamConfig {
        drop,
        queue_depth: 2,
        frames: Some(frames),
        duration: None,
        min_frames: 0,
        timeout: Duration::from_secs(2),
        gpu_preprocess: false,
        reconnect: 0,
    }
}

/// Synthetic frames, then after `frames` of them the end of the stream, a failure, or silence.
struct Scripted {
    inner: Synthetic,
    frames: u64,
    then: Then,
    /// What `reopen` does: fail this many times, then give this many frames more.
    reopen_fails: u32,
    refill: u64,
}

enum Then {
    End,
    Unplugged,
    Silence,
}

impl Scripted {
    fn new(frames: u64, then: Then) -> Scripted {
        let inner = Synthetic::new("test:", PixelFormat::Yuyv, 64, 48, None).unwrap();
        Scripted { inner, frames, then, reopen_fails: 0, refill: 0 }
    }
}

impl FrameSource for Scripted {
    fn info(&self) -> &SourceInfo {
        self.inner.info()
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        if self.frames == 0 {
            return match self.then {
                Then::End => Ok(Capture::EndOfStream),
                Then::Unplugged => Err(Error::input(Path::new("/dev/video9"), "No such device (unplugged)")),
                Then::Silence => {
                    std::thread::sleep(timeout);
                    Ok(Capture::Timeout)
                }
            };
        }
        self.frames -= 1;
        self.inner.capture(timeout)
    }

    fn reopen(&mut self) -> Result<()> {
        if self.reopen_fails > 0 {
            self.reopen_fails -= 1;
            return Err(Error::input(Path::new("/dev/video9"), "still gone"));
        }
        self.frames = self.refill;
        Ok(())
    }
}

/// Runs the stream and keeps the sequence numbers of the predictions, in the order they came.
fn stream(
    pipeline: &mut Pipeline,
    source: &mut dyn FrameSource,
    config: &StreamConfig,
    stop: &AtomicBool,
    mut each: impl FnMut(u64) -> crate::Result<()>,
) -> (StreamRun, Vec<u64>) {
    let mut seen = Vec::new();
    let run = run(
        pipeline,
        source,
        config,
        stop,
        &mut |r: &FrameResult| {
            assert!(matches!(r.prediction, Prediction::Classes(c) if c.len() == 3));
            seen.push(r.sequence);
            each(r.sequence)
        },
        &mut Outputs::none(),
    )
    .unwrap();
    (run, seen)
}

#[test]
fn without_dropping_every_frame_is_predicted_in_order_and_no_buffer_is_made_after_the_pools() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48,yuyv", PixelFormat::Yuyv, 64, 48, None).unwrap();
    let stop = AtomicBool::new(false);
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::None, 200), &stop, |_| Ok(()));
    let stats = &run.stats;
    assert_eq!(stats.ending, Ending::Frames);
    assert_eq!(stats.preprocess_on, "cpu");
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    assert_eq!((stats.frames_captured, stats.frames_processed), (200, 200));
    assert_eq!(stats.dropped_before_preprocess + stats.dropped_before_inference, 0);
    assert_eq!(stats.frame_buffers.made, stats.frame_buffers.pooled, "capture allocated a frame buffer");
    assert_eq!(stats.tensor_buffers.made, stats.tensor_buffers.pooled, "preprocessing allocated a tensor");
    let stages = run.stages.unwrap();
    assert_eq!(stages.end_to_end.count, 200);
    assert_eq!(run.inferences, 200);
    // Glass to glass spans the frame's own stages, so it is never shorter than their sum.
    assert!(stages.end_to_end.min_ms >= stages.inference.min_ms);
    assert!(stats.achieved_fps > 0.0 && stats.elapsed_s > 0.0);
}

#[test]
fn latest_drops_stale_frames_behind_a_slow_stage_and_accounts_for_each() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48,yuyv", PixelFormat::Yuyv, 64, 48, None).unwrap();
    let stop = AtomicBool::new(false);
    let slow = |_| {
        std::thread::sleep(Duration::from_millis(15));
        Ok(())
    };
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::Latest, 60), &stop, slow);
    let stats = &run.stats;
    let dropped = stats.dropped_before_preprocess + stats.dropped_before_inference;
    assert!(dropped > 0, "{stats:?}");
    assert_eq!(stats.frames_processed + dropped, stats.frames_captured, "{stats:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "out of order: {seen:?}");
    assert_eq!(stats.frame_buffers.made, stats.frame_buffers.pooled);
    assert_eq!(stats.tensor_buffers.made, stats.tensor_buffers.pooled);
}

/// An output that takes its time over each frame, and keeps the sequence numbers it was given.
struct SlowSink {
    delay: Duration,
    shown: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl crate::output::Sink for SlowSink {
    fn name(&self) -> String {
        "slow".into()
    }

    fn wants(&self) -> crate::output::Wants {
        crate::output::Wants::Jpeg
    }

    fn write(&mut self, frame: &crate::output::Shown) -> std::result::Result<(), crate::output::OutputError> {
        assert!(frame.jpeg.is_some_and(|j| j.starts_with(&[0xff, 0xd8])));
        std::thread::sleep(self.delay);
        self.shown.lock().unwrap().push(frame.sequence);
        Ok(())
    }
}

#[test]
fn a_slow_output_drops_pictures_not_inferences_with_latest_and_slows_nothing_it_may_not() {
    for drop in [DropPolicy::Latest, DropPolicy::None] {
        let mut pipeline = pipeline(1);
        let mut source =
            Synthetic::new("synthetic:64x48,yuyv", PixelFormat::Yuyv, 64, 48, Some(200.0)).unwrap();
        let shown = std::sync::Arc::default();
        let sink = SlowSink { delay: Duration::from_millis(20), shown: std::sync::Arc::clone(&shown) };
        let mut outputs = Outputs { sinks: vec![Box::new(sink)], ..Outputs::none() };
        let stop = AtomicBool::new(false);
        let run =
            run(&mut pipeline, &mut source, &config(drop, 40), &stop, &mut |_| Ok(()), &mut outputs).unwrap();
        let stats = &run.stats;
        let output = stats.output.as_ref().unwrap();
        let shown = shown.lock().unwrap().clone();
        assert_eq!(output.frames_shown, shown.len() as u64);
        assert_eq!(output.outputs[0].frames, shown.len() as u64);
        assert!(shown.windows(2).all(|w| w[0] < w[1]), "{shown:?}");
        assert_eq!(
            stats.frame_buffers.made, stats.frame_buffers.pooled,
            "{drop:?}: a frame buffer was made mid-run"
        );
        match drop {
            DropPolicy::Latest => {
                // Every frame captured is inferred; the output shows what it has time for.
                let dropped = stats.dropped_before_preprocess + stats.dropped_before_inference;
                assert_eq!(stats.frames_processed + dropped, stats.frames_captured, "{stats:?}");
                assert!(output.dropped_before_output > 0, "{output:?}");
                assert_eq!(
                    output.frames_shown + output.dropped_before_output,
                    stats.frames_processed,
                    "{output:?}"
                );
            }
            DropPolicy::None => {
                assert_eq!(shown, (0..40).collect::<Vec<_>>());
                assert_eq!(output.dropped_before_output, 0);
            }
        }
        assert!(output.annotate.as_ref().unwrap().count > 0 && output.encode.as_ref().unwrap().count > 0);
    }
}

/// An output that takes only the figures (as a preview nobody watches), and counts its frames.
struct FiguresOnly(std::sync::Arc<std::sync::Mutex<u64>>);

impl crate::output::Sink for FiguresOnly {
    fn name(&self) -> String {
        "figures".into()
    }

    fn wants(&self) -> crate::output::Wants {
        crate::output::Wants::Figures
    }

    fn write(&mut self, frame: &crate::output::Shown) -> std::result::Result<(), crate::output::OutputError> {
        assert!(frame.canvas.is_none() && frame.jpeg.is_none(), "a picture nobody asked for");
        assert_eq!(frame.overlay.frame, frame.sequence);
        *self.0.lock().unwrap() += 1;
        Ok(())
    }
}

#[test]
fn nothing_is_drawn_or_encoded_for_outputs_that_take_only_the_figures() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48,yuyv", PixelFormat::Yuyv, 64, 48, None).unwrap();
    let written = std::sync::Arc::default();
    let sink = FiguresOnly(std::sync::Arc::clone(&written));
    let mut outputs = Outputs { sinks: vec![Box::new(sink)], ..Outputs::none() };
    let stop = AtomicBool::new(false);
    let run =
        run(&mut pipeline, &mut source, &config(DropPolicy::None, 20), &stop, &mut |_| Ok(()), &mut outputs)
            .unwrap();
    let output = run.stats.output.as_ref().unwrap();
    assert_eq!(output.frames_shown, 20);
    assert_eq!(*written.lock().unwrap(), 20);
    assert!(output.annotate.is_none() && output.encode.is_none(), "{output:?}");
}

#[test]
fn the_end_of_a_stream_mid_batch_still_predicts_its_last_frames() {
    let mut pipeline = pipeline(2);
    let mut source = Scripted::new(5, Then::End);
    let stop = AtomicBool::new(false);
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::None, 100), &stop, |_| Ok(()));
    assert_eq!(run.stats.ending, Ending::EndOfStream);
    assert_eq!(seen, [0, 1, 2, 3, 4]);
    assert_eq!(run.inferences, 3);
}

#[test]
fn an_unplugged_source_ends_the_run_with_its_error_after_predicting_what_was_captured() {
    let mut pipeline = pipeline(1);
    let mut source = Scripted::new(7, Then::Unplugged);
    let stop = AtomicBool::new(false);
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::None, 100), &stop, |_| Ok(()));
    assert_eq!(seen.len(), 7);
    assert_eq!(run.failed(), Some("/dev/video9: No such device (unplugged)"));
}

#[test]
fn a_source_that_stops_giving_frames_fails_after_the_timeout() {
    let mut pipeline = pipeline(1);
    let mut source = Scripted::new(3, Then::Silence);
    let stop = AtomicBool::new(false);
    let mut settings = config(DropPolicy::None, 100);
    settings.timeout = Duration::from_millis(300);
    let (run, seen) = stream(&mut pipeline, &mut source, &settings, &stop, |_| Ok(()));
    assert_eq!(seen.len(), 3);
    let reason = run.failed().unwrap();
    assert!(reason.starts_with("test:: no frame within 0.3 s"), "{reason}");
}

#[test]
fn a_stop_request_ends_the_run_as_interrupted_with_what_was_predicted() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48@200", PixelFormat::Yuyv, 64, 48, Some(200.0)).unwrap();
    let stop = AtomicBool::new(false);
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::None, 10_000), &stop, |n| {
        if n == 4 {
            stop.store(true, Ordering::Relaxed);
        }
        Ok(())
    });
    assert_eq!(run.stats.ending, Ending::Interrupted);
    assert!(seen.len() >= 5 && seen.len() < 100, "{}", seen.len());
    assert_eq!(run.stats.frames_processed, seen.len() as u64);
}

#[test]
fn a_failing_consumer_ends_the_run_with_its_reason() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48", PixelFormat::Grey, 64, 48, None).unwrap();
    let stop = AtomicBool::new(false);
    let broken = || Error::Write { path: "stdout".into(), reason: "Broken pipe".into() };
    let fail = |n| if n == 2 { Err(broken()) } else { Ok(()) };
    let (run, seen) = stream(&mut pipeline, &mut source, &config(DropPolicy::None, 1000), &stop, fail);
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(run.failed(), Some("stdout: cannot write: Broken pipe"));
}

#[test]
fn a_duration_limit_ends_the_run() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48@100", PixelFormat::Nv12, 64, 48, Some(100.0)).unwrap();
    let stop = AtomicBool::new(false);
    let mut settings = config(DropPolicy::Latest, 10_000);
    settings.duration = Some(Duration::from_millis(300));
    let (run, seen) = stream(&mut pipeline, &mut source, &settings, &stop, |_| Ok(()));
    assert_eq!(run.stats.ending, Ending::Duration);
    // 100 fps for 0.3 s: about 30 frames, the first at once.
    assert!((20..=32).contains(&seen.len()), "{}", seen.len());
    assert_eq!(run.stats.source_fps, Some(100.0));
}

#[test]
fn gpu_preprocessing_is_refused_for_a_backend_that_reads_host_memory_before_any_frame() {
    let mut pipeline = pipeline(1);
    let mut source = Synthetic::new("synthetic:64x48,yuyv", PixelFormat::Yuyv, 64, 48, None).unwrap();
    let config = StreamConfig { gpu_preprocess: true, ..config(DropPolicy::None, 5) };
    let stop = AtomicBool::new(false);
    let error =
        run(&mut pipeline, &mut source, &config, &stop, &mut |_| Ok(()), &mut Outputs::none()).err().unwrap();
    let message = error.to_string();
    assert!(message.contains("which backend 'cpu' does not read: use --backend tensorrt"), "{message}");
    assert_eq!(error.exit_code(), 2);
    assert_eq!(source.info().uri, "synthetic:64x48,yuyv");
}

#[test]
fn reconnect_opens_a_failed_source_again_until_its_attempts_run_out() {
    let mut pipeline = pipeline(1);
    let stop = AtomicBool::new(false);
    // Unplugged after 3 frames; back on the second attempt with 4 more.
    let mut source = Scripted { reopen_fails: 1, refill: 4, ..Scripted::new(3, Then::Unplugged) };
    let twice = StreamConfig { reconnect: 2, ..config(DropPolicy::None, 7) };
    let (run, seen) = stream(&mut pipeline, &mut source, &twice, &stop, |_| Ok(()));
    assert_eq!(run.stats.ending, Ending::Frames);
    assert_eq!((run.stats.reconnects, seen.len()), (1, 7));
    // Back only on the third attempt: two are not enough, and the last failure is the reason.
    let mut source = Scripted { reopen_fails: 2, refill: 4, ..Scripted::new(3, Then::Unplugged) };
    let (run, seen) = stream(&mut pipeline, &mut source, &twice, &stop, |_| Ok(()));
    assert_eq!(run.stats.ending, Ending::Failed("/dev/video9: still gone".into()));
    assert_eq!((run.stats.reconnects, seen.len()), (0, 3));
    // A stall counts as a failure too.
    let mut source = Scripted { refill: 2, ..Scripted::new(1, Then::Silence) };
    let once =
        StreamConfig { reconnect: 1, timeout: Duration::from_millis(300), ..config(DropPolicy::None, 3) };
    let (run, seen) = stream(&mut pipeline, &mut source, &once, &stop, |_| Ok(()));
    assert_eq!(run.stats.ending, Ending::Frames);
    assert_eq!((run.stats.reconnects, seen.len()), (1, 3));
}

/// What `--preprocess gpu` computes for a shrunk RGB24 frame (the fused pass alone: the GPU
/// kernel's result against it is the kernel test's, where there is a GPU) differs from the CPU
/// path's antialiased downscale by far more than rounding: the run says so. YUYV takes the same
/// pass on both, and a frame that does not shrink needs no filter: nothing to say.
#[test]
fn gpu_preprocessing_of_a_shrunk_rgb_frame_differs_from_the_cpu_path_and_says_so() {
    use crate::model::manifest::{Layout, PreprocessSpec};
    use crate::preprocess::plan::FramePlan;

    let spec = PreprocessSpec::imagenet();
    let (width, height) = (640, 480);
    let data = crate::capture::pattern::noise(PixelFormat::Rgb24.frame_bytes(width * 3, height), 3);
    let frame = crate::frame::Frame::new(PixelFormat::Rgb24, width, height, width * 3, &data).unwrap();
    let mut plan =
        FramePlan::new(&spec, (224, 224), Layout::Nchw, PixelFormat::Rgb24, (width, height)).unwrap();
    let (mut cpu, mut gpu) = (vec![0f32; plan.item_len()], vec![0f32; plan.item_len()]);
    plan.run(&frame, &mut cpu).unwrap();
    plan.fused().run(&frame, &mut gpu).unwrap();
    let mean = cpu.iter().zip(&gpu).map(|(a, b)| (a - b).abs()).sum::<f32>() / cpu.len() as f32;
    // Normalised values of noise: averaging a 3×2 window and sampling four pixels part by ~0.5.
    assert!(mean > 0.1, "the two paths agree to {mean} on average: no reason to warn");
    let said = super::gpu::differs_from_cpu(&plan, "rgb24 640x480").unwrap();
    assert!(said.contains("rgb24 640x480") && said.contains("--preprocess cpu antialiases"), "{said}");
    for (format, size) in [(PixelFormat::Yuyv, (640, 480)), (PixelFormat::Rgb24, (224, 224))] {
        let plan = FramePlan::new(&spec, (224, 224), Layout::Nchw, format, size).unwrap();
        assert_eq!(super::gpu::differs_from_cpu(&plan, "frames"), None, "{format:?} {size:?}");
    }
}

/// Frame memory the GPU reads in place is registered once, where the slot is made: copying
/// frames of the planned size in never moves it, and a larger frame gives the registration up
/// before the memory moves.
#[test]
fn a_frame_slot_keeps_its_memory_where_it_was_registered() {
    let mut slot = super::frames::FrameSlot {
        pinned: None,
        data: Vec::with_capacity(64),
        stride: 0,
        sequence: 0,
        timestamp: Duration::ZERO,
        captured_at: std::time::Instant::now(),
    };
    let at = slot.data.as_ptr();
    for fill in [1u8, 2, 3] {
        slot.fill_from(&[fill; 64]);
        assert_eq!((slot.data.as_ptr(), slot.data[63]), (at, fill));
    }
    slot.fill_from(&[9; 65]);
    assert!(slot.pinned.is_none() && slot.data.len() == 65);
}
