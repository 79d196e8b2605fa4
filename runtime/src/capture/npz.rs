//! Labelled tensor sets in `.npz` files: `x` (N, ...) f32 samples and optional `y` integer labels,
//! as the digits and MNIST test sets ship.

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
    let file = crate::infile::open(path, crate::infile::TENSORS)?;
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
    if count == 0 {
        return Err(bad("'x' holds no samples".into()));
    }
    let item_len = samples.len() / count;
    if let Some(at) = samples.iter().position(|v| !v.is_finite()) {
        let value = samples[at];
        return Err(bad(format!("'x' holds {value} (sample {}, value {})", at / item_len, at % item_len)));
    }
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
fn read<T: Deserialize + Copy, R: Read + Seek>(
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
    let shape: Vec<usize> = array.shape().iter().map(|&d| d as usize).collect();
    check(array.shape())?;
    let fortran = array.order() == npyz::Order::Fortran;
    let values =
        array.into_vec().map_err(|e| Error::input(path, format!("'{name}' is not {type_name} ({e})")))?;
    Ok(Some(if fortran { c_order(&values, &shape) } else { values }))
}

/// Values numpy stored column-major (`order='F'`, or a transposed array) in row-major order.
fn c_order<T: Copy>(values: &[T], shape: &[usize]) -> Vec<T> {
    // Column-major strides: the first axis moves fastest.
    let strides: Vec<usize> = shape.iter().scan(1, |s, &d| Some(std::mem::replace(s, *s * d))).collect();
    let mut index = vec![0; shape.len()];
    let mut out = Vec::with_capacity(values.len());
    for _ in 0..values.len() {
        out.push(values[index.iter().zip(&strides).map(|(i, s)| i * s).sum::<usize>()]);
        // The next row-major index: the last axis moves fastest.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn column_major_values_come_out_row_major() {
        // numpy: np.arange(6).reshape(2, 3) stored with order='F' holds 0 3 1 4 2 5.
        assert_eq!(super::c_order(&[0, 3, 1, 4, 2, 5], &[2, 3]), [0, 1, 2, 3, 4, 5]);
        // np.arange(24).reshape(2, 3, 4) in order='F'.
        let c: Vec<usize> = (0..24).collect();
        let f: Vec<usize> = (0..24).map(|k| c[(k % 2) * 12 + (k / 2 % 3) * 4 + k / 6]).collect();
        assert_eq!(super::c_order(&f, &[2, 3, 4]), c);
    }
}
