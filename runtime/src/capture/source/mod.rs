//! Frame sources opened from a URI, behind one trait: `capture(timeout)` gives a frame, a timeout,
//! or the end of the stream. `synthetic:` generates frames, `file:` replays images or a recording
//! made by `edgert capture`, `v4l2:` streams from a camera; with the `gstreamer` feature, `csi://`,
//! `rtsp://`, `gst:` and video files run a GStreamer pipeline.

pub(crate) mod camera_format;
pub(crate) mod error;
pub(crate) mod file;
#[cfg(feature = "gstreamer")]
pub(crate) mod gst;
pub(crate) mod launch;
pub(crate) mod recording;
pub(crate) mod synthetic;
pub(crate) mod uri;
pub(crate) mod v4l2;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::frame::{Frame, PixelFormat};
use crate::{Error, Result};

/// What a source gives: every frame has this format and size.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceInfo {
    pub uri: String,
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    pub stride: usize,
    /// The rate the source is paced to; `None` is as fast as frames can be made or read.
    pub fps: Option<f64>,
    /// What a device negotiated (its name, format, size, rate and buffers), to show the user.
    pub detail: Option<String>,
    /// Where glass to glass starts.
    pub clock: FrameClock,
}

/// What a frame's capture time is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameClock {
    /// The camera driver's timestamp (V4L2).
    Driver,
    /// The buffer's timestamp on GStreamer's pipeline clock: the capture time from a CSI camera
    /// (Argus), the arrival time of the RTP packets from an RTSP stream.
    Pipeline,
    /// When the source handed the frame over (files, images, synthetic frames).
    Delivery,
}

/// A frame with its place in the stream. The timestamp counts from the source's start; a replayed
/// recording gives the recorded ones.
#[derive(Debug, Clone, Copy)]
pub struct Captured<'a> {
    pub frame: Frame<'a>,
    pub sequence: u64,
    pub timestamp: Duration,
    /// When the frame was taken on our clock, where the source knows (a camera driver's stamp);
    /// otherwise its delivery counts.
    pub at: Option<Instant>,
    /// The JPEG `frame` was decoded from (an MJPEG camera's), so a recording keeps it as it came.
    pub encoded: Option<&'a [u8]>,
}

#[derive(Debug)]
pub enum Capture<'a> {
    Frame(Captured<'a>),
    Timeout,
    EndOfStream,
}

pub trait FrameSource: Send {
    fn info(&self) -> &SourceInfo;
    /// The next frame; the borrow ends before the next call, so the source can reuse its buffer.
    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>>;
    /// Frames the source dropped because they were damaged (corrupt or truncated MJPEG).
    fn skipped(&self) -> u64 {
        0
    }
    /// Opens the stream again after it failed or stalled (`--reconnect`), keeping its format.
    fn reopen(&mut self) -> Result<()> {
        Err(Error::input(Path::new(&self.info().uri), "this source cannot be reopened"))
    }
}

/// How to open a source, whatever its kind (one struct, as jetson-utils' videoOptions).
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// Pace frames to this rate (a `synthetic:` URI's own `@fps` wins); a camera is asked for it.
    /// 0 is unpaced, which only a video file (paced to its own rate by default) tells apart.
    pub fps: Option<f64>,
    /// Start again at the end of a file source instead of ending the stream.
    pub looped: bool,
    /// A camera's frame size and format; its current ones where not given.
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub format: Option<camera_format::CameraFormat>,
    /// A camera's mmap buffers (at least 2).
    pub buffers: u32,
    /// Keep each MJPEG camera frame's JPEG beside its pixels (`Captured::encoded`), for a recording
    /// to store as it came. Off, the JPEG is not copied out of the driver's buffer.
    pub keep_encoded: bool,
    /// An RTSP stream's jitter buffer, in milliseconds, and how it is carried.
    pub latency_ms: u32,
    pub transport: launch::RtspTransport,
}

impl Default for SourceOptions {
    fn default() -> SourceOptions {
        SourceOptions {
            fps: None,
            looped: false,
            width: None,
            height: None,
            format: None,
            buffers: 4,
            keep_encoded: false,
            latency_ms: DEFAULT_LATENCY_MS,
            transport: launch::RtspTransport::Auto,
        }
    }
}

/// RTSP's jitter buffer by default: enough for a LAN's jitter, far under rtspsrc's own 2000 ms.
pub const DEFAULT_LATENCY_MS: u32 = 50;

pub fn open(text: &str, options: &SourceOptions) -> Result<Box<dyn FrameSource>> {
    let source = Path::new(text);
    #[cfg(feature = "gstreamer")]
    let given = options;
    let options = &SourceOptions { fps: options.fps.filter(|f| *f > 0.0), ..options.clone() };
    match uri::parse(text).map_err(|reason| Error::input(source, reason))? {
        uri::SourceUri::Synthetic { width, height, fps, format } => {
            Ok(Box::new(synthetic::Synthetic::new(text, format, width, height, fps.or(options.fps))?))
        }
        uri::SourceUri::File(path) => file::open(text, &path, options),
        uri::SourceUri::V4l2(device) => v4l2::open(text, &device, options),
        #[cfg(feature = "gstreamer")]
        gstreamer @ (uri::SourceUri::Csi(_)
        | uri::SourceUri::Rtsp(_)
        | uri::SourceUri::Video(_)
        | uri::SourceUri::Gst(_)) => gst::open(text, &gstreamer, given),
        #[cfg(not(feature = "gstreamer"))]
        uri::SourceUri::Csi(_)
        | uri::SourceUri::Rtsp(_)
        | uri::SourceUri::Video(_)
        | uri::SourceUri::Gst(_) => Err(Error::input(
            Path::new(uri::redacted(text).as_ref()),
            "this source needs GStreamer: this edgert is built without it (build with --features gstreamer)",
        )),
    }
}

/// Holds frames to a rate: frame n is due n/fps after the first.
#[derive(Debug)]
pub struct Pacer {
    start: Option<Instant>,
    period: Option<Duration>,
}

impl Pacer {
    pub fn new(fps: Option<f64>) -> Pacer {
        // 0 is unpaced (`--fps 0`).
        Pacer { start: None, period: fps.filter(|f| *f > 0.0).map(|f| Duration::from_secs_f64(1.0 / f)) }
    }

    /// Waits until frame `n` is due; false when that is later than `timeout` from now.
    pub fn wait(&mut self, n: u64, timeout: Duration) -> bool {
        let start = *self.start.get_or_insert_with(Instant::now);
        let Some(period) = self.period else { return true };
        let due = start + period * n as u32;
        let now = Instant::now();
        if due > now + timeout {
            std::thread::sleep(timeout);
            return false;
        }
        if due > now {
            std::thread::sleep(due - now);
        }
        true
    }

    /// Time since the first frame was due.
    pub fn elapsed(&mut self) -> Duration {
        self.start.get_or_insert_with(Instant::now).elapsed()
    }
}
