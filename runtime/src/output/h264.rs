//! H.264 out through GStreamer (feature `gstreamer`): `--output file:VIDEO.mp4|mkv` and
//! `rtp://HOST:PORT`. Annotated RGB frames go into an appsrc, stamped with the time since the
//! first; the encoder is chosen at run time: `nvv4l2h264enc` (the Jetson's NVENC) where it is
//! installed, else `x264enc`. A video file is written beside its name and renamed into place once
//! the muxer has finished it, so a failed run leaves no half-written video under that name; the
//! file beside it is removed when anything fails, as `outfile` does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app::AppSrc;

use super::{OutputError, Shown, Sink};
use crate::capture::source::gst::bus_error;
use crate::capture::source::launch::{fraction, quote};
use crate::Error;

/// How long the muxer may take to finish a file after the last frame.
const FINISH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the H.264 goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    File(PathBuf),
    Rtp { host: String, port: u16 },
}

/// The H.264 encoder installed, by element, and the part of a pipeline from RGB frames through
/// it: key frames often enough that a viewer joining or a player seeking waits at most a second at
/// 30 fps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoder {
    pub element: &'static str,
    pub pipeline: &'static str,
}

pub fn encoder() -> Result<Encoder, OutputError> {
    gst::init().map_err(|e| OutputError::Gstreamer(format!("GStreamer does not initialise: {e}")))?;
    choose(|name| gst::ElementFactory::find(name).is_some())
}

/// The encoder for the elements `has` says are installed: NVENC first.
fn choose(has: impl Fn(&str) -> bool) -> Result<Encoder, OutputError> {
    if has("nvv4l2h264enc") && has("nvvidconv") {
        Ok(Encoder {
            element: "nvv4l2h264enc",
            pipeline:
                "videoconvert ! video/x-raw,format=I420 ! nvvidconv ! video/x-raw(memory:NVMM),format=I420 \
                ! nvv4l2h264enc insert-sps-pps=true iframeinterval=30",
        })
    } else if has("x264enc") {
        Ok(Encoder {
            element: "x264enc",
            pipeline: "videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30",
        })
    } else {
        Err(OutputError::Gstreamer(
            "no H.264 encoder: neither nvv4l2h264enc (JetPack) nor x264enc (gstreamer1.0-plugins-ugly) is installed"
                .into(),
        ))
    }
}

pub struct H264 {
    target: Target,
    name: String,
    encoder: Encoder,
    running: Option<Running>,
}

struct Running {
    pipeline: gst::Bin,
    source: AppSrc,
    started: Instant,
    size: (usize, usize),
}

impl H264 {
    /// Checked now (an encoder, the muxer, a writable file), started at the first frame, when its
    /// size is known.
    pub fn open(name: &str, target: Target) -> Result<H264, Error> {
        let fail = |reason: String| Error::Usage(format!("--output {name}: {reason}"));
        let encoder = encoder().map_err(|e| fail(e.to_string()))?;
        if let Target::File(path) = &target {
            let muxer = muxer(path);
            if gst::ElementFactory::find(muxer).is_none() {
                return Err(fail(format!("{muxer} is not installed (gstreamer1.0-plugins-good)")));
            }
            crate::outfile::check_writable(path)?;
        }
        Ok(H264 { target, name: name.into(), encoder, running: None })
    }

    /// The pipeline for frames of this size. The rate declared is the source's (30 where it has
    /// none): the frames' own times set when each is shown, but with no rate at all the encoder
    /// gives the last frame no duration, and the MP4 muxer drops it.
    fn launch(&self, width: usize, height: usize, fps: Option<f64>) -> String {
        let (n, d) = fraction(fps.unwrap_or(30.0));
        let head = format!(
            "appsrc name=frames is-live=true format=time caps=video/x-raw,format=RGB,width={width},height={height},framerate={n}/{d}"
        );
        let tail = match &self.target {
            Target::File(path) => {
                format!(
                    "h264parse ! {} ! filesink location={}",
                    muxer(path),
                    quote(&partial(path).to_string_lossy())
                )
            }
            Target::Rtp { host, port } => {
                format!("h264parse ! rtph264pay config-interval=1 pt=96 ! udpsink host={host} port={port} sync=false async=false")
            }
        };
        format!("{head} ! {} ! {tail}", self.encoder.pipeline)
    }

