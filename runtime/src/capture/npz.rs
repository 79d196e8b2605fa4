//! Labelled tensor sets in `.npz` files: `x` (N, ...) f32 samples and optional `y` integer labels,
//! as the digits and MNIST test sets ship.

use std::path::Path;

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
    let mut archive =
        npyz::npz::NpzArchive::open(path).map_err(|e| bad(format!("not a readable .npz ({e})")))?;
    let x = archive
        .by_name("x")
        .map_err(|e| bad(format!("cannot read array 'x' ({e})")))?
        .ok_or_else(|| bad("has no array 'x'".into()))?;
    let shape: Vec<usize> = x.shape().iter().map(|&d| d as usize).collect();
    if shape.len() < 2 || shape[1..] != *item_shape {
        return Err(bad(format!("'x' has shape {shape:?}; the model wants (N, {item_shape:?})")));
    }
    let samples: Vec<f32> = x.into_vec().map_err(|e| bad(format!("'x' is not f32 ({e})")))?;
    let labels = match archive.by_name("y").map_err(|e| bad(format!("cannot read array 'y' ({e})")))? {
        None => None,
        Some(y) => {
            let labels: Vec<i64> = y.into_vec().map_err(|e| bad(format!("'y' is not int64 ({e})")))?;
            if labels.len() != shape[0] {
                return Err(bad(format!("'y' has {} labels for {} samples", labels.len(), shape[0])));
            }
            Some(labels)
        }
    };
    Ok(TensorSet { item_shape: item_shape.to_vec(), samples, labels })
}
