//! Dequantizes the constant weights of a Q/DQ model before tract reads it: each DequantizeLinear
//! whose inputs are all initializers becomes an f32 initializer holding its result. tract computes
//! the same constants itself, but inside its graph analysis, which took most of a Q/DQ model's
//! load; here it is one pass over the weights. Activations keep
//! their Q/DQ pairs, so what runs is unchanged.

use std::collections::{HashMap, HashSet};

use tract_onnx::pb::{self, tensor_proto::DataLocation, tensor_proto::DataType};

use crate::model::onnx;

/// The model with its constant DequantizeLinear nodes folded; `None` when it has none.
pub fn fold(model: &pb::ModelProto) -> Option<pb::ModelProto> {
    let graph = model.graph.as_ref()?;
    // Initializers that are also graph inputs (older exporters) can be overridden: not constants.
    let inputs: HashSet<&str> = graph.input.iter().map(|v| v.name.as_str()).collect();
    let constants: HashMap<&str, &pb::TensorProto> = graph
        .initializer
        .iter()
        .filter(|t| !inputs.contains(t.name.as_str()))
        .map(|t| (t.name.as_str(), t))
        .collect();
    let folded: Vec<(usize, pb::TensorProto)> = graph
        .node
        .iter()
        .enumerate()
        .filter_map(|(i, node)| dequantized(node, &constants).map(|t| (i, t)))
        .collect();
    if folded.is_empty() {
        return None;
    }
    let mut model = model.clone();
    let graph = model.graph.as_mut()?;
    let gone: HashSet<usize> = folded.iter().map(|(i, _)| *i).collect();
    let nodes = std::mem::take(&mut graph.node);
    graph.node = nodes.into_iter().enumerate().filter(|(i, _)| !gone.contains(i)).map(|(_, n)| n).collect();
    graph.initializer.extend(folded.into_iter().map(|(_, t)| t));
    // The integer weights nothing reads any more.
    let read: HashSet<String> = onnx::all_nodes(graph)
        .iter()
        .flat_map(|n| n.input.iter().cloned())
        .chain(graph.output.iter().chain(&graph.input).map(|v| v.name.clone()))
        .collect();
    graph.initializer.retain(|t| read.contains(&t.name));
    Some(model)
}

/// The f32 result of a DequantizeLinear of constants, `(x - zero_point) * scale` per tensor or per
/// axis; `None` for anything else (blocked quantization, other types, external data), left to tract.
fn dequantized(node: &pb::NodeProto, constants: &HashMap<&str, &pb::TensorProto>) -> Option<pb::TensorProto> {
    if node.op_type != "DequantizeLinear" || !matches!(node.domain.as_str(), "" | "ai.onnx") {
        return None;
    }
    let attribute = |name: &str| node.attribute.iter().find(|a| a.name == name).map(|a| a.i);
    if attribute("block_size").is_some_and(|b| b != 0) || node.output.len() != 1 {
        return None;
    }
    let constant =
        |k: usize| node.input.get(k).filter(|n| !n.is_empty()).and_then(|n| constants.get(n.as_str()));
    let (x, scale) = (constant(0)?, constant(1)?);
    let zero_point = match node.input.get(2).filter(|n| !n.is_empty()) {
        Some(_) => Some(constant(2)?),
        None => None,
    };
    let x_type = DataType::try_from(x.data_type).ok()?;
    if !matches!(x_type, DataType::Int8 | DataType::Uint8 | DataType::Int32)
        || zero_point.is_some_and(|z| z.data_type != x.data_type)
        || attribute("output_dtype").is_some_and(|t| t != 0 && t != DataType::Float as i64)
    {
        return None;
    }
    let values = integers(x)?;
    let scales = floats(scale)?;
    let zeros = match zero_point {
        Some(z) => integers(z)?,
        None => vec![0; scales.len()],
    };
    let dims: Vec<usize> = x.dims.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
    if values.len() != dims.iter().product::<usize>() || zeros.len() != scales.len() || scales.is_empty() {
        return None;
    }
    // Per tensor: one scale. Per axis: one along `axis`, the same for every index of the others.
    let (inner, channels) = if scales.len() == 1 {
        (1, 1)
    } else {
        let rank = dims.len() as i64;
        let axis = attribute("axis").unwrap_or(1);
        let axis =
            usize::try_from(if axis < 0 { axis + rank } else { axis }).ok().filter(|&a| a < dims.len())?;
        if dims[axis] != scales.len() {
            return None;
        }
        (dims[axis + 1..].iter().product::<usize>(), scales.len())
    };
    let raw: Vec<u8> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / inner) % channels;
            (v - zeros[c]) as f32 * scales[c]
        })
        .flat_map(f32::to_le_bytes)
        .collect();
    Some(pb::TensorProto {
        name: node.output[0].clone(),
        dims: x.dims.clone(),
        data_type: DataType::Float as i32,
        raw_data: raw,
        ..Default::default()
    })
}

