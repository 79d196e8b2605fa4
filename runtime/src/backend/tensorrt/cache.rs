//! Built engines and what they were built for. Engines are specific to the TensorRT version and
//! the GPU, so every engine edgert writes gets a sidecar (`E.engine.json`) saying what it was built
//! from and for; the cache is a folder of them named by a digest of that key, and an engine built
//! for something else is refused with how to rebuild it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// What an engine was built from and for: the engine cache's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineInfo {
    pub model_sha256: String,
    /// TensorRT release, with its build number where TensorRT gives it: `10.3.0.26`, `8.5.2`.
    pub tensorrt: String,
    /// Compute capability, `8.7` on Orin.
    pub sm: String,
    /// The device's name and memory, `Orin, 30697 MiB`: an AGX Orin and an Orin Nano share a
    /// compute capability, not their tactics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// TensorRT 8.x: the cuDNN and cuBLASLt releases its tactics came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tactic_libraries: Option<String>,
    pub dla_core: Option<u32>,
    /// `fp32`, `fp16`, `int8` or `best`.
    pub precision: String,
    /// Input shapes the engine takes: `1x3x224x224`, or `min..opt..max` for a dynamic input.
    pub profile: String,
    /// The calibration set's digest, for calibrator-based INT8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_sha256: Option<String>,
    /// Built with 2:4 structured-sparse kernels allowed (`--trt-sparsity`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sparsity: bool,
}

impl EngineInfo {
    /// The engine's file name in a cache: a digest of every field of the key.
    pub fn cache_name(&self) -> String {
        let key = serde_json::to_string(self).expect("plain strings serialize");
        let digest = Sha256::digest(key.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("{}-{hex}.engine", &self.model_sha256[..self.model_sha256.len().min(12)])
    }

    /// Why an engine built as `self` cannot run on TensorRT `tensorrt` with a GPU of compute
    /// capability `sm`; `None` when it can.
    pub fn mismatch(&self, tensorrt: &str, sm: &str) -> Option<String> {
        let mut reasons = Vec::new();
        if !same_release(&self.tensorrt, tensorrt) {
            reasons
                .push(format!("it was built by TensorRT {} and this is TensorRT {tensorrt}", self.tensorrt));
        }
        if self.sm != sm {
            reasons.push(format!(
                "it was built for a GPU of compute capability {} and this one is {sm}",
                self.sm
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join(", and "))
    }
}

/// Whether two TensorRT versions are one release: every part equal, the build number only where
/// both have one (engines described before edgert read it say `10.3.0`).
fn same_release(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    let common = a.len().min(b.len());
    a == b || (common >= 3 && a[..common] == b[..common])
}

/// `E.engine` → `E.engine.json`.
pub fn sidecar_path(engine: &Path) -> PathBuf {
    let mut name = engine.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

/// What edgert wrote beside an engine, if it was built by edgert.
pub fn read_info(engine: &Path) -> Result<Option<EngineInfo>> {
    let path = sidecar_path(engine);
    match crate::infile::read_if_present(&path, crate::infile::TEXT)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::read(&path, format!("not an edgert engine description: {e}"))),
        None => Ok(None),
    }
}

/// Writes an engine and its sidecar where the user asked, each through a temporary file renamed
/// into place, so a crash never leaves a half-written engine under a valid name.
pub fn write(engine: &Path, plan: &[u8], info: &EngineInfo) -> Result<()> {
    write_both(engine, plan, info, Entry::Output)
}

/// An output the user named (a device or a pipe is written through) or a cache entry of
/// edgert's (whatever is there is replaced).
#[derive(Clone, Copy)]
enum Entry {
    Output,
    Cached,
}

fn write_both(engine: &Path, plan: &[u8], info: &EngineInfo, entry: Entry) -> Result<()> {
    let json = serde_json::to_vec_pretty(info).expect("plain strings serialize");
    write_one(&sidecar_path(engine), &json, entry)?;
    write_one(engine, plan, entry)
}

fn write_one(path: &Path, bytes: &[u8], entry: Entry) -> Result<()> {
    let put = |file: &mut std::io::BufWriter<std::fs::File>| file.write_all(bytes);
    match entry {
        Entry::Output => crate::outfile::write_atomically(path, put),
        Entry::Cached => crate::outfile::replace(path, put),
    }
    .map_err(|e| Error::Write { path: path.to_owned(), reason: e.to_string() })
}

/// A folder of built engines.
#[derive(Debug, Clone)]
pub struct EngineCache {
    pub dir: PathBuf,
}

impl EngineCache {
    /// `EDGERT_ENGINE_CACHE`, else `$XDG_CACHE_HOME/edgert/engines`, else `~/.cache/edgert/engines`.
    pub fn default_dir() -> PathBuf {
        crate::user_cache::dir("EDGERT_ENGINE_CACHE", "engines")
    }

    pub fn path(&self, info: &EngineInfo) -> PathBuf {
        self.dir.join(info.cache_name())
    }

    /// The cached plan for `info`, if one was built.
    pub fn load(&self, info: &EngineInfo) -> Result<Option<Vec<u8>>> {
        let path = self.path(info);
        match read_info(&path)? {
            Some(stored) if &stored == info => {}
            _ => return Ok(None),
        }
        crate::infile::read_if_present(&path, crate::infile::MODEL)
    }

    pub fn store(&self, info: &EngineInfo, plan: &[u8]) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::Write { path: self.dir.clone(), reason: e.to_string() })?;
        let path = self.path(info);
        write_both(&path, plan, info, Entry::Cached)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn info() -> EngineInfo {
        EngineInfo {
            model_sha256: "ab".repeat(32),
            tensorrt: "10.3.0".into(),
            sm: "8.7".into(),
            device: Some("Orin, 30697 MiB".into()),
            tactic_libraries: None,
            dla_core: None,
            precision: "fp16".into(),
            profile: "1x3x224x224".into(),
            calibration_sha256: None,
            sparsity: false,
        }
    }

    #[test]
    fn every_field_of_the_key_changes_the_cache_name() {
        let base = info();
        let changed = [
            EngineInfo { model_sha256: "cd".repeat(32), ..base.clone() },
            EngineInfo { tensorrt: "8.6.2".into(), ..base.clone() },
            EngineInfo { sm: "8.6".into(), ..base.clone() },
            EngineInfo { dla_core: Some(0), ..base.clone() },
            EngineInfo { precision: "int8".into(), ..base.clone() },
            EngineInfo { profile: "4x3x224x224".into(), ..base.clone() },
            EngineInfo { calibration_sha256: Some("ef".repeat(32)), ..base.clone() },
            EngineInfo { sparsity: true, ..base.clone() },
            EngineInfo { tensorrt: "10.3.0.26".into(), ..base.clone() },
            EngineInfo { device: Some("Orin, 7620 MiB".into()), ..base.clone() },
            EngineInfo { device: None, ..base.clone() },
            EngineInfo { tactic_libraries: Some("cuDNN 8.6.0, cuBLASLt 11.11.3".into()), ..base.clone() },
        ];
        for other in changed {
            assert_ne!(other.cache_name(), base.cache_name(), "{other:?}");
        }
        assert_eq!(info().cache_name(), base.cache_name());
    }

    #[test]
    fn a_stored_engine_comes_back_only_for_its_own_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EngineCache { dir: dir.path().join("engines") };
        assert_eq!(cache.load(&info()).unwrap(), None);
        let path = cache.store(&info(), b"plan").unwrap();
        assert_eq!(cache.load(&info()).unwrap().as_deref(), Some(&b"plan"[..]));
        assert_eq!(read_info(&path).unwrap(), Some(info()));
        // A sidecar that no longer matches (edited, or a digest collision) is a miss, not a load.
        std::fs::write(
            sidecar_path(&path),
            serde_json::to_vec(&EngineInfo { sm: "7.2".into(), ..info() }).unwrap(),
        )
        .unwrap();
        assert_eq!(cache.load(&info()).unwrap(), None);
    }

