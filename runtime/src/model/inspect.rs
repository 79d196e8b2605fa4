//! `inspect`: what a model is made of — I/O, operators, parameters, MACs, weight precision,
//! sparsity and the share of weight groups that meet the 2:4 structured-sparsity pattern.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use tract_onnx::pb::{self, tensor_proto::DataType};
use tract_onnx::prelude::*;

use super::{onnx, spec_defaults, Model};
use crate::choice::Choice;
use crate::error::one_line;
use crate::panics::contained;
use crate::precision::Precision;
use crate::tensor::TensorSpec;
use crate::{Error, Result};

pub const SCHEMA: &str = "edgert.inspect/1";

#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    pub schema: &'static str,
    pub path: String,
    pub sha256: String,
    pub file_bytes: u64,
    pub opset: i64,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub operators: BTreeMap<String, usize>,
    pub parameters: u64,
    /// Initializer bytes per element type.
    pub weight_bytes: BTreeMap<String, u64>,
    /// Multiply-accumulates of Conv, Gemm and MatMul at batch 1; null when shapes are unknown.
    pub macs: Option<u64>,
    /// `fp32`, `fp16` or `int8-qdq`.
    pub precision: Precision,
    pub sparsity: Sparsity,
    /// What edgert reads the outputs as: `classification`, `yolo`, `detect` or `raw`.
    pub task: &'static str,
    /// For `detect`: the output format recognised or declared (`yolov8`, `end2end`, ...).
    pub detect_format: Option<&'static str>,
    /// For `detect`: what each box carries besides its class: `masks`, `keypoints` or `rotated`.
    pub detect_carries: Option<&'static str>,
    /// For a bare model: what edgert assumed or could not decode.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sparsity {
    /// Weights of Conv, Gemm and MatMul layers (through DequantizeLinear for QDQ models).
    pub weights: u64,
    pub zero_weights: u64,
    pub zero_share: f64,
    /// Groups of four consecutive input-channel weights, and those with at least two zeros.
    pub groups_2_4: u64,
    pub groups_2_4_met: u64,
    pub share_2_4: f64,
    /// `2:4` (every 4-group meets the pattern, as sparse tensor cores need), `unstructured`
    /// (≥ 10 % zeros otherwise), or `dense`.
    pub pattern: &'static str,
}

/// Below this share of zero weights a model counts as dense (trained weights are rarely exactly 0).
const PRUNED_ZERO_SHARE: f64 = 0.10;
fn pattern(s: &Sparsity) -> &'static str {
    // Layers with fewer than 4 input channels (stems, depthwise) have no groups and do not count.
    if s.groups_2_4 > 0 && s.groups_2_4_met == s.groups_2_4 {
        "2:4"
    } else if s.zero_share >= PRUNED_ZERO_SHARE {
        "unstructured"
    } else {
        "dense"
    }
}

/// Weight precision from the graph alone: Q/DQ on integer weights, else the dominant float type.
pub fn precision(proto: &pb::ModelProto) -> Precision {
    let graph = onnx::graph(proto);
    let int_weights: std::collections::HashSet<&str> = graph
        .initializer
        .iter()
        .filter(|t| matches!(DataType::try_from(t.data_type), Ok(DataType::Int8 | DataType::Uint8)))
        .map(|t| t.name.as_str())
        .collect();
    let quantized = onnx::all_nodes(graph).iter().any(|n| {
        n.op_type == "QuantizeLinear"
            || (n.op_type == "DequantizeLinear"
                && n.input.first().is_some_and(|i| int_weights.contains(i.as_str())))
    });
    // ONNX FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ.
    if graph.initializer.iter().any(|t| (17..=20).contains(&t.data_type)) {
        return Precision::Fp8;
    }
    if quantized {
        return Precision::Int8Qdq;
    }
    let bytes = |dt: DataType| -> usize {
        graph.initializer.iter().filter(|t| t.data_type == dt as i32).map(|t| element_count(t) as usize).sum()
    };
    if bytes(DataType::Float16) > bytes(DataType::Float) {
        Precision::Fp16
    } else {
        Precision::Fp32
    }
}

fn element_count(t: &pb::TensorProto) -> u64 {
    t.dims.iter().map(|&d| d.max(0) as u64).product()
}

fn element_bytes(code: i32) -> u64 {
    match DataType::try_from(code) {
        Ok(DataType::Double | DataType::Int64 | DataType::Uint64) => 8,
        Ok(DataType::Float | DataType::Int32 | DataType::Uint32) => 4,
        Ok(DataType::Float16 | DataType::Bfloat16 | DataType::Int16 | DataType::Uint16) => 2,
        _ => 1,
    }
}

