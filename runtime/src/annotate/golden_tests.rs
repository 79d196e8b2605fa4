//! Each kind of result drawn on a small grey frame against a golden picture
//! (`tests/fixtures/annotate/*.png`): a mask, a skeleton, a rotated box, a class map. Every
//! channel of every pixel within 2 of the golden's (rounding in another build's arithmetic), or
//! the test fails naming how many are not. `EDGERT_BLESS=1` writes the goldens anew, to be
//! looked at before they are committed.

use std::path::PathBuf;

use super::canvas::Canvas;
use super::{annotate, Overlay};
use crate::postprocess::keypoints::Keypoints;
use crate::postprocess::mask::Rle;
use crate::postprocess::rotated::RotatedBox;
use crate::postprocess::semantic::{ClassShare, SemanticMap};
use crate::postprocess::{Detection, Prediction};

const W: usize = 240;
const H: usize = 180;
/// How far a channel may be from the golden's.
const TOLERANCE: u8 = 2;

fn golden(name: &str, prediction: &Prediction) {
    let mut canvas = Canvas::new(W, H);
    canvas.pixels.fill(128);
    annotate(&mut canvas, prediction, &Overlay::default());
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "annotate", &format!("{name}.png")]
        .iter()
        .collect();
    if std::env::var_os("EDGERT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        image::RgbImage::from_raw(W as u32, H as u32, canvas.pixels.clone()).unwrap().save(&path).unwrap();
    }
    let wanted = image::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).into_rgb8();
    assert_eq!((wanted.width() as usize, wanted.height() as usize), (W, H), "{name}");
    let off = canvas.pixels.iter().zip(wanted.as_raw()).filter(|(a, b)| a.abs_diff(**b) > TOLERANCE).count();
    assert_eq!(off, 0, "{name}: {off} channel values differ from the golden by more than {TOLERANCE}");
}

fn person(mask: Option<Rle>, keypoints: Option<Keypoints>, rotated: Option<RotatedBox>) -> Detection {
    Detection {
        class_id: 0,
        label: "person".into(),
        score: 0.9,
        bbox: [60.0, 40.0, 180.0, 170.0],
        mask,
        keypoints,
        rotated,
    }
}

#[test]
fn a_mask() {
    // The disc of radius 50 around (120, 105), column by column.
    let mut counts = vec![0u32];
    let mut set = false;
    for x in 0..W {
        for y in 0..H {
            let inside = (x as f32 + 0.5 - 120.0).powi(2) + (y as f32 + 0.5 - 105.0).powi(2) <= 2500.0;
            if inside != set {
                counts.push(0);
                set = inside;
            }
            *counts.last_mut().unwrap() += 1;
        }
    }
    golden("mask", &Prediction::Boxes(vec![person(Some(Rle { size: [H, W], counts }), None, None)]));
}

#[test]
fn a_skeleton() {
    // A standing figure: head, shoulders, arms, hips, legs.
    let points: [(f32, f32); 17] = [
        (120.0, 50.0),
        (115.0, 45.0),
        (125.0, 45.0),
        (110.0, 48.0),
        (130.0, 48.0),
        (100.0, 75.0),
        (140.0, 75.0),
        (90.0, 100.0),
        (150.0, 100.0),
        (85.0, 125.0),
        (155.0, 125.0),
        (108.0, 120.0),
        (132.0, 120.0),
        (105.0, 145.0),
        (135.0, 145.0),
        (103.0, 168.0),
        (137.0, 168.0),
    ];
    let flat = points.iter().flat_map(|&(x, y)| [x, y, 0.9]).collect();
    golden("skeleton", &Prediction::Boxes(vec![person(None, Some(Keypoints { values: 3, flat }), None)]));
}

#[test]
fn a_rotated_box() {
    let turned = RotatedBox::new([120.0, 105.0, 120.0, 50.0, 0.5]);
    let mut d = person(None, None, Some(turned));
    d.bbox = turned.bounds();
    golden("rotated", &Prediction::Boxes(vec![d]));
}

#[test]
fn a_class_map() {
    // Three bands: class 0 on top, 2 in the middle, 7 below.
    let classes = (0..H)
        .flat_map(|y| {
            std::iter::repeat_n(
                if y < 60 {
                    0
                } else if y < 120 {
                    2
                } else {
                    7
                },
                W,
            )
        })
        .collect();
    let share = |class_id: usize, label: &str| ClassShare { class_id, label: label.into(), share: 1.0 / 3.0 };
    let shares = vec![share(0, "sky"), share(2, "road"), share(7, "grass")];
    golden("class-map", &Prediction::Semantic(SemanticMap { size: [H, W], shares, classes }));
}
