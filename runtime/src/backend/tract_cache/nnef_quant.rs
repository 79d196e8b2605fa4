//! NNEF for the quantization operators tract leaves in a decluttered INT8 QDQ model
//! (`QuantizeLinearI8`, `QuantizeLinearU8`, `DequantizeLinearF32`, and `LookupTable` for a
//! dequantize → element-wise → quantize chain), which tract 0.23.9 cannot write: without them
//! such a model could not go into the load cache (`tract_cache`). Scales go out as f32 bit
//! patterns so they come back bit for bit.

use std::any::TypeId;

use tract_nnef::internal::*;
use tract_nnef::ser::ints;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::quant::{
    lookup_table, quantize_linear_i8, quantize_linear_u8, DequantizeLinearF32, LookupTable, QuantizeLinearI8,
    QuantizeLinearU8,
};

const QUANTIZE_I8: &str = "edgert_quantize_linear_i8";
const QUANTIZE_U8: &str = "edgert_quantize_linear_u8";
const DEQUANTIZE: &str = "edgert_dequantize_linear_f32";
const LOOKUP: &str = "edgert_lookup_table_8";

pub fn registry() -> Registry {
    let mut registry = Registry::new("edgert").with_doc("edgert's Q/DQ operators, for its load cache");
    register_quantize::<QuantizeLinearI8>(
        &mut registry,
        QUANTIZE_I8,
        |op| (op.scale, op.zero_point.into()),
        |b, i| {
            let (input, scale, zero_point) = read(b, i)?;
            b.wire(quantize_linear_i8(scale, i8::try_from(zero_point)?), &[input])
        },
    );
    register_quantize::<QuantizeLinearU8>(
        &mut registry,
        QUANTIZE_U8,
        |op| (op.scale, op.zero_point.into()),
        |b, i| {
            let (input, scale, zero_point) = read(b, i)?;
            b.wire(quantize_linear_u8(scale, u8::try_from(zero_point)?), &[input])
        },
    );
    registry.register_dumper::<DequantizeLinearF32>(|ast, node, op| {
        Ok(Some(write(ast, node, DEQUANTIZE, op.scale, op.zero_point.into())))
    });
    registry.register_primitive(
        DEQUANTIZE,
        &parameters(),
        &[("output", TypeName::Scalar.tensor())],
        |builder, invocation| {
            let (input, scale, zero_point) = read(builder, invocation)?;
            builder.wire(DequantizeLinearF32::new(scale, i32::try_from(zero_point)?), &[input])
        },
    );
    registry.register_element_wise(
        LOOKUP,
        TypeId::of::<LookupTable>(),
        Box::new(|ast, node| {
            let table: Vec<usize> =
                mini_op::<LookupTable>(node)?.table.table().iter().map(|&b| b.into()).collect();
            let input = ast.mapping[&node.inputs[0]].clone();
            Ok(Some(invocation(LOOKUP, &[input], &[("table", ints(&table))])))
        }),
        vec![TypeName::Scalar.tensor().named("input"), TypeName::Integer.array().named("table")],
        |builder, invocation| {
            let input = invocation.named_arg_as(builder, "input")?;
            let table: TVec<usize> = invocation.named_arg_as(builder, "table")?;
            let table = table.iter().map(|&b| u8::try_from(b)).collect::<Result<Vec<u8>, _>>()?;
            ensure!(table.len() == 256, "a lookup table of {} entries, not 256", table.len());
            builder.wire(lookup_table(tract_linalg::routines::lut_u8(&table)?), &[input])
        },
    );
    registry
}

/// A quantize operator `O`, written with its scale and zero point (`parameters`), read by `load`.
fn register_quantize<O: ElementWiseMiniOp>(
    registry: &mut Registry,
    id: &'static str,
    parameters_of: fn(&O) -> (f32, i64),
    load: ToTract,
) {
    let dump: FromTract = Box::new(move |ast, node| {
        let (scale, zero_point) = parameters_of(mini_op::<O>(node)?);
        Ok(Some(write(ast, node, id, scale, zero_point)))
    });
    registry.register_element_wise(id, TypeId::of::<O>(), dump, parameters(), load);
}