    fn start(&mut self, width: usize, height: usize, fps: Option<f64>) -> Result<&mut Running, OutputError> {
        let failed = |why: &str| OutputError::Gstreamer(why.into());
        let pipeline = gst::parse::launch(&self.launch(width, height, fps))
            .map_err(|e| failed(&format!("the encoding pipeline does not build: {e}")))?
            .downcast::<gst::Bin>()
            .map_err(|_| failed("the encoding pipeline is not a bin"))?;
        let source = pipeline
            .by_name("frames")
            .and_then(|e| e.downcast::<AppSrc>().ok())
            .ok_or_else(|| failed("the encoding pipeline has no appsrc"))?;
        if pipeline.set_state(gst::State::Playing).is_err() {
            let why = bus_error(&pipeline).unwrap_or_else(|| "it does not start".into());
            let _ = pipeline.set_state(gst::State::Null);
            return Err(OutputError::Gstreamer(why));
        }
        Ok(self.running.insert(Running { pipeline, source, started: Instant::now(), size: (width, height) }))
    }
}

fn muxer(path: &Path) -> &'static str {
    match super::uri::extension(path).as_deref() {
        Some("mkv") => "matroskamux",
        _ => "mp4mux",
    }
}

fn partial(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

impl Sink for H264 {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn write(&mut self, frame: &Shown) -> Result<(), OutputError> {
        let canvas = frame.picture()?;
        let (width, height) = (canvas.width, canvas.height);
        let running = match &mut self.running {
            Some(running) if running.size == (width, height) => running,
            Some(running) => return Err(OutputError::Resized { was: running.size, now: (width, height) }),
            None => self.start(width, height, frame.source_fps)?,
        };
        let mut buffer = gst::Buffer::from_mut_slice(canvas.pixels.clone());
        let at = gst::ClockTime::from_nseconds(running.started.elapsed().as_nanos() as u64);
        buffer.get_mut().expect("a new buffer").set_pts(at);
        if running.source.push_buffer(buffer).is_err() {
            let why =
                bus_error(&running.pipeline).unwrap_or_else(|| "the encoder stopped taking frames".into());
            return Err(OutputError::Gstreamer(why));
        }
        bus_error(&running.pipeline).map_or(Ok(()), |why| Err(OutputError::Gstreamer(why)))
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        let Some(running) = self.running.take() else { return Ok(()) };
        let _ = running.source.end_of_stream();
        let bus = running.pipeline.bus().expect("a pipeline has a bus");
        let ended = bus.timed_pop_filtered(
            gst::ClockTime::from_nseconds(FINISH_TIMEOUT.as_nanos() as u64),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        );
        let result = match ended.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Eos(_)) => Ok(()),
            Some(gst::MessageView::Error(e)) => Err(OutputError::Gstreamer(e.error().message().to_string())),
            _ => Err(OutputError::Gstreamer(format!(
                "the encoder did not finish within {} s",
                FINISH_TIMEOUT.as_secs()
            ))),
        };
        let _ = running.pipeline.set_state(gst::State::Null);
        let Target::File(path) = &self.target else { return result };
        let partial = partial(path);
        let placed = result.and_then(|()| {
            std::fs::rename(&partial, path).map_err(|source| OutputError::Io { path: path.clone(), source })
        });
        if placed.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        placed
    }
}

impl Drop for H264 {
    /// A run that failed before finishing: the pipeline stopped, no partial file left behind.
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.pipeline.set_state(gst::State::Null);
            if let Target::File(path) = &self.target {
                let _ = std::fs::remove_file(partial(path));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn nvenc_is_chosen_where_jetpack_installed_it_else_x264_else_an_error() {
        let with = |installed: &'static [&'static str]| choose(move |name| installed.contains(&name));
        let jetson = with(&["nvv4l2h264enc", "nvvidconv", "x264enc"]).unwrap();
        assert_eq!(jetson.element, "nvv4l2h264enc");
        assert!(jetson.pipeline.contains("nvvidconv ! video/x-raw(memory:NVMM)"), "{}", jetson.pipeline);
        // The encoder without the converter that feeds it NVMM buffers is of no use.
        assert_eq!(with(&["nvv4l2h264enc", "x264enc"]).unwrap().element, "x264enc");
        assert_eq!(with(&["x264enc"]).unwrap().element, "x264enc");
        let none = with(&["nvv4l2h264enc"]).unwrap_err().to_string();
        assert!(none.contains("no H.264 encoder") && none.contains("gstreamer1.0-plugins-ugly"), "{none}");
    }
}