fn is_external(t: &pb::TensorProto) -> bool {
    t.data_location == Some(DataLocation::External as i32)
}

/// An int8, uint8 or int32 initializer's values, as stored (raw little-endian or `int32_data`).
fn integers(t: &pb::TensorProto) -> Option<Vec<i64>> {
    if is_external(t) {
        return None;
    }
    let raw = &t.raw_data;
    Some(match DataType::try_from(t.data_type).ok()? {
        _ if raw.is_empty() => t.int32_data.iter().map(|&v| v as i64).collect(),
        DataType::Int8 => raw.iter().map(|&b| b as i8 as i64).collect(),
        DataType::Uint8 => raw.iter().map(|&b| b as i64).collect(),
        DataType::Int32 if raw.len().is_multiple_of(4) => {
            raw.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64).collect()
        }
        _ => return None,
    })
}

/// An f32 initializer's values.
fn floats(t: &pb::TensorProto) -> Option<Vec<f32>> {
    if is_external(t) || t.data_type != DataType::Float as i32 {
        return None;
    }
    if t.raw_data.is_empty() {
        return Some(t.float_data.clone());
    }
    t.raw_data
        .len()
        .is_multiple_of(4)
        .then(|| t.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::*;

    fn mobilenet_int8() -> pb::ModelProto {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/mobilenetv2_int8_qdq.onnx");
        onnx::read_proto(std::path::Path::new(path)).unwrap()
    }

    fn run(proto: &pb::ModelProto, input: &Tensor) -> Vec<f32> {
        let model = onnx::framework().model_for_proto_model(proto).unwrap();
        let model = model.with_input_fact(0, f32::fact([1, 3, 224, 224]).into()).unwrap();
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let out = plan.run(tvec!(input.clone().into_tvalue())).unwrap();
        out[0].to_plain_array_view::<f32>().unwrap().iter().copied().collect()
    }

    #[test]
    fn folding_the_weights_changes_no_output() {
        let original = mobilenet_int8();
        let folded = fold(&original).expect("MobileNetV2 QDQ has constant DequantizeLinear nodes");
        let count =
            |m: &pb::ModelProto, op: &str| onnx::graph(m).node.iter().filter(|n| n.op_type == op).count();
        // 52 convolution weights and the Gemm's (biases are f32 in this model), 101 activation DQs kept.
        assert_eq!(count(&original, "DequantizeLinear") - count(&folded, "DequantizeLinear"), 53);
        assert_eq!(count(&folded, "QuantizeLinear"), count(&original, "QuantizeLinear"));
        // The int8 weights are gone; the activations' int8 zero points stay.
        let int8 = |t: &&pb::TensorProto| t.data_type == DataType::Int8 as i32 && t.raw_data.len() > 1;
        assert!(onnx::graph(&original).initializer.iter().any(|t| int8(&t)));
        assert!(!onnx::graph(&folded).initializer.iter().any(|t| int8(&t)));
        let input = Tensor::from_shape(
            &[1, 3, 224, 224],
            &(0..3 * 224 * 224).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect::<Vec<_>>(),
        )
        .unwrap();
        // The same constants, computed the same way: the same outputs, bit for bit.
        assert_eq!(run(&original, &input), run(&folded, &input));
    }

    #[test]
    fn a_float_model_or_a_blocked_dequantize_is_left_alone() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/mobilenetv2_fp32.onnx");
        assert!(fold(&onnx::read_proto(std::path::Path::new(path)).unwrap()).is_none());
        let mut blocked = mobilenet_int8();
        for node in &mut blocked.graph.as_mut().unwrap().node {
            node.attribute.push(pb::AttributeProto {
                name: "block_size".into(),
                i: 32,
                ..Default::default()
            });
        }
        assert!(fold(&blocked).is_none());
    }
}
