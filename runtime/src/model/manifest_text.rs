//! A manifest written out as TOML with every key commented: what `edgert manifest` gives a user
//! to keep beside a model, or to edit where edgert guessed.

use std::fmt::Write;

use super::manifest::{BoxOrder, ChannelOrder, Layout, Manifest, ResizeMode, TaskSpec};
use crate::choice::Choice;

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn floats(values: &[f32]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", parts.join(", "))
}

/// The manifest as commented TOML; `notes` (what was guessed) head the file.
pub fn commented(m: &Manifest, notes: &[String]) -> String {
    let mut t = String::from("# edgert model manifest (docs/manifest.md lists every key).\n");
    for note in notes {
        let _ = writeln!(t, "# GUESSED: {note}");
    }
    let model = &m.model;
    let _ = writeln!(
        t,
        "\n[model]\n# The model file, relative to this manifest.\nfile = {}",
        quoted(&model.file.to_string_lossy())
    );
    let _ =
        writeln!(t, "# Its sha256, checked on every load: a changed model is refused until this is updated.");
    let _ = writeln!(t, "sha256 = {}", quoted(&model.sha256));
    let _ = writeln!(t, "# What the outputs mean: classification, yolo (darknet anchors), detect or raw.");
    let _ = writeln!(t, "task = {}", quoted(m.task.kind().name()));
    match (&model.labels, &model.names) {
        (Some(labels), _) => {
            let _ =
                writeln!(t, "# Class names, one per line.\nlabels = {}", quoted(&labels.to_string_lossy()));
        }
        (None, Some(names)) => {
            let list: Vec<String> = names.iter().map(|n| quoted(n)).collect();
            let _ = writeln!(t, "# Class names by index (or `labels = \"FILE\"`, one per line).");
            let _ = writeln!(t, "names = [{}]", list.join(", "));
        }
        (None, None) => {}
    }
    let input = &m.input;
    let _ = writeln!(t, "\n[input]\nname = {}", quoted(&input.name));
    let _ = writeln!(t, "# Batch first; the batch is set at run time (--batch).\nshape = {:?}", input.shape);
    let layout = if input.layout == Layout::Nhwc { "nhwc" } else { "nchw" };
    let _ = writeln!(
        t,
        "layout = {}\n# f32, f16 or u8: the model's own.\ndtype = {}",
        quoted(layout),
        quoted(input.dtype.name())
    );
    let p = &m.preprocess;
    let resize = match p.resize {
        ResizeMode::Stretch => "stretch",
        ResizeMode::Letterbox => "letterbox",
        ResizeMode::LetterboxTopLeft => "letterbox-top-left",
        ResizeMode::CenterCrop => "center-crop",
        ResizeMode::None => "none",
    };
    let channels = match p.channels {
        ChannelOrder::Rgb => "rgb",
        ChannelOrder::Bgr => "bgr",
        ChannelOrder::Gray => "gray",
    };
    let _ = writeln!(t, "\n[preprocess]");
    let _ = writeln!(
        t,
        "# stretch, letterbox (centred), letterbox-top-left, center-crop or none.\nresize = {}",
        quoted(resize)
    );
    if let Some(side) = p.resize_short_side {
        let _ = writeln!(t, "resize_short_side = {side}");
    }
    let _ = writeln!(t, "# value = (pixel × scale − mean) / std, per channel in the model's order.");
    let _ = writeln!(t, "scale = {:?}\nmean = {}\nstd = {}", p.scale, floats(&p.mean), floats(&p.std));
    let _ = writeln!(
        t,
        "channels = {}\n# The letterbox border, 0..255.\npad_value = {}",
        quoted(channels),
        p.pad_value
    );
    match &m.task {
        TaskSpec::Classification(c) => {
            let _ = writeln!(
                t,
                "\n[classification]\n# Apply softmax to logits.\nsoftmax = {}\ntop_k = {}",
                c.softmax, c.top_k
            );
        }
        TaskSpec::Yolo(y) => {
            let _ = writeln!(t, "\n[yolo]\nconfidence = {:?}\niou = {:?}", y.confidence, y.iou);
            for head in &y.heads {
                let anchors: Vec<String> = head.anchors.iter().map(|a| floats(a)).collect();
                let _ = writeln!(
                    t,
                    "\n[[yolo.heads]]\noutput = {}\nanchors = [{}]",
                    quoted(&head.output),
                    anchors.join(", ")
                );
            }
        }
        TaskSpec::Detect(d) => {
            let _ = writeln!(t, "\n[detect]");
            let _ = writeln!(
                t,
                "# yolov5, yolov8, end2end, rtdetr, ssd, efficient-nms or detectnet-v2 (docs/models.md).\nformat = {}",
                quoted(d.format.name())
            );
            let _ = writeln!(t, "# The lowest score kept.\nconfidence = {:?}", d.confidence);
            let _ = writeln!(t, "# Overlap above which NMS drops the lower-scored box.\niou = {:?}", d.iou);
            let _ = writeln!(t, "# The most boxes kept per image.\nmax_det = {}", d.max_det);
            let _ = writeln!(t, "# NMS across classes rather than per class.\nagnostic = {}", d.agnostic);
            if let Some(order) = d.box_order {
                let order = if order == BoxOrder::Yxyx { "yxyx" } else { "xyxy" };
                let _ = writeln!(t, "box_order = {}", quoted(order));
            }
            if let Some(normalized) = d.normalized {
                let _ = writeln!(t, "normalized = {normalized}");
            }
            for (key, v) in [
                ("background_class", d.background_class.map(|c| c.to_string())),
                ("stride", d.stride.map(|s| format!("{s:?}"))),
                ("box_scale", d.box_scale.map(|s| format!("{s:?}"))),
            ] {
                if let Some(v) = v {
                    let _ = writeln!(t, "{key} = {v}");
                }
            }
            if d.masks {
                let _ = writeln!(t, "# Instance masks from the prototypes output.\nmasks = true");
            }
            if let Some([count, values]) = d.keypoints {
                let _ = writeln!(
                    t,
                    "# Keypoints per box: [count, values each].\nkeypoints = [{count}, {values}]"
                );
            }
            if d.rotated {
                let _ =
                    writeln!(t, "# Rotated boxes: an angle in radians after the classes.\nrotated = true");
            }
        }
        TaskSpec::Semantic(s) => {
            let _ = writeln!(
                t,
                "\n[semantic]\n# One score a pixel: the foreground above it (0 for logits, 0.5 for probabilities).\nthreshold = {:?}",
                s.threshold
            );
        }
        TaskSpec::Raw => {}
    }
    t
}
