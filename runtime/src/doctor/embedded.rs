//! The model the doctor carries (the digits MLP, 19 KB), ten test images, and the logits ONNX
//! Runtime gave for them (`digits_reference.json`, made by `make_reference.py`): any backend that
//! runs it must give the same.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use serde::Deserialize;

use crate::backend::{BackendOptions, PrepareOptions, Selected};
use crate::model::{BareModelOptions, Model};
use crate::pipeline::Pipeline;
use crate::tensor::HostTensor;

const ONNX: &[u8] = include_bytes!("../../../models/digits_mlp_nchw.onnx");
const MANIFEST: &str = include_str!("../../../models/digits_mlp_nchw.toml");
/// Its INT8 Q/DQ form (9 KB), for TensorRT's INT8 build.
const INT8_ONNX: &[u8] = include_bytes!("../../../models/digits_mlp_int8_qdq.onnx");
const INT8_MANIFEST: &str = include_str!("../../../models/digits_mlp_int8_qdq.toml");
const REFERENCE: &str = include_str!("digits_reference.json");

/// Largest difference from ONNX Runtime's logits that counts as the same answer: the logits are
/// tens in size; float reassociation across backends moves them by ~1e-5.
pub const TOLERANCE: f32 = 1e-3;

#[derive(Deserialize)]
pub struct Reference {
    /// What computed the logits, `onnxruntime 1.32.0`.
    pub made_by: String,
    pub samples: Vec<Sample>,
}

#[derive(Deserialize)]
pub struct Sample {
    pub label: usize,
    pub input: Vec<f32>,
    pub logits: Vec<f32>,
}

/// The reference, parsed once per process.
pub fn reference() -> &'static Reference {
    static PARSED: LazyLock<Reference> = LazyLock::new(|| {
        serde_json::from_str(REFERENCE).expect("digits_reference.json is valid (a unit test reads it)")
    });
    &PARSED
}

/// The models written out to a folder of their own, which is removed when this is dropped.
pub struct Written {
    pub dir: PathBuf,
    pub manifest: PathBuf,
    pub int8_manifest: PathBuf,
}

impl Written {
    pub fn new() -> std::io::Result<Written> {
        // One folder per use: checks (and tests) in one process must not remove each other's.
        static USES: AtomicUsize = AtomicUsize::new(0);
        let n = USES.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("edgert-doctor-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let written = Written {
            manifest: dir.join("digits_mlp_nchw.toml"),
            int8_manifest: dir.join("digits_mlp_int8_qdq.toml"),
            dir,
        };
        std::fs::write(written.dir.join("digits_mlp_nchw.onnx"), ONNX)?;
        std::fs::write(&written.manifest, MANIFEST)?;
        std::fs::write(written.dir.join("digits_mlp_int8_qdq.onnx"), INT8_ONNX)?;
        std::fs::write(&written.int8_manifest, INT8_MANIFEST)?;
        Ok(written)
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a backend gave for the reference images, against what it should have.
pub struct Agreement {
    /// Largest difference from the reference logits.
    pub max_diff: f32,
    /// Images whose top-1 class is their label.
    pub correct: usize,
    pub samples: usize,
}

impl Agreement {
    /// Within `tolerance` of what it was compared with, and every digit right.
    pub fn within(&self, tolerance: f32) -> bool {
        self.max_diff <= tolerance && self.correct == self.samples
    }

    pub fn agrees(&self) -> bool {
        self.within(TOLERANCE)
    }

    pub fn text(&self) -> String {
        self.text_against(&format!("{}'s", reference().made_by), TOLERANCE)
    }

    pub fn text_against(&self, what: &str, tolerance: f32) -> String {
        format!(
            "{}/{} digits right, logits within {:.1e} of {what} (tolerance {tolerance:.0e})",
            self.correct, self.samples, self.max_diff
        )
    }
}

/// Runs the reference images through `backend` one at a time; any error says which step failed.
pub fn run_on(backend: &str, options: &BackendOptions) -> Result<Agreement, String> {
    let written =
        Written::new().map_err(|e| format!("writing the embedded model to a temporary folder: {e}"))?;
    let model = load(&written.manifest)?;
    let selected = crate::backend::select_with(backend, options).map_err(|e| e.to_string())?;
    Ok(against_reference(&logits(&model, selected)?))
}

pub fn load(manifest: &std::path::Path) -> Result<Model, String> {
    Model::load(manifest, &BareModelOptions::default()).map_err(|e| format!("loading: {e}"))
}

/// The logits of each reference image, on a selected backend.
pub fn logits(model: &Model, selected: Selected) -> Result<Vec<Vec<f32>>, String> {
    let mut pipeline = Pipeline::open(model.clone(), selected, PrepareOptions::default())
        .map_err(|e| format!("preparing: {e}"))?;
    reference()
        .samples
        .iter()
        .map(|sample| {
            let input = HostTensor::new(model.input_shape(1), sample.input.clone());
            let outputs = pipeline.infer(&input).map_err(|e| format!("running: {e}"))?;
            let logits = outputs.into_iter().next().map(|t| t.data).unwrap_or_default();
            if logits.len() != sample.logits.len() {
                return Err(format!("{} logits, expected {}", logits.len(), sample.logits.len()));
            }
            Ok(logits)
        })
        .collect()
}

/// How far `got` is from `want`, image by image, and how many images `got` classifies right.
pub fn compare(got: &[Vec<f32>], want: &[Vec<f32>]) -> Agreement {
    let reference = reference();
    let mut agreement = Agreement { max_diff: 0.0, correct: 0, samples: got.len() };
    for ((g, w), sample) in got.iter().zip(want).zip(&reference.samples) {
        let diff = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        agreement.max_diff = agreement.max_diff.max(diff);
        agreement.correct += usize::from(top1(g) == sample.label);
    }
    agreement
}

fn against_reference(got: &[Vec<f32>]) -> Agreement {
    let want: Vec<Vec<f32>> = reference().samples.iter().map(|s| s.logits.clone()).collect();
    compare(got, &want)
}

fn top1(v: &[f32]) -> usize {
    v.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use sha2::Digest;

    use super::*;

    #[test]
    fn the_reference_is_for_the_model_carried_and_covers_every_digit() {
        let reference = reference();
        let digest: String = sha2::Sha256::digest(ONNX).iter().map(|b| format!("{b:02x}")).collect();
        let json: serde_json::Value = serde_json::from_str(REFERENCE).unwrap();
        assert_eq!(json["model_sha256"], digest.as_str());
        let mut labels: Vec<usize> = reference.samples.iter().map(|s| s.label).collect();
        labels.sort();
        assert_eq!(labels, (0..10).collect::<Vec<_>>());
        assert!(reference.samples.iter().all(|s| s.input.len() == 64 && s.logits.len() == 10));
    }

    #[test]
    fn the_cpu_backend_gives_the_reference_logits() {
        let agreement = run_on("cpu", &BackendOptions::default()).unwrap();
        assert!(agreement.agrees(), "{}", agreement.text());
        assert_eq!(agreement.samples, 10);
    }

    #[test]
    fn the_written_model_is_removed_afterwards() {
        let written = Written::new().unwrap();
        let dir = written.manifest.parent().unwrap().to_owned();
        assert!(written.manifest.exists());
        drop(written);
        assert!(!dir.exists());
    }
}
