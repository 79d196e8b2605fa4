//! Models: a manifest or a bare `.onnx`, resolved into one checked description.

pub(crate) mod bare;
pub(crate) mod detect_format;
pub mod digest;
pub(crate) mod engine_header;
pub mod inspect;
pub mod manifest;
pub(crate) mod manifest_text;
pub(crate) mod onnx;
pub(crate) mod spec_defaults;
pub(crate) mod ultralytics;

use std::path::{Path, PathBuf};

use tract_onnx::pb;

pub use bare::BareModelOptions;
pub use manifest::{Manifest, Task, TaskSpec};

use crate::precision::Precision;
use crate::tensor::{DataType, ElementType, TensorSpec};
use crate::{Error, Result};

/// A model file, its checked manifest and what the file declares.
#[derive(Debug, Clone)]
pub struct Model {
    /// The manifest, when the model was given as one.
    pub manifest_path: Option<PathBuf>,
    /// The model file: ONNX, or a serialized TensorRT engine (see `proto`).
    pub file: PathBuf,
    pub sha256: String,
    pub manifest: Manifest,
    pub labels: Option<Vec<String>>,
    /// The ONNX graph; None for a TensorRT engine, which only `--backend tensorrt` reads.
    pub proto: Option<std::sync::Arc<pb::ModelProto>>,
    pub inputs: Vec<TensorSpec>,
    /// What the file declares; empty for an engine until a backend loads it.
    pub outputs: Vec<TensorSpec>,
    /// For a bare model: what edgert assumed or could not decode (`bare::Described::notes`).
    pub notes: Vec<String>,
    /// The graph differs from the file: an `orig_target_sizes` input was fed the input size
    /// (`onnx::fold_size_input`). Backends that read the file read `onnx_bytes` instead.
    pub graph_edited: bool,
}

/// File names of serialized TensorRT engines (trtexec's `--saveEngine`, Ultralytics' export).
pub fn is_engine_file(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "engine" | "plan" | "trt"))
}

impl Model {
    /// Loads a manifest (`.toml`) or a bare `.onnx`, checking that manifest and model agree.
    pub fn load(path: &Path, bare: &BareModelOptions) -> Result<Model> {
        if !path.exists() {
            return Err(Error::read(path, "no such file"));
        }
        let is_manifest = path.extension().is_some_and(|e| e == "toml");
        let (manifest, manifest_path, file) = if is_manifest {
            let manifest = Manifest::read(path)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            let file = dir.join(&manifest.model.file);
            (Some(manifest), Some(path.to_owned()), file)
        } else {
            (None, None, path.to_owned())
        };
        let sha256 = digest::sha256_file(&file)?;
        let mut notes = Vec::new();
        let mut names = None;
        let mut graph_edited = false;
        let (manifest, proto, inputs, outputs) = if is_engine_file(&file) {
            let manifest = match manifest {
                Some(m) => {
                    check_sha256(path, &m, &sha256)?;
                    m
                }
                None => {
                    let described = bare_engine(&file, &sha256, bare)?;
                    (notes, names) = (described.notes, described.names);
                    described.manifest
                }
            };
            // The manifest says the input; the engine, once a backend loads it, the outputs.
            let input = TensorSpec {
                name: manifest.input.name.clone(),
                shape: manifest.input.shape.iter().map(|&d| Some(d)).collect(),
                dtype: manifest.input.dtype.into(),
            };
            (manifest, None, vec![input], Vec::new())
        } else {
            let mut proto = onnx::read_proto(&file)?;
            let mut inputs = onnx::inputs(&proto);
            let outputs = onnx::outputs(&proto);
            // The image size as a second input (RT-DETR's own export and its followers): fed the
            // network's input size, so boxes come in input pixels like every other format's.
            let size_input =
                inputs.iter().position(|i| i.name == onnx::SIZE_INPUT).filter(|_| inputs.len() > 1);
            if let Some(i) = size_input {
                inputs.remove(i);
            }
            let manifest = match manifest {
                Some(m) => {
                    let mpath = manifest_path.as_deref().unwrap_or(path);
                    check_against_model(mpath, &m, &sha256, &inputs, &outputs)?;
                    m
                }
                None => {
                    let props = proto.metadata_props.iter().map(|p| (p.key.as_str(), p.value.as_str()));
                    let meta = ultralytics::UltralyticsMeta::from_props(props)
                        .map_err(|reason| Error::input(&file, reason))?;
                    let described = bare::describe(&file, &sha256, meta, &inputs, &outputs, bare)?;
                    (notes, names) = (described.notes, described.names);
                    described.manifest
                }
            };
            if size_input.is_some() {
                let Some((h, w, _)) = manifest.image_geometry() else {
                    let reason = format!("input '{}' needs an image input beside it", onnx::SIZE_INPUT);
                    return Err(Error::input(&file, reason));
                };
                onnx::fold_size_input(&mut proto, (w, h)).map_err(|reason| Error::input(&file, reason))?;
                graph_edited = true;
            }
            (manifest, Some(std::sync::Arc::new(proto)), inputs, outputs)
        };
        let labels_path = match &manifest_path {
            Some(p) => manifest.model.labels.as_ref().map(|l| p.parent().unwrap_or(Path::new(".")).join(l)),
            None => manifest.model.labels.clone(),
        };
        let labels = match (labels_path, &manifest.model.names) {
            (Some(p), _) => Some(read_labels(&p)?),
            (None, Some(inline)) => Some(inline.clone()),
            (None, None) => names,
        };
        Ok(Model {
            manifest_path,
            file,
            sha256,
            manifest,
            labels,
            proto,
            inputs,
            outputs,
            notes,
            graph_edited,
        })
    }

