//! The stage threads and what travels between them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::error::{PassError, StageError};
use super::frames::{Drops, FrameSlot};
use super::gpu::{DeviceBuffer, GpuStage, PinnedFrame};
use super::output::{output_stage, ToShow};
use super::queue::{pop, DropPolicy, Pool, Queue};
use super::{Buffers, Ending, FrameResult, StreamConfig};
use crate::backend::Session;
use crate::capture::source::{Capture, FrameSource, SourceInfo};
use crate::error::one_line;
use crate::frame::Frame;
use crate::metrics::stats::{ms, Latencies};
use crate::output::{OutputStats, Outputs};
use crate::pipeline::Postprocess;
use crate::preprocess::plan::FramePlan;
use crate::preprocess::Geometry;
use crate::tensor::ElementType;
use crate::tensor::{Batch, BatchValues, HostTensor};

/// A source waits at most this long per call, so a stop request is seen promptly.
const CAPTURE_SLICE: Duration = Duration::from_millis(100);

/// Between a source failing and `--reconnect` opening it again: a server restarting, a camera
/// re-enumerating.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

struct Item {
    sequence: u64,
    timestamp: Duration,
    captured_at: Instant,
    geometry: Geometry,
    /// The frame itself, kept for the output stage when there are outputs.
    frame: Option<FrameSlot>,
}

/// The buffers in flight: a batch given back gives back the frames it kept too.
struct Pools {
    frames: Pool<FrameSlot>,
    tensors: Pool<BatchSlot>,
    /// The buffers each pool holds when none is missing.
    frames_pooled: u64,
    tensors_pooled: u64,
    /// The GPU reads frames where the capture writes them (on a Jetson), for those it could pin.
    pinning: bool,
}

impl Pools {
    /// Pools that never run out: each buffer is either in a queue or held by one stage. Frames
    /// shown travel with their batch, and then through the output queue and stage.
    fn sized(info: &SourceInfo, work: &Work, depth: usize, showing: bool) -> Pools {
        let batch = work.input_shape[0];
        let frame_bytes = info.format.frame_bytes(info.stride, info.height);
        let tensor_pool = (2 * depth + 3) as u64;
        let frame_pool =
            (depth + 2) as u64 + if showing { tensor_pool * batch as u64 + depth as u64 + 1 } else { 0 };
        let host_values = if work.passes.gpu.is_some() { 0 } else { work.input_shape.iter().product() };
        let input_dtype = work.input_dtype;
        let pinner = work.passes.gpu.as_ref().and_then(GpuStage::pinner);
        let pinning = pinner.is_some();
        Pools {
            frames: Pool::new(frame_pool as usize, move || {
                let mut data = Vec::with_capacity(frame_bytes);
                let pinned = pinner.as_ref().and_then(|p| p.pin(&mut data));
                FrameSlot {
                    pinned,
                    data,
                    stride: 0,
                    sequence: 0,
                    timestamp: Duration::ZERO,
                    captured_at: Instant::now(),
                }
            }),
            tensors: Pool::new(tensor_pool as usize, move || BatchSlot {
                values: BatchValues::zeros(input_dtype, host_values),
                device: None,
                items: Vec::with_capacity(batch),
                preprocess: Duration::ZERO,
                inference: Duration::ZERO,
            }),
            frames_pooled: frame_pool,
            tensors_pooled: tensor_pool,
            pinning,
        }
    }

    fn give_batch(&self, mut slot: BatchSlot) {
        for frame in slot.items.drain(..).filter_map(|item| item.frame) {
            self.frames.give(frame);
        }
        self.tensors.give(slot);
    }
}

/// One inference's input: a batch's values in the model's input type (empty with GPU
/// preprocessing) and the frames in it.
struct BatchSlot {
    values: BatchValues,
    /// The batch in GPU memory, with `--preprocess gpu`.
    device: Option<DeviceBuffer>,
    items: Vec<Item>,
    preprocess: Duration,
    inference: Duration,
}

