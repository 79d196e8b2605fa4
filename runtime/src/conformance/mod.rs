//! ONNX's own backend test data, run on edgert's backends: a suite nobody here wrote. The `onnx`
//! wheel ships it under `onnx/backend/test/data/`: `simple`, `pytorch-converted` and
//! `pytorch-operator` (a `model.onnx` and `test_data_set_N/{input,output}_K.pb` each), and `light`
//! (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512
//! with their weights as constants, and the output of ONNX's reference evaluator for a ramp input,
//! as `real/test_<name>/data.json` describes them). Each output element is compared with the
//! expected one as ONNX's runner does (`run`).

pub mod run;

use std::path::{Path, PathBuf};

use prost::Message;
use tract_onnx::pb;

use crate::backend::cpu::{CpuBackend, CpuKernels};
use crate::backend::{self, Backend};
use crate::error::one_line;
use crate::model::onnx;
use crate::{Error, Result};

/// The suites, in the order the table lists them.
pub const SUITES: &[&str] = &["simple", "pytorch-converted", "pytorch-operator", "light"];

/// ONNX's runner's tolerance (`onnx/backend/test/runner`): `|got - expected| <= atol + rtol *
/// |expected|` per element; the light models' `data.json` give the same.
pub const RTOL: f64 = 1e-3;
pub const ATOL: f64 = 1e-7;

/// One model and its data sets.
#[derive(Debug, Clone)]
pub struct Case {
    pub suite: &'static str,
    /// The folder's name (`test_AvgPool2d`) or the light model's (`light_resnet50`).
    pub name: String,
    pub model: PathBuf,
    pub data_sets: Vec<DataSet>,
    pub rtol: f64,
    pub atol: f64,
}

#[derive(Debug, Clone)]
pub struct DataSet {
    pub inputs: Vec<InputSource>,
    pub outputs: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub enum InputSource {
    File(PathBuf),
    /// `arange(n) / n` in the input's shape, as ONNX's runner makes for the light models.
    Ramp,
}

/// A tensor read from a `.pb`: its shape and its values as f32.
#[derive(Debug, Clone)]
pub struct Values {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Backends by the name the table gives them.
pub type Named = Vec<(&'static str, Box<dyn Backend>)>;

/// The backends a case runs on, by the name the table gives them: `cpu` with edgert's operators,
/// `cpu-tract` (`cpu` with tract's alone, as `EDGERT_CPU_KERNELS=tract`), and `ort` where ONNX
/// Runtime is found (else why not).
pub fn backends() -> (Named, Option<String>) {
    let mut list: Named = vec![
        ("cpu", Box::new(CpuBackend::with_kernels(CpuKernels::Edgert))),
        ("cpu-tract", Box::new(CpuBackend::with_kernels(CpuKernels::Tract))),
    ];
    let ort = backend::select("ort").map_err(|e| one_line(&e)).and_then(|s| {
        s.backend.check().map_err(|e| format!("ort: {e}"))?;
        Ok(s.backend)
    });
    match ort {
        Ok(b) => {
            list.push(("ort", b));
            (list, None)
        }
        Err(why) => (list, Some(why)),
    }
}

/// Every case under `root` (`…/onnx/backend/test/data`), suite by suite, sorted by name.
pub fn discover(root: &Path) -> Result<Vec<Case>> {
    if !root.join("simple").is_dir() {
        return Err(Error::input(root, "not ONNX's backend test data (no simple/ under it)"));
    }
    let mut cases = Vec::new();
    for &suite in SUITES {
        let mut found = if suite == "light" { light_cases(root)? } else { folder_cases(root, suite)? };
        found.sort_by(|a, b| a.name.cmp(&b.name));
        cases.extend(found);
    }
    Ok(cases)
}

fn folders(dir: &Path) -> Result<Vec<PathBuf>> {
    let read = |e: std::io::Error| Error::read(dir, e);
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.is_dir() {
            entries.push(path);
        }
    }
    entries.sort();
    Ok(entries)
}

fn name_of(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `suite/test_X/model.onnx` with `test_data_set_N/input_K.pb` and `output_K.pb`.
fn folder_cases(root: &Path, suite: &'static str) -> Result<Vec<Case>> {
    let dir = root.join(suite);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut cases = Vec::new();
    for case_dir in folders(&dir)? {
        let mut data_sets = Vec::new();
        for set in folders(&case_dir)?.iter().filter(|d| name_of(d).starts_with("test_data_set_")) {
            let numbered = |prefix: &str| -> Vec<PathBuf> {
                (0..).map(|k| set.join(format!("{prefix}_{k}.pb"))).take_while(|p| p.is_file()).collect()
            };
            let inputs = numbered("input").into_iter().map(InputSource::File).collect();
            data_sets.push(DataSet { inputs, outputs: numbered("output") });
        }
        cases.push(Case {
            suite,
            name: name_of(&case_dir),
            model: case_dir.join("model.onnx"),
            data_sets,
            rtol: RTOL,
            atol: ATOL,
        });
    }
    Ok(cases)
}

/// `real/test_X/data.json` naming a model under `light/`, whose expected output sits beside it.
fn light_cases(root: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let real = root.join("real");
    if !real.is_dir() {
        return Ok(cases);
    }
    for dir in folders(&real)? {
        let json = dir.join("data.json");
        let text = crate::infile::read_to_string(&json, crate::infile::TEXT)?;
        let data: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::input(&json, format!("not JSON: {e}")))?;
        let Some(file) = data["url"].as_str().and_then(|u| u.strip_prefix("onnx/backend/test/data/light/"))
        else {
            continue;
        };
        let model = root.join("light").join(file);
        let stem = file.trim_end_matches(".onnx");
        cases.push(Case {
            suite: "light",
            name: stem.to_string(),
            data_sets: vec![DataSet {
                inputs: vec![InputSource::Ramp],
                outputs: vec![root.join("light").join(format!("{stem}_output_0.pb"))],
            }],
            model,
            rtol: data["rtol"].as_f64().unwrap_or(RTOL),
            atol: data["atol"].as_f64().unwrap_or(ATOL),
        });
    }
    Ok(cases)
}

/// A serialized TensorProto.
pub fn read_tensor(path: &Path) -> Result<Values> {
    let bytes = crate::infile::read(path, crate::infile::TENSORS)?;
    let fail = |reason: String| Error::input(path, reason);
    let proto = pb::TensorProto::decode(&*bytes).map_err(|e| fail(format!("not a TensorProto: {e}")))?;
    let tensor = tract_onnx::tensor::load_tensor(&*onnx::framework().provider, &proto, None)
        .map_err(|e| fail(one_line(&e)))?;
    let datum = tensor.datum_type();
    let values = tensor.cast_to::<f32>().map_err(|e| fail(format!("{datum:?} values: {}", one_line(&e))))?;
    let view = values.to_plain_array_view::<f32>().map_err(|e| fail(one_line(&e)))?;
    Ok(Values { shape: tensor.shape().to_vec(), data: view.iter().copied().collect() })
}
