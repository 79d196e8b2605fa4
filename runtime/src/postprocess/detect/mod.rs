//! `task = "detect"`: the outputs of detectors from the field decoded into boxes in source-image
//! pixels. Each format (`DetectFormat`) finds its outputs and checks their shapes once, when the
//! model is prepared; decoding then yields candidates in input pixels, which NMS (for the formats
//! whose boxes overlap), `max_det` and the preprocessing's geometry finish.

mod dense;
mod detectnet;
mod efficient_nms;
mod labels_boxes_scores;
mod queries;
mod ssd;

use super::{nms, Detection};
use crate::model::manifest::{DetectFormat, DetectSpec};
use crate::preprocess::Geometry;
use crate::tensor::{describe, HostTensor, TensorSpec};

/// A box before NMS: class, score and corners in input pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub class_id: usize,
    pub score: f32,
    pub bbox: [f32; 4],
}

/// Where a format's tensors are among the model's outputs, and their sizes.
#[derive(Debug, Clone)]
enum Layout {
    Dense(dense::Dense),
    Queries(queries::Queries),
    Ssd(ssd::Ssd),
    EfficientNms(efficient_nms::EfficientNms),
    Detectnet(detectnet::Detectnet),
    LabelsBoxesScores(labels_boxes_scores::LabelsBoxesScores),
}

/// A detector's outputs, resolved and checked, ready to decode each inference.
#[derive(Debug, Clone)]
pub struct Decoder {
    spec: DetectSpec,
    layout: Layout,
    /// (height, width) of the model's input.
    input_size: (usize, usize),
}

impl Decoder {
    /// Finds the format's outputs among `outputs` and checks their shapes; the error names the
    /// output and what the format needs.
    pub fn new(
        spec: &DetectSpec,
        outputs: &[TensorSpec],
        input_size: (usize, usize),
    ) -> Result<Decoder, String> {
        let layout = match spec.format {
            DetectFormat::Yolov5 | DetectFormat::Yolov8 => {
                Layout::Dense(dense::Dense::new(spec.format, outputs)?)
            }
            DetectFormat::End2end | DetectFormat::Rtdetr => {
                Layout::Queries(queries::Queries::new(spec.format, outputs)?)
            }
            DetectFormat::Ssd => Layout::Ssd(ssd::Ssd::new(spec, outputs)?),
            DetectFormat::EfficientNms => {
                Layout::EfficientNms(efficient_nms::EfficientNms::new(spec, outputs)?)
            }
            DetectFormat::DetectnetV2 => Layout::Detectnet(detectnet::Detectnet::new(spec, outputs)?),
            DetectFormat::LabelsBoxesScores => {
                Layout::LabelsBoxesScores(labels_boxes_scores::LabelsBoxesScores::new(outputs)?)
            }
        };
        Ok(Decoder { spec: spec.clone(), layout, input_size })
    }

    /// How many classes the outputs hold, where the format says (for checking labels).
    pub fn classes(&self) -> Option<usize> {
        match &self.layout {
            Layout::Dense(d) => Some(d.classes),
            Layout::Queries(q) => q.classes(),
            Layout::Ssd(s) => Some(s.classes),
            Layout::Detectnet(d) => Some(d.classes),
            Layout::EfficientNms(_) | Layout::LabelsBoxesScores(_) => None,
        }
    }

    /// The boxes of batch item `item`, best first, in source-image pixels.
    pub fn decode(
        &self,
        outputs: &[HostTensor],
        item: usize,
        geometry: &Geometry,
        label: impl Fn(usize) -> String,
    ) -> Vec<Detection> {
        let spec = &self.spec;
        let candidates = match &self.layout {
            Layout::Dense(d) => d.candidates(outputs, item, spec.confidence),
            Layout::Queries(q) => q.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::Ssd(s) => s.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::EfficientNms(e) => e.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::Detectnet(d) => d.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::LabelsBoxesScores(l) => l.candidates(outputs, item, spec.confidence),
        };
        let kept = if spec.format.needs_nms() {
            nms::suppress(candidates, spec.iou, spec.agnostic, spec.max_det)
        } else {
            candidates.into_iter().take(spec.max_det).collect()
        };
        let (sw, sh) = (geometry.source_width as f32, geometry.source_height as f32);
        kept.into_iter()
            .map(|c| {
                let (x1, y1) = geometry.to_source(c.bbox[0], c.bbox[1]);
                let (x2, y2) = geometry.to_source(c.bbox[2], c.bbox[3]);
                let bbox = [x1.clamp(0.0, sw), y1.clamp(0.0, sh), x2.clamp(0.0, sw), y2.clamp(0.0, sh)];
                Detection { class_id: c.class_id, label: label(c.class_id), score: c.score, bbox }
            })
            .collect()
    }
}

/// The output of `outputs` a format reads: found by `name` (a part of it, any case) where given
/// and present, else the only one of a rank; its fixed dimensions after the batch.
fn output(
    outputs: &[TensorSpec],
    format: DetectFormat,
    name: Option<&str>,
    rank: usize,
) -> Result<(usize, Vec<usize>), String> {
    let by_name = name.and_then(|n| outputs.iter().position(|o| o.name.to_ascii_lowercase().contains(n)));
    let index = match by_name {
        Some(i) => i,
        None => {
            match outputs.iter().enumerate().filter(|(_, o)| o.shape.len() == rank).collect::<Vec<_>>()[..] {
                [(i, _)] => i,
                _ => {
                    let what = name.map_or(String::new(), |n| format!(" named like '{n}'"));
                    return Err(format!(
                        "format '{}' needs one output{what} of {rank} dimensions; the model's are {}",
                        format.name(),
                        describe(outputs)
                    ));
                }
            }
        }
    };
    let o = &outputs[index];
    let dims: Option<Vec<usize>> = o.shape.iter().skip(1).copied().collect();
    match dims {
        Some(dims) if o.shape.len() == rank => Ok((index, dims)),
        _ => Err(format!(
            "format '{}' needs output '{}' to have {rank} fixed dimensions, it has {}",
            format.name(),
            o.name,
            o.shape_text()
        )),
    }
}

/// The best of `scores` and its index (the first of equals), as `argmax` picks.
fn best(scores: impl Iterator<Item = f32>) -> (usize, f32) {
    scores.enumerate().fold((0, f32::NEG_INFINITY), |b, (i, s)| if s > b.1 { (i, s) } else { b })
}

/// Whether a score is kept: strictly over the threshold, as Ultralytics keeps them; NaN never.
fn passes(score: f32, confidence: f32) -> bool {
    score > confidence
}

/// `[cx, cy, w, h]` as corners.
fn corners(cx: f32, cy: f32, w: f32, h: f32) -> [f32; 4] {
    [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]
}

#[cfg(test)]
mod tests;
