//! Turning output tensors into answers: classes, boxes, a class per pixel, or raw tensors, by the
//! manifest's task.

pub(crate) mod classify;
pub(crate) mod detect;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod keypoints;
pub mod mask;
pub(crate) mod nms;
pub(crate) mod resample;
pub(crate) mod rotated;
pub(crate) mod semantic;
pub(crate) mod yolo;

use serde::Serialize;

use crate::limits::{MemoryLimit, TooLarge};
use crate::model::manifest::TaskSpec;
use crate::model::Model;
use crate::preprocess::Geometry;
use crate::tensor::{HostTensor, TensorSpec};
use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    pub class_id: usize,
    pub label: String,
    pub score: f32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Detection {
    pub class_id: usize,
    pub label: String,
    pub score: f32,
    /// `[x1, y1, x2, y2]` in source-image pixels; around the rotated box for OBB models.
    pub bbox: [f32; 4],
    /// Segment models: the instance's pixels in the source image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask: Option<mask::Rle>,
    /// Pose models: the keypoints in source-image pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keypoints: Option<keypoints::Keypoints>,
    /// OBB models: the rotated box in source-image pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotated: Option<rotated::RotatedBox>,
}

/// A raw output: name, shape and a few values, for models edgert does not interpret.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawOutput {
    pub name: String,
    pub shape: Vec<usize>,
    pub first_values: Vec<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prediction {
    Classes(Vec<ClassScore>),
    Boxes(Vec<Detection>),
    Semantic(semantic::SemanticMap),
    Raw(Vec<RawOutput>),
}

impl Prediction {
    /// The best class id, for classifiers.
    pub fn top1(&self) -> Option<usize> {
        match self {
            Prediction::Classes(c) => c.first().map(|c| c.class_id),
            _ => None,
        }
    }
}

/// The outputs' shapes as the backend says them, or, where it cannot before it runs (ONNX Runtime,
/// for some graphs), as the file declares them.
fn declared(model: &Model, outputs: &[TensorSpec]) -> Vec<TensorSpec> {
    outputs
        .iter()
        .map(|o| match model.outputs.iter().find(|d| d.name == o.name) {
            Some(declared) if o.shape.is_empty() => declared.clone(),
            _ => o.clone(),
        })
        .collect()
}

/// Class names that do not fit the outputs mean they are read wrongly, or named wrongly; `per`
/// says what is scored (" a box", " a pixel").
fn names_fit(model: &Model, classes: Option<usize>, per: &str) -> std::result::Result<(), String> {
    match (classes, &model.labels) {
        (Some(classes), Some(labels)) if classes != labels.len() => {
            let plural = if classes == 1 { "" } else { "es" };
            Err(format!(
                "the outputs score {classes} class{plural}{per}; the class names are {}",
                labels.len()
            ))
        }
        _ => Ok(()),
    }
}

/// Interprets a prepared model's outputs according to its manifest's task.
pub struct Postprocessor {
    stage: Stage,
    output_names: Vec<String>,
    /// What masks and class maps at a frame's size may take.
    memory: MemoryLimit,
}

enum Stage {
    /// The settings are read from the model at each call: `validate` widens a candidate's top-k.
    Classify,
    /// Which output holds each head.
    Yolo {
        head_outputs: Vec<usize>,
        input_size: (usize, usize),
    },
    Detect(detect::Decoder),
    Semantic(semantic::Segmenter),
    Raw,
}

