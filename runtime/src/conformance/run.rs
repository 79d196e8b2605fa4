//! One case on one backend: the model prepared at the data's batch size, each data set's input fed
//! in, each output compared element by element with the expected one.

use std::fmt;

use super::{read_tensor, Case, InputSource, Values};
use crate::backend::{Backend, PrepareOptions};
use crate::error::one_line;
use crate::model::{BareModelOptions, Model};
use crate::tensor::{Batch, BatchView};
use crate::Error;

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every element within the tolerance; the largest absolute difference seen.
    Passed { max_abs: f64 },
    /// Ran and gave other values, or failed while running.
    Failed(String),
    /// The backend, or edgert's model loading in front of it, cannot take the model.
    NotSupported(String),
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Passed { .. } => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::NotSupported(_) => "not supported",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Outcome::Passed { max_abs } => write!(f, "passed (largest difference {max_abs:.2e})"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
            Outcome::NotSupported(why) => write!(f, "not supported: {why}"),
        }
    }
}

/// Whether an error says the model is out of the backend's reach rather than wrongly run.
fn not_supported(e: &Error) -> bool {
    matches!(
        e,
        Error::UnsupportedOperator { .. }
            | Error::BackendCannotRun { .. }
            | Error::Input { .. }
            | Error::InvalidModel { .. }
            | Error::Manifest { .. }
    )
}

pub fn run(case: &Case, backend: &dyn Backend) -> Outcome {
    let not_run = |e: Error| {
        let text = one_line(&e);
        if not_supported(&e) {
            Outcome::NotSupported(text)
        } else {
            Outcome::Failed(text)
        }
    };
    let model = match Model::load(&case.model, &BareModelOptions::default()) {
        Ok(m) => m,
        Err(e) => return not_run(e),
    };
    let mut max_abs = 0f64;
    for (k, set) in case.data_sets.iter().enumerate() {
        let input = match set.inputs.as_slice() {
            [InputSource::File(path)] => match read_tensor(path) {
                Ok(v) => v,
                Err(e) => return Outcome::Failed(one_line(&e)),
            },
            [InputSource::Ramp] => ramp(&model.input_shape(1)),
            more => {
                return Outcome::NotSupported(format!(
                    "{} inputs; edgert runs single-input models",
                    more.len()
                ))
            }
        };
        if input.shape.is_empty() {
            return Outcome::NotSupported("a scalar input".into());
        }
        let options = PrepareOptions { batch: input.shape[0], ..PrepareOptions::default() };
        let outputs = backend.prepare(&model, &options).and_then(|p| p.spawn()).and_then(|mut s| {
            s.run_batch(Batch { shape: &input.shape, values: BatchView::F32(&input.data) })
        });
        let outputs = match outputs {
            Ok(o) => o,
            Err(e) => return not_run(e),
        };
        if outputs.len() != set.outputs.len() {
            let (got, want) = (outputs.len(), set.outputs.len());
            return Outcome::Failed(format!("data set {k}: {got} outputs, {want} expected"));
        }
        for (i, (got, path)) in outputs.iter().zip(&set.outputs).enumerate() {
            let want = match read_tensor(path) {
                Ok(v) => v,
                Err(e) => return Outcome::Failed(one_line(&e)),
            };
            match compare(&got.data, &want, case.rtol, case.atol) {
                Ok(diff) => max_abs = max_abs.max(diff),
                Err(why) => return Outcome::Failed(format!("data set {k}, output {i}: {why}")),
            }
        }
    }
    Outcome::Passed { max_abs }
}

/// `arange(n) / n` in `shape`, as float32.
fn ramp(shape: &[usize]) -> Values {
    let n = shape.iter().product::<usize>();
    let data = (0..n).map(|i| (i as f64 / n as f64) as f32).collect();
    Values { shape: shape.to_vec(), data }
}

/// Every element within `atol + rtol * |expected|` (NaN where NaN is expected, infinities equal);
/// the largest absolute difference, or how many are outside and the worst of them.
pub fn compare(got: &[f32], want: &Values, rtol: f64, atol: f64) -> Result<f64, String> {
    if got.len() != want.data.len() {
        return Err(format!("{} values, {} expected (shape {:?})", got.len(), want.data.len(), want.shape));
    }
    let (mut max_abs, mut outside) = (0f64, 0usize);
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&g, &w)) in got.iter().zip(&want.data).enumerate() {
        let (g, w) = (f64::from(g), f64::from(w));
        if (g.is_nan() && w.is_nan()) || g == w {
            continue;
        }
        let diff = (g - w).abs();
        // An infinite difference is never within a tolerance, even one scaled by an infinity.
        if diff.is_finite() && diff <= atol + rtol * w.abs() {
            max_abs = max_abs.max(diff);
            continue;
        }
        outside += 1;
        // NaN against a number, or infinities of opposite sign or against a number: worst of all.
        let excess = if diff.is_finite() { diff / (atol + rtol * w.abs()) } else { f64::INFINITY };
        if worst.is_none_or(|(_, e)| excess > e) {
            worst = Some((i, excess));
        }
    }
    match worst {
        None => Ok(max_abs),
        Some((i, _)) => Err(format!(
            "{outside} of {} values outside tolerance; worst at {i}: {} where {} was expected",
            got.len(),
            got[i],
            want.data[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(data: &[f32]) -> Values {
        Values { shape: vec![data.len()], data: data.to_vec() }
    }

    #[test]
    fn within_tolerance_passes_with_its_largest_difference() {
        let d = compare(
            &[1.0, 100.05, f32::NAN, f32::INFINITY],
            &values(&[1.0, 100.0, f32::NAN, f32::INFINITY]),
            1e-3,
            1e-7,
        );
        assert!((d.unwrap() - 0.05).abs() < 1e-4);
    }

    #[test]
    fn outside_tolerance_names_the_worst_element() {
        let err = compare(&[1.0, 2.0, 0.5], &values(&[1.0, 2.01, 0.0]), 1e-3, 1e-7).unwrap_err();
        assert!(
            err.starts_with("2 of 3 values outside tolerance; worst at 2: 0.5 where 0 was expected"),
            "{err}"
        );
        for (got, want) in
            [(f32::NAN, 1.0), (1.0, f32::NAN), (f32::INFINITY, f32::NEG_INFINITY), (f32::INFINITY, 3.0)]
        {
            assert!(compare(&[got], &values(&[want]), 1e-3, 1e-7).is_err(), "{got} against {want}");
        }
        assert!(compare(&[1.0], &values(&[1.0, 2.0]), 1e-3, 1e-7)
            .unwrap_err()
            .contains("1 values, 2 expected"));
    }

    #[test]
    fn a_ramp_as_onnx_makes_it() {
        assert_eq!(ramp(&[1, 4]).data, [0.0, 0.25, 0.5, 0.75]);
    }
}
