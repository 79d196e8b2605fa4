//! SSD as pytorch-ssd exports it for jetson-inference: `scores [N, B, C]` (after softmax, class 0
//! the background) and `boxes [N, B, 4]`, corners as fractions of the input. As pytorch-ssd's
//! predictor decodes it: each box is a candidate for every class whose score passes, and NMS runs
//! per class.

use super::{output, passes, Candidate};
use crate::model::manifest::{DetectFormat, DetectSpec};
use crate::tensor::{HostTensor, TensorSpec};

#[derive(Debug, Clone)]
pub struct Ssd {
    scores: usize,
    boxes: usize,
    count: usize,
    pub classes: usize,
    background: usize,
}

impl Ssd {
    pub fn new(spec: &DetectSpec, outputs: &[TensorSpec]) -> Result<Ssd, String> {
        let format = DetectFormat::Ssd;
        let (boxes, box_dims) = match outputs.iter().position(|o| o.name.to_ascii_lowercase().contains("box"))
        {
            Some(_) => output(outputs, format, Some("box"), 3)?,
            None => {
                let four = outputs.iter().position(|o| o.shape.len() == 3 && o.shape[2] == Some(4));
                output(&outputs[four.map_or(0..0, |i| i..i + 1)], format, None, 3)
                    .map(|(_, dims)| (four.unwrap_or(0), dims))?
            }
        };
        let others: Vec<TensorSpec> =
            outputs.iter().enumerate().filter(|(i, _)| *i != boxes).map(|(_, o)| o.clone()).collect();
        let (score_at, score_dims) = output(&others, format, Some("score"), 3)?;
        let scores = outputs.iter().position(|o| o.name == others[score_at].name).unwrap_or(score_at);
        if box_dims[1] != 4 || box_dims[0] != score_dims[0] || score_dims[1] < 2 {
            return Err(format!(
                "format 'ssd' needs scores [N, B, classes] and boxes [N, B, 4]; the model's are {}",
                crate::tensor::describe(outputs)
            ));
        }
        let background = spec.background_class.unwrap_or(0);
        if background >= score_dims[1] {
            return Err(format!(
                "detect.background_class = {background} is not one of the {} classes",
                score_dims[1]
            ));
        }
        Ok(Ssd { scores, boxes, count: box_dims[0], classes: score_dims[1], background })
    }

    pub fn candidates(
        &self,
        outputs: &[HostTensor],
        item: usize,
        confidence: f32,
        (height, width): (usize, usize),
    ) -> Vec<Candidate> {
        let (h, w) = (height as f32, width as f32);
        let scores = outputs[self.scores].item(item);
        let boxes = outputs[self.boxes].item(item);
        let mut found = Vec::new();
        for b in 0..self.count {
            let r = &boxes[b * 4..b * 4 + 4];
            for (class_id, &score) in scores[b * self.classes..(b + 1) * self.classes].iter().enumerate() {
                if class_id != self.background && passes(score, confidence) {
                    found.push(Candidate {
                        class_id,
                        score,
                        bbox: [r[0] * w, r[1] * h, r[2] * w, r[3] * h],
                        row: b,
                    });
                }
            }
        }
        found
    }
}
