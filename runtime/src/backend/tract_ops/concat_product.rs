//! One product over a concatenation, where tract's declutter made one per concatenated input.
//! tract rewrites a matrix product whose summed axis is a `Concat`'s (every YOLOv8 C2f and YOLO11
//! C3k2 block ends in a 1×1 convolution over one) into a product per input and a chain of adds.
//! For edgert's 1×1 kernel that is the slow way: each product is narrow, and each add reads and
//! writes the whole output again. This joins them back: the inputs concatenated, the weights too,
//! one product, which `pointwise` then takes with its bias and activation.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::TypedConcat;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::einsum::EinSum;

/// At the last add of a chain that sums f32 products of data with constant weights, all the same
/// EinSum over one summed axis, each read by the chain alone: one product over the data
/// concatenated along that axis, with the weights concatenated along theirs.
pub fn rule(
    _: &(),
    model: &TypedModel,
    node: &TypedNode,
    name: &str,
    _: &TypedBinOp,
) -> TractResult<Option<TypedModelPatch>> {
    rule_if_some!(products = summed_products(model, node)?);
    // A longer chain goes on past this add: its last add joins the whole of it.
    if let Some(next) = model.single_succ(node.id)? {
        if super::clip::only_feeds(model, node.id, next.id)? && summed_products(model, next)?.is_some() {
            return Ok(None);
        }
    }
    // Each product's einsum may have dropped some of the data's size-1 axes (tract squeezes them
    // where it can): the one that kept the most is the reference, and the others get theirs back.
    let mut leaves = vec![];
    for &id in &products {
        let product = model.node(id);
        rule_if_some!(einsum = product.op_as::<EinSum>());
        rule_if_some!((data, data_axis, weights_axis) = parts(model, product, einsum)?);
        let (inputs, output) = einsum.axes.to_strs();
        rule_if_some!(shape = model.outlet_fact(product.inputs[data])?.shape.as_concrete());
        rule_if_some!(weights = model.outlet_fact(product.inputs[1 - data])?.konst.clone());
        leaves.push(Leaf {
            data: product.inputs[data],
            shape: shape.into(),
            axes: inputs[data].clone(),
            weights,
            weights_axes: inputs[1 - data].clone(),
            output: output[0].clone(),
            slots: (data, data_axis, weights_axis),
        });
    }
    rule_if_some!(reference = (0..leaves.len()).max_by_key(|&i| leaves[i].axes.len()));
    rule_if_some!(einsum = model.node(products[reference]).op_as::<EinSum>());
    let reference = &leaves[reference];
    let (data, data_axis, weights_axis) = reference.slots;
    let mut missing = vec![];
    for leaf in &leaves {
        rule_if!(
            leaf.slots.0 == data
                && leaf.weights_axes == reference.weights_axes
                && leaf.output == reference.output
        );
        rule_if_some!(added = restored_axes(&leaf.axes, &reference.axes, &reference.shape));
        missing.push(added);
    }
    // Every input, its axes restored, and every weight matrix the same but along the summed axis.
    let restored = |leaf: &Leaf, added: &[usize]| {
        let mut shape = leaf.shape.clone();
        for &at in added {
            shape.insert(at, 1);
        }
        shape
    };
    let same_but = |shapes: Vec<TVec<usize>>, axis: usize| {
        shapes.windows(2).all(|pair| {
            pair[0].len() == pair[1].len()
                && pair[0].iter().zip(&pair[1]).enumerate().all(|(i, (a, b))| i == axis || a == b)
        })
    };
    rule_if!(same_but(leaves.iter().zip(&missing).map(|(l, m)| restored(l, m)).collect(), data_axis));
    rule_if!(same_but(leaves.iter().map(|l| l.weights.shape().into()).collect(), weights_axis));

    // The original convolution's name where tract's split kept it, for profiles.
    let first = model.node(products[0]);
    let base = first.name.split(".concat-einsum").next().unwrap_or(name);
    let mut patch = TypedModelPatch::new(format!("edgert: one product over the concatenation at {name}"));
    let mut taps = vec![];
    for (i, (leaf, added)) in leaves.iter().zip(&missing).enumerate() {
        let mut wire = patch.tap_model(model, leaf.data)?;
        for (j, &at) in added.iter().enumerate() {
            wire = patch.wire_node(format!("{base}.concat.{i}.axis.{j}"), AxisOp::Add(at), &[wire])?[0];
        }
        taps.push(wire);
    }
    let joined = patch.wire_node(format!("{base}.concat"), TypedConcat { axis: data_axis }, &taps)?[0];
    let weights: Vec<_> = leaves.iter().map(|l| l.weights.clone()).collect();
    let weights =
        patch.add_const(format!("{base}.weights"), Tensor::stack_tensors(weights_axis, &weights)?)?;
    let operands = if data == 0 { [joined, weights] } else { [weights, joined] };
    let product = patch.wire_node(format!("{base}.product"), einsum.clone(), &operands)?[0];
    patch.shunt_outside(model, node.id.into(), product)?;
    Ok(Some(patch))
}

