//! Why an output could not take a frame or finish: the stage reports it as `StageError::Output`,
//! naming the output; a failed finish becomes the run's `Error::Write`.

use std::path::PathBuf;

use crate::annotate::rgb::ConvertError;
use crate::frame::FrameError;

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A frame whose bytes do not fit its format, size and stride.
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// An output that takes pixels or JPEG was handed a frame without them (its `wants` said
    /// it did not need them).
    #[error("no {0} was made for this frame")]
    Missing(&'static str),
    #[error("a {0}-pixel side is more than JPEG holds")]
    TooLarge(usize),
    /// The image encoder's own message.
    #[error("{format} encoding failed: {message}")]
    Encode { format: &'static str, message: String },
    /// An encoded stream's size is fixed when it starts (a source reconnected at another size).
    #[error("the frames changed size from {}x{} to {}x{} mid-run", .was.0, .was.1, .now.0, .now.1)]
    Resized { was: (usize, usize), now: (usize, usize) },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// GStreamer's own message, or what its pipeline did instead of running.
    #[error("{0}")]
    Gstreamer(String),
}
