//! Oriented boxes of OBB models (YOLOv8/11/26-obb): centre, size and angle; their overlap as
//! Ultralytics measures it (probabilistic IoU: each box a Gaussian, one minus the Hellinger
//! distance between them) and its NMS (Fast-NMS: a box is dropped where any better box of its
//! class overlaps it, whether or not that one was kept).

use serde::Serialize;

/// A rotated box: `xywhr` is centre, width, height and angle in radians; `corners` the four
/// points in order, as Ultralytics' `xywhr2xyxyxyxy` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RotatedBox {
    pub xywhr: [f32; 5],
    pub corners: [[f32; 2]; 4],
}

impl RotatedBox {
    pub fn new(xywhr: [f32; 5]) -> RotatedBox {
        let [x, y, w, h, r] = xywhr;
        let (sin, cos) = r.sin_cos();
        let (ax, ay) = (w / 2.0 * cos, w / 2.0 * sin);
        let (bx, by) = (-h / 2.0 * sin, h / 2.0 * cos);
        let corners = [
            [x + ax + bx, y + ay + by],
            [x + ax - bx, y + ay - by],
            [x - ax - bx, y - ay - by],
            [x - ax + bx, y - ay + by],
        ];
        RotatedBox { xywhr, corners }
    }

    /// The upright box around the corners: `[x1, y1, x2, y2]`.
    pub fn bounds(&self) -> [f32; 4] {
        let xs = self.corners.map(|c| c[0]);
        let ys = self.corners.map(|c| c[1]);
        let min = |v: [f32; 4]| v.into_iter().fold(f32::INFINITY, f32::min);
        let max = |v: [f32; 4]| v.into_iter().fold(f32::NEG_INFINITY, f32::max);
        [min(xs), min(ys), max(xs), max(ys)]
    }
}

/// A box as a Gaussian: its covariance `[[a, c], [c, b]]` and centre.
#[derive(Debug, Clone, Copy)]
struct Gaussian {
    x: f64,
    y: f64,
    a: f64,
    b: f64,
    c: f64,
}

impl Gaussian {
    fn new([x, y, w, h, r]: [f32; 5]) -> Gaussian {
        let (a, b) = (f64::from(w).powi(2) / 12.0, f64::from(h).powi(2) / 12.0);
        let (sin, cos) = f64::from(r).sin_cos();
        Gaussian {
            x: f64::from(x),
            y: f64::from(y),
            a: a * cos * cos + b * sin * sin,
            b: a * sin * sin + b * cos * cos,
            c: (a - b) * cos * sin,
        }
    }
}

/// Ultralytics' `batch_probiou` of two boxes, its epsilon included.
fn probiou(p: &Gaussian, q: &Gaussian) -> f64 {
    const EPS: f64 = 1e-7;
    let (a, b, c) = (p.a + q.a, p.b + q.b, p.c + q.c);
    let det = a * b - c * c;
    let t1 = (a * (p.y - q.y).powi(2) + b * (p.x - q.x).powi(2)) / (det + EPS) * 0.25;
    let t2 = (c * (q.x - p.x) * (p.y - q.y)) / (det + EPS) * 0.5;
    let own = |g: &Gaussian| (g.a * g.b - g.c * g.c).max(0.0);
    let t3 = (det / (4.0 * (own(p) * own(q)).sqrt() + EPS) + EPS).ln() * 0.5;
    let bd = (t1 + t2 + t3).clamp(EPS, 100.0);
    let hd = (1.0 - (-bd).exp() + EPS).sqrt();
    1.0 - hd
}

/// The probabilistic IoU of two rotated boxes (`xywhr`), as Ultralytics measures it.
pub fn overlap(a: [f32; 5], b: [f32; 5]) -> f64 {
    probiou(&Gaussian::new(a), &Gaussian::new(b))
}

/// Which of `boxes` (class, score, xywhr) Fast-NMS keeps, best first, at most `max_det`: a box
/// goes where a better one of its class (of any class when `agnostic`) overlaps it by more than
/// `iou`. Scores that are not numbers are never kept.
pub fn suppress(boxes: &[(usize, f32, [f32; 5])], iou: f32, agnostic: bool, max_det: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..boxes.len()).filter(|&i| !boxes[i].1.is_nan()).collect();
    order.sort_by(|&i, &j| boxes[j].1.total_cmp(&boxes[i].1));
    let gaussians: Vec<Gaussian> = order.iter().map(|&i| Gaussian::new(boxes[i].2)).collect();
    let mut kept = Vec::new();
    for (n, &i) in order.iter().enumerate() {
        if kept.len() == max_det {
            break;
        }
        let overlapped = (0..n).any(|m| {
            (agnostic || boxes[order[m]].0 == boxes[i].0)
                && probiou(&gaussians[m], &gaussians[n]) > f64::from(iou)
        });
        if !overlapped {
            kept.push(i);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_turn_with_the_angle() {
        let upright = RotatedBox::new([10.0, 20.0, 4.0, 2.0, 0.0]);
        assert_eq!(upright.corners, [[12.0, 21.0], [12.0, 19.0], [8.0, 19.0], [8.0, 21.0]]);
        assert_eq!(upright.bounds(), [8.0, 19.0, 12.0, 21.0]);
        let quarter = RotatedBox::new([0.0, 0.0, 4.0, 2.0, std::f32::consts::FRAC_PI_2]);
        let b = quarter.bounds();
        assert!((b[0] + 1.0).abs() < 1e-5 && (b[1] + 2.0).abs() < 1e-5, "{b:?}");
    }

    #[test]
    fn probiou_is_one_for_the_same_box_and_falls_with_distance_and_turn() {
        let g = |xywhr| Gaussian::new(xywhr);
        let a = g([50.0, 50.0, 40.0, 10.0, 0.3]);
        assert!(probiou(&a, &a) > 0.99);
        let near = probiou(&a, &g([52.0, 50.0, 40.0, 10.0, 0.3]));
        let far = probiou(&a, &g([150.0, 50.0, 40.0, 10.0, 0.3]));
        let turned = probiou(&a, &g([50.0, 50.0, 40.0, 10.0, 0.3 + std::f32::consts::FRAC_PI_2]));
        assert!(near > 0.5 && far < 0.01 && turned < near, "{near} {far} {turned}");
        // A box of no size is a point: no overlap, and no NaN.
        let point = probiou(&a, &g([50.0, 50.0, 0.0, 0.0, 0.0]));
        assert!(point.is_finite(), "{point}");
    }

    #[test]
    fn fast_nms_drops_a_box_overlapped_by_a_better_one_even_one_itself_dropped() {
        let b = |x: f32| [x, 0.0, 20.0, 20.0, 0.0];
        // 1 overlaps 0; 2 overlaps 1 but not 0: greedy NMS would keep 2, Fast-NMS drops it.
        let boxes = [(0, 0.9, b(0.0)), (0, 0.8, b(4.0)), (0, 0.7, b(8.0)), (1, 0.6, b(4.0))];
        assert_eq!(suppress(&boxes, 0.5, false, 300), [0, 3]);
        assert_eq!(suppress(&boxes, 0.5, true, 300), [0]);
        assert_eq!(suppress(&boxes, 0.5, false, 1), [0]);
        let nan = [(0, f32::NAN, b(0.0)), (0, 0.5, b(100.0))];
        assert_eq!(suppress(&nan, 0.5, false, 300), [1]);
    }
}
