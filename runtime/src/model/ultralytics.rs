//! The metadata Ultralytics writes into its exports: ONNX `metadata_props` holding Python literals
//! (`names` = `{0: 'person', 1: 'bicycle'}`, `imgsz` = `[640, 640]`), or the JSON header of an
//! `.engine`. It says the task, the class names and the input size, so such a model runs bare.

use super::manifest::MAX_KEYPOINTS;
use crate::frame::MAX_SIDE;

/// The most class names a model may declare.
pub const MAX_NAMES: usize = 100_000;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UltralyticsMeta {
    /// `detect`, `segment`, `pose`, `obb`, `classify`.
    pub task: Option<String>,
    /// Class names by index.
    pub names: Option<Vec<String>>,
    /// (height, width) of the input the model was exported for.
    pub imgsz: Option<(usize, usize)>,
    /// The batch it was exported for: an engine's input is fixed at it.
    pub batch: Option<usize>,
    /// Outputs already de-duplicated: `[N, K, 6]` (YOLOv10, YOLO26, `nms=True` exports).
    pub end2end: bool,
    /// What the `description` says, for telling RT-DETR from YOLO.
    pub description: Option<String>,
    /// A pose model's keypoints: [count, values each] (2: x, y; 3: and a confidence).
    pub kpt_shape: Option<[usize; 2]>,
}

impl UltralyticsMeta {
    /// From an ONNX model's `metadata_props`; `None` when they are not Ultralytics'.
    pub fn from_props<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Option<Self>, String> {
        let mut meta = UltralyticsMeta::default();
        let mut found = false;
        let mut nms = false;
        for (key, value) in props {
            let value = value.trim();
            match key {
                "task" => meta.task = Some(value.to_string()),
                "names" => {
                    meta.names = Some(python_names(value).map_err(|e| format!("metadata 'names': {e}"))?)
                }
                "imgsz" => meta.imgsz = Some(imgsz(value).map_err(|e| format!("metadata 'imgsz': {e}"))?),
                "end2end" => meta.end2end = value == "True",
                "batch" => meta.batch = Some(batch(value).map_err(|e| format!("metadata 'batch': {e}"))?),
                "description" => meta.description = Some(value.to_string()),
                "kpt_shape" => {
                    meta.kpt_shape = Some(kpt_shape(value).map_err(|e| format!("metadata 'kpt_shape': {e}"))?)
                }
                // Exports with `nms=True` say so in their arguments.
                "args" => nms = value.contains("'nms': True"),
                _ => continue,
            }
            found |= !matches!(key, "description" | "args" | "batch" | "kpt_shape");
        }
        meta.end2end |= nms;
        Ok(found.then_some(meta))
    }

    /// From the JSON header of an Ultralytics `.engine`.
    pub fn from_json(value: &serde_json::Value) -> Result<Option<Self>, String> {
        let Some(object) = value.as_object() else { return Ok(None) };
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        let props: Vec<(String, String)> = object
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "names" | "imgsz" | "args"))
            .map(|(k, v)| (k.clone(), if v.is_boolean() { capitalised(v) } else { text(v) }))
            .collect();
        let meta = UltralyticsMeta::from_props(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        let mut found = meta.is_some();
        let mut meta = meta.unwrap_or_default();
        if let Some(names) = object.get("names") {
            meta.names = Some(json_names(names).map_err(|e| format!("metadata 'names': {e}"))?);
            found = true;
        }
        if let Some(size) = object.get("imgsz") {
            meta.imgsz = Some(imgsz(&size.to_string()).map_err(|e| format!("metadata 'imgsz': {e}"))?);
            found = true;
        }
        meta.end2end |= object.get("args").and_then(|a| a.get("nms")).and_then(|n| n.as_bool()) == Some(true);
        Ok(found.then_some(meta))
    }

    /// Whether the description names RT-DETR, whose outputs look like a YOLO's turned round.
    pub fn is_rtdetr(&self) -> bool {
        self.description.as_deref().is_some_and(|d| d.to_ascii_lowercase().contains("rt-detr"))
    }
}

fn capitalised(v: &serde_json::Value) -> String {
    if v.as_bool() == Some(true) {
        "True".into()
    } else {
        "False".into()
    }
}

/// `[640, 640]`, `[480, 640]` or `640`: (height, width), each in [1, MAX_SIDE].
fn imgsz(text: &str) -> Result<(usize, usize), String> {
    let inner = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let sides: Vec<usize> =
        inner.split(',').map(|s| s.trim().parse::<usize>()).collect::<Result<_, _>>().map_err(|_| {
            format!("'{}' is not a list of one or two whole numbers", crate::limits::clip(text))
        })?;
    let (h, w) = match sides[..] {
        [side] => (side, side),
        [h, w] => (h, w),
        _ => return Err(format!("'{}' is not one or two sides", crate::limits::clip(text))),
    };
    if !(1..=MAX_SIDE).contains(&h) || !(1..=MAX_SIDE).contains(&w) {
        return Err(format!("{h}×{w} is not in [1, {MAX_SIDE}] a side"));
    }
    Ok((h, w))
}

