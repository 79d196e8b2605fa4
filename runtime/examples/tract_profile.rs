//! Where the `cpu` backend's time goes on one model: each variant's plan, loaded and optimized as
//! the backend does it (`CpuBackend::optimized`), is run in turns with the others (so the
//! machine's drift hits them alike), then its p50 and the time of each operator kind, summed over
//! the run and divided by the iterations.
//!
//!     cargo run --release --example tract_profile -- MODEL [ROUNDS] [VARIANT...]
//!
//! MODEL is an `.onnx` or a manifest; VARIANT is `plain` (tract's kernels alone,
//! `EDGERT_CPU_KERNELS=tract`) or `edgert` (the default kernels). Default: `plain edgert`.
//! `THREADS=N` runs on N threads; `BY_NODE=1` lists each node; `INFO=1` prints each of edgert's
//! operators in the plan with its layout.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use edgert::backend::cpu::{CpuBackend, CpuKernels};
use edgert::backend::tract_ops::threads;
use edgert::backend::PrepareOptions;
use edgert::model::{BareModelOptions, Model};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::{eval, SimpleState};

type Plan = Arc<TypedSimplePlan>;

fn plan(model: &Model, variant: &str) -> TractResult<Plan> {
    let kernels = match variant {
        "plain" => CpuKernels::Tract,
        "edgert" => CpuKernels::Edgert,
        other => anyhow::bail!("no variant named {other}: plain or edgert"),
    };
    let options = PrepareOptions::default();
    let typed = CpuBackend::with_kernels(kernels).optimized(model, &options)?.typed;
    if std::env::var_os("INFO").is_some_and(|v| v == "1") {
        for node in typed.nodes() {
            if node.op.name().starts_with("Edgert") {
                println!("{} {}: {}", node.op.name(), node.name, node.op.info()?.join("; "));
            }
        }
    }
    typed.into_runnable_with_options(&threads::run_options(&pool()))
}

/// THREADS=N runs every plan on one pool of N threads, as `--threads N` does.
fn pool() -> Option<Arc<rayon::ThreadPool>> {
    static POOL: std::sync::OnceLock<Option<Arc<rayon::ThreadPool>>> = std::sync::OnceLock::new();
    let threads = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    POOL.get_or_init(|| {
        threads::pool(threads, PrepareOptions::default().pinning, |panic| edgert::Error::Inference {
            path: "tract_profile".into(),
            reason: panic,
        })
        .expect("THREADS: a pool of that many threads")
    })
    .clone()
}

/// One run, each node's time added to `per_op` under its operator's name, or under its operator's
/// and its own with `by_node` (BY_NODE=1).
fn profiled_run(
    state: &mut TypedSimpleState,
    input: &Tensor,
    per_op: &mut BTreeMap<String, Duration>,
    by_node: bool,
) -> TractResult<()> {
    state.run_plan_with_eval(tvec!(input.clone().into_tvalue()), |ctx, op_state, node, inputs| {
        let clock = Instant::now();
        let out = eval(ctx, op_state, node, inputs);
        let took = clock.elapsed();
        let key = match by_node {
            true => format!("{} {}", node.op().name(), node.name),
            false => node.op().name().to_string(),
        };
        *per_op.entry(key).or_default() += took;
        out
    })?;
    Ok(())
}

fn main() -> TractResult<()> {
    match pool() {
        Some(pool) => pool.install(profile),
        None => profile(),
    }
}

fn profile() -> TractResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: tract_profile MODEL [ROUNDS] [VARIANT...]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).map(|r| r.parse().expect("ROUNDS: a number")).unwrap_or(10);
    let mut variants: Vec<String> = args.iter().skip(3).cloned().collect();
    if variants.is_empty() {
        variants = vec!["plain".into(), "edgert".into()];
    }
    let model = Model::load(Path::new(path), &BareModelOptions::default())?;
    let shape = model.input_shape(1);
    // A ramp rather than one value, so that the variants' outputs are compared on varied data.
    let values: Vec<f32> = (0..shape.iter().product()).map(|i| (i % 251) as f32 / 251.0).collect();
    let input = Tensor::from_shape(&shape, &values)?;
    let mut runs = Vec::new();
    for variant in &variants {
        let plan = plan(&model, variant)?;
        let mut state = SimpleState::new(&plan)?;
        let reference = state.run(tvec!(input.clone().into_tvalue()))?;
        runs.push((variant, state, reference, Vec::new(), BTreeMap::new()));
    }
    let reference = runs[0].2[0].cast_to::<f32>()?.into_owned();
    for (variant, _, outputs, _, _) in &runs {
        let out = outputs[0].cast_to::<f32>()?;
        let diff = out
            .to_plain_array_view::<f32>()?
            .iter()
            .zip(reference.to_plain_array_view::<f32>()?.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        println!("{variant:<24} max abs difference from {}: {diff:.2e}", variants[0]);
    }
    let per_round = 20;
    let by_node = std::env::var_os("BY_NODE").is_some_and(|v| v == "1");
    for _ in 0..rounds {
        for (_, state, _, times, per_op) in runs.iter_mut() {
            for _ in 0..per_round {
                let clock = Instant::now();
                profiled_run(state, &input, per_op, by_node)?;
                times.push(clock.elapsed());
            }
        }
    }
    for (variant, _, _, times, per_op) in runs.iter_mut() {
        times.sort();
        let n = times.len() as u32;
        println!("\n{variant}: p50 {:.2} ms over {n} runs", times[times.len() / 2].as_secs_f64() * 1e3);
        let mut ops: Vec<_> = per_op.iter().collect();
        ops.sort_by_key(|(_, t)| std::cmp::Reverse(**t));
        for (op, total) in ops {
            println!("  {:>8.3} ms  {op}", (*total / n).as_secs_f64() * 1e3);
        }
    }
    Ok(())
}