#[derive(Default)]
pub(super) struct StageLatencies {
    pub preprocess: Latencies,
    pub inference: Latencies,
    pub postprocess: Latencies,
    pub glass_to_glass: Latencies,
}

pub(super) struct Measured {
    pub latencies: StageLatencies,
    /// From each frame's capture to its delivery, where the source stamps capture times.
    pub source_delay: Latencies,
    pub captured: u64,
    pub skipped: u64,
    pub reconnects: u64,
    pub dropped: (u64, u64),
    pub elapsed: Duration,
    pub frame_buffers: Buffers,
    pub tensor_buffers: Buffers,
    pub output: Option<OutputStats>,
    pub ending: Ending,
    /// Every frame buffer was registered for the GPU to read in place.
    pub frames_in_place: bool,
}

/// A stage thread's result; a panic there is a bug, passed on as one.
fn joined<T>(name: &str, result: std::thread::Result<T>) -> T {
    result.unwrap_or_else(|_| panic!("the {name} thread panicked"))
}

/// What the stages do to each frame: preprocess it (on the CPU, or the GPU), infer, postprocess.
pub(super) struct Work<'a> {
    pub passes: Passes,
    pub input_shape: &'a [usize],
    /// The type the CPU pass writes.
    pub input_dtype: ElementType,
    pub session: &'a mut dyn Session,
    pub postprocess: &'a Postprocess<'a>,
}

/// Where frames come from, and where predictions and annotated frames go.
pub(super) struct Ends<'a> {
    pub source: &'a mut dyn FrameSource,
    pub on_result: &'a mut dyn FnMut(&FrameResult) -> crate::Result<()>,
    /// Empty: no output stage runs.
    pub outputs: &'a mut Outputs,
}

pub(super) fn run(
    info: &SourceInfo,
    work: Work,
    ends: Ends,
    config: &StreamConfig,
    stop: &AtomicBool,
) -> Measured {
    let depth = config.queue_depth.max(1);
    let showing = !ends.outputs.is_empty();
    let pools = Pools::sized(info, &work, depth, showing);
    let frames_in_place = pools.pinning && pools.frames.all(|slot| slot.pinned.is_some());
    let abort = AtomicBool::new(false);
    let (to_preprocess, preprocess_in) = Queue::bounded(depth, config.drop);
    let (to_inference, inference_in) = Queue::bounded(depth, config.drop);
    let (to_postprocess, postprocess_in) = Queue::bounded(depth, DropPolicy::None);
    let (to_output, output_in) = Queue::bounded(depth, config.drop);
    let output_dropped = to_output.counter();
    let drops = Drops(vec![to_preprocess.counter(), to_inference.counter(), output_dropped.clone()]);
    let to_output = showing.then_some(to_output);
    let Work { passes, input_shape, session, postprocess, .. } = work;
    let Ends { source, on_result, outputs } = ends;
    let batch = input_shape[0];
    let (capture, preprocessed, inferred, posted, shown) = std::thread::scope(|s| {
        let capture =
            s.spawn(|| capture_stage(source, info, config, stop, &abort, &pools.frames, to_preprocess));
        let preprocessed = s.spawn(|| {
            preprocess_stage(info, passes, batch, showing, &abort, &pools, preprocess_in, to_inference)
        });
        let inferred =
            s.spawn(|| inference_stage(session, input_shape, &abort, &pools, inference_in, to_postprocess));
        let shown = showing
            .then(|| s.spawn(|| output_stage(info, outputs, &abort, &pools.frames, output_in, &drops)));
        let posted = postprocess_stage(postprocess, &abort, &pools, postprocess_in, to_output, on_result);
        (
            joined("capture", capture.join()),
            joined("preprocess", preprocessed.join()),
            joined("inference", inferred.join()),
            posted,
            shown.map(|shown| joined("output", shown.join())),
        )
    });
    let (latencies, last) = posted.0;
    let (shows, shown) = shown.map_or((None, Ok(())), |(shows, result)| (Some(shows), result));
    // A failing stage explains the end better than what the capture thread saw as it stopped.
    let ending =
        [posted.1.as_ref().err(), preprocessed.as_ref().err(), inferred.as_ref().err(), shown.as_ref().err()]
            .into_iter()
            .flatten()
            .next()
            .map_or(capture.ending, |failed| Ending::Failed(failed.to_string()));
    let elapsed = match (capture.first, last) {
        (Some(first), Some(last)) => last - first,
        _ => Duration::ZERO,
    };
    Measured {
        latencies,
        source_delay: capture.source_delay,
        captured: capture.captured,
        skipped: capture.skipped,
        reconnects: capture.reconnects,
        dropped: (capture.dropped, preprocessed.unwrap_or(0)),
        elapsed,
        frame_buffers: Buffers { pooled: pools.frames_pooled, made: pools.frames.made() },
        tensor_buffers: Buffers { pooled: pools.tensors_pooled, made: pools.tensors.made() },
        output: shows.map(|shows| shows.stats(outputs, output_dropped.load(Ordering::Relaxed))),
        ending,
        frames_in_place,
    }
}

