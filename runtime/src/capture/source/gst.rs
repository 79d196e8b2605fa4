//! GStreamer sources (feature `gstreamer`): `csi://N`, `rtsp://…`, video files and `gst:PIPELINE`,
//! each a pipeline (`launch.rs`) ending in the appsink `edgert`, pulled from the capture thread.
//! A frame is read in place from the mapped buffer where its planes lie as edgert's frames do,
//! else repacked once. Live sources (cameras, RTSP) stamp each frame with its buffer's time on
//! the pipeline clock, mapped to ours, so glass to glass starts at capture (Argus) or arrival
//! (RTP); files count from delivery.

use std::path::Path;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app::AppSink;
use gstreamer_video::{VideoFormat, VideoInfo, VideoMeta};

use super::camera_format::instant_of;
use super::launch::{self, Converter, LaunchOptions};
use super::uri::{redacted, SourceUri};
use super::{Capture, Captured, FrameClock, FrameSource, Pacer, SourceInfo, SourceOptions};
use crate::frame::{Frame, PixelFormat};
use crate::{Error, Result};

/// The first frame may take a while: an RTSP handshake, then the next key frame of the stream.
const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// The GStreamer library loaded, for `info`.
pub struct Installed {
    /// `GStreamer 1.22.0`.
    pub version: String,
    /// The Jetson elements the CSI and hardware-decode pipelines use, and whether each is here.
    pub jetson_elements: [(&'static str, bool); 3],
}

pub fn describe() -> std::result::Result<Installed, String> {
    gst::init().map_err(|e| format!("GStreamer does not initialise: {e}"))?;
    let jetson_elements = ["nvarguscamerasrc", "nvv4l2decoder", "nvvidconv"]
        .map(|name| (name, gst::ElementFactory::find(name).is_some()));
    Ok(Installed { version: gst::version_string().to_string(), jetson_elements })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Camera,
    Rtsp,
    File,
    Pipeline,
}

pub struct GstSource {
    info: SourceInfo,
    kind: Kind,
    text: String,
    pipeline: gst::Bin,
    sink: AppSink,
    looped: bool,
    pacer: Pacer,
    /// The first frame, pulled when opening to learn the stream's format.
    pending: Option<gst::Sample>,
    mapped: Option<gst::MappedBuffer<gst::buffer::Readable>>,
    /// Y then UV rows back to back, where a buffer's planes are not.
    repacked: Vec<u8>,
    sequence: u64,
    /// Added to a looped file's timestamps, so they keep increasing.
    loop_offset: Duration,
    last_timestamp: Duration,
}

pub fn open(text: &str, uri: &SourceUri, options: &SourceOptions) -> Result<Box<dyn FrameSource>> {
    let name = redacted(text);
    let fail = |reason: String| Error::input(Path::new(name.as_ref()), reason);
    gst::init().map_err(|e| fail(format!("GStreamer does not initialise: {e}")))?;
    let converter = match gst::ElementFactory::find("nvvidconv") {
        Some(_) => Converter::Nvvidconv,
        None => Converter::Videoconvert,
    };
    let file_rate = options.fps.is_none();
    let launch = LaunchOptions {
        width: options.width,
        height: options.height,
        fps: options.fps,
        latency_ms: options.latency_ms,
        transport: options.transport,
        converter,
        sync: matches!(uri, SourceUri::Video(_)) && file_rate,
    };
    let (kind, pipeline_text) = match uri {
        SourceUri::Csi(sensor) => {
            if gst::ElementFactory::find("nvarguscamerasrc").is_none() {
                return Err(fail(
                    "CSI cameras need JetPack's GStreamer plugins: nvarguscamerasrc (Argus) is not installed here"
                        .into(),
                ));
            }
            (Kind::Camera, launch::csi(*sensor, &launch))
        }
        SourceUri::Rtsp(location) => (Kind::Rtsp, launch::rtsp(location, &launch)),
        SourceUri::Video(path) => {
            // A missing file is said before GStreamer's less direct "Resource not found", and a
            // FIFO refused before filesrc waits for its writer without end.
            let meta =
                std::fs::metadata(path).map_err(|e| Error::input(path, format!("cannot read: {e}")))?;
            if !meta.is_file() {
                return Err(Error::input(
                    path,
                    "is not a regular file (a stream on a pipe is read with gst:fdsrc ! …)",
                ));
            }
            (Kind::File, launch::video(path, &launch))
        }
        SourceUri::Gst(pipeline) => {
            // Text that ends in caps (`video/x-raw,…`) parses only once an element follows.
            let last = pipeline.rsplit('!').next().unwrap_or_default().trim();
            let ends_in_caps = last.split([',', ' ']).next().is_some_and(|media| media.contains('/'));
            let names_sink = !ends_in_caps && parse(pipeline).map_err(fail)?.by_name(launch::SINK).is_some();
            let text = launch::custom(pipeline, names_sink, &launch);
            if !names_sink {
                parse(&text).map_err(|e| {
                    fail(format!("{e} (edgert appended '! videoconvert ! appsink name={}')", launch::SINK))
                })?;
            }
            (Kind::Pipeline, text)
        }
        other => unreachable!("not a GStreamer source: {other:?}"),
    };
    let (pipeline, sink) = start(&pipeline_text).map_err(fail)?;
    let live = is_live(kind, &pipeline);
    let first = first_sample(&pipeline, &sink, kind).map_err(fail)?;
    let layout = Layout::of(&first).map_err(fail)?;
    let caps_fps = layout.fps.filter(|f| *f > 0.0);
    let paced = match kind {
        Kind::File if file_rate => caps_fps,
        Kind::File | Kind::Pipeline => options.fps.filter(|f| *f > 0.0),
        Kind::Camera | Kind::Rtsp => caps_fps,
    };
    let info = SourceInfo {
        uri: name.into_owned(),
        format: layout.format,
        width: layout.width,
        height: layout.height,
        stride: layout.format.min_stride(layout.width),
        fps: paced,
        detail: Some(format!("{}: {}", gst::version_string(), redacted(&pipeline_text))),
        clock: if live { FrameClock::Pipeline } else { FrameClock::Delivery },
    };
    // Our pacer holds frames to --fps; the sink does it for a file at its own rate.
    let pacer = Pacer::new(if launch.sync { None } else { options.fps.filter(|_| !live) });
    Ok(Box::new(GstSource {
        info,
        kind,
        text: pipeline_text,
        pipeline,
        sink,
        looped: options.looped,
        pacer,
        pending: Some(first),
        mapped: None,
        repacked: Vec::new(),
        sequence: 0,
        loop_offset: Duration::ZERO,
        last_timestamp: Duration::ZERO,
    }))
}

fn parse(text: &str) -> std::result::Result<gst::Bin, String> {
    let element = gst::parse::launch_full(text, None, gst::ParseFlags::FATAL_ERRORS)
        .map_err(|e| format!("the pipeline does not parse: {}", e.message()))?;
    element
        .downcast::<gst::Bin>()
        .map_err(|_| "the pipeline is a single element, with no appsink".to_string())
}

/// Parses the pipeline, finds its appsink and sets it playing.
fn start(text: &str) -> std::result::Result<(gst::Bin, AppSink), String> {
    let pipeline = parse(text)?;
    let sink = pipeline
        .by_name(launch::SINK)
        .ok_or_else(|| format!("the pipeline has no element named {}", launch::SINK))?
        .downcast::<AppSink>()
        .map_err(|_| format!("the element named {} is not an appsink", launch::SINK))?;
    if sink.caps().is_none() {
        let caps = format!("video/x-raw,format={}", launch::SINK_FORMATS);
        sink.set_caps(Some(&caps.parse::<gst::Caps>().expect("edgert's caps parse")));
    }
    sink.set_max_buffers(2);
    sink.set_drop(false);
    if pipeline.set_state(gst::State::Playing).is_err() {
        let reason = bus_error(&pipeline).unwrap_or_else(|| "the pipeline does not start".into());
        let _ = pipeline.set_state(gst::State::Null);
        return Err(reason);
    }
    Ok((pipeline, sink))
}

/// Whether frames are taken as they come (a camera, a stream, a source element set `is-live`)
/// rather than read from storage.
fn is_live(kind: Kind, pipeline: &gst::Bin) -> bool {
    match kind {
        Kind::Camera | Kind::Rtsp => true,
        Kind::File => false,
        Kind::Pipeline => pipeline
            .iterate_sources()
            .into_iter()
            .flatten()
            .any(|source| source.find_property("is-live").is_some() && source.property::<bool>("is-live")),
    }
}

fn first_sample(pipeline: &gst::Bin, sink: &AppSink, kind: Kind) -> std::result::Result<gst::Sample, String> {
    let deadline = Instant::now() + FIRST_FRAME_TIMEOUT;
    let failed = loop {
        match next_sample(pipeline, sink, Duration::from_millis(100)) {
            Ok(Some(sample)) => return Ok(sample),
            Ok(None) if Instant::now() < deadline => {}
            Ok(None) if kind == Kind::File && !found_a_stream(pipeline) => {
                // decodebin drops an error its demuxer posts while being tried, as a truncated MP4
                // can, and then waits forever: a file with no stream after this long has none.
                break format!(
                    "no playable stream found within {} s of starting (is the file damaged or incomplete?)",
                    FIRST_FRAME_TIMEOUT.as_secs()
                );
            }
            Ok(None) => break format!("no frame within {} s of starting", FIRST_FRAME_TIMEOUT.as_secs()),
            Err(Ended::Failed(reason)) => break reason,
            Err(Ended::Eos) => {
                let what = if kind == Kind::File { "the video has no frames" } else { "the stream ended" };
                break format!("{what} before the first frame");
            }
        }
    };
    let _ = pipeline.set_state(gst::State::Null);
    Err(failed)
}

/// Whether a `decodebin` of the pipeline has exposed a decoded stream.
fn found_a_stream(pipeline: &gst::Bin) -> bool {
    pipeline.iterate_recurse().into_iter().flatten().any(|element| {
        element.factory().is_some_and(|f| f.name() == "decodebin") && !element.src_pads().is_empty()
    })
}

/// Why a pipeline gives no more samples.
enum Ended {
    /// An element failed: its error, as one line.
    Failed(String),
    Eos,
}

/// The next sample within `wait`, `None` on a timeout. An element that fails ends the stream
/// after posting its error, so the bus is read before the end is taken as a plain one.
fn next_sample(
    pipeline: &gst::Bin,
    sink: &AppSink,
    wait: Duration,
) -> std::result::Result<Option<gst::Sample>, Ended> {
    let wait = gst::ClockTime::from_nseconds(wait.as_nanos().min(u64::MAX as u128) as u64);
    if let Some(sample) = sink.try_pull_sample(wait) {
        return Ok(Some(sample));
    }
    match bus_error(pipeline) {
        Some(reason) => Err(Ended::Failed(reason)),
        None if sink.is_eos() => Err(Ended::Eos),
        None => Ok(None),
    }
}

/// The first error on the pipeline's bus, as one line: what failed and, for a missing decoder,
/// which one.
pub(crate) fn bus_error(pipeline: &gst::Bin) -> Option<String> {
    let bus = pipeline.bus()?;
    while let Some(message) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = message.view() {
            let element = e.src().map(|s| s.name().to_string()).unwrap_or_default();
            let debug = e.debug().map(|d| d.to_string()).unwrap_or_default();
            let mut reason = format!("{element}: {}", e.error().message().trim_end_matches('.'));
            if debug.contains("not-negotiated") {
                reason += " (not-negotiated: the source cannot give the format, size or rate asked of it)";
            } else if let Some(missing) = debug.find("Missing decoder: ").map(|at| &debug[at..]) {
                let missing = missing.split(" (").next().unwrap_or(missing);
                reason += &format!(" ({missing})");
            } else if let Some(detail) = debug.lines().last().filter(|d| !d.is_empty() && !d.starts_with('/'))
            {
                // GStreamer's debug text ends with the cause (an errno, an HTTP status).
                let detail = detail.rsplit_once("): ").map_or(detail, |(_, d)| d);
                reason += &format!(" ({})", redacted(detail.trim()));
            }
            return Some(crate::error::one_line(&reason));
        }
    }
    None
}

enum Pulled {
    Sample(gst::Sample),
    Timeout,
    End,
}

/// Where a sample's pixels lie in its buffer.
struct Layout {
    format: PixelFormat,
    width: usize,
    height: usize,
    fps: Option<f64>,
    offsets: [usize; 2],
    strides: [usize; 2],
}

impl Layout {
    fn of(sample: &gst::Sample) -> std::result::Result<Layout, String> {
        let caps = sample.caps().ok_or("a frame came without caps")?;
        let info = VideoInfo::from_caps(caps).map_err(|_| format!("not raw video: {caps}"))?;
        let format = match info.format() {
            VideoFormat::Nv12 => PixelFormat::Nv12,
            VideoFormat::Rgb => PixelFormat::Rgb24,
            VideoFormat::Bgr => PixelFormat::Bgr24,
            VideoFormat::Gray8 => PixelFormat::Grey,
            VideoFormat::Yuy2 => PixelFormat::Yuyv,
            other => {
                return Err(format!(
                    "the appsink gives {}, which edgert does not read (it reads NV12, RGB, BGR, GRAY8, YUY2)",
                    other.to_str()
                ))
            }
        };
        let meta = sample.buffer().and_then(|b| b.meta::<VideoMeta>());
        let (offsets, strides) = match &meta {
            Some(m) => (m.offset().to_vec(), m.stride().to_vec()),
            None => (info.offset().to_vec(), info.stride().to_vec()),
        };
        let stride = |i: usize| strides.get(i).map_or(0, |s| (*s).max(0) as usize);
        let fps = info.fps();
        let layout = Layout {
            format,
            width: info.width() as usize,
            height: info.height() as usize,
            fps: (fps.denom() > 0).then(|| fps.numer() as f64 / fps.denom() as f64),
            offsets: [offsets.first().copied().unwrap_or(0), offsets.get(1).copied().unwrap_or(0)],
            strides: [stride(0), stride(1)],
        };
        Frame::check_layout(format, layout.width, layout.height, layout.strides[0])
            .map_err(|e| e.to_string())?;
        Ok(layout)
    }

