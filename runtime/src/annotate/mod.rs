//! What the model saw, drawn on the frame: boxes with class and score for detectors (with their
//! translucent masks, keypoints and skeletons, or rotated boxes, where the model gives them), the
//! top classes for classifiers, and an overlay of frame number, rate and latency tails for every
//! task.

pub mod canvas;
pub mod palette;
pub mod rgb;

use canvas::{text_width, Canvas, GLYPH};
use palette::{class_colour, ink_on};

use crate::postprocess::keypoints::COCO_SKELETON;
use crate::postprocess::semantic::{SemanticMap, NO_CLASS};
use crate::postprocess::{Detection, Prediction};

/// The overlay's figures: the live ones over the last second, power where a sensor is read.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Overlay {
    pub frame: u64,
    pub fps: f64,
    pub glass_to_glass_p50_ms: Option<f64>,
    pub glass_to_glass_p99_ms: Option<f64>,
    pub inference_p99_ms: Option<f64>,
    pub power_w: Option<f64>,
}

/// Classes listed for a classifier.
const TOP_K: usize = 5;

const PANEL: [u8; 3] = [0, 0, 0];
const WHITE: [u8; 3] = [255, 255, 255];
/// How much of a mask's (or a semantic map's) class colour covers the frame under it, of 256.
const MASK_ALPHA: u16 = 128;
/// Keypoints less sure than this are not drawn, nor the limbs that join them (Ultralytics' 0.5).
const KEYPOINT_CONFIDENCE: f32 = 0.5;

/// Sizes that read the same on a 480p and a 4K frame: font pixels and box edges grow with height.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub scale: usize,
    pub thickness: i64,
}

impl Style {
    pub fn for_height(height: usize) -> Style {
        Style { scale: (height / 360).clamp(1, 6), thickness: (height / 240).max(2) as i64 }
    }

    /// A text row: the glyph cell and a pixel of padding above and below, scaled.
    pub fn row(self) -> i64 {
        ((GLYPH + 2) * self.scale) as i64
    }
}

pub fn annotate(canvas: &mut Canvas, prediction: &Prediction, overlay: &Overlay) {
    let style = Style::for_height(canvas.height);
    let below_panel = draw_overlay(canvas, overlay, style);
    match prediction {
        Prediction::Boxes(detections) => {
            // Masks first, so that every box and label lies on top of them.
            for d in detections {
                if let Some(mask) = &d.mask {
                    let colour = class_colour(d.class_id);
                    mask.for_each_run(|x, y0, y1| {
                        canvas.blend(x as i64, y0 as i64, x as i64 + 1, y1 as i64, colour, MASK_ALPHA)
                    });
                }
            }
            for d in detections {
                let colour = class_colour(d.class_id);
                let [x0, y0, x1, y1] = d.bbox.map(|v| if v.is_finite() { v.round() as i64 } else { 0 });
                match &d.rotated {
                    Some(turned) => {
                        for (i, &a) in turned.corners.iter().enumerate() {
                            let b = turned.corners[(i + 1) % 4];
                            canvas.line((a[0], a[1]), (b[0], b[1]), style.thickness, colour);
                        }
                    }
                    None => canvas.outline(x0, y0, x1, y1, style.thickness, colour),
                }
                skeleton(canvas, d, colour, style);
                let label = format!("{} {:.2}", d.label, d.score);
                // Above the box where there is room, else just inside its top edge; moved left
                // where it would run off the frame.
                let top = if y0 >= style.row() { y0 - style.row() } else { y0 };
                let width = text_width(&label, style.scale) + 2 * style.scale as i64;
                let left = x0.min(canvas.width as i64 - width).max(0);
                label_bar(canvas, left, top, &label, colour, style);
            }
        }
        Prediction::Classes(classes) => {
            for (i, c) in classes.iter().take(TOP_K).enumerate() {
                let label = format!("{:.2} {}", c.score, c.label);
                let top = below_panel + i as i64 * style.row();
                label_bar(canvas, 0, top, &label, class_colour(c.class_id), style);
            }
        }
        Prediction::Semantic(map) => {
            semantic_overlay(canvas, map);
            for (i, c) in map.shares.iter().take(TOP_K).enumerate() {
                let label = format!("{:.0}% {}", c.share * 100.0, c.label);
                let top = below_panel + i as i64 * style.row();
                label_bar(canvas, 0, top, &label, class_colour(c.class_id), style);
            }
        }
        Prediction::Raw(_) => {}
    }
}

