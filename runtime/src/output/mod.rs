//! Where annotated frames go (`--output`, `--preview`): sinks the stream's output stage writes each
//! shown frame to, in the order given. The stage draws and encodes once per frame; a sink that
//! takes JPEG gets the same bytes as every other.

pub(crate) mod dir;
pub mod encode;
mod error;
#[cfg(feature = "gstreamer")]
pub(crate) mod h264;
pub(crate) mod preview;
pub(crate) mod recent;
#[cfg(feature = "rtsp-server")]
pub(crate) mod rtsp;
pub(crate) mod uri;

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::annotate::canvas::Canvas;
use crate::annotate::Overlay;
use crate::metrics::power::OpenSensors;
use crate::metrics::stats::LatencyStats;
use crate::Error;
pub use error::OutputError;
pub use uri::OutputUri;

/// One annotated frame, as the sinks see it.
pub struct Shown<'a> {
    pub sequence: u64,
    /// The annotated RGB frame, when some sink wanted a picture of it.
    pub canvas: Option<&'a Canvas>,
    /// The frame as JPEG, when a sink asked for it.
    pub jpeg: Option<&'a [u8]>,
    pub overlay: &'a Overlay,
    /// Frames dropped so far anywhere in the pipeline, output included.
    pub dropped: u64,
    /// The source's own rate, where it has one.
    pub source_fps: Option<f64>,
}

impl Shown<'_> {
    /// The annotated frame, for a sink that wanted a picture.
    pub fn picture(&self) -> Result<&Canvas, OutputError> {
        self.canvas.ok_or(OutputError::Missing("picture"))
    }
}

/// What a sink takes of the next frame; the stage draws and encodes only what some sink takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wants {
    /// The figures alone (a preview nobody watches, or between its pictures).
    Figures,
    /// The annotated RGB pixels (video encoders, PNG files).
    Picture,
    /// The annotated frame as JPEG (and its pixels).
    Jpeg,
}