struct CaptureEnd {
    captured: u64,
    dropped: u64,
    skipped: u64,
    reconnects: u64,
    source_delay: Latencies,
    first: Option<Instant>,
    ending: Ending,
}

fn capture_stage(
    source: &mut dyn FrameSource,
    info: &SourceInfo,
    config: &StreamConfig,
    stop: &AtomicBool,
    abort: &AtomicBool,
    frames: &Pool<FrameSlot>,
    queue: Queue<FrameSlot>,
) -> CaptureEnd {
    let started = Instant::now();
    let (mut captured, mut first, mut waited) = (0, None, Duration::ZERO);
    let (mut reconnects, mut attempts) = (0, 0);
    let mut source_delay = Latencies::default();
    let slice = CAPTURE_SLICE.min(config.timeout);
    let ending = loop {
        if stop.load(Ordering::Relaxed) {
            break Ending::Interrupted;
        }
        if abort.load(Ordering::Relaxed) || config.frames.is_some_and(|n| captured >= n) {
            break Ending::Frames;
        }
        if config.duration.is_some_and(|d| started.elapsed() >= d && captured >= config.min_frames) {
            break Ending::Duration;
        }
        let failure = match source.capture(slice) {
            Ok(Capture::Frame(frame)) => {
                let now = Instant::now();
                first.get_or_insert(now);
                (waited, attempts) = (Duration::ZERO, 0);
                captured += 1;
                if let Some(at) = frame.at {
                    source_delay.record(ms(now.saturating_duration_since(at)));
                }
                let mut slot = frames.take();
                slot.fill_from(frame.frame.data);
                slot.stride = frame.frame.stride;
                slot.sequence = frame.sequence;
                slot.timestamp = frame.timestamp;
                slot.captured_at = frame.at.unwrap_or(now);
                queue.push(slot, abort, |old| frames.give(old));
                continue;
            }
            Ok(Capture::Timeout) => {
                waited += slice;
                if waited < config.timeout {
                    continue;
                }
                format!(
                    "{}: no frame within {:.1} s: the source stalled or was disconnected",
                    info.uri,
                    config.timeout.as_secs_f64()
                )
            }
            Ok(Capture::EndOfStream) => break Ending::EndOfStream,
            Err(e) => one_line(&e),
        };
        // The source failed or stalled: open it again while attempts are left.
        match reconnect(source, &mut attempts, config.reconnect, failure, stop) {
            Ok(()) => (reconnects, waited) = (reconnects + 1, Duration::ZERO),
            Err(_) if stop.load(Ordering::Relaxed) => break Ending::Interrupted,
            Err(failure) => break Ending::Failed(failure),
        }
    };
    CaptureEnd {
        captured,
        dropped: queue.dropped(),
        skipped: source.skipped(),
        reconnects,
        source_delay,
        first,
        ending,
    }
}

