//! The TOML manifest that describes a model: file, task, input, preprocessing, postprocessing.
//! Preprocessing is read from here, never guessed from file names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::choice::Choice;
use crate::frame::MAX_SIDE;
use crate::limits::short;
use crate::tensor::ElementType;
use crate::{Error, Result};

/// A checked manifest: the model, its one task with that task's settings, input and preprocessing.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "ManifestFile")]
pub struct Manifest {
    pub model: ModelSection,
    pub task: TaskSpec,
    pub input: InputSection,
    pub preprocess: PreprocessSpec,
}

/// The manifest as written: `model.task` names the task, and a section of that name holds its
/// settings. A section of another task is refused rather than ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    model: ModelFile,
    input: InputSection,
    #[serde(default)]
    preprocess: PreprocessSpec,
    classification: Option<ClassificationSpec>,
    yolo: Option<YoloSpec>,
    detect: Option<DetectSpec>,
    semantic: Option<SemanticSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    file: PathBuf,
    sha256: String,
    task: Task,
    labels: Option<PathBuf>,
    names: Option<Vec<String>>,
}

impl TryFrom<ManifestFile> for Manifest {
    type Error = String;

    fn try_from(f: ManifestFile) -> Result<Manifest, String> {
        let kind = f.model.task;
        let sections = [
            ("classification", f.classification.is_some(), Task::Classification),
            ("yolo", f.yolo.is_some(), Task::Yolo),
            ("detect", f.detect.is_some(), Task::Detect),
            ("semantic", f.semantic.is_some(), Task::Semantic),
        ];
        if let Some((name, _, _)) = sections.iter().find(|(_, given, task)| *given && *task != kind) {
            return Err(format!(
                "[{name}] is the settings of task '{name}', but model.task is '{}'",
                kind.name()
            ));
        }
        let task = match kind {
            Task::Classification => TaskSpec::Classification(f.classification.unwrap_or_default()),
            Task::Yolo => TaskSpec::Yolo(
                f.yolo.ok_or("task 'yolo' needs a [yolo] section with at least one [[yolo.heads]]")?,
            ),
            Task::Detect => {
                TaskSpec::Detect(f.detect.ok_or("task 'detect' needs a [detect] section with its `format`")?)
            }
            Task::Semantic => TaskSpec::Semantic(f.semantic.unwrap_or_default()),
            Task::Raw => TaskSpec::Raw,
        };
        if f.model.labels.is_some() && f.model.names.is_some() {
            return Err("model.labels and model.names both name the classes: keep one".into());
        }
        let model = ModelSection {
            file: f.model.file,
            sha256: f.model.sha256,
            labels: f.model.labels,
            names: f.model.names,
        };
        Ok(Manifest { model, task, input: f.input, preprocess: f.preprocess })
    }
}

#[derive(Debug, Clone)]
pub struct ModelSection {
    /// The ONNX file, relative to the manifest.
    pub file: PathBuf,
    /// Hex sha256 of the file, checked on load.
    pub sha256: String,
    /// Class names, one per line, relative to the manifest.
    pub labels: Option<PathBuf>,
    /// Class names in the manifest itself, instead of a `labels` file.
    pub names: Option<Vec<String>>,
}

/// What a model's outputs mean, as `model.task` and `--task` name it (`help` says each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    Classification,
    Yolo,
    Detect,
    Semantic,
    Raw,
}

impl Choice for Task {
    const ALL: &'static [Self] = &[Task::Classification, Task::Yolo, Task::Detect, Task::Semantic, Task::Raw];

    fn name(self) -> &'static str {
        match self {
            Task::Classification => "classification",
            Task::Yolo => "yolo",
            Task::Detect => "detect",
            Task::Semantic => "semantic",
            Task::Raw => "raw",
        }
    }

    fn help(self) -> Option<&'static str> {
        Some(match self {
            Task::Classification => "Scores per class: top-k",
            Task::Yolo => "Darknet YOLO (v3, v4) anchor head maps: boxes after decoding and NMS",
            Task::Detect => {
                "Detector outputs of a known format (YOLOv5 to YOLO26, RT-DETR, SSD, NMS plugins, DetectNet_v2): \
                 boxes, with masks, keypoints or rotated boxes where the model gives them"
            }
            Task::Semantic => "Scores per class and pixel, or a map of class ids: a class for every pixel",
            Task::Raw => "Output tensors as they are",
        })
    }
}

