//! The Pareto front of points to minimise on both axes.

/// For each point, whether no other point is at least as good on both axes and better on one.
pub fn front(points: &[(f64, f64)]) -> Vec<bool> {
    points
        .iter()
        .map(|&(x, y)| !points.iter().any(|&(ox, oy)| ox <= x && oy <= y && (ox < x || oy < y)))
        .collect()
}

/// Index of the lowest latency among the points within budget.
pub fn fastest_within_budget(points: &[(f64, bool)]) -> Option<usize> {
    points
        .iter()
        .enumerate()
        .filter(|(_, (_, within))| *within)
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    #[test]
    fn picks_the_fastest_within_budget_never_a_faster_one_over_it() {
        let points = [(5.0, true), (1.0, false), (3.0, true), (4.0, true)];
        assert_eq!(super::fastest_within_budget(&points), Some(2));
        assert_eq!(super::fastest_within_budget(&[(1.0, false)]), None);
    }

    #[test]
    fn front_of_hand_made_points() {
        // (latency, drop): a is fastest, c is most accurate, b trades between, d is beaten by b.
        let points = [(1.0, 0.5), (2.0, 0.1), (5.0, 0.0), (3.0, 0.2), (1.0, 0.5)];
        assert_eq!(super::front(&points), vec![true, true, true, false, true]);
    }
}