/// `[17, 3]`: a count of keypoints and 2 or 3 values each.
fn kpt_shape(text: &str) -> Result<[usize; 2], String> {
    let inner = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let numbers: Result<Vec<usize>, _> = inner.split(',').map(|s| s.trim().parse::<usize>()).collect();
    match numbers.as_deref() {
        Ok(&[count, values]) if (1..=MAX_KEYPOINTS).contains(&count) && (2..=3).contains(&values) => {
            Ok([count, values])
        }
        _ => Err(format!(
            "'{}' is not [keypoints, 2 or 3 values each] with at most {MAX_KEYPOINTS} keypoints",
            crate::limits::clip(text)
        )),
    }
}

/// The most a model's metadata may say its batch is.
pub const MAX_BATCH: usize = 4096;

fn batch(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(format!("'{}' is not a whole number in [1, {MAX_BATCH}]", crate::limits::clip(text))),
    }
}

/// Names indexed 0 to n-1, each exactly once.
fn ordered(pairs: Vec<(usize, String)>) -> Result<Vec<String>, String> {
    if pairs.is_empty() {
        return Err("no class names".into());
    }
    if pairs.len() > MAX_NAMES {
        return Err(format!("{} class names, more than {MAX_NAMES}", pairs.len()));
    }
    let mut names = vec![None; pairs.len()];
    for (index, name) in pairs {
        match names.get_mut(index) {
            Some(slot @ None) => *slot = Some(name),
            Some(Some(_)) => return Err(format!("class {index} is named twice")),
            None => return Err(format!("class {index} is past the {} names given", names.len())),
        }
    }
    Ok(names.into_iter().map(|n| n.unwrap_or_default()).collect())
}

fn json_names(value: &serde_json::Value) -> Result<Vec<String>, String> {
    match value {
        serde_json::Value::Object(map) => ordered(
            map.iter()
                .map(|(k, v)| {
                    let index = k
                        .parse::<usize>()
                        .map_err(|_| format!("key '{}' is not a class index", crate::limits::clip(k)))?;
                    Ok((
                        index,
                        v.as_str()
                            .ok_or_else(|| format!("class {index} is not named by a string"))?
                            .to_string(),
                    ))
                })
                .collect::<Result<_, String>>()?,
        ),
        serde_json::Value::Array(list) => ordered(
            list.iter()
                .enumerate()
                .map(|(i, v)| {
                    Ok((
                        i,
                        v.as_str().ok_or_else(|| format!("class {i} is not named by a string"))?.to_string(),
                    ))
                })
                .collect::<Result<_, String>>()?,
        ),
        _ => Err("not an object of class names".into()),
    }
}

/// A Python dict literal of int keys and string values, as `str(dict)` writes it.
fn python_names(text: &str) -> Result<Vec<String>, String> {
    let mut p = Literal { chars: text.chars().collect(), at: 0 };
    p.expect('{')?;
    let mut pairs = Vec::new();
    p.skip_space();
    if p.peek() == Some('}') {
        return ordered(pairs);
    }
    loop {
        let index = p.integer()?;
        p.expect(':')?;
        pairs.push((index, p.string()?));
        if pairs.len() > MAX_NAMES {
            return Err(format!("more than {MAX_NAMES} class names"));
        }
        match p.next_token() {
            Some(',') => {
                p.skip_space();
                if p.peek() == Some('}') {
                    p.at += 1;
                    break;
                }
            }
            Some('}') => break,
            other => return Err(p.unexpected(other, "',' or '}'")),
        }
    }
    p.skip_space();
    if p.at != p.chars.len() {
        return Err("text follows the closing '}'".into());
    }
    ordered(pairs)
}

struct Literal {
    chars: Vec<char>,
    at: usize,
}

impl Literal {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn next_token(&mut self) -> Option<char> {
        self.skip_space();
        let c = self.peek();
        self.at += 1;
        c
    }