pub trait Sink: Send {
    /// What the report calls it.
    fn name(&self) -> String;
    /// What it takes of the next frame.
    fn wants(&self) -> Wants {
        Wants::Picture
    }
    /// An error ends the run (a full disk); a client going away is not one.
    fn write(&mut self, frame: &Shown) -> Result<(), OutputError>;
    /// The most viewers at once, for sinks that serve them.
    fn most_clients(&self) -> Option<u64> {
        None
    }
    /// After the last frame: a video file's end written.
    fn finish(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// The sinks of a run, and the power sensors the overlay reads (where the board has them).
pub struct Outputs {
    pub sinks: Vec<Box<dyn Sink>>,
    pub power: Option<OpenSensors>,
    /// JPEG quality, 1 to 100.
    pub quality: u8,
}

/// JPEG quality of annotated frames: small enough for a board's uplink, sharp enough for labels.
pub const DEFAULT_QUALITY: u8 = 80;

impl Default for Outputs {
    fn default() -> Outputs {
        Outputs { sinks: Vec::new(), power: None, quality: DEFAULT_QUALITY }
    }
}

impl Outputs {
    pub fn none() -> Outputs {
        Outputs::default()
    }

    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }

    /// Opens each `--output`: checked before the run, so a bad folder costs nothing.
    pub fn open(uris: &[OutputUri]) -> Result<Outputs, Error> {
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        for uri in uris {
            sinks.push(match uri {
                OutputUri::Dir { path, format } => Box::new(dir::Dir::open(path, *format)?),
                OutputUri::Video(path) => video(path)?,
                OutputUri::Rtp(uri) => rtp(uri)?,
                OutputUri::Rtsp(uri) => rtsp(uri)?,
            });
        }
        Ok(Outputs { sinks, ..Outputs::default() })
    }

    /// Ends each output after the last frame (a video file's index written); the first failure.
    pub fn finish(&mut self) -> Result<(), Error> {
        let mut failed = None;
        for sink in &mut self.sinks {
            if let Err(error) = sink.finish() {
                failed.get_or_insert(Error::Write { path: sink.name().into(), reason: error.to_string() });
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

#[cfg(feature = "gstreamer")]
fn video(path: &std::path::Path) -> Result<Box<dyn Sink>, Error> {
    let name = format!("file:{}", path.display());
    Ok(Box::new(h264::H264::open(&name, h264::Target::File(path.to_owned()))?))
}

#[cfg(feature = "gstreamer")]
fn rtp(uri: &str) -> Result<Box<dyn Sink>, Error> {
    let usage = |why: &str| Error::Usage(format!("--output {uri}: {why}"));
    let authority = uri.trim_start_matches("rtp://").trim_end_matches('/');
    let (host, port) = authority.rsplit_once(':').ok_or_else(|| usage("names no port: rtp://HOST:PORT"))?;
    let port =
        port.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| usage("not a port: rtp://HOST:PORT"))?;
    if host.is_empty() || host.contains(['/', ' ', '"', '!']) {
        return Err(usage("names no host: rtp://HOST:PORT"));
    }
    Ok(Box::new(h264::H264::open(uri, h264::Target::Rtp { host: host.into(), port })?))
}

#[cfg(feature = "rtsp-server")]
fn rtsp(uri: &str) -> Result<Box<dyn Sink>, Error> {
    Ok(Box::new(rtsp::RtspOut::open(uri)?))
}

#[cfg(not(feature = "gstreamer"))]
fn video(path: &std::path::Path) -> Result<Box<dyn Sink>, Error> {
    Err(needs(&format!("file:{}", path.display()), "gstreamer"))
}

#[cfg(not(feature = "gstreamer"))]
fn rtp(uri: &str) -> Result<Box<dyn Sink>, Error> {
    Err(needs(uri, "gstreamer"))
}

#[cfg(not(feature = "rtsp-server"))]
fn rtsp(uri: &str) -> Result<Box<dyn Sink>, Error> {
    Err(needs(uri, "rtsp-server"))
}

#[cfg(not(all(feature = "gstreamer", feature = "rtsp-server")))]
fn needs(output: &str, feature: &str) -> Error {
    Error::Usage(format!(
        "--output {output}: this edgert is built without it (cargo build --features {feature})"
    ))
}

/// Outputs kept across the phases of a bench, each of which runs the stream again.
#[derive(Clone, Default)]
pub struct SharedOutputs(Arc<Mutex<Outputs>>);

impl SharedOutputs {
    pub fn new(outputs: Outputs) -> SharedOutputs {
        SharedOutputs(Arc::new(Mutex::new(outputs)))
    }

    pub fn lock(&self) -> MutexGuard<'_, Outputs> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for SharedOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.lock().sinks.iter().map(|s| s.name())).finish()
    }
}

/// What the output stage did: `runs[].stream.output` in the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct OutputStats {
    pub outputs: Vec<SinkStats>,
    /// Frames handed to the outputs (drawn where one wanted a picture: `annotate`'s count).
    pub frames_shown: u64,
    /// Predicted frames the output stage had no time for (`--drop latest`): their inferences
    /// still counted, only the picture was skipped.
    pub dropped_before_output: u64,
    /// Converting the frame to RGB and drawing on it.
    pub annotate: Option<LatencyStats>,
    /// JPEG encoding, on frames some output wanted it for.
    pub encode: Option<LatencyStats>,
}

impl OutputStats {
    /// One line: frames shown and dropped, what drawing and encoding took, each output's count.
    pub fn summary(&self) -> String {
        let tail = |name: &str, s: &Option<LatencyStats>| {
            s.as_ref()
                .map_or(String::new(), |s| format!(", {name} p50 {:.1} ms p99 {:.1} ms", s.p50_ms, s.p99_ms))
        };
        let outputs: Vec<String> = self
            .outputs
            .iter()
            .map(|o| {
                let viewers = o.most_clients.map_or(String::new(), |n| format!(", at most {n} viewers"));
                format!("{} ({} frames{viewers})", o.output, o.frames)
            })
            .collect();
        format!(
            "{} frames shown, {} dropped before output{}{}; to {}",
            self.frames_shown,
            self.dropped_before_output,
            tail("annotate", &self.annotate),
            tail("JPEG", &self.encode),
            outputs.join(", ")
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SinkStats {
    pub output: String,
    pub frames: u64,
    pub write: Option<LatencyStats>,
    /// A preview's most browsers at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub most_clients: Option<u64>,
}
