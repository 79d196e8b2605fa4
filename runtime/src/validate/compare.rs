//! Comparing two models' raw outputs: cosine similarity and absolute differences.

/// Cosine similarity of two vectors; 1 for two zero vectors, 0 when only one is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        dot += x as f64 * y as f64;
        na += x as f64 * x as f64;
        nb += y as f64 * y as f64;
    }
    match (na > 0.0, nb > 0.0) {
        (false, false) => 1.0,
        // One square root of the product: for a vector against itself it gives exactly 1, where
        // √na · √na can miss na by one unit in the last place (√2 · √2 > 2). Rounding can still
        // put two parallel vectors a hair above 1.
        (true, true) => (dot / (na * nb).sqrt()).clamp(-1.0, 1.0),
        _ => 0.0,
    }
}

/// Running maximum and mean of |a − b| over every compared value.
#[derive(Debug, Default, Clone, Copy)]
pub struct AbsDiff {
    pub max: f64,
    sum: f64,
    count: u64,
}

impl AbsDiff {
    pub fn add(&mut self, a: &[f32], b: &[f32]) {
        for (&x, &y) in a.iter().zip(b) {
            let d = (x as f64 - y as f64).abs();
            self.max = self.max.max(d);
            self.sum += d;
            self.count += 1;
        }
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_hand_made_vectors() {
        assert!((cosine(&[1.0, 0.0], &[0.0, 1.0])).abs() < 1e-12);
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-12);
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(cosine(&[0.0], &[0.0]), 1.0);
        // Exactly 1 for a vector against itself: √2 · √2 is not 2 in floating point.
        assert_eq!(cosine(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
        assert_eq!(cosine(&[0.3, -7.25, 1e-3], &[0.3, -7.25, 1e-3]), 1.0);
        assert_eq!(cosine(&[0.0], &[1.0]), 0.0);
    }

    #[test]
    fn absolute_differences() {
        let mut d = AbsDiff::default();
        d.add(&[1.0, 2.0], &[1.5, 0.0]);
        d.add(&[0.0], &[0.0]);
        assert_eq!(d.max, 2.0);
        assert!((d.mean() - 2.5 / 3.0).abs() < 1e-12);
    }
}
