//! What a tract model will ask of memory, checked before a byte of it is allocated: each tensor
//! whose shape the analysis knows, and the peak of a run, since tract aborts the process when an
//! allocation fails.

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::konst::Const;

use super::cannot_run;
use crate::limits::{elements, MemoryLimit};
use crate::Result;

/// Refuses `typed` where one of its tensors, or its peak (`peak_bytes`) with the input batch as
/// edgert holds it (f32) beside tract's copy, would take more than `limit`; `backend` names who
/// would run it, for a graph tract cannot order.
pub fn check(path: &Path, typed: &TypedModel, limit: MemoryLimit, backend: &str) -> Result<()> {
    for node in typed.nodes() {
        for output in &node.outputs {
            let Some(shape) = output.fact.shape.as_concrete() else { continue };
            let what = || format!("{}: a tensor of shape {shape:?} (node '{}')", path.display(), node.name);
            limit.check(what, shape, output.fact.datum_type.size_of())?;
        }
    }
    let peak = held_bytes(typed)
        .and_then(|held| Ok(held.saturating_add(peak_bytes(typed)?)))
        .map_err(|e| cannot_run::tract(path, backend, "memory", &e))?;
    let what = || {
        format!(
            "{}: running it (the input as edgert holds it, the weights, and at its peak the tensors alive at once)",
            path.display()
        )
    };
    Ok(limit.check_bytes(what, peak)?)
}

/// The bytes of `typed`'s inputs as edgert holds them before the backend takes its copy: f32.
fn held_bytes(typed: &TypedModel) -> TractResult<u128> {
    let f32_bytes = std::mem::size_of::<f32>() as u128;
    typed
        .input_outlets()?
        .iter()
        .map(|&o| {
            typed.outlet_fact(o).map(|f| f.shape.as_concrete().map_or(0, elements).saturating_mul(f32_bytes))
        })
        .sum()
}

/// The most bytes `typed`'s tensors take at once when tract runs its nodes in order, freeing each
/// tensor after its last reader: the weights throughout, the others from the node that makes them
/// to their last reader (the outputs to the end). Tensors of shapes the analysis does not know
/// count as empty.
fn peak_bytes(typed: &TypedModel) -> TractResult<u128> {
    let order = typed.eval_order()?;
    let bytes = |outlet: OutletId| -> TractResult<u128> {
        let fact = typed.outlet_fact(outlet)?;
        Ok(fact.shape.as_concrete().map_or(0, elements).saturating_mul(fact.datum_type.size_of() as u128))
    };
    let mut last_read: HashMap<OutletId, usize> = HashMap::new();
    for (step, &id) in order.iter().enumerate() {
        for &input in &typed.node(id).inputs {
            last_read.insert(input, step);
        }
    }
    for &output in typed.output_outlets()? {
        last_read.insert(output, order.len());
    }
    let (mut weights, mut alive, mut peak) = (0u128, 0u128, 0u128);
    let mut freed_after = vec![0u128; order.len() + 1];
    for (step, &id) in order.iter().enumerate() {
        let node = typed.node(id);
        for slot in 0..node.outputs.len() {
            let outlet = OutletId::new(id, slot);
            let size = bytes(outlet)?;
            if node.op_is::<Const>() {
                weights = weights.saturating_add(size);
            } else {
                alive = alive.saturating_add(size);
                freed_after[last_read.get(&outlet).copied().unwrap_or(step)] += size;
            }
        }
        peak = peak.max(alive);
        alive -= freed_after[step];
    }
    Ok(weights.saturating_add(peak))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::math;

    /// x → a = x + 1 → b = a + 1 → c = a + b: `a` lives until `c` reads it, `x` until `a` is made.
    fn chain(n: usize) -> TypedModel {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([n])).unwrap();
        let one = model.add_const("one", tensor1(&vec![1f32; n])).unwrap();
        let a = model.wire_node("a", math::add(), &[x, one]).unwrap()[0];
        let b = model.wire_node("b", math::add(), &[a, one]).unwrap()[0];
        let c = model.wire_node("c", math::add(), &[a, b]).unwrap();
        model.select_output_outlets(&c).unwrap();
        model
    }

    #[test]
    fn the_peak_counts_the_weights_and_the_tensors_alive_together() {
        // Weights (n) throughout; at `c`: a, b and c alive together (3n); x was freed after `a`.
        let n = 1000;
        assert_eq!(peak_bytes(&chain(n)).unwrap(), 4 * (n as u128) * 4);
    }

    #[test]
    fn a_model_whose_tensors_each_fit_but_not_together_is_refused() {
        let n = 100_000; // 400 KB a tensor
        let path = Path::new("m.onnx");
        let limit = |bytes| MemoryLimit { bytes };
        // Each tensor fits in 1 MB; the input held, the weights and three tensors do not.
        let error = check(path, &chain(n), limit(1_000_000), "cpu").unwrap_err();
        let text = crate::error::one_line(&error);
        assert!(text.starts_with("m.onnx: running it (the input as edgert holds it"), "{text}");
        assert!(text.contains("would take 1.9 MiB, more than the memory limit of 1000000 bytes"), "{text}");
        // The input held, the weights, and a, b and c: five tensors of 400 KB.
        check(path, &chain(n), limit(5 * 400_000), "cpu").unwrap();
        assert!(check(path, &chain(n), limit(5 * 400_000 - 1), "cpu").is_err());
    }
}