pub fn inspect(model: &Model) -> Result<InspectReport> {
    let path = &model.file;
    let proto = model.onnx("inspect")?;
    let graph = onnx::graph(proto);
    let mut operators = BTreeMap::new();
    for node in onnx::all_nodes(graph) {
        *operators.entry(node.op_type.clone()).or_insert(0) += 1;
    }
    let mut weight_bytes = BTreeMap::new();
    for t in &graph.initializer {
        *weight_bytes.entry(onnx::data_type(t.data_type).name().to_string()).or_insert(0) +=
            element_count(t) * element_bytes(t.data_type);
    }
    let weights = Weights::new(path, graph);
    let (detect_format, detect_carries) = match &model.manifest.task {
        crate::model::TaskSpec::Detect(spec) => (Some(spec.format.name()), spec.carries()),
        _ => (None, None),
    };
    Ok(InspectReport {
        task: model.manifest.task.kind().name(),
        detect_format,
        detect_carries,
        notes: model.notes.clone(),
        schema: SCHEMA,
        path: model.source_path().display().to_string(),
        sha256: model.sha256.clone(),
        file_bytes: std::fs::metadata(path).map_err(|e| Error::read(path, e))?.len(),
        opset: proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map_or(0, |o| o.version),
        inputs: model.inputs.clone(),
        outputs: model.outputs.clone(),
        operators,
        parameters: graph.initializer.iter().map(element_count).sum(),
        weight_bytes,
        macs: {
            // A graph tract cannot analyse leaves the MACs unknown; where a panic aborts, it ends
            // the command with this error.
            let broken = path.clone();
            let panicked = move |panic| Error::InvalidModel {
                path: broken.clone(),
                reason: format!("its shapes cannot be inferred: tract failed unexpectedly: {panic}"),
            };
            contained(|| Ok(macs(model, proto, &weights).ok()), panicked).ok().flatten()
        },
        precision: precision(proto),
        sparsity: weights.sparsity()?,
    })
}

/// A layer weight: its values as the layer sees them, and the axis of its input channels.
struct LayerWeight {
    dims: Vec<usize>,
    /// Whether each value is an exact zero after dequantization.
    zero: Vec<bool>,
    channel_axis: usize,
}

/// The weight initializers of Conv, Gemm and MatMul nodes, found directly or behind a DequantizeLinear.
struct Weights<'a> {
    path: &'a Path,
    graph: &'a pb::GraphProto,
    initializers: HashMap<&'a str, &'a pb::TensorProto>,
    producers: HashMap<&'a str, &'a pb::NodeProto>,
}

impl<'a> Weights<'a> {
    fn new(path: &'a Path, graph: &'a pb::GraphProto) -> Self {
        let initializers = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
        let producers =
            graph.node.iter().flat_map(|n| n.output.iter().map(move |o| (o.as_str(), n))).collect();
        Weights { path, graph, initializers, producers }
    }

    /// The weight dims of a layer input, without loading values.
    fn dims(&self, name: &str) -> Option<Vec<usize>> {
        let (tensor, _) = self.source(name)?;
        Some(tensor.dims.iter().map(|&d| d.max(0) as usize).collect())
    }

    /// The initializer behind a layer input, and the DequantizeLinear in between if any.
    fn source(&self, name: &str) -> Option<(&'a pb::TensorProto, Option<&'a pb::NodeProto>)> {
        if let Some(t) = self.initializers.get(name) {
            return Some((t, None));
        }
        let dq = self.producers.get(name).filter(|n| n.op_type == "DequantizeLinear")?;
        let t = self.initializers.get(dq.input.first()?.as_str())?;
        Some((t, Some(dq)))
    }

    fn load(&self, t: &pb::TensorProto) -> Result<Vec<f32>> {
        let fail = |e: TractError| Error::InvalidModel {
            path: self.path.to_owned(),
            reason: format!("initializer '{}': {}", t.name, one_line(&e)),
        };
        let dir = self.path.parent().and_then(|d| d.to_str());
        let tensor = tract_onnx::tensor::load_tensor(&*onnx::framework().provider, t, dir).map_err(fail)?;
        let values = tensor.cast_to::<f32>().map_err(fail)?;
        let view = values.to_plain_array_view::<f32>().map_err(fail)?;
        Ok(view.iter().copied().collect())
    }