/// A task with its settings: one per manifest, so no task carries another's section.
#[derive(Debug, Clone)]
pub enum TaskSpec {
    Classification(ClassificationSpec),
    Yolo(YoloSpec),
    Detect(DetectSpec),
    Semantic(SemanticSpec),
    Raw,
}

impl TaskSpec {
    pub fn kind(&self) -> Task {
        match self {
            TaskSpec::Classification(_) => Task::Classification,
            TaskSpec::Yolo(_) => Task::Yolo,
            TaskSpec::Detect(_) => Task::Detect,
            TaskSpec::Semantic(_) => Task::Semantic,
            TaskSpec::Raw => Task::Raw,
        }
    }

    /// Whether the outputs become boxes.
    pub fn detects(&self) -> bool {
        matches!(self, TaskSpec::Yolo(_) | TaskSpec::Detect(_))
    }
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
    /// Scale to fit, keeping the aspect ratio, centred, and pad the rest with `pad_value`
    /// (Ultralytics' letterbox).
    Letterbox,
    /// As `letterbox`, with the image at the top left and the padding at the right and bottom.
    LetterboxTopLeft,
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

/// `[semantic]`: how a class is chosen for each pixel.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SemanticSpec {
    /// A model with one score a pixel: the score above which a pixel is the foreground (class 1).
    /// 0 for logits (the default), 0.5 for probabilities.
    #[serde(default)]
    pub threshold: f32,
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

/// Which detector output layout `[detect]` decodes (docs/models.md shows each family's export).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetectFormat {
    /// `[N, boxes, 5 + C]`: cx, cy, w, h in input pixels, objectness, C class scores.
    Yolov5,
    /// `[N, 4 + C, boxes]`: cx, cy, w, h in input pixels, C class scores (YOLOv8, YOLO11, YOLOv5u).
    Yolov8,
    /// `[N, K, 6]`: x1, y1, x2, y2 in input pixels, score, class; no NMS (YOLOv10, YOLO26,
    /// Ultralytics exports with `nms=True`).
    End2end,
    /// `[N, K, 4 + C]`: cx, cy, w, h as fractions of the input, C class scores; no NMS
    /// (Ultralytics' RT-DETR export).
    Rtdetr,
    /// `scores [N, B, C]` with class 0 the background, and `boxes [N, B, 4]`: corners as fractions
    /// of the input (pytorch-ssd, jetson-inference's SSD-MobileNet).
    Ssd,
    /// `num_detections`, `detection_boxes`, `detection_scores`, `detection_classes`: boxes already
    /// suppressed (TensorRT's EfficientNMS plugin, the TensorFlow Object Detection API).
    EfficientNms,
    /// `output_cov/Sigmoid [N, C, h, w]` and `output_bbox/BiasAdd [N, 4C, h, w]`: a grid of
    /// coverage and box offsets (NVIDIA's DetectNet_v2: PeopleNet, TrafficCamNet, DashCamNet).
    DetectnetV2,
    /// `labels [N, K]`, `boxes [N, K, 4]`, `scores [N, K]`, the postprocessing in the graph, fed
    /// the image size as a second input `orig_target_sizes [N, 2]`: corners in the pixels of that
    /// size; no NMS (RT-DETR's own export, D-FINE, DEIM).
    LabelsBoxesScores,
}

impl DetectFormat {
    pub const ALL: [DetectFormat; 8] = [
        DetectFormat::Yolov5,
        DetectFormat::Yolov8,
        DetectFormat::End2end,
        DetectFormat::Rtdetr,
        DetectFormat::Ssd,
        DetectFormat::EfficientNms,
        DetectFormat::DetectnetV2,
        DetectFormat::LabelsBoxesScores,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DetectFormat::Yolov5 => "yolov5",
            DetectFormat::Yolov8 => "yolov8",
            DetectFormat::End2end => "end2end",
            DetectFormat::Rtdetr => "rtdetr",
            DetectFormat::Ssd => "ssd",
            DetectFormat::EfficientNms => "efficient-nms",
            DetectFormat::DetectnetV2 => "detectnet-v2",
            DetectFormat::LabelsBoxesScores => "labels-boxes-scores",
        }
    }

    /// Whether boxes overlap in the raw output and need non-maximum suppression.
    pub fn needs_nms(self) -> bool {
        matches!(
            self,
            DetectFormat::Yolov5 | DetectFormat::Yolov8 | DetectFormat::Ssd | DetectFormat::DetectnetV2
        )
    }
}

