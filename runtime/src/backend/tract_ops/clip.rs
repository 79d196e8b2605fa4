//! ReLU and ReLU6 as tract declutters them, a Max and a Min each against one f32 constant: found
//! right after or right before a node, so that an edgert operator can fold them in. At most one
//! of each, in either order: with the low bound at most the high one, `max` then `min` and `min`
//! then `max` are the same function.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;

/// No clip: what `x.max(lo).min(hi)` leaves as it is.
pub const NONE: (f32, f32) = (f32::NEG_INFINITY, f32::INFINITY);

/// `v.max(lo).min(hi)` for bounds that are not NaN (a NaN goes to `lo`), written as comparisons:
/// one vector instruction each on x86, where `f32::max` and `min` take three, ordering NaNs.
#[inline(always)]
pub fn clamp(v: f32, (lo, hi): (f32, f32)) -> f32 {
    let v = if v > lo { v } else { lo };
    if v < hi {
        v
    } else {
        hi
    }
}

/// `node` as a binary operator against one f32 constant: the operator's name, the constant and
/// the data input; None when it is something else, or a constant that broadcasts the data to a
/// larger shape.
pub fn against_constant(
    model: &TypedModel,
    node: &TypedNode,
) -> TractResult<Option<(&'static str, Arc<Tensor>, OutletId)>> {
    let Some(op) = node.op_as::<TypedBinOp>() else { return Ok(None) };
    if node.inputs.len() != 2 || op.1.is_some_and(|dt| dt != f32::datum_type()) {
        return Ok(None);
    }
    let konst = |i: usize| model.outlet_fact(node.inputs[i]).map(|f| f.konst.clone());
    let (constant, data) = match (konst(0)?, konst(1)?) {
        (None, Some(constant)) => (constant, node.inputs[0]),
        (Some(constant), None) => (constant, node.inputs[1]),
        _ => return Ok(None),
    };
    if constant.datum_type() != f32::datum_type()
        || model.outlet_fact(node.id.into())?.shape != model.outlet_fact(data)?.shape
    {
        return Ok(None);
    }
    Ok(Some((op.0.name(), constant, data)))
}

/// `node` as one clip step: Max or Min, its bound, and the data input it clips.
fn step(model: &TypedModel, node: &TypedNode) -> TractResult<Option<(bool, f32, OutletId)>> {
    let Some((name, bound, data)) = against_constant(model, node)? else { return Ok(None) };
    let is_max = match name {
        "Max" => true,
        "Min" => false,
        _ => return Ok(None),
    };
    if bound.len() != 1 {
        return Ok(None);
    }
    Ok(Some((is_max, bound.try_as_plain_ram()?.as_slice::<f32>()?[0], data)))
}

/// Adds a step's bound to `bounds`, unless the clip already has one of that kind or the bounds
/// would cross.
fn add(bounds: &mut (f32, f32), is_max: bool, bound: f32) -> bool {
    let (lo, hi) = *bounds;
    let fits =
        if is_max { lo == f32::NEG_INFINITY && bound <= hi } else { hi == f32::INFINITY && lo <= bound };
    if fits {
        *bounds = if is_max { (bound, hi) } else { (lo, bound) };
    }
    fits
}

/// Whether `node`'s output feeds `reader` alone, and is no model output.
pub fn only_feeds(model: &TypedModel, node: usize, reader: usize) -> TractResult<bool> {
    Ok(!model.outputs.contains(&node.into()) && model.single_succ(node)?.is_some_and(|n| n.id == reader))
}

/// The clip right after `node`, with nothing else reading the values between: its bounds and
/// its last node (`node` itself, and `NONE`, without one).
pub fn after(model: &TypedModel, node: &TypedNode) -> TractResult<((f32, f32), usize)> {
    let (mut bounds, mut last) = (NONE, node.id);
    while let Some(next) = model.single_succ(last)? {
        if model.outputs.contains(&last.into()) {
            break;
        }
        match step(model, next)? {
            Some((is_max, bound, data)) if data.node == last && add(&mut bounds, is_max, bound) => {
                last = next.id
            }
            _ => break,
        }
    }
    Ok((bounds, last))
}

/// The clip right before `node`'s first input, read by nothing else: its bounds and the outlet
/// it clips (`node`'s input, and `NONE`, without one).
pub fn before(model: &TypedModel, node: &TypedNode) -> TractResult<((f32, f32), OutletId)> {
    let (mut bounds, mut input, mut reader) = (NONE, node.inputs[0], node.id);
    loop {
        let previous = model.node(input.node);
        if !only_feeds(model, previous.id, reader)? {
            break;
        }
        match step(model, previous)? {
            Some((is_max, bound, data)) if add(&mut bounds, is_max, bound) => {
                (input, reader) = (data, previous.id)
            }
            _ => break,
        }
    }
    Ok((bounds, input))
}
