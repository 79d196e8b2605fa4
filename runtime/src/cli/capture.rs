//! `edgert capture`: records raw frames from a source, with their format and timestamps, so frames
//! recorded on a board replay anywhere (`--source file:DIR`). An MJPEG camera's are kept as JPEGs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use super::emit;
use super::source_args::{seconds, OpenArgs};
use super::stop::INTERRUPTED;
use crate::capture::source::recording::Writer;
use crate::capture::source::{self, Capture, SourceOptions};
use crate::Error;

#[derive(Args)]
pub struct CaptureArgs {
    /// Frame source: v4l2:///dev/videoN (or /dev/videoN), synthetic:WxH[@fps][,yuyv|nv12|grey|rgb24|bgr24],
    /// file:PATH (an image, a folder of images, or a recording), and with the gstreamer feature
    /// csi://N, rtsp://HOST/PATH, file:VIDEO.mp4 and gst:PIPELINE.
    #[arg(long, value_name = "URI")]
    source: String,
    #[command(flatten)]
    open: OpenArgs,
    /// Frames to record (fewer if a file source ends first).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Folder for frames.raw and frames.json.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Seconds to wait for a frame before giving up.
    #[arg(long, default_value_t = 5.0, value_parser = seconds)]
    timeout_s: f64,
}

pub fn main(args: CaptureArgs, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    // An MJPEG camera's frames are stored as they came, not re-encoded.
    let options = SourceOptions { keep_encoded: true, ..args.open.options() };
    let mut source = source::open(&args.source, &options)?;
    let info = source.info().clone();
    if let Some(detail) = &info.detail {
        eprintln!("edgert: {}: {detail}", info.uri);
    }
    // Ctrl-C or SIGTERM ends the recording with the frames so far, index and all.
    let mut writer = Writer::create(&args.out, &info)?;
    let timeout = Duration::from_secs_f64(args.timeout_s);
    let started = Instant::now();
    let mut ended = false;
    for _ in 0..args.frames {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match source.capture(timeout)? {
            Capture::Frame(captured) => writer.push(&captured)?,
            Capture::EndOfStream => {
                ended = true;
                break;
            }
            Capture::Timeout => {
                // What was recorded so far stays readable.
                writer.finish()?;
                return Err(Error::input(
                    Path::new(&args.source),
                    format!("no frame within {} s", args.timeout_s),
                )
                .into());
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let index = writer.finish()?;
    let count = index.frames.len();
    emit(&format!(
        "captured {count} frame(s), {} {}x{}, in {elapsed:.2} s ({:.1} fps) into {}{}",
        index.format,
        info.width,
        info.height,
        count as f64 / elapsed.max(1e-9),
        args.out.display(),
        if ended { " (end of stream)" } else { "" }
    ))?;
    Ok(if stop.load(Ordering::Relaxed) { ExitCode::from(INTERRUPTED) } else { ExitCode::SUCCESS })
}