/// Each pixel tinted with its class's colour, where the map is the canvas's size.
fn semantic_overlay(canvas: &mut Canvas, map: &SemanticMap) {
    if map.size != [canvas.height, canvas.width] {
        return;
    }
    let mut colours = std::collections::HashMap::new();
    for (px, &class) in canvas.pixels.chunks_exact_mut(3).zip(&map.classes) {
        if class == NO_CLASS {
            continue;
        }
        let colour = *colours.entry(class).or_insert_with(|| class_colour(class as usize));
        canvas::tint(px, colour, MASK_ALPHA);
    }
}

/// A detection's keypoints as discs, joined as COCO's skeleton where there are its 17; points
/// less sure than `KEYPOINT_CONFIDENCE` left out.
fn skeleton(canvas: &mut Canvas, d: &Detection, colour: [u8; 3], style: Style) {
    let Some(keypoints) = &d.keypoints else { return };
    let points: Vec<Option<(f32, f32)>> =
        keypoints.points().map(|(x, y, c)| (c >= KEYPOINT_CONFIDENCE).then_some((x, y))).collect();
    if points.len() == 17 {
        for &(a, b) in &COCO_SKELETON {
            if let (Some(a), Some(b)) = (points[a], points[b]) {
                canvas.line(a, b, (style.thickness / 2).max(1), colour);
            }
        }
    }
    for point in points.into_iter().flatten() {
        canvas.disc(point, style.thickness + 1, ink_on(colour));
    }
}

/// A filled bar in `colour` with `text` on it; its height is one row.
fn label_bar(canvas: &mut Canvas, x: i64, y: i64, text: &str, colour: [u8; 3], style: Style) {
    let pad = style.scale as i64;
    canvas.fill(x, y, x + text_width(text, style.scale) + 2 * pad, y + style.row(), colour);
    canvas.text(x + pad, y + pad, text, style.scale, ink_on(colour));
}