    fn layer_weight(&self, name: &str, channel_axis: usize) -> Result<Option<LayerWeight>> {
        let Some((tensor, dq)) = self.source(name) else { return Ok(None) };
        let dims: Vec<usize> = tensor.dims.iter().map(|&d| d.max(0) as usize).collect();
        let values = self.load(tensor)?;
        // A quantized weight is zero where it equals its zero point (per tensor or per axis).
        let (zero_points, axis) = match dq {
            Some(dq) => {
                let zp = match dq.input.get(2).and_then(|n| self.initializers.get(n.as_str())) {
                    Some(t) => self.load(t)?,
                    None => vec![0.0],
                };
                let axis = dq.attribute.iter().find(|a| a.name == "axis").map_or(1, |a| a.i);
                (zp, axis.rem_euclid(dims.len().max(1) as i64) as usize)
            }
            None => (vec![0.0], 0),
        };
        let inner: usize = dims.iter().skip(axis + 1).product();
        let zero = values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let zp = if zero_points.len() == 1 {
                    zero_points[0]
                } else {
                    zero_points[(i / inner) % zero_points.len()]
                };
                v == zp
            })
            .collect();
        Ok(Some(LayerWeight { dims, zero, channel_axis }))
    }

    /// Each layer's weight input and the axis of its input channels.
    fn layers(&self) -> Vec<(&'a str, usize)> {
        self.graph
            .node
            .iter()
            .filter_map(|n| {
                let weight = n.input.get(1)?.as_str();
                let axis = match n.op_type.as_str() {
                    "Conv" => 1,
                    "Gemm" => usize::from(n.attribute.iter().any(|a| a.name == "transB" && a.i == 1)),
                    "MatMul" => 0,
                    _ => return None,
                };
                Some((weight, axis))
            })
            .collect()
    }

    fn sparsity(&self) -> Result<Sparsity> {
        let mut s = Sparsity {
            weights: 0,
            zero_weights: 0,
            zero_share: 0.0,
            groups_2_4: 0,
            groups_2_4_met: 0,
            share_2_4: 0.0,
            pattern: "dense",
        };
        for (name, axis) in self.layers() {
            let Some(w) = self.layer_weight(name, axis)? else { continue };
            s.weights += w.zero.len() as u64;
            s.zero_weights += w.zero.iter().filter(|&&z| z).count() as u64;
            let (groups, met) = groups_2_4(&w);
            s.groups_2_4 += groups;
            s.groups_2_4_met += met;
        }
        s.zero_share = ratio(s.zero_weights, s.weights);
        s.share_2_4 = ratio(s.groups_2_4_met, s.groups_2_4);
        s.pattern = pattern(&s);
        Ok(s)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Groups of 4 consecutive weights along the input-channel axis, and how many have ≥ 2 zeros
/// (the pattern sparse tensor cores accept). Channels past the last full group are not counted.
fn groups_2_4(w: &LayerWeight) -> (u64, u64) {
    let Some(&channels) = w.dims.get(w.channel_axis) else { return (0, 0) };
    let inner: usize = w.dims.iter().skip(w.channel_axis + 1).product();
    let outer: usize = w.dims.iter().take(w.channel_axis).product();
    let (mut groups, mut met) = (0, 0);
    for o in 0..outer {
        for g in 0..channels / 4 {
            for i in 0..inner {
                let at = |k: usize| (o * channels + g * 4 + k) * inner + i;
                let zeros = (0..4).filter(|&k| w.zero[at(k)]).count();
                groups += 1;
                met += u64::from(zeros >= 2);
            }
        }
    }
    (groups, met)
}

/// Multiply-accumulates at batch 1, from the output shapes tract infers and the weight shapes.
fn macs(model: &Model, proto: &pb::ModelProto, weights: &Weights) -> TractResult<u64> {
    let dir = model.file.parent().and_then(|d| d.to_str());
    let filled = spec_defaults::fill(proto);
    let parsed = onnx::framework().parse(filled.as_ref().unwrap_or(proto), dir)?;
    let mut graph = parsed.model;
    let input_index =
        graph.input_outlets()?.iter().position(|o| graph.node(o.node).name == model.manifest.input.name);
    graph.set_input_fact(input_index.unwrap_or(0), f32::fact(model.input_shape(1)).into())?;
    graph.analyse(false)?;
    let mut total = 0u64;
    for node in &onnx::graph(proto).node {
        let weight = node.input.get(1).and_then(|w| weights.dims(w));
        let k = match node.op_type.as_str() {
            "Conv" => weight.map(|d| d.iter().skip(1).product::<usize>()),
            "Gemm" => {
                let trans_b = node.attribute.iter().any(|a| a.name == "transB" && a.i == 1);
                weight.and_then(|d| d.get(usize::from(trans_b)).copied())
            }
            "MatMul" => weight.and_then(|d| d.len().checked_sub(2).map(|i| d[i])),
            _ => continue,
        };
        let outlet = node.output.first().and_then(|o| parsed.outlets_by_name.get(o)).copied();
        let out = outlet.and_then(|o| graph.outlet_fact(o).ok()?.shape.as_concrete_finite().ok().flatten());
        match (k, out) {
            (Some(k), Some(out)) => total += (out.iter().product::<usize>() * k) as u64,
            _ => anyhow::bail!("shape of node '{}' unknown", node.name),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_four_groups_along_input_channels() {
        // Conv weight [O=1, I=8, 1, 1]: first group 1,0,0,1 (met), second 1,1,1,0 (not met).
        let zero = [false, true, true, false, false, false, false, true].to_vec();
        let w = LayerWeight { dims: vec![1, 8, 1, 1], zero, channel_axis: 1 };
        assert_eq!(groups_2_4(&w), (2, 1));
        // Gemm B [K=4, N=2] without transB: groups run down axis 0, one per output column.
        let zero = [true, false, true, false, false, false, false, false].to_vec();
        let w = LayerWeight { dims: vec![4, 2], zero, channel_axis: 0 };
        assert_eq!(groups_2_4(&w), (2, 1));
        // Three input channels make no full group.
        let w = LayerWeight { dims: vec![2, 3, 3, 3], zero: vec![true; 54], channel_axis: 1 };
        assert_eq!(groups_2_4(&w), (0, 0));
    }
}
