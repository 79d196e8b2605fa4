//! Typed errors of the library. Each message names the file or thing at fault and what is wrong;
//! `exit_code` separates bad input (2) from failures while running (1).

use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file that cannot be read (missing, unreadable).
    #[error("{}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    /// A model file that is not a loadable ONNX model.
    #[error("{}: not a valid ONNX model: {reason}", path.display())]
    InvalidModel { path: PathBuf, reason: String },
    /// A model whose graph uses an operator the backend cannot run.
    #[error("{}: unsupported operator '{op}' (node '{node}') for the {backend} backend", path.display())]
    UnsupportedOperator { path: PathBuf, op: String, node: String, backend: String },
    /// A valid model that a backend cannot run (an operator, attribute, type or shape its importer
    /// or kernels do not take): `reason` names the node where the backend says which, and ends
    /// with the other backends usable here (`backend::cannot_run`).
    #[error("{}: the {backend} backend cannot run this model: {reason}", path.display())]
    BackendCannotRun { path: PathBuf, backend: String, reason: String },
    /// A manifest that is malformed or disagrees with its model.
    #[error("{}: {reason}", path.display())]
    Manifest { path: PathBuf, reason: String },
    /// An input file that cannot be used (not an image, wrong tensor shape, ...).
    #[error("{}: {reason}", path.display())]
    Input { path: PathBuf, reason: String },
    /// A command-line value that makes no sense.
    #[error("{0}")]
    Usage(String),
    /// A backend name nobody knows.
    #[error("unknown backend '{name}' (known: {known})")]
    UnknownBackend { name: String, known: String },
    /// A backend that is compiled in but cannot run on this machine.
    #[error("backend '{name}' is not usable here: {reason}")]
    BackendUnavailable { name: String, reason: String },
    /// A failure while running a model that loaded fine.
    #[error("{}: inference failed: {reason}", path.display())]
    Inference { path: PathBuf, reason: String },
    /// A network address that cannot be served (in use, not permitted).
    #[error("{address}: cannot serve: {reason}")]
    Serve { address: String, reason: String },
    /// An input that would take more memory than the limit (`limits`).
    #[error(transparent)]
    TooLarge(#[from] crate::limits::TooLarge),
    /// A failure to write results.
    #[error("{}: cannot write: {reason}", path.display())]
    Write { path: PathBuf, reason: String },
    /// A signal (Ctrl-C, SIGTERM) stopped a command before it had anything to report.
    #[error("interrupted {0}")]
    Interrupted(String),
}

impl Error {
    /// 2 for bad input (files, flags, models), 1 for a failure while running, 130 for a stop
    /// by a signal (as shells report one).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Interrupted(_) => 130,
            Error::BackendUnavailable { .. }
            | Error::Inference { .. }
            | Error::Write { .. }
            | Error::Serve { .. } => 1,
            _ => 2,
        }
    }

    pub fn read(path: &Path, err: impl std::fmt::Display) -> Self {
        Error::Read { path: path.to_owned(), reason: err.to_string() }
    }

    pub fn input(path: &Path, reason: impl std::fmt::Display) -> Self {
        Error::Input { path: path.to_owned(), reason: reason.to_string() }
    }

    pub fn unavailable(backend: &str, reason: impl std::fmt::Display) -> Self {
        Error::BackendUnavailable { name: backend.into(), reason: reason.to_string() }
    }

    pub fn manifest(path: &Path, reason: impl std::fmt::Display) -> Self {
        Error::Manifest { path: path.to_owned(), reason: reason.to_string() }
    }
}

/// Flattens a tract (anyhow) error chain into one line.
pub fn one_line(err: &impl std::fmt::Display) -> String {
    let text = format!("{err:#}");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