    #[test]
    fn an_engine_from_another_version_or_gpu_says_which() {
        assert_eq!(info().mismatch("10.3.0", "8.7"), None);
        let message = info().mismatch("8.6.2", "8.7").unwrap();
        assert!(message.contains("built by TensorRT 10.3.0 and this is TensorRT 8.6.2"), "{message}");
        let message = info().mismatch("10.3.0", "7.2").unwrap();
        assert!(message.contains("compute capability 8.7 and this one is 7.2"), "{message}");
        // The build number counts where both sides know it.
        assert_eq!(info().mismatch("10.3.0.26", "8.7"), None);
        let built = EngineInfo { tensorrt: "10.3.0.26".into(), ..info() };
        assert_eq!(built.mismatch("10.3.0.26", "8.7"), None);
        assert!(built
            .mismatch("10.3.0.30", "8.7")
            .unwrap()
            .contains("10.3.0.26 and this is TensorRT 10.3.0.30"));
        assert!(built.mismatch("10.30.0", "8.7").is_some());
    }

    #[test]
    fn a_sidecar_that_is_not_json_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let engine = dir.path().join("m.engine");
        std::fs::write(sidecar_path(&engine), b"not json").unwrap();
        let message = read_info(&engine).unwrap_err().to_string();
        assert!(message.contains("m.engine.json") && message.contains("not an edgert engine description"));
    }

    #[test]
    fn an_unwritable_cache_is_an_error_naming_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let cache = EngineCache { dir: file.join("engines") };
        let message = cache.store(&info(), b"plan").unwrap_err().to_string();
        assert!(message.contains("file/engines") && message.contains("cannot write"), "{message}");
    }
}