/// The corner order of boxes given as corners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoxOrder {
    #[default]
    Xyxy,
    Yxyx,
}

/// `[detect]`: the output format and how boxes are kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectSpec {
    pub format: DetectFormat,
    /// The lowest score kept.
    #[serde(default = "default_confidence")]
    pub confidence: f32,
    /// Overlap above which NMS drops the lower-scored box.
    #[serde(default = "default_iou")]
    pub iou: f32,
    /// The most boxes kept per image, best first.
    #[serde(default = "default_max_det")]
    pub max_det: usize,
    /// NMS across classes (one box per place whatever its class) rather than per class.
    #[serde(default)]
    pub agnostic: bool,
    /// `efficient-nms`: corner order of `detection_boxes` (default `xyxy`; TensorFlow's is `yxyx`).
    pub box_order: Option<BoxOrder>,
    /// `efficient-nms`: boxes as fractions of the input (TensorFlow) rather than input pixels.
    pub normalized: Option<bool>,
    /// `ssd`: the background class, whose scores are not boxes (default 0).
    pub background_class: Option<usize>,
    /// `detectnet-v2`: the grid's stride in input pixels (default 16).
    pub stride: Option<f32>,
    /// `detectnet-v2`: the box offsets' scale (default 35).
    pub box_scale: Option<f32>,
    /// `yolov8`, `end2end`: each box carries mask coefficients, read against a prototypes output
    /// `[N, coefficients, h, w]` into an instance mask (Ultralytics' segment models).
    #[serde(default)]
    pub masks: bool,
    /// `yolov8`, `end2end`: each box carries this many keypoints of 2 (x, y) or 3 (and a
    /// confidence) values: `[count, values]` (Ultralytics' pose models' `kpt_shape`).
    pub keypoints: Option<[usize; 2]>,
    /// `yolov8`, `end2end`: each box is rotated by an angle in radians that follows its classes
    /// (Ultralytics' OBB models).
    #[serde(default)]
    pub rotated: bool,
}

/// The most keypoints a box may carry.
pub const MAX_KEYPOINTS: usize = 1024;

pub const MAX_DET_LIMIT: usize = 10_000;

fn default_max_det() -> usize {
    300
}

impl DetectSpec {
    /// A spec for `format` with the defaults.
    pub fn new(format: DetectFormat) -> DetectSpec {
        DetectSpec {
            format,
            confidence: default_confidence(),
            iou: default_iou(),
            max_det: default_max_det(),
            agnostic: false,
            box_order: None,
            normalized: None,
            background_class: None,
            stride: None,
            box_scale: None,
            masks: false,
            keypoints: None,
            rotated: false,
        }
    }