/// The overlay's lines on a translucent panel in the top-left corner; where the panel ends.
fn draw_overlay(canvas: &mut Canvas, o: &Overlay, style: Style) -> i64 {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    let mut lines = vec![
        format!("frame {}", o.frame),
        format!("{:.1} fps", o.fps),
        format!("g2g p99 {}", ms(o.glass_to_glass_p99_ms)),
        format!("infer p99 {}", ms(o.inference_p99_ms)),
    ];
    if let Some(w) = o.power_w {
        lines.push(format!("{w:.2} W"));
    }
    let pad = style.scale as i64;
    let width = lines.iter().map(|l| text_width(l, style.scale)).max().unwrap_or(0) + 2 * pad;
    let height = lines.len() as i64 * style.row();
    canvas.blend(0, 0, width, height, PANEL, 160);
    for (i, line) in lines.iter().enumerate() {
        canvas.text(pad, i as i64 * style.row() + pad, line, style.scale, WHITE);
    }
    height
}

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::postprocess::{ClassScore, Detection};

    fn grey(w: usize, h: usize) -> Canvas {
        let mut c = Canvas::new(w, h);
        c.pixels.fill(128);
        c
    }

    #[test]
    fn a_box_is_outlined_in_its_class_colour_with_its_label_above() {
        let mut c = grey(640, 480);
        let person = Detection {
            class_id: 0,
            label: "person".into(),
            score: 0.9,
            bbox: [200.0, 150.0, 400.0, 450.0],
            ..Detection::default()
        };
        annotate(&mut c, &Prediction::Boxes(vec![person]), &Overlay::default());
        let colour = class_colour(0);
        let t = Style::for_height(480).thickness as usize;
        for (x, y) in [(200, 300), (399, 300), (300, 150), (300, 449), (200 + t - 1, 200)] {
            assert_eq!(c.pixel(x, y), colour, "edge at {x},{y}");
        }
        assert_eq!(c.pixel(300, 300), [128; 3], "the inside is untouched");
        assert_eq!(c.pixel(200 + t, 300), [128; 3]);
        // The label bar sits above the box, in the class colour, with ink on it.
        let bar: Vec<_> = (200..260).map(|x| c.pixel(x, 150 - 5)).collect();
        assert!(bar.contains(&colour) && bar.contains(&ink_on(colour)), "{bar:?}");
    }

    #[test]
    fn boxes_off_the_frame_or_not_finite_do_not_panic() {
        let mut c = grey(64, 48);
        let d = |bbox| Detection { class_id: 7, label: "x".into(), score: 0.5, bbox, ..Detection::default() };
        let boxes = vec![
            d([-1e9, -5.0, 1e9, 1e30]),
            d([f32::NAN, 0.0, f32::INFINITY, 10.0]),
            d([70.0, 50.0, 60.0, 40.0]),
        ];
        annotate(&mut c, &Prediction::Boxes(boxes), &Overlay::default());
    }

    /// The colour `alpha`/256 of the way from grey 128 to `colour`, as `blend` rounds it.
    fn tinted(colour: [u8; 3], alpha: u16) -> [u8; 3] {
        colour.map(|c| ((128 * (256 - alpha) + c as u16 * alpha) >> 8) as u8)
    }

    #[test]
    fn a_mask_tints_its_pixels_and_no_others() {
        use crate::postprocess::mask::Rle;
        // 320×240, set: column 300, rows 200 to 209 (column-major runs), clear of the overlay.
        let rle = Rle { size: [240, 320], counts: vec![300 * 240 + 200, 10, 240 * 320 - 300 * 240 - 210] };
        let d =
            Detection { class_id: 2, bbox: [0.0, 0.0, 1.0, 1.0], mask: Some(rle), ..Detection::default() };
        let mut c = grey(320, 240);
        annotate(&mut c, &Prediction::Boxes(vec![d]), &Overlay::default());
        let colour = class_colour(2);
        for y in 200..210 {
            assert_eq!(c.pixel(300, y), tinted(colour, MASK_ALPHA), "row {y}");
        }
        for (x, y) in [(300, 199), (300, 210), (299, 205), (301, 205)] {
            assert_eq!(c.pixel(x, y), [128; 3], "{x},{y} is not the mask's");
        }
    }

    #[test]
    fn keypoints_are_discs_joined_as_the_skeleton_and_unsure_ones_left_out() {
        use crate::postprocess::keypoints::Keypoints;
        // 17 points on a row 10 pixels apart; the nose (0) unsure.
        let mut flat = Vec::new();
        for k in 0..17 {
            flat.extend([20.0 + 10.0 * k as f32, 100.0, if k == 0 { 0.2 } else { 0.9 }]);
        }
        let d = Detection {
            class_id: 0,
            bbox: [0.0, 0.0, 1.0, 1.0],
            keypoints: Some(Keypoints { values: 3, flat }),
            ..Detection::default()
        };
        let mut c = grey(320, 240);
        annotate(&mut c, &Prediction::Boxes(vec![d]), &Overlay::default());
        let colour = class_colour(0);
        // Point 5 and its disc; the limb 5–6 between them; nothing where the nose is.
        assert_eq!(c.pixel(70, 100), ink_on(colour));
        assert_eq!(c.pixel(75, 100), colour, "the limb from 5 to 6");
        assert_eq!(c.pixel(20, 100), [128; 3], "an unsure point is not drawn");
        assert_eq!(c.pixel(70, 120), [128; 3]);
    }

    #[test]
    fn a_rotated_box_is_its_four_edges() {
        use crate::postprocess::rotated::RotatedBox;
        let turned = RotatedBox::new([100.0, 100.0, 80.0, 40.0, std::f32::consts::FRAC_PI_4]);
        let d =
            Detection { class_id: 3, bbox: turned.bounds(), rotated: Some(turned), ..Detection::default() };
        let mut c = grey(320, 240);
        annotate(&mut c, &Prediction::Boxes(vec![d]), &Overlay::default());
        let colour = class_colour(3);
        for corner in turned.corners {
            let (x, y) = (corner[0].round() as usize, corner[1].round() as usize);
            assert_eq!(c.pixel(x, y), colour, "corner {corner:?}");
        }
        assert_eq!(c.pixel(100, 100), [128; 3], "the inside is untouched");
        // The upright box around it is not drawn: its corner lies off the rotated edges.
        let [x0, y0, _, _] = turned.bounds();
        assert_eq!(c.pixel(x0.round() as usize + 1, y0.round() as usize + 1), [128; 3]);
    }

    #[test]
    fn a_classifiers_labels_go_below_the_overlay() {
        let mut c = grey(640, 480);
        let classes =
            (0..7).map(|i| ClassScore { class_id: i, label: format!("class {i}"), score: 0.1 }).collect();
        let overlay = Overlay { frame: 3, fps: 29.97, power_w: Some(4.2), ..Overlay::default() };
        annotate(&mut c, &Prediction::Classes(classes), &overlay);
        let style = Style::for_height(480);
        let panel = 5 * style.row();
        // Five labels, each a bar in its class colour, under the panel's five lines.
        for i in 0..TOP_K as i64 {
            let y = (panel + i * style.row()) as usize;
            assert_eq!(c.pixel(0, y), class_colour(i as usize), "label {i}");
        }
        assert_eq!(c.pixel(0, (panel + 5 * style.row()) as usize), [128; 3], "only the top five");
        // The panel darkens what it covers and carries white text.
        let panel_pixels: Vec<_> = (0..panel as usize).flat_map(|y| (0..40).map(move |x| (x, y))).collect();
        assert!(panel_pixels.iter().any(|&(x, y)| c.pixel(x, y) == WHITE));
        assert!(panel_pixels.iter().any(|&(x, y)| c.pixel(x, y)[0] < 128));
    }
}
