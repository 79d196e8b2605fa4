//! Turning output tensors into answers: classes, boxes, or raw tensors, by the manifest's task.

pub mod classify;
pub mod nms;
pub mod yolo;

use serde::Serialize;

use crate::model::{Model, Task};
use crate::preprocess::Geometry;
use crate::tensor::{HostTensor, TensorSpec};
use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    pub class_id: usize,
    pub label: String,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    pub class_id: usize,
    pub label: String,
    pub score: f32,
    /// `[x1, y1, x2, y2]` in source-image pixels.
    pub bbox: [f32; 4],
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

/// Interprets a prepared model's outputs according to its manifest.
pub struct Postprocessor {
    task: Task,
    /// For YOLO: which output holds each head.
    head_outputs: Vec<usize>,
    input_size: (usize, usize),
    output_names: Vec<String>,
}

impl Postprocessor {
    pub fn new(model: &Model, outputs: &[TensorSpec]) -> Result<Postprocessor> {
        let task = model.manifest.model.task;
        let output_names: Vec<String> = outputs.iter().map(|o| o.name.clone()).collect();
        let mut head_outputs = Vec::new();
        if let (Task::Yolo, Some(yolo)) = (task, &model.manifest.yolo) {
            for head in &yolo.heads {
                let index = output_names.iter().position(|n| *n == head.output).ok_or_else(|| {
                    Error::manifest(
                        model.source_path(),
                        format!("yolo head output '{}' is not produced", head.output),
                    )
                })?;
                yolo::check_head(&outputs[index], head.anchors.len())
                    .map_err(|reason| Error::manifest(model.source_path(), reason))?;
                head_outputs.push(index);
            }
        }
        let (h, w, _) = model.manifest.image_geometry().unwrap_or((0, 0, 0));
        Ok(Postprocessor { task, head_outputs, input_size: (h, w), output_names })
    }

    /// The prediction for batch item `item`.
    pub fn run(
        &self,
        model: &Model,
        outputs: &[HostTensor],
        item: usize,
        geometry: Option<&Geometry>,
    ) -> Prediction {
        match (self.task, geometry, &model.manifest.yolo) {
            (Task::Classification, _, _) => {
                let spec = &model.manifest.classification;
                let scores = classify::top_k(outputs[0].item(item), spec.top_k, spec.softmax);
                Prediction::Classes(
                    scores
                        .into_iter()
                        .map(|(class_id, score)| ClassScore { class_id, label: model.label(class_id), score })
                        .collect(),
                )
            }
            (Task::Yolo, Some(geometry), Some(spec)) => {
                let heads: Vec<yolo::HeadMap> = self
                    .head_outputs
                    .iter()
                    .zip(&spec.heads)
                    .filter_map(|(&o, head)| yolo::HeadMap::from_tensor(&outputs[o], item, &head.anchors))
                    .collect();
                Prediction::Boxes(yolo::decode(&heads, spec, self.input_size, geometry, |c| model.label(c)))
            }
            _ => Prediction::Raw(
                outputs
                    .iter()
                    .zip(&self.output_names)
                    .map(|(t, name)| RawOutput {
                        name: name.clone(),
                        shape: t.shape.iter().skip(1).copied().collect(),
                        first_values: t.item(item).iter().take(8).copied().collect(),
                    })
                    .collect(),
            ),
        }
    }
}
