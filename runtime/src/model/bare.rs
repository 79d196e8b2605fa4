//! The manifest edgert uses for a model given without one: from the file's own Ultralytics
//! metadata where it has some (task, class names, input size), else from its input and output
//! shapes, with what was guessed said as such.

use std::path::Path;

use super::detect_format::{self, Recognised};
use super::manifest::{
    ChannelOrder, ClassificationSpec, DetectFormat, InputSection, Layout, Manifest, ModelSection,
    PreprocessSpec, ResizeMode, SemanticSpec, Task, TaskSpec,
};
use super::ultralytics::UltralyticsMeta;
use crate::frame::MAX_SIDE;
use crate::tensor::{DataType, ElementType, TensorSpec};
use crate::{Error, Result};

/// Choices for a bare model, which has no manifest to say them.
#[derive(Debug, Clone, Default)]
pub struct BareModelOptions {
    pub task: Option<Task>,
    pub labels: Option<std::path::PathBuf>,
    /// (height, width) for an input whose spatial size is dynamic (`--imgsz`).
    pub imgsz: Option<(usize, usize)>,
}

/// A bare model's manifest, its class names where the file has them, and what was guessed.
pub struct Described {
    pub manifest: Manifest,
    pub names: Option<Vec<String>>,
    /// Sentences: what the file did not say and edgert assumed, or did not understand.
    pub notes: Vec<String>,
}

/// Ultralytics' preprocessing: RGB in 0..1, letterboxed on grey 114 (RT-DETR: stretched).
fn ultralytics_preprocess(rtdetr: bool) -> PreprocessSpec {
    let resize = if rtdetr { ResizeMode::Stretch } else { ResizeMode::Letterbox };
    PreprocessSpec { resize, pad_value: 114, ..PreprocessSpec::default() }
}

pub fn describe(
    path: &Path,
    sha256: &str,
    meta: Option<UltralyticsMeta>,
    inputs: &[TensorSpec],
    outputs: &[TensorSpec],
    bare: &BareModelOptions,
) -> Result<Described> {
    let [input] = inputs else {
        return Err(Error::input(
            path,
            format!("has {} inputs; edgert runs single-input models", inputs.len()),
        ));
    };
    let dtype = match input.dtype {
        DataType::Unknown | DataType::F32 => ElementType::F32,
        DataType::F16 => ElementType::F16,
        DataType::U8 => ElementType::U8,
        other => {
            let reason = format!("input '{}' is {other}; edgert feeds f32, f16 or u8 inputs", input.name);
            return Err(Error::input(path, reason));
        }
    };
    let imgsz = bare.imgsz.or(meta.as_ref().and_then(|m| m.imgsz));
    let shape = fixed_shape(path, input, imgsz, bare.imgsz.is_some())?;
    let nhwc = shape.len() == 4 && matches!(shape[3], 1 | 3) && !matches!(shape[1], 1 | 3);
    let channels = match (shape.len(), nhwc) {
        (4, true) => shape[3],
        (4, false) => shape[1],
        _ => 3,
    };
    let image = shape.len() == 4;
    let mut notes = Vec::new();
    let names = meta.as_ref().and_then(|m| m.names.clone());
    let classes = names.as_ref().map(Vec::len);
    let ultralytics_task = meta.as_ref().and_then(|m| m.task.as_deref());
    let recognised = || detect_format::recognise(outputs, classes, meta.as_ref());
    let (task, preprocess) = match (bare.task, ultralytics_task) {
        (Some(Task::Yolo), _) => {
            return Err(Error::input(path, "task 'yolo' needs a manifest with the anchors of each head"))
        }
        (Some(Task::Detect), _) | (None, Some("detect" | "segment" | "pose" | "obb")) => {
            let Some(Recognised { spec, guesses }) = recognised() else {
                return Err(Error::input(path, no_format(outputs)));
            };
            let preprocess = match meta.as_ref() {
                Some(m) => ultralytics_preprocess(spec.format == DetectFormat::Rtdetr || m.is_rtdetr()),
                None => {
                    notes.push("preprocessing assumed: RGB scaled to 0..1, stretched to the input".into());
                    PreprocessSpec::default()
                }
            };
            notes.extend(guesses);
            let mut spec = spec;
            if meta.is_some() {
                // Ultralytics' own default overlap for NMS.
                spec.iou = 0.7;
            }
            (TaskSpec::Detect(spec), preprocess)
        }
        (Some(Task::Semantic), _) | (None, Some("semantic")) => {
            let preprocess =
                if meta.is_some() { ultralytics_preprocess(false) } else { PreprocessSpec::default() };
            (TaskSpec::Semantic(SemanticSpec::default()), preprocess)
        }
        (Some(Task::Classification), _) | (None, Some("classify")) => {
            (TaskSpec::Classification(ClassificationSpec::default()), PreprocessSpec::default())
        }
        (Some(Task::Raw), _) => (TaskSpec::Raw, PreprocessSpec::default()),
        (None, Some(other)) => {
            notes.push(format!(
                "the model is an Ultralytics '{other}' model, whose outputs edgert does not decode yet: they print raw"
            ));
            (TaskSpec::Raw, ultralytics_preprocess(false))
        }
        (None, None) => match outputs {
            [o] if o.shape.len() == 2 => {
                (TaskSpec::Classification(ClassificationSpec::default()), PreprocessSpec::default())
            }
            _ if image => match recognised() {
                Some(Recognised { spec, guesses }) => {
                    notes.push(format!(
                        "outputs read as format '{}' from their shapes alone; preprocessing assumed: RGB scaled to \
                         0..1, stretched",
                        spec.format.name()
                    ));
                    notes.extend(guesses);
                    (TaskSpec::Detect(spec), PreprocessSpec::default())
                }
                None => {
                    notes.push(format!("{}; they print raw", no_format(outputs)));
                    (TaskSpec::Raw, PreprocessSpec::default())
                }
            },
            _ => (TaskSpec::Raw, PreprocessSpec::default()),
        },
    };
    let preprocess = PreprocessSpec {
        channels: if channels == 1 { ChannelOrder::Gray } else { ChannelOrder::Rgb },
        // A u8 input takes pixels as they are.
        scale: if dtype == ElementType::U8 { 1.0 } else { preprocess.scale },
        ..preprocess
    };
    let manifest = Manifest {
        model: ModelSection {
            file: path.to_owned(),
            sha256: sha256.to_string(),
            labels: bare.labels.clone(),
            names: None,
        },
        task,
        input: InputSection {
            name: input.name.clone(),
            shape,
            layout: if nhwc { Layout::Nhwc } else { Layout::Nchw },
            dtype,
        },
        preprocess,
    };
    Ok(Described { manifest, names, notes })
}