    pub fn is_engine(&self) -> bool {
        self.proto.is_none()
    }

    /// The ONNX graph, or an error saying the model is an engine, for what only reads ONNX.
    pub fn onnx(&self, what: &str) -> Result<&pb::ModelProto> {
        self.proto.as_deref().ok_or_else(|| {
            Error::input(
                &self.file,
                format!(
                    "is a TensorRT engine; {what} needs the ONNX model (engines run with --backend tensorrt)"
                ),
            )
        })
    }

    /// The ONNX model's bytes as the backends should read them: the file, or the edited graph.
    pub fn onnx_bytes(&self) -> Result<Vec<u8>> {
        use prost::Message;
        match (&self.proto, self.graph_edited) {
            (Some(proto), true) => Ok(proto.encode_to_vec()),
            _ => crate::infile::read(&self.file, crate::infile::MODEL),
        }
    }

    /// Weight precision (`inspect::precision`), or `engine` for a TensorRT engine.
    pub fn precision(&self) -> Precision {
        self.proto.as_deref().map_or(Precision::Engine, inspect::precision)
    }

    /// The file the user named: the manifest if there is one, else the ONNX file.
    pub fn source_path(&self) -> &Path {
        self.manifest_path.as_deref().unwrap_or(&self.file)
    }

    /// Input shape with the batch set.
    pub fn input_shape(&self, batch: usize) -> Vec<usize> {
        let mut shape = self.manifest.input.shape.clone();
        shape[0] = batch;
        shape
    }

    /// The batch the model's input fixes, where its first dimension is a number.
    fn fixed_batch(&self) -> Option<usize> {
        let name = &self.manifest.input.name;
        self.inputs.iter().find(|t| &t.name == name).and_then(|t| t.shape.first().copied().flatten())
    }