impl Postprocessor {
    pub fn new(model: &Model, outputs: &[TensorSpec], memory: MemoryLimit) -> Result<Postprocessor> {
        let output_names: Vec<String> = outputs.iter().map(|o| o.name.clone()).collect();
        let (h, w, _) = model.manifest.image_geometry().unwrap_or((0, 0, 0));
        let bad = |reason: String| Error::manifest(model.source_path(), reason);
        let stage = match &model.manifest.task {
            TaskSpec::Classification(_) => Stage::Classify,
            TaskSpec::Yolo(yolo) => {
                let mut head_outputs = Vec::new();
                for head in &yolo.heads {
                    let index = output_names
                        .iter()
                        .position(|n| *n == head.output)
                        .ok_or_else(|| bad(format!("yolo head output '{}' is not produced", head.output)))?;
                    yolo::check_head(&outputs[index], head.anchors.len()).map_err(bad)?;
                    head_outputs.push(index);
                }
                Stage::Yolo { head_outputs, input_size: (h, w) }
            }
            TaskSpec::Detect(spec) => {
                let known = declared(model, outputs);
                let decoder = detect::Decoder::new(spec, &known, (h, w)).map_err(bad)?;
                let carried = spec.carries().map_or(String::new(), |c| format!(" a box besides its {c}"));
                names_fit(
                    model,
                    decoder.classes(),
                    &if carried.is_empty() { " a box".into() } else { carried },
                )
                .map_err(bad)?;
                Stage::Detect(decoder)
            }
            TaskSpec::Semantic(spec) => {
                let known = declared(model, outputs);
                let segmenter = semantic::Segmenter::new(&known, spec.threshold).map_err(bad)?;
                names_fit(model, segmenter.classes(), " a pixel").map_err(bad)?;
                Stage::Semantic(segmenter)
            }
            TaskSpec::Raw => Stage::Raw,
        };
        Ok(Postprocessor { stage, output_names, memory })
    }

    /// The prediction for batch item `item`; a tensor input (no geometry) keeps a detector's
    /// boxes in input pixels. Masks or a class map that would take more than the memory limit at
    /// the frame's size are an error.
    pub fn run(
        &self,
        model: &Model,
        outputs: &[HostTensor],
        item: usize,
        geometry: Option<&Geometry>,
    ) -> Result<Prediction> {
        let named = |mut e: TooLarge| {
            e.what = format!("{}: {}", model.source_path().display(), e.what);
            Error::TooLarge(e)
        };
        Ok(match (&self.stage, &model.manifest.task, geometry) {
            (Stage::Classify, TaskSpec::Classification(spec), _) => {
                let scores = classify::top_k(outputs[0].item(item), spec.top_k, spec.softmax);
                Prediction::Classes(
                    scores
                        .into_iter()
                        .map(|(class_id, score)| ClassScore { class_id, label: model.label(class_id), score })
                        .collect(),
                )
            }
            (Stage::Yolo { head_outputs, input_size }, TaskSpec::Yolo(spec), Some(geometry)) => {
                let heads: Vec<yolo::HeadMap> = head_outputs
                    .iter()
                    .zip(&spec.heads)
                    .filter_map(|(&o, head)| yolo::HeadMap::from_tensor(&outputs[o], item, &head.anchors))
                    .collect();
                Prediction::Boxes(yolo::decode(&heads, spec, *input_size, geometry, |c| model.label(c)))
            }
            (Stage::Detect(decoder), _, geometry) => {
                let identity = model.manifest.image_geometry().map(|(h, w, _)| Geometry::identity(w, h));
                match geometry.or(identity.as_ref()) {
                    Some(g) => Prediction::Boxes(
                        decoder.decode(outputs, item, g, |c| model.label(c), self.memory).map_err(named)?,
                    ),
                    None => self.raw(outputs, item),
                }
            }
            (Stage::Semantic(segmenter), _, geometry) => {
                let image = model.manifest.image_geometry();
                let identity = image.map(|(h, w, _)| Geometry::identity(w, h));
                match (geometry.or(identity.as_ref()), image) {
                    (Some(g), Some((h, w, _))) => Prediction::Semantic(
                        segmenter
                            .decode(outputs, item, (h, w), g, |c| model.label(c), self.memory)
                            .map_err(named)?,
                    ),
                    _ => self.raw(outputs, item),
                }
            }
            _ => self.raw(outputs, item),
        })
    }

    fn raw(&self, outputs: &[HostTensor], item: usize) -> Prediction {
        Prediction::Raw(
            outputs
                .iter()
                .zip(&self.output_names)
                .map(|(t, name)| RawOutput {
                    name: name.clone(),
                    shape: t.shape.iter().skip(1).copied().collect(),
                    first_values: t.item(item).iter().take(8).copied().collect(),
                })
                .collect(),
        )
    }
}
