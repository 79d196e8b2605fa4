//! Keypoints of pose models (YOLOv8/11/26-pose): per box, a count of points of x, y and, where
//! the model gives one, a confidence; and the COCO skeleton that joins the 17 of a person.

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// A box's keypoints, `values` numbers each (2: x, y; 3: and a confidence), x and y in
/// source-image pixels; each serialised as an array.
#[derive(Debug, Clone, PartialEq)]
pub struct Keypoints {
    pub values: usize,
    pub flat: Vec<f32>,
}

impl Keypoints {
    /// Each point: x, y and its confidence (1 where the model gives none).
    pub fn points(&self) -> impl Iterator<Item = (f32, f32, f32)> + '_ {
        self.flat.chunks_exact(self.values).map(|p| (p[0], p[1], p.get(2).copied().unwrap_or(1.0)))
    }
}

impl Serialize for Keypoints {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.flat.len() / self.values.max(1)))?;
        for point in self.flat.chunks_exact(self.values.max(1)) {
            seq.serialize_element(point)?;
        }
        seq.end()
    }
}

/// COCO's person skeleton: pairs of keypoint indices (nose 0, eyes 1–2, ears 3–4, shoulders 5–6,
/// elbows 7–8, wrists 9–10, hips 11–12, knees 13–14, ankles 15–16).
pub const COCO_SKELETON: [(usize, usize); 19] = [
    (15, 13),
    (13, 11),
    (16, 14),
    (14, 12),
    (11, 12),
    (5, 11),
    (6, 12),
    (5, 6),
    (5, 7),
    (6, 8),
    (7, 9),
    (8, 10),
    (1, 2),
    (0, 1),
    (0, 2),
    (1, 3),
    (2, 4),
    (3, 5),
    (4, 6),
];
