//! Attribute defaults that tract-onnx 0.23.9 reads differently from the ONNX specification, written
//! into the graph before tract reads it, so a valid model means what its exporter meant:
//! - `ConstantOfShape` without `value`: the spec's default is a float32 zero; tract makes an f64
//!   zero, which then fails to unify with the float32 tensors around it (TensorFlow exports pad
//!   channels this way).
//! - `Selu` without `alpha` or `gamma`: tract rounds the spec's constants to 1.67326 and 1.0507.
//!
//! The other importers' defaults were read against the specification and agree
//! (docs/conformance.md lists what was checked).

use tract_onnx::pb::{self, attribute_proto::AttributeType, tensor_proto::DataType};

/// The spec's Selu constants, as float32 (the attributes' type).
const SELU_ALPHA: f32 = 1.673_263_2;
const SELU_GAMMA: f32 = 1.050_701;

/// The model with the spec's defaults written where tract would read others; `None` when no node
/// needs one.
pub fn fill(model: &pb::ModelProto) -> Option<pb::ModelProto> {
    let graph = model.graph.as_ref()?;
    if !needs_filling(graph) {
        return None;
    }
    let mut model = model.clone();
    fill_graph(model.graph.as_mut()?);
    Some(model)
}

fn needs_filling(graph: &pb::GraphProto) -> bool {
    graph
        .node
        .iter()
        .any(|node| !missing(node).is_empty() || node.attribute.iter().flat_map(subgraphs).any(needs_filling))
}

fn fill_graph(graph: &mut pb::GraphProto) {
    for node in &mut graph.node {
        let added = missing(node);
        node.attribute.extend(added);
        for attribute in &mut node.attribute {
            attribute.g.iter_mut().chain(attribute.graphs.iter_mut()).for_each(fill_graph);
        }
    }
}

fn subgraphs(attribute: &pb::AttributeProto) -> impl Iterator<Item = &pb::GraphProto> {
    attribute.g.iter().chain(attribute.graphs.iter())
}

/// The attributes `node` lacks whose default tract gets wrong, with the spec's values.
fn missing(node: &pb::NodeProto) -> Vec<pb::AttributeProto> {
    if !matches!(node.domain.as_str(), "" | "ai.onnx") {
        return Vec::new();
    }
    let has = |name: &str| node.attribute.iter().any(|a| a.name == name);
    match node.op_type.as_str() {
        "ConstantOfShape" if !has("value") => vec![tensor_attribute("value", float_zero())],
        "Selu" => [("alpha", SELU_ALPHA), ("gamma", SELU_GAMMA)]
            .into_iter()
            .filter(|(name, _)| !has(name))
            .map(|(name, value)| float_attribute(name, value))
            .collect(),
        _ => Vec::new(),
    }
}

/// A one-element float32 tensor holding 0, as the spec's default `value`.
fn float_zero() -> pb::TensorProto {
    pb::TensorProto {
        dims: vec![1],
        data_type: DataType::Float as i32,
        float_data: vec![0.0],
        ..Default::default()
    }
}

fn tensor_attribute(name: &str, t: pb::TensorProto) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: AttributeType::Tensor as i32,
        t: Some(t),
        ..Default::default()
    }
}

fn float_attribute(name: &str, f: f32) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Float as i32, f, ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: &str, attribute: Vec<pb::AttributeProto>) -> pb::NodeProto {
        pb::NodeProto { op_type: op.into(), attribute, ..Default::default() }
    }

    fn model(nodes: Vec<pb::NodeProto>) -> pb::ModelProto {
        pb::ModelProto {
            graph: Some(pb::GraphProto { node: nodes, ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn constant_of_shape_gets_a_float32_zero_only_where_it_has_no_value() {
        let given =
            tensor_attribute("value", pb::TensorProto { data_type: DataType::Int64 as i32, ..float_zero() });
        let filled =
            fill(&model(vec![node("ConstantOfShape", vec![]), node("ConstantOfShape", vec![given.clone()])]))
                .unwrap();
        let nodes = &filled.graph.unwrap().node;
        assert_eq!(nodes[0].attribute, [tensor_attribute("value", float_zero())]);
        assert_eq!(nodes[1].attribute, [given], "a value the model gives is kept");
    }

    #[test]
    fn selu_gets_the_spec_constants_it_lacks() {
        let filled = fill(&model(vec![node("Selu", vec![float_attribute("alpha", 2.0)])])).unwrap();
        let attributes = &filled.graph.unwrap().node[0].attribute;
        assert_eq!(attributes, &[float_attribute("alpha", 2.0), float_attribute("gamma", SELU_GAMMA)]);
    }

    #[test]
    fn inside_subgraphs_and_not_in_other_domains() {
        let body = pb::GraphProto { node: vec![node("ConstantOfShape", vec![])], ..Default::default() };
        let branch = pb::AttributeProto { name: "then_branch".into(), g: Some(body), ..Default::default() };
        let filled = fill(&model(vec![node("If", vec![branch])])).unwrap();
        let body = filled.graph.unwrap().node[0].attribute[0].g.clone().unwrap();
        assert_eq!(body.node[0].attribute.len(), 1);

        let mut custom = node("ConstantOfShape", vec![]);
        custom.domain = "com.example".into();
        assert!(fill(&model(vec![custom, node("Conv", vec![])])).is_none(), "nothing to fill: no copy");
    }
}