    /// What each box carries besides its class, as the manifest's key names it.
    pub fn carries(&self) -> Option<&'static str> {
        if self.masks {
            Some("masks")
        } else if self.keypoints.is_some() {
            Some("keypoints")
        } else {
            self.rotated.then_some("rotated")
        }
    }

    /// How many values each box carries after its classes: mask coefficients (`masks`, as many as
    /// the prototypes have channels), keypoint values or an angle.
    pub fn extra_values(&self, mask_coefficients: usize) -> usize {
        if self.masks {
            mask_coefficients
        } else if let Some([count, values]) = self.keypoints {
            count * values
        } else {
            usize::from(self.rotated)
        }
    }

    fn check(&self) -> Result<(), String> {
        check_thresholds("detect", self.confidence, self.iou)?;
        if !(1..=MAX_DET_LIMIT).contains(&self.max_det) {
            return Err(format!("detect.max_det = {} is not in [1, {MAX_DET_LIMIT}]", self.max_det));
        }
        let format = self.format;
        let only = |key: &str, given: bool, owner: DetectFormat| {
            if given && format != owner {
                Err(format!("detect.{key} is for format '{}', not '{}'", owner.name(), format.name()))
            } else {
                Ok(())
            }
        };
        only("box_order", self.box_order.is_some(), DetectFormat::EfficientNms)?;
        only("normalized", self.normalized.is_some(), DetectFormat::EfficientNms)?;
        only("background_class", self.background_class.is_some(), DetectFormat::Ssd)?;
        only("stride", self.stride.is_some(), DetectFormat::DetectnetV2)?;
        only("box_scale", self.box_scale.is_some(), DetectFormat::DetectnetV2)?;
        let extras =
            [("masks", self.masks), ("keypoints", self.keypoints.is_some()), ("rotated", self.rotated)];
        if let Some((key, _)) = extras.iter().find(|(_, given)| *given) {
            if !matches!(format, DetectFormat::Yolov8 | DetectFormat::End2end) {
                return Err(format!(
                    "detect.{key} is for formats 'yolov8' and 'end2end', not '{}'",
                    format.name()
                ));
            }
            if extras.iter().filter(|(_, given)| *given).count() > 1 {
                return Err(
                    "detect.masks, detect.keypoints and detect.rotated are different models: keep one".into(),
                );
            }
        }
        if let Some([count, values]) = self.keypoints {
            if !(1..=MAX_KEYPOINTS).contains(&count) || !(2..=3).contains(&values) {
                return Err(format!(
                    "detect.keypoints = [{count}, {values}] is not [1 to {MAX_KEYPOINTS} keypoints, 2 or 3 values each]"
                ));
            }
        }
        for (key, v) in [("stride", self.stride), ("box_scale", self.box_scale)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && (0.1..=1024.0).contains(v))) {
                return Err(format!("detect.{key} = {} is not in [0.1, 1024]", short(v)));
            }
        }
        Ok(())
    }
}

/// Thresholds are fractions; NaN is not one.
fn check_thresholds(section: &str, confidence: f32, iou: f32) -> Result<(), String> {
    for (name, v) in [("confidence", confidence), ("iou", iou)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{section}.{name} = {} is not in [0, 1]", short(v)));
        }
    }
    Ok(())
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
        check_thresholds("yolo", self.confidence, self.iou)?;
        for (i, head) in self.heads.iter().enumerate() {
            if self.heads[..i].iter().any(|h| h.output == head.output) {
                return Err(format!(
                    "yolo head output '{}' is named by two heads: each head reads its own",
                    head.output
                ));
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
        let text = crate::infile::read_to_string(path, crate::infile::TEXT)?;
        let manifest: Manifest = toml::from_str(&text).map_err(|e| {
            Error::manifest(path, format!("invalid manifest: {}", crate::error::one_line(&e)))
        })?;
        manifest.check_self(path)?;
        manifest.check_files(path)?;
        Ok(manifest)
    }

    /// A manifest's files lie in its folder or below it.
    fn check_files(&self, path: &Path) -> Result<()> {
        let bad = |reason: String| Err(Error::manifest(path, reason));
        for (name, file) in
            [("model.file", Some(&self.model.file)), ("model.labels", self.model.labels.as_ref())]
        {
            if file.is_some_and(|f| !beside_manifest(f)) {
                let file = file.map(|f| f.display().to_string()).unwrap_or_default();
                return bad(format!("{name} '{file}' must name a file in the manifest's folder or below it"));
            }
        }
        Ok(())
    }

    /// Checks that need nothing but the manifest.
    pub fn check_self(&self, path: &Path) -> Result<()> {
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
        let task = match &self.task {
            TaskSpec::Yolo(yolo) => yolo.check(),
            TaskSpec::Detect(detect) => detect.check(),
            TaskSpec::Classification(c) if c.top_k == 0 => {
                Err("classification.top_k must be at least 1".into())
            }
            TaskSpec::Semantic(s) if !s.threshold.is_finite() => {
                Err(format!("semantic.threshold = {} is not a number", short(s.threshold)))
            }
            TaskSpec::Classification(_) | TaskSpec::Semantic(_) | TaskSpec::Raw => Ok(()),
        };
        task.map_err(|reason| Error::manifest(path, reason))
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
