//! The `cpu` and `cuda` backends' load cache, opt-in (`EDGERT_TRACT_CACHE=DIR`): a model as
//! tract's analysis leaves it (parsed, typed and decluttered for one input shape and type) saved
//! as NNEF, so that the next start reads it back instead of analysing the ONNX graph again.
//!
//! Off by default because it pays only where the analysis costs more than reading the weights
//! back: MobileNetV2 INT8 QDQ starts faster with it, YOLOv3-tiny and small models slower
//! (benches/RESULTS.md). What NNEF gives back is decluttered once more, as tract writes some
//! operators in forms it does not keep; the plan made from it has the same operators and gives
//! the same outputs, bit for bit (tests).
//!
//! Entries are named by a digest of what the analysis depends on: the model's sha256, its input,
//! the tract and edgert versions, and the CPU (tract declutters some convolutions differently
//! where it has other kernels, aarch64's among them). The cache never fails a run: an entry that
//! cannot be read is rebuilt, one that cannot be written is skipped, each with a warning naming
//! the file.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;
use sha2::{Digest, Sha256};
use tract_nnef::framework::Nnef;
use tract_onnx::pb::{self, tensor_proto::DataLocation};
use tract_onnx::prelude::*;
use tract_onnx::WithOnnx;

use crate::error::one_line;

mod nnef_quant;
#[cfg(test)]
mod tests;

/// Raised when what edgert hands tract to analyse changes (constant folding, operator
/// translation), so entries written before are not read after.
const FORMAT: u32 = 2;

/// What a cached model was analysed from and for.
#[derive(Debug, Serialize)]
pub struct CacheKey {
    pub model_sha256: String,
    pub input: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

pub struct LoadCache {
    pub dir: PathBuf,
}

impl LoadCache {
    /// The folder `EDGERT_TRACT_CACHE` names; `None` (no cache) when it is unset or empty.
    pub fn from_env() -> Option<LoadCache> {
        let dir = std::env::var_os("EDGERT_TRACT_CACHE").filter(|d| !d.is_empty())?;
        Some(LoadCache { dir: dir.into() })
    }

    /// The entry for `key`: `<model sha256, 12 digits>-<digest of the whole key>.nnef.tar`.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        #[derive(Serialize)]
        struct Versioned<'a> {
            key: &'a CacheKey,
            format: u32,
            edgert: &'a str,
            tract: &'a str,
            cpu: String,
        }
        let versioned = Versioned {
            key,
            format: FORMAT,
            edgert: crate::VERSION,
            tract: env!("EDGERT_TRACT_VERSION"),
            cpu: cpu_identity(),
        };
        let json = serde_json::to_string(&versioned).expect("plain fields serialize");
        let digest: String =
            Sha256::digest(json.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
        let model = &key.model_sha256[..key.model_sha256.len().min(12)];
        self.dir.join(format!("{model}-{digest}.nnef.tar"))
    }

    /// The decluttered model for `key`: read from the cache, or made by `analyse` and stored.
    pub fn decluttered(
        &self,
        key: &CacheKey,
        analyse: impl FnOnce() -> crate::Result<TypedModel>,
    ) -> crate::Result<TypedModel> {
        let path = self.path(key);
        match read(&path) {
            Ok(Some(model)) => return Ok(model),
            Ok(None) => {}
            Err(reason) => warn(&path, &format!("cannot be read ({reason}); analysing the model again")),
        }
        let model = analyse()?;
        if let Err(reason) = store(&path, &model) {
            warn(&path, &format!("not cached: {reason}"));
        }
        Ok(model)
    }
}

/// The architecture and, where the kernel lists them, the CPU's features: a home folder shared
/// between machines, or copied with a board image, must not hand one CPU's analysis to another.
fn cpu_identity() -> String {
    let cpuinfo =
        crate::infile::read_to_string("/proc/cpuinfo".as_ref(), crate::infile::SENSOR).unwrap_or_default();
    let features =
        cpuinfo.lines().find(|l| l.starts_with("flags") || l.starts_with("Features")).unwrap_or("");
    format!("{} {}", std::env::consts::ARCH, features.split(':').nth(1).unwrap_or("").trim())
}

fn warn(path: &Path, what: &str) {
    eprintln!("edgert: warning: load cache {}: {what}", path.display());
}

/// tract's NNEF with the ONNX operators tract adds and edgert's Q/DQ ones; made once a process,
/// as making it (parsing NNEF's standard fragments) takes about 10 ms.
fn nnef() -> &'static Nnef {
    static NNEF: OnceLock<Nnef> = OnceLock::new();
    NNEF.get_or_init(|| tract_nnef::nnef().with_onnx().with_registry(nnef_quant::registry()))
}

/// The model stored at `path`, decluttered; `None` when there is none.
pub fn read(path: &Path) -> Result<Option<TypedModel>, CacheError> {
    if crate::infile::absent(path) {
        return Ok(None);
    }
    let file = crate::infile::try_open(path, crate::infile::MODEL).map_err(CacheError::Unreadable)?;
    let model = nnef().model_for_read(&mut BufReader::new(file)).and_then(|m| m.into_decluttered());
    model.map(Some).map_err(|e| CacheError::Model(one_line(&e)))
}

/// Why a cache entry cannot be read back or stored; the caller names the entry.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An entry that is not a regular file, or is longer than a model may be.
    #[error("{0}")]
    Unreadable(String),
    /// An entry tract cannot read back as a model (damaged, or from another tract).
    #[error("not a model: {0}")]
    Model(String),
    #[error("cannot create {}: {reason}", dir.display())]
    Folder { dir: std::path::PathBuf, reason: std::io::Error },
}

/// Writes `model` to `path`, atomically, replacing what is there (`outfile::replace`).
pub fn store(path: &Path, model: &TypedModel) -> Result<(), CacheError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|reason| CacheError::Folder { dir: dir.to_owned(), reason })?;
    Ok(crate::outfile::replace(path, |file| {
        nnef()
            .write_to_tar_with_config(model, file, false, true)
            .map(drop)
            .map_err(|e| std::io::Error::other(one_line(&e)))
    })?)
}

/// Whether all of `proto`'s weights are in the file its sha256 covers, none in external data
/// files beside it: only then can an entry be keyed by that digest.
pub fn self_contained(proto: &pb::ModelProto) -> bool {
    let external = |t: &pb::TensorProto| t.data_location == Some(DataLocation::External as i32);
    !proto.graph.iter().flat_map(|g| &g.initializer).any(external)
}
