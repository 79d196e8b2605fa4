//! Labelled tensor sets in `.npz` files: `x` (N, ...) f32 samples and optional `y` integer labels,
//! as the digits and MNIST test sets ship.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use npyz::{Deserialize, NpyFile};
use zip::result::ZipError;
use zip::ZipArchive;

use crate::{Error, Result};

/// Samples of one model input, row-major, with their labels when the file has `y`.
#[derive(Debug, Clone)]
pub struct TensorSet {
    pub item_shape: Vec<usize>,
    pub samples: Vec<f32>,
    pub labels: Option<Vec<i64>>,
}

impl TensorSet {
    pub fn len(&self) -> usize {
        self.samples.len() / self.item_len().max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn item_len(&self) -> usize {
        self.item_shape.iter().product()
    }

    pub fn item(&self, index: usize) -> &[f32] {
        let n = self.item_len();
        &self.samples[index * n..(index + 1) * n]
    }
}

/// Reads `x` and `y`, checking that each sample has `item_shape` (the model input without batch).
pub fn load(path: &Path, item_shape: &[usize]) -> Result<TensorSet> {
    let bad = |reason: String| Error::input(path, reason);
    let file = File::open(path).map_err(|e| bad(format!("cannot open ({e})")))?;
    let mut archive =
        ZipArchive::new(BufReader::new(file)).map_err(|e| bad(format!("not a readable .npz ({e})")))?;
    let mut count = 0;
    let samples = read::<f32, _>(path, &mut archive, "x", "f32", |shape| {
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        if shape.len() < 2 || shape[1..] != *item_shape {
            return Err(bad(format!("'x' has shape {shape:?}; the model wants (N, {item_shape:?})")));
        }
        count = shape[0];
        Ok(())
    })?
    .ok_or_else(|| bad("has no array 'x'".into()))?;
    let labels = read::<i64, _>(path, &mut archive, "y", "int64", |_| Ok(()))?;
    if let Some(labels) = &labels {
        if labels.len() != count {
            return Err(bad(format!("'y' has {} labels for {count} samples", labels.len())));
        }
    }
    Ok(TensorSet { item_shape: item_shape.to_vec(), samples, labels })
}

/// The values of the array numpy stored as `NAME.npy`, its shape passed to `check` before they
/// are read; `None` when the archive has no such array.
fn read<T: Deserialize, R: Read + Seek>(
    path: &Path,
    archive: &mut ZipArchive<R>,
    name: &str,
    type_name: &str,
    check: impl FnOnce(&[u64]) -> Result<()>,
) -> Result<Option<Vec<T>>> {
    let cannot = |e: &dyn std::fmt::Display| Error::input(path, format!("cannot read array '{name}' ({e})"));
    let entry = match archive.by_name(&format!("{name}.npy")) {
        Ok(entry) => entry,
        Err(ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(cannot(&e)),
    };
    let array = NpyFile::new(entry).map_err(|e| cannot(&e))?;
    check(array.shape())?;
    let values =
        array.into_vec().map_err(|e| Error::input(path, format!("'{name}' is not {type_name} ({e})")))?;
    Ok(Some(values))
}
