//! YOLO (darknet v3 style) head decoding: each head map is `[N, A*(5+C), H, W]` with, per anchor,
//! tx, ty, tw, th, objectness and C class logits. Sigmoid on xy/obj/classes, exp(wh) × anchor.

use super::{nms, Detection};
use crate::model::manifest::YoloSpec;
use crate::preprocess::Geometry;
use crate::tensor::{HostTensor, TensorSpec};

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// One head's output map for one batch item, with the anchors of that head.
pub struct HeadMap<'a> {
    pub values: &'a [f32],
    pub grid_h: usize,
    pub grid_w: usize,
    pub anchors: &'a [[f32; 2]],
}

impl<'a> HeadMap<'a> {
    /// Batch item `item` of an output tensor `[N, A*(5+C), H, W]`.
    pub fn from_tensor(tensor: &'a HostTensor, item: usize, anchors: &'a [[f32; 2]]) -> Option<Self> {
        let [_, _, h, w] = tensor.shape[..] else { return None };
        Some(HeadMap { values: tensor.item(item), grid_h: h, grid_w: w, anchors })
    }
}

/// Whether a model's output can hold `anchors` boxes per cell of `[N, A*(5+C), H, W]`, C ≥ 1: a
/// head that cannot would decode to nothing, silently.
pub fn check_head(output: &TensorSpec, anchors: usize) -> Result<(), String> {
    let name = &output.name;
    match output.shape[..] {
        [_, Some(channels), _, _] if channels % anchors == 0 && channels / anchors >= 6 => Ok(()),
        [_, Some(channels), _, _] => {
            Err(format!("yolo head '{name}' has {channels} channels, not {anchors} anchors × (5 + classes)"))
        }
        // What the backend does not know (a dynamic axis, an ONNX Runtime output of unknown
        // rank) is checked as it decodes.
        [_, None, _, _] | [] => Ok(()),
        _ => Err(format!(
            "yolo head '{name}' has shape {:?}, not [N, anchors × (5 + classes), H, W]",
            output.shape
        )),
    }
}

/// Boxes above the confidence threshold, after NMS, in source-image pixels.
pub fn decode(
    heads: &[HeadMap],
    spec: &YoloSpec,
    input_size: (usize, usize),
    geometry: &Geometry,
    label: impl Fn(usize) -> String,
) -> Vec<Detection> {
    let (input_h, input_w) = input_size;
    let mut boxes = Vec::new();
    for head in heads {
        let cells = head.grid_h * head.grid_w;
        let per_anchor = head.values.len() / cells / head.anchors.len().max(1);
        if per_anchor < 6 {
            continue;
        }
        let classes = per_anchor - 5;
        let (stride_x, stride_y) = (input_w as f32 / head.grid_w as f32, input_h as f32 / head.grid_h as f32);
        for (a, anchor) in head.anchors.iter().enumerate() {
            let at = |k: usize, cell: usize| head.values[(a * per_anchor + k) * cells + cell];
            for cell in 0..cells {
                let objectness = sigmoid(at(4, cell));
                if objectness < spec.confidence {
                    continue;
                }
                let (class_id, class_logit) = (0..classes)
                    .map(|c| (c, at(5 + c, cell)))
                    .max_by(|x, y| x.1.total_cmp(&y.1))
                    .expect("at least one class");
                let score = objectness * sigmoid(class_logit);
                if score < spec.confidence {
                    continue;
                }
                let (cx, cy) = ((cell % head.grid_w) as f32, (cell / head.grid_w) as f32);
                let x = (cx + sigmoid(at(0, cell))) * stride_x;
                let y = (cy + sigmoid(at(1, cell))) * stride_y;
                let w = at(2, cell).exp() * anchor[0];
                let h = at(3, cell).exp() * anchor[1];
                let (x1, y1) = geometry.to_source(x - w / 2.0, y - h / 2.0);
                let (x2, y2) = geometry.to_source(x + w / 2.0, y + h / 2.0);
                let (sw, sh) = (geometry.source_width as f32, geometry.source_height as f32);
                let bbox = [x1.clamp(0.0, sw), y1.clamp(0.0, sh), x2.clamp(0.0, sw), y2.clamp(0.0, sh)];
                boxes.push(Detection {
                    class_id,
                    label: label(class_id),
                    score,
                    bbox,
                    ..Detection::default()
                });
            }
        }
    }
    nms::nms(boxes, spec.iou)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_one_confident_cell_into_source_pixels() {
        // One 2×2 head, one anchor, two classes: only cell (x=1, y=0) is confident, class 1.
        let (cells, per_anchor) = (4, 7);
        let mut values = vec![-10.0f32; per_anchor * cells];
        let cell = 1;
        values[cell] = 0.0; // tx → 0.5
        values[cells + cell] = 0.0; // ty → 0.5
        values[2 * cells + cell] = 0.0; // tw → anchor width
        values[3 * cells + cell] = 0.0; // th → anchor height
        values[4 * cells + cell] = 10.0; // objectness ≈ 1
        values[6 * cells + cell] = 10.0; // class 1
        let anchors = [[20.0, 10.0]];
        let head = HeadMap { values: &values, grid_h: 2, grid_w: 2, anchors: &anchors };
        let spec = YoloSpec { confidence: 0.25, iou: 0.45, heads: vec![] };
        // Input 64×64 letterboxed from a 128×64 source: scale 0.5, 16 px of padding on top.
        let geometry = Geometry {
            source_width: 128,
            source_height: 64,
            scale_x: 0.5,
            scale_y: 0.5,
            offset_x: 0.0,
            offset_y: 16.0,
        };
        let found = decode(&[head], &spec, (64, 64), &geometry, |c| format!("c{c}"));
        assert_eq!(found.len(), 1);
        let d = &found[0];
        assert_eq!((d.class_id, d.label.as_str()), (1, "c1"));
        // Centre in input pixels (1.5 × 32, 0.5 × 32) = (48, 16); the 20×10 box spans
        // x 38..58, y 11..21; back in the source: x (38 - 0) / 0.5 = 76 .. 116, y (11 - 16) / 0.5
        // = -10 (clamped to 0) .. 10.
        assert_eq!(d.bbox, [76.0, 0.0, 116.0, 10.0]);
    }
}
