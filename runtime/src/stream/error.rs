//! Why a stage of the camera pipeline ended the run; it becomes the report's `Ending::Failed`.

use crate::frame::FrameError;
use crate::preprocess::PreprocessError;

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// A frame the preprocessing stage could not turn into the model's input.
    #[error("{uri}: frame cannot be preprocessed: {reason}")]
    Preprocess { uri: String, reason: PassError },
    #[error("{}", crate::error::one_line(.0))]
    Inference(crate::Error),
    /// Outputs the postprocessing could not turn into a prediction within the limits (masks
    /// past the memory limit at the frame's size).
    #[error("{}", crate::error::one_line(.0))]
    Postprocess(crate::Error),
    /// The caller's handler of each prediction failed (printing it, say).
    #[error("{0}")]
    Handler(crate::Error),
    /// An `--output` could not take a frame (a full disk), or the frame could not be drawn.
    #[error("{sink}: {error}")]
    Output { sink: String, error: crate::output::OutputError },
}

/// Why one frame's preprocessing pass failed.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error(transparent)]
    Cpu(#[from] PreprocessError),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::cuda::GpuError),
}