fn parameters() -> Vec<Parameter> {
    vec![
        TypeName::Scalar.tensor().named("input"),
        TypeName::Integer.named("scale_bits"),
        TypeName::Integer.named("zero_point"),
    ]
}

fn mini_op<O: ElementWiseMiniOp>(node: &TypedNode) -> TractResult<&O> {
    node.op_as::<ElementWiseOp>()
        .and_then(|op| op.0.downcast_ref::<O>())
        .with_context(|| format!("{} is not a {}", node.name, std::any::type_name::<O>()))
}

fn write(ast: &mut IntoAst, node: &TypedNode, id: &str, scale: f32, zero_point: i64) -> Arc<RValue> {
    let input = ast.mapping[&node.inputs[0]].clone();
    let scale_bits = i64::from(scale.to_bits());
    invocation(id, &[input], &[("scale_bits", numeric(scale_bits)), ("zero_point", numeric(zero_point))])
}

fn read(builder: &mut ModelBuilder, invocation: &ResolvedInvocation) -> TractResult<(OutletId, f32, i64)> {
    let input = invocation.named_arg_as(builder, "input")?;
    let scale_bits: i64 = invocation.named_arg_as(builder, "scale_bits")?;
    let zero_point: i64 = invocation.named_arg_as(builder, "zero_point")?;
    Ok((input, f32::from_bits(u32::try_from(scale_bits)?), zero_point))
}

#[cfg(test)]
mod tests {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::quant::{
        lookup_table, quantize_linear_i8, quantize_linear_u8, DequantizeLinearF32,
    };

    /// Each operator with parameters that would not survive a decimal round trip badly written.
    fn model() -> TypedModel {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([64])).unwrap();
        let scale = 1.0 / 0.017_3;
        let q = model.wire_node("q_i8", quantize_linear_i8(scale, -7), &[x]).unwrap();
        let dq = model.wire_node("dq_i8", DequantizeLinearF32::new(0.017_3, -7), &q).unwrap();
        let q = model.wire_node("q_u8", quantize_linear_u8(scale * 3.0, 200), &[x]).unwrap();
        let dq_u8 = model.wire_node("dq_u8", DequantizeLinearF32::new(0.051_9, 200), &q).unwrap();
        let table: Vec<u8> = (0..=255u8).map(|b| b.wrapping_mul(7)).collect();
        let lut = tract_linalg::routines::lut_u8(&table).unwrap();
        let looked_up = model.wire_node("lut", lookup_table(lut), &q).unwrap();
        model.select_output_outlets(&[dq[0], dq_u8[0], looked_up[0]]).unwrap();
        model
    }

    fn ops(model: &TypedModel) -> Vec<String> {
        model.nodes().iter().map(|n| format!("{} {:?}", n.name, n.op)).collect()
    }

    #[test]
    fn quantize_dequantize_and_lookup_tables_come_back_unchanged() {
        let original = model();
        let mut tar = Vec::new();
        super::super::nnef().write_to_tar(&original, &mut tar).unwrap();
        let back = super::super::nnef().model_for_read(&mut &tar[..]).unwrap();
        let (mut expected, mut got) = (ops(&original), ops(&back));
        expected.retain(|op| !op.starts_with("x "));
        got.retain(|op| !op.starts_with("x "));
        assert_eq!(got, expected);
        let x =
            Tensor::from_shape(&[64], &(0..64).map(|i| i as f32 * 0.61 - 19.0).collect::<Vec<_>>()).unwrap();
        let run = |m: TypedModel| m.into_runnable().unwrap().run(tvec!(x.clone().into_tvalue())).unwrap();
        assert_eq!(run(back), run(original));
    }
}
