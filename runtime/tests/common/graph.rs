//! Small ONNX graphs built by the tests, in ONNX's protobuf types (tract-onnx's `pb`).

use tract_onnx::pb::{self, attribute_proto::AttributeType, tensor_proto::DataType, type_proto};

pub fn tensor_info(name: &str, dims: &[i64]) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{dimension::Value, Dimension};
    let dim =
        dims.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), ..Default::default() }).collect();
    let tensor =
        type_proto::Tensor { elem_type: DataType::Float as i32, shape: Some(pb::TensorShapeProto { dim }) };
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(type_proto::Value::TensorType(tensor)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn floats(name: &str, dims: &[i64], values: Vec<f32>) -> pb::TensorProto {
    pb::TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: DataType::Float as i32,
        float_data: values,
        ..Default::default()
    }
}

pub fn int64s(name: &str, values: Vec<i64>) -> pb::TensorProto {
    let dims = vec![values.len() as i64];
    pb::TensorProto {
        name: name.into(),
        dims,
        data_type: DataType::Int64 as i32,
        int64_data: values,
        ..Default::default()
    }
}

pub fn int_attr(name: &str, i: i64) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

pub fn ints_attr(name: &str, ints: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: ints.to_vec(),
        ..Default::default()
    }
}

pub fn node(op: &str, inputs: &[&str], output: &str, attribute: Vec<pb::AttributeProto>) -> pb::NodeProto {
    pb::NodeProto {
        op_type: op.into(),
        name: output.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        attribute,
        ..Default::default()
    }
}

pub fn model(graph: pb::GraphProto, opset: i64) -> pb::ModelProto {
    pb::ModelProto {
        ir_version: 8,
        opset_import: vec![pb::OperatorSetIdProto { domain: String::new(), version: opset }],
        graph: Some(graph),
        ..Default::default()
    }
}
