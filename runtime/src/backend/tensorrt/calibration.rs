//! Calibrator-based INT8 for models without Q/DQ nodes (TensorRT 8.5 to 10; 11 has no
//! calibrator). TensorRT's builder pulls batches of the model's input from a calibration set,
//! preprocessed as `run` does it, and picks each activation's INT8 scale from what it sees; its
//! calibration cache, when kept, skips the batches on the next build.

use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ffi;
use crate::model::Model;
use crate::{Error, Result};

/// The inputs to calibrate on, already preprocessed as `run` does it: items of the model's input
/// (without the batch axis), read one at a time. The command line makes it (images or an `.npz`,
/// `validate::calibration_set`), so the backend needs no decoding or preprocessing of its own.
pub trait CalibrationSet: Send + Sync + std::fmt::Debug {
    /// The file or folder the items come from, for errors.
    fn path(&self) -> &Path;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// sha256 of what the items are made from, in the order they are fed: part of the engine
    /// cache's key.
    fn digest(&self) -> Result<String>;
    /// Writes item `index` (one model input, `out.len()` values) into `out`.
    fn item(&self, index: usize, out: &mut [f32]) -> Result<()>;
}

/// Where the calibration batches come from, and where TensorRT's calibration cache is kept.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub set: Arc<dyn CalibrationSet>,
    /// Read before the build when it exists (no batches are then fed), written after it.
    pub cache: Option<PathBuf>,
}

/// Serves a calibration set to the shim one batch at a time.
pub(super) struct Feeder {
    set: Arc<dyn CalibrationSet>,
    item_len: usize,
    batch: usize,
    next: usize,
    /// Why feeding stopped, reported instead of whatever TensorRT makes of the early end.
    pub error: Option<Error>,
    /// The calibration cache TensorRT wrote.
    pub cache_out: Vec<u8>,
    pub batches_fed: usize,
}

impl Feeder {
    pub fn open(model: &Model, set: Arc<dyn CalibrationSet>, batch: usize) -> Result<Feeder> {
        if set.len() < batch {
            return Err(Error::input(
                set.path(),
                format!("holds {} samples; calibration needs at least one batch of {batch}", set.len()),
            ));
        }
        let item_len = model.manifest.input.shape[1..].iter().product();
        Ok(Feeder { set, item_len, batch, next: 0, error: None, cache_out: Vec::new(), batches_fed: 0 })
    }

    /// The set's digest: part of the engine cache's key.
    pub fn digest(&self) -> Result<String> {
        self.set.digest()
    }

    /// Fills `out` with the next whole batch; `false` when none is left (a last partial batch is
    /// not fed: TensorRT takes full batches only).
    fn fill(&mut self, out: &mut [f32]) -> Result<bool> {
        if out.len() != self.batch * self.item_len {
            return Err(Error::input(
                self.set.path(),
                format!(
                    "TensorRT asked for batches of {} values, but {} inputs of {} values make {}",
                    out.len(),
                    self.batch,
                    self.item_len,
                    self.batch * self.item_len
                ),
            ));
        }
        if self.next + self.batch > self.set.len() {
            return Ok(false);
        }
        for slot in out.chunks_exact_mut(self.item_len) {
            self.set.item(self.next, slot)?;
            self.next += 1;
        }
        self.batches_fed += 1;
        Ok(true)
    }

    /// The C view of this feeder, valid while `self` does not move.
    pub fn raw(&mut self, cache: &[u8]) -> ffi::Calibrator {
        ffi::Calibrator {
            user: (self as *mut Feeder).cast(),
            next_batch,
            cache: if cache.is_empty() { std::ptr::null() } else { cache.as_ptr().cast() },
            cache_bytes: cache.len(),
            write_cache,
        }
    }
}

unsafe extern "C" fn next_batch(
    user: *mut c_void,
    _name: *const c_char,
    host: *mut c_void,
    bytes: usize,
) -> i32 {
    // SAFETY: `user` is the `Feeder` behind `raw`, alive for the whole build; `host` holds
    // `bytes` bytes of f32-aligned memory the shim owns.
    let feeder = unsafe { &mut *user.cast::<Feeder>() };
    let out = unsafe { std::slice::from_raw_parts_mut(host.cast::<f32>(), bytes / 4) };
    match feeder.fill(out) {
        Ok(filled) => filled as i32,
        Err(error) => {
            feeder.error = Some(error);
            -1
        }
    }
}

unsafe extern "C" fn write_cache(user: *mut c_void, data: *const c_void, bytes: usize) {
    // SAFETY: as above; `data` holds `bytes` bytes for the duration of the call.
    let feeder = unsafe { &mut *user.cast::<Feeder>() };
    feeder.cache_out = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), bytes) }.to_vec();
}
