//! `QuantizeTable`: an INT8 activation computed on its 8-bit values, as tract makes it of an INT8
//! QDQ model's DequantizeLinear → LeakyReLU (or another element-wise op) → QuantizeLinear: a
//! QuantizeLinear, a 256-entry `LookupTable`, then a DequantizeLinear, three passes over the
//! tensor (YOLOv3-tiny INT8's QuantizeLinear alone took a fifth of its time). Here it is one f32
//! → f32 op, a block at a time while the values are in cache, with tract's own table kernel in
//! the middle, and it folds into the convolution before it like a Q/DQ pair (`fold.rs`).

use tract_linalg::lut::Lut;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::quant::{DequantizeLinearF32, LookupTable};
use tract_onnx::tract_core::{as_op, op_as_typed_op, op_out_of_plan};

use super::clip;
use super::fake_quantize::{in_place, quantize_linear, same_f32, FakeQuantize, ROUND};
use super::int8_product::Grid;

#[derive(Debug, Clone)]
pub struct QuantizeTable {
    /// The QuantizeLinear, less its zero point.
    quantize: FakeQuantize,
    zero_point: i32,
    /// tract's table, indexed by a level's 8 bits, on vectors where the CPU has them.
    table: Box<dyn Lut>,
    /// The levels' type: i8, else u8.
    signed: bool,
    /// The DequantizeLinear.
    dq_scale: f32,
    dq_zero_point: i32,
}

impl PartialEq for QuantizeTable {
    fn eq(&self, other: &QuantizeTable) -> bool {
        let same_steps = (self.zero_point, self.signed, self.dq_scale, self.dq_zero_point)
            == (other.zero_point, other.signed, other.dq_scale, other.dq_zero_point);
        same_steps && self.quantize == other.quantize && self.table.table() == other.table.table()
    }
}

impl Eq for QuantizeTable {}

/// Values handled at a time: their 8-bit levels fit a small buffer on the stack.
const BLOCK: usize = 1024;

impl QuantizeTable {
    /// `values` through the quantize, the table and the dequantize, a block at a time in three
    /// passes that each vectorize (a table look-up per value does not).
    pub fn apply(&self, values: &mut [f32]) {
        let mut levels = [0u8; BLOCK];
        for block in values.chunks_mut(BLOCK) {
            let levels = &mut levels[..block.len()];
            self.quantize_into(block, levels);
            self.table.run(levels);
            self.dequantize_from(levels, block);
        }
    }

    /// The grid its outputs lie on, as integer products take it: its DequantizeLinear's.
    pub fn grid(&self) -> Option<Grid> {
        let offset = if self.signed { self.dq_zero_point } else { self.dq_zero_point - 128 };
        (self.dq_scale > 0.0 && self.dq_scale.is_finite()).then_some(Grid { scale: self.dq_scale, offset })
    }

    /// Each value's level, as its 8 bits: the low bits of the level plus `ROUND`, so no
    /// conversion to an integer is needed.
    fn quantize_into(&self, values: &[f32], levels: &mut [u8]) {
        let zero_point = self.zero_point as f32;
        for (level, &v) in levels.iter_mut().zip(values) {
            *level = (self.quantize.level(v) + zero_point + ROUND).to_bits() as u8;
        }
    }

    fn dequantize_from(&self, levels: &[u8], values: &mut [f32]) {
        let (scale, zero_point) = (self.dq_scale, self.dq_zero_point);
        if self.signed {
            for (v, &level) in values.iter_mut().zip(levels) {
                *v = (level as i8 as i32 - zero_point) as f32 * scale;
            }
        } else {
            for (v, &level) in values.iter_mut().zip(levels) {
                *v = (level as i32 - zero_point) as f32 * scale;
            }
        }
    }
}

impl Op for QuantizeTable {
    fn name(&self) -> StaticName {
        "EdgertQuantizeTable".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let (kind, dq) = (if self.signed { "i8" } else { "u8" }, (self.dq_scale, self.dq_zero_point));
        Ok(vec![format!(
            "{:?} (zero point {}), an {kind} table, dequantized by {dq:?}",
            self.quantize, self.zero_point
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for QuantizeTable {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        in_place(inputs, |values| self.apply(values))
    }
}

impl TypedOp for QuantizeTable {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        same_f32(inputs)
    }

    as_op!();
}

/// Replaces a per-tensor QuantizeLinear (of an f32 tensor) → `LookupTable` → DequantizeLinear
/// chain, each step read only by the next, by one `QuantizeTable`.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    op: &ElementWiseOp,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if_some!(lut = op.0.downcast_ref::<LookupTable>());
    let quantize = model.node(node.inputs[0].node);
    rule_if_some!(quantize_op = quantize.op_as::<ElementWiseOp>());
    rule_if_some!((inverse_scale, zero_point, range) = quantize_linear(quantize_op));
    let signed = range.0 < 0;
    rule_if!(model.outlet_fact(quantize.inputs[0])?.datum_type == f32::datum_type());
    rule_if!(clip::only_feeds(model, quantize.id, node.id)?);
    rule_if_some!(reader = model.single_succ(node.id)?);
    rule_if!(!model.outputs.contains(&node.id.into()));
    rule_if_some!(dq = reader.op_as::<DequantizeLinearF32>());
    let scale = inverse_scale.recip();
    // ONNX wants positive scales; anything else stays tract's to refuse or run.
    rule_if!(scale > 0.0 && scale.is_finite() && dq.scale > 0.0 && dq.scale.is_finite());
    let op = QuantizeTable {
        quantize: FakeQuantize::new(clip::NONE, scale, zero_point, range),
        zero_point,
        table: lut.table.clone(),
        signed,
        dq_scale: dq.scale,
        dq_zero_point: dq.zero_point,
    };
    super::replacing(model, quantize.inputs[0], name, op, reader.id.into())
}