    /// Whether the buffer can be read as a frame in place: NV12's UV rows right after its Y rows.
    fn in_place(&self) -> bool {
        self.format != PixelFormat::Nv12
            || (self.strides[1] == self.strides[0]
                && self.offsets[1] == self.offsets[0] + self.strides[0] * self.height)
    }
}

impl GstSource {
    fn name(&self) -> &Path {
        Path::new(&self.info.uri)
    }

    fn stop(&self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }

    /// The next sample, a timeout, or the end of the stream (looping a file where asked).
    fn pull(&mut self, timeout: Duration) -> Result<Pulled> {
        if let Some(sample) = self.pending.take() {
            return Ok(Pulled::Sample(sample));
        }
        match next_sample(&self.pipeline, &self.sink, timeout) {
            Ok(Some(sample)) => Ok(Pulled::Sample(sample)),
            Ok(None) => Ok(Pulled::Timeout),
            Err(Ended::Failed(reason)) => Err(Error::input(self.name(), reason)),
            Err(Ended::Eos) => match self.kind {
                Kind::File if self.looped => {
                    let flags = gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE;
                    self.pipeline
                        .seek_simple(flags, gst::ClockTime::ZERO)
                        .map_err(|_| Error::input(self.name(), "cannot seek back to the start to loop"))?;
                    let period = self.info.fps.map_or(Duration::ZERO, |f| Duration::from_secs_f64(1.0 / f));
                    self.loop_offset = self.last_timestamp + period;
                    Ok(Pulled::Timeout)
                }
                Kind::File | Kind::Pipeline => Ok(Pulled::End),
                Kind::Camera | Kind::Rtsp => {
                    Err(Error::input(self.name(), "the stream ended (end of stream from the sender)"))
                }
            },
        }
    }

