//! `task = "detect"`: the outputs of detectors from the field decoded into boxes in source-image
//! pixels. Each format (`DetectFormat`) finds its outputs and checks their shapes once, when the
//! model is prepared; decoding then yields candidates in input pixels, which NMS (for the formats
//! whose boxes overlap), `max_det` and the preprocessing's geometry finish. Segment, pose and OBB
//! models carry values after each box's classes (`Carried`), read for the boxes kept.

mod dense;
mod detectnet;
mod efficient_nms;
mod labels_boxes_scores;
mod queries;
mod ssd;

use super::keypoints::Keypoints;
use super::mask::{Prototypes, Scratch};
use super::rotated::{self, RotatedBox};
use super::{nms, Detection};
use crate::limits::{MemoryLimit, TooLarge};
use crate::model::manifest::{DetectFormat, DetectSpec};
use crate::preprocess::Geometry;
use crate::tensor::{describe, HostTensor, TensorSpec};

/// A box before NMS: class, score and corners in input pixels, and the row of the output it
/// came from (where what it carries is read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub class_id: usize,
    pub score: f32,
    pub bbox: [f32; 4],
    pub row: usize,
}

/// What each box carries after its classes.
#[derive(Debug, Clone, Copy)]
enum Carried {
    Nothing,
    Masks(Prototypes),
    /// `[count, values each]`.
    Keypoints([usize; 2]),
    Angle,
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
    carried: Carried,
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
        let carried = if spec.masks {
            Carried::Masks(Prototypes::find(outputs)?)
        } else if let Some(shape) = spec.keypoints {
            Carried::Keypoints(shape)
        } else if spec.rotated {
            Carried::Angle
        } else {
            Carried::Nothing
        };
        let values = spec.extra_values(match carried {
            Carried::Masks(p) => p.coefficients,
            _ => 0,
        });
        let layout = match spec.format {
            DetectFormat::Yolov5 | DetectFormat::Yolov8 => {
                Layout::Dense(dense::Dense::new(spec.format, outputs, values)?)
            }
            DetectFormat::End2end | DetectFormat::Rtdetr => {
                Layout::Queries(queries::Queries::new(spec.format, outputs, values, spec.rotated)?)
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
        Ok(Decoder { spec: spec.clone(), layout, carried, input_size })
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

    /// The boxes of batch item `item`, best first, in source-image pixels; masks past `memory`
    /// are an error.
    pub fn decode(
        &self,
        outputs: &[HostTensor],
        item: usize,
        geometry: &Geometry,
        label: impl Fn(usize) -> String,
        memory: MemoryLimit,
    ) -> Result<Vec<Detection>, TooLarge> {
        let spec = &self.spec;
        let candidates = match &self.layout {
            Layout::Dense(d) => d.candidates(outputs, item, spec.confidence),
            Layout::Queries(q) => q.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::Ssd(s) => s.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::EfficientNms(e) => e.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::Detectnet(d) => d.candidates(outputs, item, spec.confidence, self.input_size),
            Layout::LabelsBoxesScores(l) => l.candidates(outputs, item, spec.confidence),
        };
        let values = |row: usize| {
            let mut carried = Vec::new();
            match &self.layout {
                Layout::Dense(d) => d.carried(outputs, item, row, &mut carried),
                Layout::Queries(q) => q.carried(outputs, item, row, &mut carried),
                _ => {}
            }
            carried
        };
        let kept = if let Carried::Angle = self.carried {
            let boxes: Vec<(usize, f32, [f32; 5])> =
                candidates.iter().map(|c| (c.class_id, c.score, xywhr(c.bbox, values(c.row)[0]))).collect();
            if spec.format.needs_nms() {
                rotated::suppress(&boxes, spec.iou, spec.agnostic, spec.max_det)
                    .into_iter()
                    .map(|i| candidates[i])
                    .collect()
            } else {
                candidates.into_iter().take(spec.max_det).collect()
            }
        } else if spec.format.needs_nms() {
            nms::suppress(candidates, spec.iou, spec.agnostic, spec.max_det)
        } else {
            candidates.into_iter().take(spec.max_det).collect()
        };
        let (sw, sh) = (geometry.source_width as f32, geometry.source_height as f32);
        let to_source = |x: f32, y: f32| {
            let (x, y) = geometry.to_source(x, y);
            (x.clamp(0.0, sw), y.clamp(0.0, sh))
        };
        let mut scratch = Scratch::default();
        let (boxes, mut encoded) = (kept.len(), 0u128);
        let mut found = Vec::with_capacity(kept.len());
        for c in kept {
            let (x1, y1) = to_source(c.bbox[0], c.bbox[1]);
            let (x2, y2) = to_source(c.bbox[2], c.bbox[3]);
            let mut d = Detection {
                class_id: c.class_id,
                label: label(c.class_id),
                score: c.score,
                bbox: [x1, y1, x2, y2],
                ..Detection::default()
            };
            match self.carried {
                Carried::Nothing => {}
                Carried::Masks(protos) => {
                    let mask = protos.mask(
                        protos.of(outputs, item),
                        &values(c.row),
                        d.bbox,
                        self.input_size,
                        geometry,
                        &mut scratch,
                    );
                    // Ultralytics drops an instance whose mask has no pixel.
                    let Some(mask) = mask else { continue };
                    // A mask's runs are few for an object, but up to one a pixel for noise.
                    encoded += mask.counts.len() as u128 * 4;
                    let what = || {
                        format!(
                            "the masks of {boxes} boxes at {sw}×{sh} (those of the first {})",
                            found.len() + 1
                        )
                    };
                    memory.check_bytes(what, encoded)?;
                    d.mask = Some(mask);
                }
                Carried::Keypoints([_, each]) => {
                    let mut flat = values(c.row);
                    for point in flat.chunks_exact_mut(each) {
                        (point[0], point[1]) = to_source(point[0], point[1]);
                    }
                    d.keypoints = Some(Keypoints { values: each, flat });
                }
                Carried::Angle => {
                    let [x, y, w, h, r] = xywhr(c.bbox, values(c.row)[0]);
                    let (x, y) = geometry.to_source(x, y);
                    let turned = RotatedBox::new([x, y, w / geometry.scale_x, h / geometry.scale_y, r]);
                    let [x1, y1, x2, y2] = turned.bounds();
                    d.bbox = [x1.clamp(0.0, sw), y1.clamp(0.0, sh), x2.clamp(0.0, sw), y2.clamp(0.0, sh)];
                    d.rotated = Some(turned);
                }
            }
            found.push(d);
        }
        Ok(found)
    }
}

/// Corners and an angle as centre, size and angle.
fn xywhr(bbox: [f32; 4], angle: f32) -> [f32; 5] {
    let [x1, y1, x2, y2] = bbox;
    [(x1 + x2) / 2.0, (y1 + y2) / 2.0, x2 - x1, y2 - y1, angle]
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
mod carried_tests;
#[cfg(test)]
mod tests;
