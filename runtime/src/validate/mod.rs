//! `validate`: run a reference and a candidate model on the same inputs and say whether the
//! candidate keeps enough of the reference's quality, by one gate metric against a budget.

#[cfg(feature = "tensorrt")]
pub(crate) mod calibration_set;
pub mod compare;
pub(crate) mod data;
pub(crate) mod map;
pub(crate) mod miou;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::backend::{self, BackendOptions, PrepareOptions};
use crate::capture;
use crate::choice::Choice;
use crate::model::{Model, Task, TaskSpec};
use crate::pipeline::{Pipeline, Sample};
use crate::postprocess::{Detection, Prediction};
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
    let task = comparable(reference, candidate, data)?;
    let mut ref_pipe = open(reference, &config.reference_backend, config)?;
    let mut cand_pipe = open(candidate, &config.candidate_backend, config)?;
    // Top-5 needs five classes from the candidate whatever its manifest says.
    if let TaskSpec::Classification(spec) = &mut cand_pipe.model.manifest.task {
        spec.top_k = spec.top_k.max(5);
    }
    let labelled = data.labelled() && task == Task::Classification;
    let mut tally = Tally::default();
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
        let label = if labelled { Some(data.label(index, reference)?) } else { None };
        tally.add(data.name(index), label, infer(&mut ref_pipe, sample)?, infer(&mut cand_pipe, sample)?)?;
    }
    if tally.done == 0 {
        return Err(Error::Interrupted("before the first sample was compared".into()));
    }
    let side = |m: &Model, p: &Pipeline| Side {
        model: m.source_path().display().to_string(),
        sha256: m.sha256.clone(),
        precision: m.precision().name().to_string(),
        backend: p.backend.clone(),
        accuracy: None,
    };
    let sides = (side(reference, &ref_pipe), side(candidate, &cand_pipe));
    Ok(tally.report(data, &reference.manifest.task, labelled, sides, config.budget))
}

/// The task both models share, or why they cannot be compared on this data.
fn comparable(reference: &Model, candidate: &Model, data: &Dataset) -> Result<Task> {
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
    Ok(task)
}

/// What the comparison has counted, sample by sample.
#[derive(Default)]
struct Tally {
    done: usize,
    correct_ref: usize,
    correct_cand: usize,
    agree: usize,
    in_top5: usize,
    diff: AbsDiff,
    cosines: Vec<f64>,
    worst: Vec<WorstInput>,
    ref_boxes: Vec<Vec<Detection>>,
    cand_boxes: Vec<Vec<Detection>>,
    miou: miou::MeanIou,
}

impl Tally {
    /// One sample's outputs and predictions from both sides; `label` is Some for a labelled
    /// classifier's data (and None inside where the sample has no label).
    fn add(
        &mut self,
        input: String,
        label: Option<Option<usize>>,
        (ref_raw, ref_pred): (Vec<f32>, Prediction),
        (cand_raw, cand_pred): (Vec<f32>, Prediction),
    ) -> Result<()> {
        if ref_raw.len() != cand_raw.len() {
            return Err(Error::Usage(format!(
                "the models' outputs differ in size ({} and {} values): not the same model",
                ref_raw.len(),
                cand_raw.len()
            )));
        }
        self.diff.add(&ref_raw, &cand_raw);
        let cos = cosine(&ref_raw, &cand_raw);
        self.cosines.push(cos);
        let (r, c) = (top_ids(&ref_pred), top_ids(&cand_pred));
        if let (Some(&r1), Some(&c1)) = (r.first(), c.first()) {
            self.agree += usize::from(r1 == c1);
            self.in_top5 += usize::from(c.iter().take(5).any(|&x| x == r1));
            if let Some(label) = label {
                self.correct_ref += usize::from(label == Some(r1));
                self.correct_cand += usize::from(label == Some(c1));
            }
        }
        self.worst.push(WorstInput {
            input,
            cosine: cos,
            reference_top1: r.first().copied(),
            candidate_top1: c.first().copied(),
        });
        match (ref_pred, cand_pred) {
            (Prediction::Boxes(rb), Prediction::Boxes(cb)) => {
                self.ref_boxes.push(rb);
                self.cand_boxes.push(cb);
            }
            (Prediction::Semantic(rm), Prediction::Semantic(cm)) => self.miou.add(&rm, &cm),
            _ => {}
        }
        self.done += 1;
        Ok(())
    }

    /// The figures and the gate's verdict on the samples counted (at least one).
    fn report(
        mut self,
        data: &Dataset,
        task: &TaskSpec,
        labelled: bool,
        (mut reference, mut candidate): (Side, Side),
        budget: f64,
    ) -> ValidateReport {
        let interrupted = self.done < data.len();
        let n = self.done as f64;
        self.worst.sort_by(|a, b| a.cosine.total_cmp(&b.cosine));
        self.worst.truncate(WORST);
        let classifier = task.kind() == Task::Classification;
        let accuracy = |correct: usize| labelled.then_some(correct as f64 / n);
        (reference.accuracy, candidate.accuracy) = (accuracy(self.correct_ref), accuracy(self.correct_cand));
        let accuracy_drop =
            reference.accuracy.zip(candidate.accuracy).map(|(r, c)| if r > 0.0 { (r - c) / r } else { 0.0 });
        let overlap = match task {
            TaskSpec::Detect(spec) => map::Overlap::of(spec),
            _ => map::Overlap::Boxes,
        };
        let map50 = task.detects().then(|| {
            map::mean_average_precision(&self.ref_boxes, &self.cand_boxes, 0.5, overlap).unwrap_or(1.0)
        });
        let miou = matches!(task, TaskSpec::Semantic(_)).then(|| self.miou.mean().unwrap_or(1.0));
        let cosine_mean = self.cosines.iter().sum::<f64>() / n;
        let (metric, value) = match (accuracy_drop, classifier, map50, miou) {
            (Some(drop), _, _, _) => ("accuracy_kept", 1.0 - drop),
            (None, true, _, _) => ("top1_agreement", self.agree as f64 / n),
            (None, false, Some(map), _) => (overlap.metric(), map),
            (None, false, None, Some(miou)) => ("miou", miou),
            _ => ("cosine", cosine_mean),
        };
        let required = 1.0 - budget;
        ValidateReport {
            schema: SCHEMA,
            data: data.path.display().to_string(),
            samples: self.done,
            interrupted,
            budget,
            reference,
            candidate,
            accuracy_drop,
            top1_agreement: classifier.then_some(self.agree as f64 / n),
            reference_top1_in_candidate_top5: classifier.then_some(self.in_top5 as f64 / n),
            cosine_mean,
            cosine_min: self.cosines.iter().copied().fold(f64::INFINITY, f64::min),
            max_abs_diff: self.diff.max,
            mean_abs_diff: self.diff.mean(),
            map50,
            miou,
            worst_inputs: self.worst,
            gate: Gate {
                metric,
                value,
                required,
                within_budget: !interrupted && value.is_finite() && value >= required - 1e-12,
            },
        }
    }
}
