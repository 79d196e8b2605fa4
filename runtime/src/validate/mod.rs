//! `validate`: run a reference and a candidate model on the same inputs and say whether the
//! candidate keeps enough of the reference's quality, by one gate metric against a budget.

#[cfg(feature = "tensorrt")]
pub mod calibration_set;
pub mod compare;
pub mod data;
pub mod map;
pub mod miou;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::backend::{self, BackendOptions, PrepareOptions};
use crate::capture;
use crate::model::{Model, Task, TaskSpec};
use crate::pipeline::{Pipeline, Sample};
use crate::postprocess::Prediction;
use crate::{Error, Result};
use compare::{cosine, AbsDiff};
use data::{Dataset, Samples};

pub const SCHEMA: &str = "edgert.validate/1";
/// Worst inputs listed in a report.
const WORST: usize = 5;

#[derive(Debug, Clone)]
pub struct ValidateConfig {
    pub reference_backend: String,
    pub candidate_backend: String,
    pub backend_options: BackendOptions,
    /// Threads and the memory limit (the batch is 1).
    pub prepare: PrepareOptions,
    /// Allowed loss as a fraction: 0.01 keeps ≥ 99 % of the reference's quality (MLPerf's rule).
    pub budget: f64,
    /// Set (by Ctrl-C) to stop: the samples compared so far are reported, with no verdict.
    pub stop: Arc<AtomicBool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub model: String,
    pub sha256: String,
    pub precision: String,
    pub backend: String,
    /// With labels: share of correct top-1 (classifiers).
    pub accuracy: Option<f64>,
}

