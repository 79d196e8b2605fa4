//! How `run` prints a prediction: one line for people, or one JSON object.

use serde_json::json;

use crate::postprocess::Prediction;

/// One input's prediction as a line for people, with its label when known.
pub(super) fn prediction_line(name: &str, prediction: &Prediction, label: Option<i64>) -> String {
    let body = prediction_text(prediction);
    match label {
        Some(label) => format!("{name}: {body} (label {label})"),
        None => format!("{name}: {body}"),
    }
}

/// One input's prediction as a JSON object, with its label when known.
pub(super) fn prediction_json(name: &str, prediction: &Prediction, label: Option<i64>) -> serde_json::Value {
    let mut value = json!({ "input": name, "prediction": prediction });
    if let Some(label) = label {
        value["label"] = json!(label);
    }
    value
}

/// A prediction on one line, for people.
pub(super) fn prediction_text(prediction: &Prediction) -> String {
    match prediction {
        Prediction::Classes(classes) => classes
            .iter()
            .map(|c| format!("{} {} {:.3}", c.class_id, c.label, c.score))
            .collect::<Vec<_>>()
            .join(", "),
        Prediction::Boxes(boxes) => {
            let list: Vec<String> = boxes
                .iter()
                .map(|d| {
                    format!(
                        "{} {:.2} [{:.0}, {:.0}, {:.0}, {:.0}]",
                        d.label, d.score, d.bbox[0], d.bbox[1], d.bbox[2], d.bbox[3]
                    )
                })
                .collect();
            format!("{} objects: {}", boxes.len(), list.join("; "))
        }
        Prediction::Semantic(map) => {
            let shares: Vec<String> =
                map.shares.iter().map(|c| format!("{} {:.1} %", c.label, c.share * 100.0)).collect();
            format!("{} classes in {}×{}: {}", map.shares.len(), map.size[1], map.size[0], shares.join(", "))
        }
        Prediction::Raw(outputs) => outputs
            .iter()
            .map(|o| format!("{} {:?} {:?}", o.name, o.shape, o.first_values))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