    /// Refuses a batch the model's input cannot take: a batch dimension fixed at another size.
    /// `asked` is what asked for it, for the error: `--batch 4`.
    pub fn check_batch(&self, batch: usize, asked: &str) -> Result<()> {
        let name = &self.manifest.input.name;
        let fixed = self.fixed_batch();
        match fixed {
            Some(n) if n != batch => Err(Error::input(
                self.source_path(),
                format!(
                    "input '{name}' has a fixed batch of {n}, so {asked} cannot run: export the model with a \
                     dynamic batch (torch.onnx.export's dynamic_axes)"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// `e`, from preparing the model at `batch`, with the likely cause added where the batch is
    /// past the one the model's input fixes: a graph exported for one batch (reshapes to constant
    /// shapes) may run at no larger one, and the backend's own words rarely say so.
    pub fn explain_batch(&self, e: Error, batch: usize) -> Error {
        let name = &self.manifest.input.name;
        let fixed = self.fixed_batch();
        match (e, fixed) {
            (Error::BackendCannotRun { path, backend, reason }, Some(n)) if batch > n => {
                let reason = format!(
                    "at batch {batch} (the input '{name}' fixes batch {n}, which its graph may assume: export \
                     the model with a dynamic batch, Ultralytics' dynamic=True or torch.onnx.export's \
                     dynamic_axes): {reason}"
                );
                Error::BackendCannotRun { path, backend, reason }
            }
            (e, _) => e,
        }
    }

    /// Refuses a batch whose input would take more than `limit`: as f32, how edgert holds it, and,
    /// for a model fed u8 or f16, the copy converted for it that lives beside it during a run.
    pub fn check_input_memory(&self, batch: usize, limit: crate::limits::MemoryLimit) -> Result<()> {
        let shape = self.input_shape(batch);
        let dtype = self.manifest.input.dtype;
        let copy = match dtype {
            ElementType::F32 => 0,
            other => other.bytes(),
        };
        let what = || {
            let copy =
                if copy > 0 { format!(" as f32 and its {} copy", dtype.name()) } else { String::new() };
            format!("{}: the input at batch {batch} ({shape:?}){copy}", self.source_path().display())
        };
        Ok(limit.check(what, &shape, std::mem::size_of::<f32>() + copy)?)
    }

    /// A classifier's class count, where its first output's last dimension is fixed.
    pub fn classes(&self) -> Option<usize> {
        if self.manifest.task.kind() != Task::Classification {
            return None;
        }
        self.outputs.first().and_then(|o| o.shape.last().copied().flatten())
    }

    /// `label` as a class id of this model, or why it is none: negative, or past a classifier's
    /// classes (an accuracy over labels no prediction can match would be a silent 0 %).
    pub fn class_id(&self, label: i64) -> std::result::Result<usize, String> {
        let id =
            usize::try_from(label).map_err(|_| format!("label {label} is not a class id (0 or more)"))?;
        match self.classes() {
            Some(classes) if id >= classes => Err(format!(
                "label {label} is not a class of {} (it has {classes}, from 0)",
                self.source_path().display()
            )),
            _ => Ok(id),
        }
    }

    /// What is suspicious but not wrong enough to refuse: a labels file whose names do not match
    /// the classifier's classes; for a bare model, what edgert assumed or could not decode.
    pub fn warnings(&self) -> Vec<String> {
        let classes = self.classes();
        let mut warnings: Vec<String> =
            self.notes.iter().map(|n| format!("{}: {n}", self.source_path().display())).collect();
        match (self.manifest.task.kind(), &self.labels, classes) {
            (Task::Classification, Some(labels), Some(classes)) if labels.len() != classes => {
                warnings.push(format!(
                    "{}: the labels name {} classes, the model has {classes}",
                    self.source_path().display(),
                    labels.len()
                ))
            }
            _ => {}
        }
        warnings
    }

    /// A display name for class `index`.
    pub fn label(&self, index: usize) -> String {
        match self.labels.as_ref().and_then(|l| l.get(index)) {
            Some(name) => name.clone(),
            None => format!("class {index}"),
        }
    }
}

/// An engine without a manifest: what its Ultralytics header says (Ultralytics names the input
/// `images`, NCHW at the exported batch and size); the outputs are checked once a backend loads it.
fn bare_engine(path: &Path, sha256: &str, bare: &BareModelOptions) -> Result<bare::Described> {
    let needs_manifest = |why: &str| {
        Error::input(
            path,
            format!("is a TensorRT engine whose {why}: it needs a manifest (input, preprocessing, task) naming it in model.file"),
        )
    };
    let header =
        engine_header::read(path)?.ok_or_else(|| needs_manifest("file has no Ultralytics header"))?;
    let meta = ultralytics::UltralyticsMeta::from_json(&header)
        .map_err(|reason| Error::input(path, reason))?
        .ok_or_else(|| needs_manifest("header is not Ultralytics metadata"))?;
    let (h, w) = meta.imgsz.ok_or_else(|| needs_manifest("Ultralytics header has no 'imgsz'"))?;
    let batch = meta.batch.unwrap_or(1);
    let input = TensorSpec {
        name: "images".into(),
        shape: vec![Some(batch), Some(3), Some(h), Some(w)],
        dtype: DataType::F32,
    };
    let mut described = bare::describe(path, sha256, Some(meta), &[input], &[], bare)?;
    described.manifest.input.shape[0] = batch;
    Ok(described)
}

fn check_sha256(path: &Path, m: &Manifest, sha256: &str) -> Result<()> {
    if !m.model.sha256.eq_ignore_ascii_case(sha256) {
        return Err(Error::manifest(
            path,
            format!(
                "sha256 of {} is {sha256}, the manifest says {} (model changed? update the manifest)",
                m.model.file.display(),
                m.model.sha256
            ),
        ));
    }
    Ok(())
}

fn check_against_model(
    path: &Path,
    m: &Manifest,
    sha256: &str,
    inputs: &[TensorSpec],
    outputs: &[TensorSpec],
) -> Result<()> {
    check_sha256(path, m, sha256)?;
    let Some(declared) = inputs.iter().find(|i| i.name == m.input.name) else {
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        return Err(Error::manifest(
            path,
            format!("input '{}' is not in the model (its inputs: {})", m.input.name, names.join(", ")),
        ));
    };
    let wanted = &m.input.shape;
    let fits = declared.shape.is_empty()
        || (declared.shape.len() == wanted.len()
            && declared.shape.iter().zip(wanted).skip(1).all(|(d, w)| d.is_none_or(|d| d == *w)));
    if !fits {
        return Err(Error::manifest(
            path,
            format!(
                "input '{}' has shape {:?} in the manifest but {} in the model",
                m.input.name,
                wanted,
                declared.shape_text()
            ),
        ));
    }
    let dtype = m.input.dtype.name();
    if declared.dtype != DataType::Unknown && declared.dtype != m.input.dtype.into() {
        return Err(Error::manifest(
            path,
            format!(
                "input '{}' is {} in the model but input.dtype is {dtype} in the manifest",
                m.input.name, declared.dtype
            ),
        ));
    }
    if let TaskSpec::Yolo(yolo) = &m.task {
        for head in &yolo.heads {
            if !outputs.iter().any(|o| o.name == head.output) {
                return Err(Error::manifest(
                    path,
                    format!("yolo head output '{}' is not in the model", head.output),
                ));
            }
        }
    }
    Ok(())
}

fn read_labels(path: &Path) -> Result<Vec<String>> {
    let text = crate::infile::read_to_string(path, crate::infile::TEXT)?;
    Ok(text.lines().map(|l| l.trim().to_string()).collect())
}