/// Opens a failed source again, up to `limit` attempts since its last frame; the last failure
/// when none is left or a stop request came.
fn reconnect(
    source: &mut dyn FrameSource,
    attempts: &mut u32,
    limit: u32,
    mut failure: String,
    stop: &AtomicBool,
) -> Result<(), String> {
    while *attempts < limit && pause(RECONNECT_DELAY, stop) {
        *attempts += 1;
        eprintln!("edgert: {failure}; reconnecting ({attempts} of {limit})");
        match source.reopen() {
            Ok(()) => return Ok(()),
            Err(e) => failure = one_line(&e),
        }
    }
    Err(failure)
}

/// Sleeps in slices; false when a stop request came.
fn pause(total: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + total;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(CAPTURE_SLICE.min(until.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::Relaxed)
}

/// The preprocessing pass: on the CPU into the batch tensor, or on the GPU into GPU memory.
/// The preprocessing of each frame: on the CPU by the plan, or on the GPU.
pub(super) struct Passes {
    pub plan: FramePlan,
    pub gpu: Option<GpuStage>,
}

impl Passes {
    fn fill(
        &mut self,
        slot: &mut BatchSlot,
        k: usize,
        frame: &Frame,
        pinned: Option<&PinnedFrame>,
    ) -> Result<Geometry, PassError> {
        match &mut self.gpu {
            Some(gpu) => gpu.fill(&mut slot.device, k, frame, pinned),
            None => {
                let len = self.plan.item_len();
                let item = k * len..(k + 1) * len;
                let filled = match &mut slot.values {
                    BatchValues::F32(values) => self.plan.run(frame, &mut values[item]),
                    BatchValues::F16(values) => self.plan.run(frame, &mut values[item]),
                    BatchValues::U8(values) => self.plan.run(frame, &mut values[item]),
                };
                Ok(filled?)
            }
        }
    }

    /// Waits until the batch is complete where the inference stage will read it.
    fn finish(&self) -> Result<(), PassError> {
        self.gpu.as_ref().map_or(Ok(()), GpuStage::finish)
    }
}

/// Fills batch tensors from frames; the frames dropped before inference, or why it failed.
#[allow(clippy::too_many_arguments)]
fn preprocess_stage(
    info: &SourceInfo,
    mut passes: Passes,
    batch: usize,
    keep_frames: bool,
    abort: &AtomicBool,
    pools: &Pools,
    input: Receiver<FrameSlot>,
    output: Queue<BatchSlot>,
) -> Result<u64, StageError> {
    let mut filling: Option<BatchSlot> = None;
    let fail = |reason: PassError| {
        abort.store(true, Ordering::Relaxed);
        Err(StageError::Preprocess { uri: info.uri.clone(), reason })
    };
    let send = |slot: BatchSlot| output.push(slot, abort, |old| pools.give_batch(old));
    while let Some(frame) = pop(&input, abort) {
        let slot = filling.get_or_insert_with(|| {
            let mut slot = pools.tensors.take();
            slot.items.clear();
            slot.preprocess = Duration::ZERO;
            slot
        });
        let k = slot.items.len();
        let started = Instant::now();
        let mut geometry = Frame::new(info.format, info.width, info.height, frame.stride, &frame.data)
            .map_err(PassError::from)
            .and_then(|f| passes.fill(slot, k, &f, frame.pinned.as_ref()));
        if k + 1 == batch {
            geometry = geometry.and_then(|g| passes.finish().map(|()| g));
        }
        slot.preprocess += started.elapsed();
        let mut item = geometry.map(|geometry| Item {
            sequence: frame.sequence,
            timestamp: frame.timestamp,
            captured_at: frame.captured_at,
            geometry,
            frame: None,
        });
        match &mut item {
            Ok(item) if keep_frames => item.frame = Some(frame),
            _ => pools.frames.give(frame),
        }
        match item {
            Ok(item) => slot.items.push(item),
            Err(reason) => {
                if let Some(partial) = filling.take() {
                    pools.give_batch(partial);
                }
                return fail(reason);
            }
        }
        if slot.items.len() == batch && !send(filling.take().expect("filled")) {
            break;
        }
    }
    // The stream ended mid-batch: the frames so far still get their predictions.
    if let Some(partial) = filling.filter(|slot| !slot.items.is_empty()) {
        if let Err(reason) = passes.finish() {
            return fail(reason);
        }
        send(partial);
    }
    Ok(output.dropped())
}

fn inference_stage(
    session: &mut dyn Session,
    shape: &[usize],
    abort: &AtomicBool,
    pools: &Pools,
    input: Receiver<BatchSlot>,
    output: Queue<(BatchSlot, Vec<HostTensor>)>,
) -> Result<(), StageError> {
    while let Some(mut slot) = pop(&input, abort) {
        let started = Instant::now();
        let outputs = match &slot.device {
            Some(device) => session.run_on_device(&device.input(shape)),
            None => session.run_batch(Batch { shape, values: slot.values.view() }),
        };
        match outputs {
            Ok(outputs) => {
                slot.inference = started.elapsed();
                if !output.push((slot, outputs), abort, |(old, _)| pools.give_batch(old)) {
                    break;
                }
            }
            Err(e) => {
                pools.give_batch(slot);
                abort.store(true, Ordering::Relaxed);
                return Err(StageError::Inference(e));
            }
        }
    }
    Ok(())
}

/// Predictions handed to `on_result`, and with their frames to the output stage where there is
/// one; the latencies, the time of the last prediction, and whether `on_result` failed.
fn postprocess_stage(
    postprocess: &Postprocess,
    abort: &AtomicBool,
    pools: &Pools,
    input: Receiver<(BatchSlot, Vec<HostTensor>)>,
    to_output: Option<Queue<ToShow>>,
    on_result: &mut dyn FnMut(&FrameResult) -> crate::Result<()>,
) -> ((StageLatencies, Option<Instant>), Result<(), StageError>) {
    let mut latencies = StageLatencies::default();
    let mut last = None;
    while let Some((mut slot, outputs)) = pop(&input, abort) {
        let mut spent = Duration::ZERO;
        let mut failed = None;
        for (i, item) in slot.items.iter_mut().enumerate() {
            let started = Instant::now();
            let prediction = match postprocess.run(&outputs, i, &item.geometry) {
                Ok(prediction) => prediction,
                Err(e) => {
                    failed = Some(StageError::Postprocess(e));
                    break;
                }
            };
            let done = Instant::now();
            spent += done - started;
            let glass_to_glass = done - item.captured_at;
            latencies.glass_to_glass.record(ms(glass_to_glass));
            let result = FrameResult {
                sequence: item.sequence,
                timestamp: item.timestamp,
                glass_to_glass,
                prediction: &prediction,
            };
            if let Err(reason) = on_result(&result) {
                failed = Some(StageError::Handler(reason));
                break;
            }
            if let (Some(queue), Some(frame)) = (&to_output, item.frame.take()) {
                let show = ToShow {
                    frame,
                    sequence: item.sequence,
                    glass_to_glass,
                    inference: slot.inference,
                    prediction,
                };
                queue.push(show, abort, |old| pools.frames.give(old.frame));
            }
        }
        if let Some(reason) = failed {
            abort.store(true, Ordering::Relaxed);
            pools.give_batch(slot);
            return ((latencies, last), Err(reason));
        }
        latencies.preprocess.record(ms(slot.preprocess));
        latencies.inference.record(ms(slot.inference));
        latencies.postprocess.record(ms(spent));
        last = Some(Instant::now());
        pools.give_batch(slot);
    }
    ((latencies, last), Ok(()))
}