    /// When the frame was taken, on our clock: its running time on the pipeline clock, aged by
    /// how long ago that was on the same clock.
    fn taken_at(&self, sample: &gst::Sample, pts: gst::ClockTime) -> Option<Instant> {
        if self.info.clock != FrameClock::Pipeline {
            return None;
        }
        let segment = sample.segment()?.downcast_ref::<gst::ClockTime>()?;
        let running = segment.to_running_time(pts)?;
        let clock_now = self.pipeline.clock()?.time();
        let taken = self.pipeline.base_time()? + running;
        let nanos = |t: gst::ClockTime| Duration::from_nanos(t.nseconds());
        Some(instant_of(nanos(taken), nanos(clock_now), Instant::now()))
    }
}

impl Drop for GstSource {
    fn drop(&mut self) {
        self.stop();
    }
}

impl FrameSource for GstSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        if !self.pacer.wait(self.sequence, timeout) {
            return Ok(Capture::Timeout);
        }
        let sample = match self.pull(timeout)? {
            Pulled::Sample(sample) => sample,
            Pulled::Timeout => return Ok(Capture::Timeout),
            Pulled::End => return Ok(Capture::EndOfStream),
        };
        let layout = Layout::of(&sample).map_err(|reason| Error::input(self.name(), reason))?;
        let i = &self.info;
        if (layout.format, layout.width, layout.height) != (i.format, i.width, i.height) {
            return Err(Error::input(
                self.name(),
                format!(
                    "the stream changed from {} {}x{} to {} {}x{} mid-run",
                    i.format.name(),
                    i.width,
                    i.height,
                    layout.format.name(),
                    layout.width,
                    layout.height
                ),
            ));
        }
        let buffer =
            sample.buffer_owned().ok_or_else(|| Error::input(self.name(), "a sample without a buffer"))?;
        let pts = buffer.pts();
        let at = pts.and_then(|pts| self.taken_at(&sample, pts));
        let timestamp = pts.map_or_else(|| self.pacer.elapsed(), |p| Duration::from_nanos(p.nseconds()));
        let timestamp = timestamp + self.loop_offset;
        self.last_timestamp = timestamp;
        let mapped = buffer
            .into_mapped_buffer_readable()
            .map_err(|_| Error::input(self.name(), "cannot map a frame's buffer for reading"))?;
        let (format, width, height) = (i.format, i.width, i.height);
        let name = Path::new(&self.info.uri);
        let (stride, data): (usize, &[u8]) = if layout.in_place() {
            let mapped = self.mapped.insert(mapped);
            (layout.strides[0], mapped.get(layout.offsets[0]..).unwrap_or_default())
        } else {
            repack(&mapped, &layout, &mut self.repacked);
            self.mapped = None;
            (width, &self.repacked)
        };
        let frame = Frame::new(format, width, height, stride, data)
            .map_err(|e| Error::input(name, format!("a frame does not fit its caps: {e}")))?;
        let sequence = self.sequence;
        self.sequence += 1;
        Ok(Capture::Frame(Captured { frame, sequence, timestamp, at, encoded: None }))
    }

    fn reopen(&mut self) -> Result<()> {
        self.stop();
        self.mapped = None;
        let (pipeline, sink) = start(&self.text).map_err(|reason| Error::input(self.name(), reason))?;
        (self.pipeline, self.sink) = (pipeline, sink);
        Ok(())
    }
}

