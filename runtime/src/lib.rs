//! edgert: an edge-inference runtime for NVIDIA Jetson boards.
//!
//! Loads an ONNX model (FP32, INT8 QDQ, pruned) described by a manifest, runs it on a backend
//! (`Backend` → `Prepared` → `Session`), and measures what an edge engineer needs before shipping.

pub mod annotate;
pub mod backend;
pub mod bench;
pub mod capture;
mod choice;
pub mod cli;
pub mod conformance;
#[cfg(feature = "cuda")]
pub mod cuda;
mod doctor;
pub mod error;
pub mod frame;
mod gpu_sync;
mod infile;
pub mod limits;
pub mod metrics;
pub mod model;
mod outfile;
pub mod output;
pub mod panics;
pub mod pipeline;
pub mod postprocess;
mod precision;
pub mod preprocess;
pub mod report;
mod saved_outputs;
mod serve;
mod stream;
pub mod tensor;
mod tune;
mod user_cache;
pub mod validate;

pub use error::{Error, Result};

/// The edgert version, as reported in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