    fn unexpected(&self, found: Option<char>, wanted: &str) -> String {
        match found {
            Some(c) => format!("'{c}' at character {} where {wanted} was expected", self.at),
            None => format!("the text ends where {wanted} was expected"),
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        match self.next_token() {
            Some(c) if c == wanted => Ok(()),
            other => Err(self.unexpected(other, &format!("'{wanted}'"))),
        }
    }

    fn integer(&mut self) -> Result<usize, String> {
        self.skip_space();
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        digits.parse().map_err(|_| self.unexpected(self.chars.get(start).copied(), "a class index"))
    }

    /// A quoted string with Python's common escapes.
    fn string(&mut self) -> Result<String, String> {
        let quote = match self.next_token() {
            Some(q @ ('\'' | '"')) => q,
            other => return Err(self.unexpected(other, "a quoted class name")),
        };
        let mut out = String::new();
        loop {
            let c = self.peek().ok_or("a class name is not closed")?;
            self.at += 1;
            match c {
                c if c == quote => return Ok(out),
                '\\' => {
                    let e = self.peek().ok_or("a class name is not closed")?;
                    self.at += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'x' | 'u' => {
                            let len = if e == 'x' { 2 } else { 4 };
                            let hex: String = self.chars.iter().skip(self.at).take(len).collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .ok()
                                .filter(|_| hex.len() == len)
                                .and_then(char::from_u32)
                                .ok_or_else(|| format!("'\\{e}{hex}' is not a character"))?;
                            out.push(code);
                            self.at += len;
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&'static str, &'static str)]) -> Result<Option<UltralyticsMeta>, String> {
        UltralyticsMeta::from_props(pairs.iter().copied())
    }

    #[test]
    fn an_onnx_export_s_metadata() {
        let meta = props(&[
            ("description", "Ultralytics YOLOv8n model trained on coco.yaml"),
            ("task", "detect"),
            ("imgsz", "[320, 480]"),
            ("names", "{0: 'person', 1: \"it's\", 2: 'caf\\xe9', 3: 'a\\\\b'}"),
            ("args", "{'batch': 1, 'half': False, 'nms': False}"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(meta.task.as_deref(), Some("detect"));
        assert_eq!(meta.imgsz, Some((320, 480)));
        assert_eq!(meta.names.clone().unwrap(), ["person", "it's", "café", "a\\b"]);
        assert!(!meta.end2end && !meta.is_rtdetr());
    }

    #[test]
    fn a_pose_model_s_keypoints_and_what_is_not_a_keypoint_shape() {
        let meta = props(&[("task", "pose"), ("kpt_shape", "[17, 3]")]).unwrap().unwrap();
        assert_eq!(meta.kpt_shape, Some([17, 3]));
        for bad in ["[17]", "[17, 4]", "[0, 3]", "[17, 3, 1]", "[1e9, 3]", "[-1, 2]", "seventeen", ""] {
            let err = props(&[("task", "pose"), ("kpt_shape", bad)]).unwrap_err();
            assert!(err.starts_with("metadata 'kpt_shape': "), "{bad}: {err}");
        }
    }

    #[test]
    fn end_to_end_from_the_flag_or_the_nms_argument() {
        assert!(props(&[("task", "detect"), ("end2end", "True")]).unwrap().unwrap().end2end);
        assert!(props(&[("task", "detect"), ("args", "{'nms': True}")]).unwrap().unwrap().end2end);
    }

    #[test]
    fn models_without_it_have_none() {
        assert_eq!(props(&[("producer", "pytorch"), ("description", "x")]).unwrap(), None);
    }

    #[test]
    fn an_engine_header() {
        let json = serde_json::json!({"task": "detect", "imgsz": [640, 640], "names": {"0": "a", "1": "b"},
            "end2end": true, "description": "Ultralytics RT-DETR-l", "batch": 4});
        let meta = UltralyticsMeta::from_json(&json).unwrap().unwrap();
        assert_eq!(
            (meta.imgsz, meta.names.as_ref().unwrap().len(), meta.end2end, meta.batch),
            (Some((640, 640)), 2, true, Some(4))
        );
        assert!(meta.is_rtdetr());
    }

    #[test]
    fn broken_metadata_is_an_error_naming_the_key() {
        let cases: &[(&str, &str, &str)] = &[
            ("names", "{0: 'a', 0: 'b'}", "named twice"),
            ("names", "{0: 'a', 5: 'b'}", "past the 2 names"),
            ("names", "{0: 'a'", "ends"),
            ("names", "[person]", "'{'"),
            ("names", "{0: person}", "quoted"),
            ("names", "{}", "no class names"),
            ("names", "{0: 'a'} trailing", "follows"),
            ("names", "{99999999999999999999999: 'a'}", "class index"),
            ("imgsz", "[0, 640]", "not in [1, 16384]"),
            ("imgsz", "[100000, 100000]", "not in [1, 16384]"),
            ("imgsz", "[640, 640, 3]", "one or two sides"),
            ("imgsz", "big", "whole numbers"),
            ("imgsz", "[nan, 1]", "whole numbers"),
            ("batch", "0", "[1, 4096]"),
            ("batch", "-1", "[1, 4096]"),
            ("batch", "1e9", "[1, 4096]"),
        ];
        for (key, value, wanted) in cases {
            let err = UltralyticsMeta::from_props([("task", "detect"), (*key, *value)]).unwrap_err();
            assert!(err.contains(&format!("metadata '{key}'")) && err.contains(wanted), "{value}: {err}");
        }
        let json = serde_json::json!({"names": {"x": "a"}});
        assert!(UltralyticsMeta::from_json(&json).unwrap_err().contains("not a class index"));
    }
}