/// NV12 whose UV plane is not right after its Y rows: both planes copied back to back, rows of
/// `width` bytes. A buffer too short for its caps stops the copy (the frame check then refuses it).
fn repack(buffer: &[u8], layout: &Layout, out: &mut Vec<u8>) {
    out.clear();
    for (plane, rows) in [(0, layout.height), (1, layout.height.div_ceil(2))] {
        for row in 0..rows {
            let start = layout.offsets[plane] + row * layout.strides[plane];
            match buffer.get(start..start + layout.width) {
                Some(bytes) => out.extend_from_slice(bytes),
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv12(offsets: [usize; 2], strides: [usize; 2]) -> Layout {
        Layout { format: PixelFormat::Nv12, width: 4, height: 2, fps: None, offsets, strides }
    }

    #[test]
    fn nv12_is_read_in_place_only_where_its_uv_rows_follow_its_y_rows() {
        assert!(nv12([0, 8], [4, 4]).in_place());
        assert!(nv12([16, 24], [4, 4]).in_place());
        assert!(nv12([0, 16], [8, 8]).in_place());
        assert!(!nv12([0, 12], [4, 4]).in_place(), "a gap between the planes");
        assert!(!nv12([0, 8], [4, 8]).in_place(), "planes of different strides");
        let rgb = Layout { format: PixelFormat::Rgb24, ..nv12([0, 99], [12, 0]) };
        assert!(rgb.in_place());
    }

    #[test]
    fn repacking_drops_row_padding_and_the_gap_between_planes() {
        // Y rows of stride 6 (4 pixels, 2 padding), then 4 bytes of gap, then one UV row.
        let buffer = [1, 2, 3, 4, 0, 0, 5, 6, 7, 8, 0, 0, 9, 9, 9, 9, 10, 11, 12, 13, 0, 0];
        let mut out = Vec::new();
        repack(&buffer, &nv12([0, 16], [6, 6]), &mut out);
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13]);
        // A buffer shorter than its caps say: the copy stops, and the frame check refuses it.
        repack(&buffer[..18], &nv12([0, 16], [6, 6]), &mut out);
        assert_eq!(out.len(), 8);
        assert!(Frame::new(PixelFormat::Nv12, 4, 2, 4, &out).is_err());
    }
}
