//! Classification: optional softmax, then the k best classes.

/// Indices and scores of the `k` highest values, best first (softmax applied first if asked).
pub fn top_k(values: &[f32], k: usize, softmax: bool) -> Vec<(usize, f32)> {
    let scores = if softmax { self::softmax(values) } else { values.to_vec() };
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.into_iter().take(k).map(|i| (i, scores[i])).collect()
}

/// Numerically stable softmax.
pub fn softmax(values: &[f32]) -> Vec<f32> {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = values.iter().map(|v| (v - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_scores_and_breaks_ties_by_index() {
        assert_eq!(top_k(&[0.1, 0.7, 0.2, 0.7], 3, false), vec![(1, 0.7), (3, 0.7), (2, 0.2)]);
    }

    #[test]
    fn softmax_matches_hand_values() {
        let p = softmax(&[0.0, (3.0f32).ln()]);
        assert!((p[0] - 0.25).abs() < 1e-6 && (p[1] - 0.75).abs() < 1e-6);
    }
}
