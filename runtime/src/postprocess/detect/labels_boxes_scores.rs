//! Detectors exported with their postprocessing in the graph and the image size as a second
//! input: RT-DETR's own repository (`tools/export_onnx.py`), D-FINE, DEIM. Outputs `labels [N, K]`,
//! `boxes [N, K, 4]` (corners in the pixels of the size fed), `scores [N, K]`. edgert feeds the
//! network's own input size (`model::onnx::fold_size_input`), so the corners come in input pixels.

use super::queries::class_index;
use super::{passes, Candidate};
use crate::tensor::{HostTensor, TensorSpec};

#[derive(Debug, Clone)]
pub struct LabelsBoxesScores {
    labels: usize,
    boxes: usize,
    scores: usize,
}

impl LabelsBoxesScores {
    /// The three outputs by name and rank; their row count may stay unknown until they arrive
    /// (the graph's top-k sets it, and ONNX Runtime says it only then).
    pub fn new(outputs: &[TensorSpec]) -> Result<LabelsBoxesScores, String> {
        let find = |name: &str, rank: usize, last: Option<usize>| {
            outputs
                .iter()
                .position(|o| {
                    o.name.to_ascii_lowercase().contains(name)
                        && (o.shape.is_empty() || (o.shape.len() == rank && last.is_none_or(|l| o.shape[rank - 1].is_none_or(|d| d == l))))
                })
                .ok_or_else(|| {
                    format!(
                        "format 'labels-boxes-scores' needs labels [N, K], boxes [N, K, 4] and scores [N, K]; the model's are {}",
                        crate::tensor::describe(outputs)
                    )
                })
        };
        Ok(LabelsBoxesScores {
            labels: find("labels", 2, None)?,
            boxes: find("boxes", 3, Some(4))?,
            scores: find("scores", 2, None)?,
        })
    }

    /// The rows over `confidence`, best first (the graph's top-k already sorts them; a graph that
    /// does not is sorted here).
    pub fn candidates(&self, outputs: &[HostTensor], item: usize, confidence: f32) -> Vec<Candidate> {
        let (labels, boxes, scores) = (
            outputs[self.labels].item(item),
            outputs[self.boxes].item(item),
            outputs[self.scores].item(item),
        );
        let rows = labels.len().min(scores.len()).min(boxes.len() / 4);
        let mut found: Vec<Candidate> = (0..rows)
            .filter(|&k| passes(scores[k], confidence))
            .filter_map(|k| {
                let class_id = class_index(labels[k])?;
                let b = &boxes[k * 4..k * 4 + 4];
                Some(Candidate { class_id, score: scores[k], bbox: [b[0], b[1], b[2], b[3]], row: k })
            })
            .collect();
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        found
    }
}