/// One product's data, as its einsum reads it.
struct Leaf {
    data: OutletId,
    shape: TVec<usize>,
    /// The data's axes, by the einsum's labels.
    axes: String,
    weights: Arc<Tensor>,
    weights_axes: String,
    output: String,
    /// The data's input, and the summed axis in the data and in the weights.
    slots: (usize, usize, usize),
}

/// Where size-1 axes go back into data laid out as `axes` for it to be laid out as `reference`
/// (of shape `reference_shape`), in the order to insert them; None unless `axes` is `reference`
/// without some of its size-1 axes.
fn restored_axes(axes: &str, reference: &str, reference_shape: &[usize]) -> Option<Vec<usize>> {
    let mut kept = axes.chars().peekable();
    let mut added = vec![];
    for (at, label) in reference.chars().enumerate() {
        if kept.peek() == Some(&label) {
            kept.next();
        } else if reference_shape.get(at) == Some(&1) {
            added.push(at);
        } else {
            return None;
        }
    }
    kept.next().is_none().then_some(added)
}

/// The products an f32 add sums, through a chain of adds each read by the next alone: None unless
/// every leaf is an EinSum read by the chain alone.
fn summed_products(model: &TypedModel, node: &TypedNode) -> TractResult<Option<Vec<usize>>> {
    rule_if!(is_add(node));
    let mut products = vec![];
    for input in &node.inputs {
        let source = model.node(input.node);
        rule_if!(input.slot == 0 && super::clip::only_feeds(model, source.id, node.id)?);
        if source.op_is::<EinSum>() {
            products.push(source.id);
        } else {
            rule_if_some!(more = summed_products(model, source)?);
            products.extend(more);
        }
    }
    Ok(Some(products))
}

fn is_add(node: &TypedNode) -> bool {
    node.inputs.len() == 2
        && node
            .op_as::<TypedBinOp>()
            .is_some_and(|op| op.0.name() == "Add" && op.1.is_none_or(|dt| dt == f32::datum_type()))
}

/// Of an f32 EinSum of data with constant weights that sums over one axis of each: the data's
/// input, and the summed axis in the data and in the weights.
fn parts(
    model: &TypedModel,
    node: &TypedNode,
    einsum: &EinSum,
) -> TractResult<Option<(usize, usize, usize)>> {
    rule_if_some!((data, _) = super::pointwise::data_and_weights(model, node, einsum)?);
    let summed: Vec<_> = einsum
        .axes
        .iter_all_axes()
        .filter(|axis| axis.outputs[0].is_empty() && !axis.inputs[0].is_empty() && !axis.inputs[1].is_empty())
        .collect();
    rule_if!(summed.len() == 1 && summed[0].inputs[data].len() == 1 && summed[0].inputs[1 - data].len() == 1);
    Ok(Some((data, summed[0].inputs[data][0], summed[0].inputs[1 - data][0])))
}
