//! Reading ONNX files: the protobuf, declared inputs and outputs, and an operator check that turns
//! "tract cannot build node X" into a clear error before any backend work starts.

use std::collections::HashSet;
use std::path::Path;

use tract_onnx::pb::{self, tensor_proto::DataType as OnnxType, tensor_shape_proto::dimension::Value as Dim};
use tract_onnx::prelude::Framework;

use crate::error::one_line;
use crate::tensor::{DataType, TensorSpec};
use crate::{Error, Result};

/// The ONNX front end with the settings edgert always wants: exported files often keep
/// `value_info` with a symbolic batch that breaks analysis once the batch is pinned.
pub fn framework() -> tract_onnx::Onnx {
    tract_onnx::onnx().with_ignore_value_info(true)
}

/// Reads and decodes the protobuf; rejects files that decode to no usable graph.
pub fn read_proto(path: &Path) -> Result<pb::ModelProto> {
    // tract maps the file it opens itself: this checks what it is, and its length, first.
    crate::infile::open(path, crate::infile::MODEL)?;
    let proto = framework().proto_model_for_path(path).map_err(|e| Error::InvalidModel {
        path: path.to_owned(),
        reason: format!("{} (truncated or corrupt file?)", one_line(&e)),
    })?;
    let graph = proto.graph.as_ref();
    if graph.is_none_or(|g| g.node.is_empty() || g.output.is_empty()) {
        return Err(Error::InvalidModel {
            path: path.to_owned(),
            reason: "no graph with nodes and outputs".into(),
        });
    }
    check_names(self::graph(&proto))
        .map_err(|reason| Error::InvalidModel { path: path.to_owned(), reason })?;
    Ok(proto)
}

/// Every tensor the graph reads or outputs is made somewhere: by an input, a weight or a node.
/// tract's parser assumes so and panics on a name nothing makes.
fn check_names(g: &pb::GraphProto) -> std::result::Result<(), String> {
    let made: HashSet<&str> = (g.input.iter().map(|v| v.name.as_str()))
        .chain(g.initializer.iter().map(|t| t.name.as_str()))
        .chain(g.node.iter().flat_map(|n| n.output.iter().map(String::as_str)))
        .collect();
    for node in &g.node {
        if let Some(name) = node.input.iter().find(|i| !i.is_empty() && !made.contains(i.as_str())) {
            return Err(format!(
                "node '{}' ({}) reads '{name}', which nothing makes",
                node.name, node.op_type
            ));
        }
    }
    match g.output.iter().find(|o| !made.contains(o.name.as_str())) {
        Some(o) => Err(format!("graph output '{}' is made by no node", o.name)),
        None => Ok(()),
    }
}

pub fn graph(proto: &pb::ModelProto) -> &pb::GraphProto {
    proto.graph.as_ref().expect("read_proto checked the graph")
}

/// The input RT-DETR's own export (and D-FINE's, DEIM's) takes the image size in: `[N, 2]`,
/// width then height.
pub const SIZE_INPUT: &str = "orig_target_sizes";

/// Replaces the graph input `SIZE_INPUT` by a constant `[[width, height]]` of its type.
pub fn fold_size_input(proto: &mut pb::ModelProto, (width, height): (usize, usize)) -> Result<(), String> {
    let graph = proto.graph.as_mut().expect("read_proto checked the graph");
    let index = graph.input.iter().position(|i| i.name == SIZE_INPUT).expect("the caller found it");
    let declared = spec(&graph.input[index]);
    let (w, h) = (width as i64, height as i64);
    if !matches!(declared.shape[..], [] | [_, Some(2)] | [_, None]) {
        return Err(format!("input '{SIZE_INPUT}' has shape {}, not [N, 2]", declared.shape_text()));
    }
    let mut constant = pb::TensorProto { name: SIZE_INPUT.into(), dims: vec![1, 2], ..Default::default() };
    match declared.dtype {
        DataType::I64 => (constant.data_type, constant.int64_data) = (OnnxType::Int64 as i32, vec![w, h]),
        DataType::I32 => {
            (constant.data_type, constant.int32_data) = (OnnxType::Int32 as i32, vec![w as i32, h as i32])
        }
        DataType::F32 => {
            (constant.data_type, constant.float_data) = (OnnxType::Float as i32, vec![w as f32, h as f32])
        }
        other => return Err(format!("input '{SIZE_INPUT}' is {other}; edgert feeds it as i64, i32 or f32")),
    }
    graph.input.remove(index);
    graph.initializer.push(constant);
    Ok(())
}

/// Graph inputs that are real inputs, not initializers listed as inputs (older exporters).
pub fn inputs(proto: &pb::ModelProto) -> Vec<TensorSpec> {
    let g = graph(proto);
    let weights: HashSet<&str> = g.initializer.iter().map(|t| t.name.as_str()).collect();
    g.input.iter().filter(|v| !weights.contains(v.name.as_str())).map(spec).collect()
}

pub fn outputs(proto: &pb::ModelProto) -> Vec<TensorSpec> {
    graph(proto).output.iter().map(spec).collect()
}

fn spec(value: &pb::ValueInfoProto) -> TensorSpec {
    let tensor =
        value.r#type.as_ref().and_then(|t| t.value.as_ref().map(|pb::type_proto::Value::TensorType(t)| t));
    let shape = tensor
        .and_then(|t| t.shape.as_ref())
        .map(|s| {
            s.dim
                .iter()
                .map(|d| match d.value {
                    Some(Dim::DimValue(v)) if v > 0 => Some(v as usize),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let dtype = tensor.map_or(DataType::Unknown, |t| data_type(t.elem_type));
    TensorSpec { name: value.name.clone(), shape, dtype }
}

/// An ONNX element type code as edgert's `DataType`.
pub fn data_type(code: i32) -> DataType {
    match OnnxType::try_from(code) {
        Ok(OnnxType::Float) => DataType::F32,
        Ok(OnnxType::Float16) => DataType::F16,
        Ok(OnnxType::Bfloat16) => DataType::Bf16,
        Ok(OnnxType::Double) => DataType::F64,
        Ok(OnnxType::Int8) => DataType::I8,
        Ok(OnnxType::Uint8) => DataType::U8,
        Ok(OnnxType::Int16) => DataType::I16,
        Ok(OnnxType::Uint16) => DataType::U16,
        Ok(OnnxType::Int32) => DataType::I32,
        Ok(OnnxType::Int64) => DataType::I64,
        Ok(OnnxType::Bool) => DataType::Bool,
        Ok(OnnxType::String) => DataType::String,
        _ => DataType::Other,
    }
}

/// Every node of the main graph and of nested graphs (If, Loop, Scan bodies).
pub fn all_nodes(graph: &pb::GraphProto) -> Vec<&pb::NodeProto> {
    let mut nodes = Vec::new();
    for node in &graph.node {
        nodes.push(node);
        for attr in &node.attribute {
            for sub in attr.g.iter().chain(attr.graphs.iter()) {
                nodes.extend(all_nodes(sub));
            }
        }
    }
    nodes
}

/// Fails on the first operator that tract's ONNX front end has no builder for.
pub fn check_operators(path: &Path, proto: &pb::ModelProto, backend: &str) -> Result<()> {
    let onnx = framework();
    for node in all_nodes(graph(proto)) {
        if !onnx.op_register.0.contains_key(&node.op_type) {
            return Err(Error::UnsupportedOperator {
                path: path.to_owned(),
                op: node.op_type.clone(),
                node: node.name.clone(),
                backend: backend.to_string(),
            });
        }
    }
    Ok(())
}
