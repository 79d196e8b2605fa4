//! How tract loads a model and what it runs: time of each loading phase (protobuf, translation,
//! decluttering, optimization) and, for the optimized plan, each operator with the element types
//! it reads, so one can see which parts of an INT8 QDQ graph run in integer and which in float.
//! Also writes the decluttered model as tract's own NNEF and reads it back, timed: what the opt-in
//! load cache (`backend/tract_cache`, which adds NNEF forms of the Q/DQ operators) does.
//!
//!     cargo run --release --example tract_plan -- models/mobilenetv2_int8_qdq.onnx [N C H W]

use std::collections::BTreeMap;
use std::time::Instant;

use tract_onnx::prelude::*;
use tract_onnx::WithOnnx;

fn main() -> TractResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: tract_plan MODEL.onnx [N C H W]");
        std::process::exit(2);
    };
    let shape: Vec<usize> = if args.len() > 2 {
        args[2..].iter().map(|d| d.parse().expect("a dimension")).collect()
    } else {
        vec![1, 3, 224, 224]
    };
    let clock = Instant::now();
    let lap = |what: &str| {
        println!("{what:<22} {:8.1} ms", clock.elapsed().as_secs_f64() * 1e3);
    };
    let onnx = tract_onnx::onnx().with_ignore_value_info(true);
    let proto = onnx.proto_model_for_path(path)?;
    lap("protobuf read");
    let mut model = onnx.model_for_proto_model(&proto)?;
    model.set_input_fact(0, f32::fact(&shape).into())?;
    lap("+ translated");
    let decluttered = model.into_typed()?.into_decluttered()?;
    lap("+ typed, decluttered");
    let optimized = decluttered.clone().into_optimized()?;
    lap("+ optimized");
    let _plan = optimized.clone().into_runnable()?;
    lap("+ runnable plan");

    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    for node in optimized.nodes() {
        let inputs: Vec<String> = node
            .inputs
            .iter()
            .map(|i| optimized.outlet_fact(*i).map(|f| format!("{:?}", f.datum_type)))
            .collect::<TractResult<_>>()?;
        *ops.entry(format!("{} ({})", node.op.name(), inputs.join(", "))).or_default() += 1;
    }
    println!("\noptimized plan: {} nodes", optimized.nodes().len());
    for (op, count) in ops {
        println!("  {count:4} × {op}");
    }

    let nnef = tract_nnef::nnef().with_onnx();
    let mut buffer = Vec::new();
    match nnef.write_to_tar(&decluttered, &mut buffer) {
        Ok(_) => {
            let clock = Instant::now();
            let back = nnef.model_for_read(&mut &buffer[..])?;
            let read = clock.elapsed();
            back.into_optimized()?.into_runnable()?;
            println!(
                "\nNNEF of the decluttered model: {} bytes; reading it back {:.1} ms, + optimized plan {:.1} ms",
                buffer.len(),
                read.as_secs_f64() * 1e3,
                clock.elapsed().as_secs_f64() * 1e3
            );
        }
        Err(e) => {
            println!("\nNNEF of the decluttered model: cannot be written: {}", edgert::error::one_line(&e))
        }
    }
    Ok(())
}
