//! Mean IoU of a candidate's semantic maps against the reference's, taken as ground truth: per
//! class, the pixels both give it over the pixels either gives it, summed over every sample;
//! the mean over the classes either side gives any pixel.

use std::collections::BTreeMap;

use crate::postprocess::semantic::{SemanticMap, NO_CLASS};

#[derive(Debug, Default)]
pub struct MeanIou {
    /// Per class: pixels both maps give it, pixels the reference gives it, pixels the candidate does.
    counts: BTreeMap<u32, (u64, u64, u64)>,
}

impl MeanIou {
    /// Adds one sample's maps; maps of different sizes (the same frame cannot give them) count
    /// every reference pixel as missed.
    pub fn add(&mut self, reference: &SemanticMap, candidate: &SemanticMap) {
        let same = reference.size == candidate.size;
        for (i, &r) in reference.classes.iter().enumerate() {
            let c = if same { candidate.classes[i] } else { NO_CLASS };
            if r != NO_CLASS {
                self.counts.entry(r).or_default().1 += 1;
            }
            if c != NO_CLASS {
                self.counts.entry(c).or_default().2 += 1;
            }
            if r == c && r != NO_CLASS {
                self.counts.entry(r).or_default().0 += 1;
            }
        }
    }

    /// None where neither side gave a pixel any class.
    pub fn mean(&self) -> Option<f64> {
        let ious: Vec<f64> = self
            .counts
            .values()
            .filter(|(_, r, c)| r + c > 0)
            .map(|&(both, r, c)| both as f64 / (r + c - both) as f64)
            .collect();
        (!ious.is_empty()).then(|| ious.iter().sum::<f64>() / ious.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(classes: Vec<u32>) -> SemanticMap {
        SemanticMap { size: [1, classes.len()], shares: Vec::new(), classes }
    }

    #[test]
    fn hand_computed_mean_iou() {
        // Class 0: both at 0, 1; reference also at 2 → 2/3. Class 1: both at 3; candidate at 2 → 1/2.
        let mut m = MeanIou::default();
        m.add(&map(vec![0, 0, 0, 1]), &map(vec![0, 0, 1, 1]));
        assert!((m.mean().unwrap() - (2.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12);
        let mut same = MeanIou::default();
        same.add(&map(vec![3, 1, 1]), &map(vec![3, 1, 1]));
        assert_eq!(same.mean(), Some(1.0));
        // Pixels of no class count for neither side; nothing at all is no figure.
        let mut none = MeanIou::default();
        none.add(&map(vec![NO_CLASS]), &map(vec![NO_CLASS]));
        assert_eq!(none.mean(), None);
        // Different sizes: every reference pixel missed.
        let mut sized = MeanIou::default();
        sized.add(&map(vec![0, 0]), &map(vec![0]));
        assert_eq!(sized.mean(), Some(0.0));
    }
}