/// The metric that decides: 1 is as good as the reference; within budget when ≥ 1 − budget.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    /// `accuracy_kept` (labelled classifiers: candidate / reference accuracy), `top1_agreement`
    /// (unlabelled classifiers), `map50` (boxes against the reference's; `mask_map50`,
    /// `oks_map50`, `rotated_map50` matched by masks, keypoints, rotated boxes), `miou`
    /// (semantic maps), `cosine` (raw).
    pub metric: &'static str,
    pub value: f64,
    pub required: f64,
    pub within_budget: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorstInput {
    pub input: String,
    pub cosine: f64,
    pub reference_top1: Option<usize>,
    pub candidate_top1: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ValidateReport {
    pub schema: &'static str,
    pub data: String,
    /// Samples compared: all of the data's, unless interrupted.
    pub samples: usize,
    /// Stopped by a signal before the end of the data: the figures are of `samples` only, and
    /// the gate is not passed on part of the data.
    pub interrupted: bool,
    pub budget: f64,
    pub reference: Side,
    pub candidate: Side,
    /// Relative accuracy drop with labels: (reference − candidate) / reference.
    pub accuracy_drop: Option<f64>,
    pub top1_agreement: Option<f64>,
    /// Share of inputs whose reference top-1 is in the candidate's top-5.
    pub reference_top1_in_candidate_top5: Option<f64>,
    pub cosine_mean: f64,
    pub cosine_min: f64,
    pub max_abs_diff: f64,
    pub mean_abs_diff: f64,
    /// mAP@0.5 of the candidate's detections against the reference's (detectors), matched as
    /// `gate.metric` says: boxes, masks, keypoints or rotated boxes.
    pub map50: Option<f64>,
    /// Mean IoU of the candidate's semantic maps against the reference's.
    pub miou: Option<f64>,
    pub worst_inputs: Vec<WorstInput>,
    pub gate: Gate,
}

fn open(model: &Model, backend_name: &str, config: &ValidateConfig) -> Result<Pipeline> {
    let selected = backend::select_with(backend_name, &config.backend_options)?;
    Pipeline::open(model.clone(), selected, config.prepare)
}

/// Raw outputs and the prediction of one sample.
fn infer(p: &mut Pipeline, sample: Sample) -> Result<(Vec<f32>, Prediction)> {
    let (input, geometries) = p.preprocess(&[sample])?;
    let outputs = p.infer(&input)?;
    let prediction = p.postprocess(&outputs, &geometries)?.remove(0);
    Ok((outputs.iter().flat_map(|t| t.item(0).iter().copied()).collect(), prediction))
}

fn top_ids(prediction: &Prediction) -> Vec<usize> {
    match prediction {
        Prediction::Classes(c) => c.iter().map(|c| c.class_id).collect(),
        _ => Vec::new(),
    }
}

pub fn validate(
    reference: &Model,
    candidate: &Model,
    data: &Dataset,
    config: &ValidateConfig,
) -> Result<ValidateReport> {
    let task = reference.manifest.task.kind();
    if candidate.manifest.task.kind() != task {
        return Err(Error::Usage(format!(
            "{} is a {} model but {} is {}: nothing to compare",
            reference.source_path().display(),
            task.name(),
            candidate.source_path().display(),
            candidate.manifest.task.kind().name()
        )));
    }
    if data.is_empty() {
        return Err(Error::input(&data.path, "holds no samples"));
    }
    let mut ref_pipe = open(reference, &config.reference_backend, config)?;
    let mut cand_pipe = open(candidate, &config.candidate_backend, config)?;
    // Top-5 needs five classes from the candidate whatever its manifest says.
    if let TaskSpec::Classification(spec) = &mut cand_pipe.model.manifest.task {
        spec.top_k = spec.top_k.max(5);
    }

    let labelled = data.labelled() && task == Task::Classification;
    let (mut correct_ref, mut correct_cand, mut agree, mut in_top5) = (0usize, 0usize, 0usize, 0usize);
    let (mut diff, mut cosines, mut worst) = (AbsDiff::default(), Vec::new(), Vec::new());
    let (mut ref_boxes, mut cand_boxes) = (Vec::new(), Vec::new());
    let mut miou = miou::MeanIou::default();
    let mut done = 0;
    for index in 0..data.len() {
        if config.stop.load(Ordering::Relaxed) {
            break;
        }
        let image;
        let sample = match &data.items {
            Samples::Tensors(set) => Sample::Tensor(set.item(index)),
            Samples::Images(images) => {
                image = capture::load_image(&images[index].0)?;
                Sample::Image(&image)
            }
        };
        let (ref_raw, ref_pred) = infer(&mut ref_pipe, sample)?;
        let (cand_raw, cand_pred) = infer(&mut cand_pipe, sample)?;
        if ref_raw.len() != cand_raw.len() {
            return Err(Error::Usage(format!(
                "the models' outputs differ in size ({} and {} values): not the same model",
                ref_raw.len(),
                cand_raw.len()
            )));
        }
        diff.add(&ref_raw, &cand_raw);
        let cos = cosine(&ref_raw, &cand_raw);
        cosines.push(cos);
        let (r, c) = (top_ids(&ref_pred), top_ids(&cand_pred));
        if let (Some(&r1), Some(&c1)) = (r.first(), c.first()) {
            agree += usize::from(r1 == c1);
            in_top5 += usize::from(c.iter().take(5).any(|&x| x == r1));
            if labelled {
                let label = data.label(index, reference)?;
                correct_ref += usize::from(label == Some(r1));
                correct_cand += usize::from(label == Some(c1));
            }
        }
        worst.push(WorstInput {
            input: data.name(index),
            cosine: cos,
            reference_top1: r.first().copied(),
            candidate_top1: c.first().copied(),
        });
        match (ref_pred, cand_pred) {
            (Prediction::Boxes(rb), Prediction::Boxes(cb)) => {
                ref_boxes.push(rb);
                cand_boxes.push(cb);
            }
            (Prediction::Semantic(rm), Prediction::Semantic(cm)) => miou.add(&rm, &cm),
            _ => {}
        }
        done += 1;
    }
    if done == 0 {
        return Err(Error::Interrupted("before the first sample was compared".into()));
    }
    let interrupted = done < data.len();
    let n = done as f64;
    worst.sort_by(|a, b| a.cosine.total_cmp(&b.cosine));
    worst.truncate(WORST);
    let classifier = task == Task::Classification;
    let accuracy = |correct: usize| labelled.then_some(correct as f64 / n);
    let (acc_ref, acc_cand) = (accuracy(correct_ref), accuracy(correct_cand));
    let accuracy_drop = acc_ref.zip(acc_cand).map(|(r, c)| if r > 0.0 { (r - c) / r } else { 0.0 });
    let overlap = match &reference.manifest.task {
        TaskSpec::Detect(spec) => map::Overlap::of(spec),
        _ => map::Overlap::Boxes,
    };
    let map50 = reference
        .manifest
        .task
        .detects()
        .then(|| map::mean_average_precision(&ref_boxes, &cand_boxes, 0.5, overlap).unwrap_or(1.0));
    let miou = matches!(reference.manifest.task, TaskSpec::Semantic(_)).then(|| miou.mean().unwrap_or(1.0));
    let cosine_mean = cosines.iter().sum::<f64>() / n;
    let (metric, value) = match (accuracy_drop, classifier, map50, miou) {
        (Some(drop), _, _, _) => ("accuracy_kept", 1.0 - drop),
        (None, true, _, _) => ("top1_agreement", agree as f64 / n),
        (None, false, Some(map), _) => (overlap.metric(), map),
        (None, false, None, Some(miou)) => ("miou", miou),
        _ => ("cosine", cosine_mean),
    };
    let required = 1.0 - config.budget;
    let side = |m: &Model, p: &Pipeline, accuracy| Side {
        model: m.source_path().display().to_string(),
        sha256: m.sha256.clone(),
        precision: m.precision().name().to_string(),
        backend: p.backend.clone(),
        accuracy,
    };
    Ok(ValidateReport {
        schema: SCHEMA,
        data: data.path.display().to_string(),
        samples: done,
        interrupted,
        budget: config.budget,
        reference: side(reference, &ref_pipe, acc_ref),
        candidate: side(candidate, &cand_pipe, acc_cand),
        accuracy_drop,
        top1_agreement: classifier.then_some(agree as f64 / n),
        reference_top1_in_candidate_top5: classifier.then_some(in_top5 as f64 / n),
        cosine_mean,
        cosine_min: cosines.iter().copied().fold(f64::INFINITY, f64::min),
        max_abs_diff: diff.max,
        mean_abs_diff: diff.mean(),
        map50,
        miou,
        worst_inputs: worst,
        gate: Gate {
            metric,
            value,
            required,
            within_budget: !interrupted && value.is_finite() && value >= required - 1e-12,
        },
    })
}
