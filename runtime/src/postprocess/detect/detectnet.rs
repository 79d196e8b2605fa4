//! NVIDIA's DetectNet_v2 (TAO's PeopleNet, TrafficCamNet, DashCamNet): a coverage map
//! `output_cov/Sigmoid [N, C, h, w]` and box offsets `output_bbox/BiasAdd [N, 4C, h, w]` on a grid
//! of `stride` input pixels. As DeepStream's parser decodes them: the grid centre of column i is
//! (i · stride + 0.5) / scale, x1 = (centre − o₁) · scale, x2 = (o₃ + centre) · scale, clipped to
//! the input; cells whose coverage passes are candidates, clustered here by NMS per class.

use super::{output, passes, Candidate};
use crate::model::manifest::{DetectFormat, DetectSpec};
use crate::tensor::{HostTensor, TensorSpec};

#[derive(Debug, Clone)]
pub struct Detectnet {
    cov: usize,
    bbox: usize,
    pub classes: usize,
    grid: (usize, usize),
    stride: f32,
    scale: f32,
}

impl Detectnet {
    pub fn new(spec: &DetectSpec, outputs: &[TensorSpec]) -> Result<Detectnet, String> {
        let format = DetectFormat::DetectnetV2;
        let (cov, c) = output(outputs, format, Some("cov"), 4)?;
        let (bbox, b) = output(outputs, format, Some("bbox"), 4)?;
        if cov == bbox || b[0] != 4 * c[0] || (b[1], b[2]) != (c[1], c[2]) || c[0] == 0 {
            return Err(format!(
                "format 'detectnet-v2' needs output_cov [N, C, h, w] and output_bbox [N, 4C, h, w]; the model's are {}",
                crate::tensor::describe(outputs)
            ));
        }
        Ok(Detectnet {
            cov,
            bbox,
            classes: c[0],
            grid: (c[1], c[2]),
            stride: spec.stride.unwrap_or(16.0),
            scale: spec.box_scale.unwrap_or(35.0),
        })
    }

    pub fn candidates(
        &self,
        outputs: &[HostTensor],
        item: usize,
        confidence: f32,
        (height, width): (usize, usize),
    ) -> Vec<Candidate> {
        let (gh, gw) = self.grid;
        let cells = gh * gw;
        let cov = outputs[self.cov].item(item);
        let bbox = outputs[self.bbox].item(item);
        let (w, h, s) = (width as f32, height as f32, self.scale);
        let centre = |i: usize| (i as f32 * self.stride + 0.5) / s;
        let mut found = Vec::new();
        for class_id in 0..self.classes {
            let offsets = &bbox[class_id * 4 * cells..(class_id + 1) * 4 * cells];
            for y in 0..gh {
                for x in 0..gw {
                    let cell = y * gw + x;
                    let score = cov[class_id * cells + cell];
                    if !passes(score, confidence) {
                        continue;
                    }
                    let o = |k: usize| offsets[k * cells + cell];
                    let x1 = ((o(0) - centre(x)) * -s).clamp(0.0, w);
                    let y1 = ((o(1) - centre(y)) * -s).clamp(0.0, h);
                    let x2 = ((o(2) + centre(x)) * s).clamp(0.0, w);
                    let y2 = ((o(3) + centre(y)) * s).clamp(0.0, h);
                    found.push(Candidate { class_id, score, bbox: [x1, y1, x2, y2], row: cell });
                }
            }
        }
        found
    }
}
