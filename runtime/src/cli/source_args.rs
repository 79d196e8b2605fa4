//! Flags of the commands that read a frame source through the pipeline (`run`, `bench`), and the
//! Ctrl-C handling that lets such a run stop with its report.

use std::time::Duration;

use clap::Args;

use crate::capture::source::camera_format::CameraFormat;
use crate::capture::source::launch::RtspTransport;
use crate::capture::source::{SourceOptions, DEFAULT_LATENCY_MS};
use crate::limits;
use crate::stream::{DropPolicy, StreamConfig};
use crate::Error;

/// How to open a source, whatever the command (`capture` too).
#[derive(Args, Clone)]
pub struct OpenArgs {
    /// Pace the source to this frame rate (a synthetic: URI's own @fps wins); a camera is asked for
    /// it. 0: as fast as frames can be read (a video file, which otherwise plays at its own rate).
    #[arg(long, value_parser = fps_or_unpaced)]
    fps: Option<f64>,
    /// Start a file source again at its end.
    #[arg(long = "loop")]
    looped: bool,
    /// Camera frame width (default: the camera's current one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16384))]
    width: Option<u32>,
    /// Camera frame height (default: the camera's current one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16384))]
    height: Option<u32>,
    /// Camera pixel format: yuyv, nv12, grey, rgb24, bgr24 or mjpeg (default: its current one).
    #[arg(long, value_parser = camera_format)]
    format: Option<CameraFormat>,
    /// Camera buffers for mmap streaming [default: 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=32))]
    buffers: Option<u32>,
    /// An rtsp:// source's jitter buffer in milliseconds: more absorbs network jitter, and adds
    /// that much latency [default: 50].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    latency_ms: Option<u32>,
    /// How an rtsp:// source is carried: auto (UDP, then TCP where UDP gets nothing), tcp or udp
    /// [default: auto].
    #[arg(long, value_enum)]
    rtsp_transport: Option<RtspTransport>,
}

impl OpenArgs {
    pub fn options(&self) -> SourceOptions {
        SourceOptions {
            fps: self.fps,
            looped: self.looped,
            width: self.width.map(|w| w as usize),
            height: self.height.map(|h| h as usize),
            format: self.format,
            buffers: self.buffers.unwrap_or(4),
            keep_encoded: false,
            latency_ms: self.latency_ms.unwrap_or(DEFAULT_LATENCY_MS),
            transport: self.rtsp_transport.unwrap_or_default(),
        }
    }

    /// The flags given, by name, for a command to refuse without a source.
    fn given(&self) -> [(&'static str, bool); 8] {
        [
            ("--fps", self.fps.is_some()),
            ("--loop", self.looped),
            ("--width", self.width.is_some()),
            ("--height", self.height.is_some()),
            ("--format", self.format.is_some()),
            ("--buffers", self.buffers.is_some()),
            ("--latency-ms", self.latency_ms.is_some()),
            ("--rtsp-transport", self.rtsp_transport.is_some()),
        ]
    }
}

fn camera_format(text: &str) -> Result<CameraFormat, String> {
    CameraFormat::from_name(text)
        .ok_or_else(|| format!("'{text}' is not one of yuyv, nv12, grey, rgb24, bgr24, mjpeg"))
}

/// A source through the camera pipeline (`run`, `bench`).
#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Frame source through the camera pipeline: v4l2:///dev/videoN (or /dev/videoN),
    /// synthetic:WxH[@fps][,yuyv|nv12|grey|rgb24|bgr24], or file:PATH (an image, a folder of
    /// images, or a recording from `edgert capture`); with the gstreamer feature csi://N,
    /// rtsp://HOST/PATH, file:VIDEO (mp4, mkv, avi, mov, h264, h265, webm, ts) and gst:PIPELINE.
    #[arg(long, value_name = "URI")]
    pub source: Option<String>,
    #[command(flatten)]
    pub open: OpenArgs,
    /// When a stage is busy: drop the oldest queued frame (latest), or wait and process every
    /// frame (none) [default: latest].
    #[arg(long, value_enum)]
    drop: Option<DropPolicy>,
    /// Items each queue between two stages holds [default: 2].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    queue_depth: Option<u16>,
    /// Seconds without a frame after which the source counts as stalled or unplugged [default: 5].
    #[arg(long, value_parser = seconds)]
    timeout_s: Option<f64>,
    /// Open a source that failed or stalled (an RTSP server restarting) again, up to this many
    /// times in a row, a second apart [default: 0].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1000))]
    reconnect: Option<u32>,
    /// Where frames are preprocessed: cpu, or gpu (CUDA, straight into --backend tensorrt's input
    /// in GPU memory; frames read in place on a Jetson) [default: cpu].
    #[arg(long, value_enum, value_name = "ON")]
    preprocess: Option<PreprocessOn>,
    #[command(flatten)]
    pub show: super::output_args::OutputArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreprocessOn {
    Cpu,
    Gpu,
}

impl SourceArgs {
    /// The stream settings, with no frame or time limit yet.
    pub fn stream(&self) -> StreamConfig {
        StreamConfig {
            drop: self.drop.unwrap_or(DropPolicy::Latest),
            queue_depth: self.queue_depth.unwrap_or(2) as usize,
            frames: None,
            duration: None,
            min_frames: 0,
            timeout: Duration::from_secs_f64(self.timeout_s.unwrap_or(5.0)),
            gpu_preprocess: self.preprocess == Some(PreprocessOn::Gpu),
            reconnect: self.reconnect.unwrap_or(0),
        }
    }

    /// Refuses source flags without `--source` (clap's `requires` does not see through the
    /// flattened groups here). `others` are the command's own such flags, by name.
    pub fn check(&self, others: &[(&str, bool)]) -> Result<(), Error> {
        if self.source.is_some() {
            return Ok(());
        }
        let given = [
            ("--drop", self.drop.is_some()),
            ("--queue-depth", self.queue_depth.is_some()),
            ("--timeout-s", self.timeout_s.is_some()),
            ("--reconnect", self.reconnect.is_some()),
            ("--preprocess", self.preprocess.is_some()),
        ];
        let (open, show) = (self.open.given(), self.show.given());
        match given.iter().chain(&open).chain(&show).chain(others).find(|(_, given)| *given) {
            Some((flag, _)) => Err(Error::Usage(format!("{flag} needs --source"))),
            None => Ok(()),
        }
    }
}

/// Seconds above 0 that a `Duration` holds and a run may last (`limits::SECONDS`).
pub fn seconds(text: &str) -> Result<f64, String> {
    match limits::SECONDS.parse("", text) {
        Ok(v) if v > 0.0 => Ok(v),
        _ => Err(format!("'{text}' is not a number of seconds in (0, {}]", limits::SECONDS.max)),
    }
}

/// A frame rate in `limits::FPS`, or 0 for unpaced.
fn fps_or_unpaced(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => fps(text).map_err(|e| format!("{e}, nor 0 (unpaced)")),
    }
}

/// A frame rate in `limits::FPS`.
pub fn fps(text: &str) -> Result<f64, String> {
    limits::FPS.parse("", text).map_err(|e| format!("'{text}' is not a frame rate in {}", e.range))
}
