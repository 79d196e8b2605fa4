//! The TOML manifest that describes a model: file, task, input, preprocessing, postprocessing.
//! Preprocessing is read from here, never guessed from file names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::frame::MAX_SIDE;
use crate::limits::short;
use crate::tensor::ElementType;
use crate::{Error, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub model: ModelSection,
    pub input: InputSection,
    #[serde(default)]
    pub preprocess: PreprocessSpec,
    #[serde(default)]
    pub classification: ClassificationSpec,
    pub yolo: Option<YoloSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// The ONNX file, relative to the manifest.
    pub file: PathBuf,
    /// Hex sha256 of the file, checked on load.
    pub sha256: String,
    pub task: Task,
    /// Class names, one per line, relative to the manifest.
    pub labels: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Scores per class: top-k.
    Classification,
    /// YOLO head maps: boxes after decoding and NMS.
    Yolo,
    /// Output tensors as they are.
    Raw,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSection {
    pub name: String,
    /// Batch first; the batch is set at run time.
    pub shape: Vec<usize>,
    #[serde(default)]
    pub layout: Layout,
    #[serde(default)]
    pub dtype: ElementType,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    #[default]
    Nchw,
    Nhwc,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResizeMode {
    /// Scale both axes to the input size, ignoring the aspect ratio.
    #[default]
    Stretch,
    /// Scale to fit, keeping the aspect ratio, and pad the rest with `pad_value`.
    Letterbox,
    /// Scale the short side to `resize_short_side`, then cut the centre.
    CenterCrop,
    /// The image must already have the input size.
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelOrder {
    #[default]
    Rgb,
    Bgr,
    Gray,
}

impl ChannelOrder {
    pub fn channels(self) -> usize {
        if self == ChannelOrder::Gray {
            1
        } else {
            3
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessSpec {
    #[serde(default)]
    pub resize: ResizeMode,
    /// For `center-crop`: the short side before cropping (default: the input's larger side).
    pub resize_short_side: Option<u32>,
    /// Multiplies each 0..255 pixel value before mean and std.
    #[serde(default = "default_scale")]
    pub scale: f32,
    /// Per channel, in the model's channel order; one value is used for every channel.
    #[serde(default = "zeros")]
    pub mean: Vec<f32>,
    #[serde(default = "ones")]
    pub std: Vec<f32>,
    #[serde(default)]
    pub channels: ChannelOrder,
    /// For `letterbox`: the 0..255 value of the border.
    #[serde(default = "default_pad")]
    pub pad_value: u8,
}

fn default_scale() -> f32 {
    1.0 / 255.0
}
fn zeros() -> Vec<f32> {
    vec![0.0]
}
fn ones() -> Vec<f32> {
    vec![1.0]
}
fn default_pad() -> u8 {
    114
}

impl PreprocessSpec {
    /// A classifier's usual recipe: stretched, 0..1, ImageNet's mean and std, RGB.
    pub fn imagenet() -> PreprocessSpec {
        PreprocessSpec {
            resize: ResizeMode::Stretch,
            mean: vec![0.485, 0.456, 0.406],
            std: vec![0.229, 0.224, 0.225],
            ..PreprocessSpec::default()
        }
    }
}

impl Default for PreprocessSpec {
    fn default() -> Self {
        PreprocessSpec {
            resize: ResizeMode::default(),
            resize_short_side: None,
            scale: default_scale(),
            mean: zeros(),
            std: ones(),
            channels: ChannelOrder::default(),
            pad_value: default_pad(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassificationSpec {
    /// Apply softmax to the output (for models that return logits).
    #[serde(default = "yes")]
    pub softmax: bool,
    #[serde(default = "default_top_k")]
    pub top_k: usize,
}

fn yes() -> bool {
    true
}
fn default_top_k() -> usize {
    5
}

impl Default for ClassificationSpec {
    fn default() -> Self {
        ClassificationSpec { softmax: true, top_k: default_top_k() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YoloSpec {
    #[serde(default = "default_confidence")]
    pub confidence: f32,
    #[serde(default = "default_iou")]
    pub iou: f32,
    pub heads: Vec<YoloHead>,
}

fn default_confidence() -> f32 {
    0.25
}
fn default_iou() -> f32 {
    0.45
}

/// One YOLO output map and the anchors (width, height in input pixels) of its boxes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YoloHead {
    pub output: String,
    pub anchors: Vec<[f32; 2]>,
}

/// A relative path with no `..`: the manifest's folder or below, as ONNX external data is.
fn beside_manifest(file: &Path) -> bool {
    use std::path::Component;
    file.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

impl YoloSpec {
    /// Thresholds are fractions and anchors real sizes; heads are checked against the model's
    /// outputs when it loads (`postprocess::yolo`).
    fn check(&self) -> Result<(), String> {
        if self.heads.is_empty() {
            return Err("[yolo] needs at least one [[yolo.heads]]".into());
        }
        for (name, v) in [("confidence", self.confidence), ("iou", self.iou)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("yolo.{name} = {v} is not in [0, 1]"));
            }
        }
        for head in &self.heads {
            if head.anchors.is_empty() {
                return Err(format!("yolo head '{}' has no anchors", head.output));
            }
            if let Some(a) =
                head.anchors.iter().flatten().find(|a| !(a.is_finite() && (1e-3..=1e5).contains(*a)))
            {
                return Err(format!(
                    "yolo head '{}' has an anchor side of {a}, not in [0.001, 100000] pixels",
                    head.output
                ));
            }
        }
        Ok(())
    }
}

impl Manifest {
    /// Reads and parses a manifest; checks that need the model come later.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
        let manifest: Manifest = toml::from_str(&text).map_err(|e| {
            Error::manifest(path, format!("invalid manifest: {}", crate::error::one_line(&e)))
        })?;
        manifest.check_self(path)?;
        Ok(manifest)
    }

    /// Checks that need nothing but the manifest.
    fn check_self(&self, path: &Path) -> Result<()> {
        let bad = |reason: String| Err(Error::manifest(path, reason));
        if self.input.shape.len() < 2 || self.input.shape.iter().skip(1).any(|&d| d == 0) {
            return bad(format!("input.shape {:?} needs a batch and non-zero dimensions", self.input.shape));
        }
        let channels = self.preprocess.channels.channels();
        for (name, values) in [("mean", &self.preprocess.mean), ("std", &self.preprocess.std)] {
            if values.len() != 1 && values.len() != channels {
                return bad(format!("preprocess.{name} has {} values for {channels} channels", values.len()));
            }
        }
        let p = &self.preprocess;
        // Past these, a pixel's value overflows f32 or vanishes below its precision: NaN scores.
        let magnitude = |name: &str, v: f32, min: f32, max: f32| {
            (v.is_finite() && (min..=max).contains(&v.abs())).then_some(()).ok_or_else(|| {
                let reason = format!(
                    "preprocess.{name} = {} is not a number whose size is in [{min}, {max}]",
                    short(v)
                );
                Error::manifest(path, reason)
            })
        };
        magnitude("scale", p.scale, 1e-6, 1e3)?;
        for &m in &p.mean {
            magnitude("mean", m, 0.0, 1e4)?;
        }
        for &s in &p.std {
            magnitude("std", s, 1e-6, 1e4)?;
        }
        if let (Some(side), Some((h, w, _))) = (p.resize_short_side, self.image_geometry()) {
            if !(h.max(w)..=MAX_SIDE).contains(&(side as usize)) {
                let range = format!("[{}, {MAX_SIDE}]", h.max(w));
                return bad(format!(
                    "preprocess.resize_short_side = {side} is not in {range}: the crop must fit"
                ));
            }
        }
        for (name, file) in
            [("model.file", Some(&self.model.file)), ("model.labels", self.model.labels.as_ref())]
        {
            if file.is_some_and(|f| !beside_manifest(f)) {
                let file = file.map(|f| f.display().to_string()).unwrap_or_default();
                return bad(format!("{name} '{file}' must name a file in the manifest's folder or below it"));
            }
        }
        match (&self.yolo, self.model.task) {
            (None, Task::Yolo) => {
                return bad("task 'yolo' needs a [yolo] section with at least one [[yolo.heads]]".into())
            }
            (Some(yolo), _) => yolo.check().map_err(|reason| Error::manifest(path, reason))?,
            (None, _) => {}
        }
        if self.classification.top_k == 0 {
            return bad("classification.top_k must be at least 1".into());
        }
        Ok(())
    }

    /// Spatial size (height, width) and channel count of an image input, from shape and layout.
    pub fn image_geometry(&self) -> Option<(usize, usize, usize)> {
        let s = &self.input.shape;
        if s.len() != 4 {
            return None;
        }
        Some(match self.input.layout {
            Layout::Nchw => (s[2], s[3], s[1]),
            Layout::Nhwc => (s[1], s[2], s[3]),
        })
    }
}