/// What an image model's outputs are when they fit no format: the shapes and how to say which.
pub fn no_format(outputs: &[TensorSpec]) -> String {
    let known: Vec<&str> = DetectFormat::ALL.iter().map(|f| f.name()).collect();
    format!(
        "outputs {} fit no detector format edgert knows ({}); if it is one, say which in a manifest's [detect] \
         format (edgert manifest writes one to edit)",
        crate::tensor::describe(outputs),
        known.join(", ")
    )
}

/// The input's shape with every dimension fixed: batch 1, the spatial ones from `imgsz` where
/// the file leaves them dynamic.
/// A size the user asked for must fit a fixed input; the metadata's gives way to it.
fn fixed_shape(
    path: &Path,
    input: &TensorSpec,
    imgsz: Option<(usize, usize)>,
    asked: bool,
) -> Result<Vec<usize>> {
    let declared = &input.shape;
    let dynamic_error = || {
        Error::input(
            path,
            format!(
                "input '{}' has shape {}; give its size with --imgsz HxW, or a manifest with a fixed shape",
                input.name,
                input.shape_text()
            ),
        )
    };
    if declared.is_empty() {
        return Err(dynamic_error());
    }
    let mut shape: Vec<Option<usize>> = declared.clone();
    shape[0] = Some(1);
    if let (Some((h, w)), 4) = (imgsz, shape.len()) {
        if !(1..=MAX_SIDE).contains(&h) || !(1..=MAX_SIDE).contains(&w) {
            return Err(Error::input(path, format!("--imgsz {h}x{w} is not in [1, {MAX_SIDE}] a side")));
        }
        // NCHW unless the last axis is the channels.
        let (hi, wi) = if matches!(declared[3], Some(1 | 3)) && !matches!(declared[1], Some(1 | 3)) {
            (1, 2)
        } else {
            (2, 3)
        };
        for (i, want) in [(hi, h), (wi, w)] {
            match shape[i] {
                None => shape[i] = Some(want),
                Some(fixed) if fixed != want && asked => {
                    return Err(Error::input(
                        path,
                        format!(
                            "input '{}' is fixed at {} but the size asked is {h}x{w}",
                            input.name,
                            input.shape_text()
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        if shape[1].is_none() && hi == 2 {
            shape[1] = Some(3);
        }
    }
    shape.into_iter().collect::<Option<Vec<usize>>>().ok_or_else(dynamic_error)
}
