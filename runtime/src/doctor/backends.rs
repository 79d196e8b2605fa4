//! The backends that run ONNX: the embedded model on `cpu`, `ort` and `cuda` against ONNX
//! Runtime's known logits, and the user's `--model` on each usable backend against `cpu`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::embedded;
use super::{Area, Check, Facts, Options, Outcome};
use crate::backend::{self, BackendOptions, PrepareOptions};
use crate::model::Model;
use crate::pipeline::Pipeline;
use crate::tensor::HostTensor;

pub fn checks(options: &Options) -> Vec<Check> {
    let mut list = vec![
        Check::new(Area::Cpu, "cpu backend", 1_000, |o, f| embedded_on("cpu", o, f)),
        Check::new(Area::Cpu, "ort backend", 1_000, |o, f| embedded_on("ort", o, f)),
        Check::new(Area::Cuda, "cuda backend", 10_000, |o, f| {
            // tract's CUDA runtime loads cuBLAS and cuDNN: seconds, which the short run leaves out.
            let compiled = !backend::NOT_COMPILED.iter().any(|(n, _)| *n == "cuda");
            if o.quick && compiled {
                Outcome::skip("--quick leaves out tract's CUDA runtime (it loads cuBLAS and cuDNN)")
            } else {
                embedded_on("cuda", o, f)
            }
        }),
    ];
    if let Some(model) = &options.model {
        let on_cpu = OnCpu::default();
        list.push(Check::new(Area::Cpu, "--model on cpu", 10_000, {
            let (model, on_cpu) = (model.clone(), on_cpu.clone());
            move |o, _| user_model_on_cpu(&on_cpu, &model, o)
        }));
        for name in ["ort", "cuda", "tensorrt"] {
            let (model, on_cpu) = (model.clone(), on_cpu.clone());
            let check = Check::new(Area::Cpu, format!("--model on {name}"), 60_000, move |o, f| {
                user_model_agrees(&on_cpu, &model, name, o, f)
            });
            list.push(check.needs("--model on cpu"));
        }
    }
    list
}

/// Why a backend cannot run here, or `None` when it can.
fn unusable(name: &str, options: &BackendOptions) -> Option<String> {
    if let Some((_, feature)) = backend::NOT_COMPILED.iter().find(|(n, _)| *n == name) {
        return Some(format!("not compiled in (build with --features {feature})"));
    }
    let backends = backend::registry_with(options);
    let found = backends.iter().find(|b| b.name() == name)?;
    found.check().err().map(|e| e.to_string())
}

/// A backend that cannot run here: a failure where the board should have it (a Jetson's CUDA),
/// else a skip.
fn not_here(name: &str, why: String, facts: &Facts) -> Outcome {
    let expected_on_board = name == "cuda" && facts.jetson && !why.starts_with("not compiled");
    if expected_on_board {
        Outcome::fail(
            "tract's CUDA runtime to load (libcuda, cuBLAS, cuDNN, NVRTC)",
            why,
            "install JetPack's CUDA libraries (sudo apt install nvidia-jetpack) or run on cpu",
        )
    } else {
        Outcome::skip(why)
    }
}

fn embedded_on(name: &str, options: &Options, facts: &Facts) -> Outcome {
    if let Some(why) = unusable(name, &options.backends) {
        return not_here(name, why, facts);
    }
    match embedded::run_on(name, &options.backends) {
        Ok(a) if a.agrees() => Outcome::pass(a.text()),
        Ok(a) => Outcome::fail(
            format!("ONNX Runtime's logits for ten digits, within {:.0e}", embedded::TOLERANCE),
            a.text(),
            format!("the {name} backend computes a wrong answer on this machine: report it with this output"),
        ),
        Err(e) => Outcome::fail(
            "the embedded digits model to load and run",
            e,
            format!("the {name} backend fails on this machine: report it with this output"),
        ),
    }
}

/// The user's model loaded and its outputs on `cpu`; or what failed (the expectation) and why.
type CpuRun = Result<(Model, Vec<Vec<f32>>), (&'static str, String)>;

/// `CpuRun` made once, shared by the `--model` checks, which compare each other backend with it.
type OnCpu = Arc<OnceLock<CpuRun>>;

fn on_cpu<'a>(cell: &'a OnCpu, path: &Path, options: &Options) -> &'a CpuRun {
    cell.get_or_init(|| {
        let model = embedded::load(path).map_err(|e| ("the model to load", e))?;
        let outputs =
            outputs_on(&model, "cpu", &options.backends).map_err(|e| ("the model to run on cpu", e))?;
        Ok((model, outputs))
    })
}

/// The model's outputs on one input the same for every backend: values 0..1 in a fixed pattern,
/// scaled into the input's type by the backend's own conversion.
fn outputs_on(model: &Model, name: &str, options: &BackendOptions) -> Result<Vec<Vec<f32>>, String> {
    let selected = backend::select_with(name, options).map_err(|e| e.to_string())?;
    let mut pipeline = Pipeline::open(model.clone(), selected, PrepareOptions::default())
        .map_err(|e| format!("preparing: {e}"))?;
    let shape = model.input_shape(1);
    let len = shape.iter().product();
    let input = HostTensor::new(shape, (0..len).map(|i| ((i * 37) % 101) as f32 / 100.0).collect());
    let outputs = pipeline.infer(&input).map_err(|e| format!("running: {e}"))?;
    Ok(outputs.into_iter().map(|t| t.data).collect())
}

fn user_model_on_cpu(cell: &OnCpu, path: &Path, options: &Options) -> Outcome {
    match on_cpu(cell, path, options) {
        Ok((_, outputs)) => {
            let values: usize = outputs.iter().map(Vec::len).sum();
            Outcome::pass(format!("{} outputs, {values} values, all finite", outputs.len()))
        }
        Err((expected, e)) => Outcome::fail(
            *expected,
            e.clone(),
            "run `edgert inspect --model` and `edgert run --model` on it for the full error",
        ),
    }
}

/// How far another backend's outputs may be from `cpu`'s, as the norm of the difference over the
/// norm of `cpu`'s (relative L2): rounding, FP16 engines, fused kernels stay far under it for FP32
/// weights; INT8 runtimes requantize each layer their own way (integer kernels against tract's
/// simulation), which the doctor's patterned input, far from any photo, drives apart more; a
/// wrong kernel gives differences the size of the outputs (1 and more).
fn tolerance(model: &Model) -> f32 {
    match model.precision() {
        crate::precision::Precision::Fp32 => 0.01,
        _ => 0.3,
    }
}

/// ‖a − b‖ / ‖a‖ over every output.
fn relative_l2(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
        diff += f64::from(x - y).powi(2);
        norm += f64::from(*x).powi(2);
    }
    (diff.sqrt() / norm.sqrt().max(1e-12)) as f32
}

fn user_model_agrees(cell: &OnCpu, path: &Path, name: &str, options: &Options, facts: &Facts) -> Outcome {
    if let Some(why) = unusable(name, &options.backends) {
        return not_here(name, why, facts);
    }
    let (model, cpu) = match on_cpu(cell, path, options) {
        Ok((model, cpu)) => (model, cpu),
        Err((expected, e)) => return Outcome::fail(*expected, e.clone(), "see `--model on cpu`"),
    };
    let other = match outputs_on(model, name, &options.backends) {
        Ok(other) => other,
        Err(e) => {
            return Outcome::fail(
                format!("the model to run on {name}"),
                e,
                format!("edgert bench --model … --backend {name} shows the error in context"),
            )
        }
    };
    let shapes_agree = cpu.len() == other.len() && cpu.iter().zip(&other).all(|(a, b)| a.len() == b.len());
    let relative = relative_l2(cpu, &other);
    let allowed = tolerance(model);
    let seen = format!("{:.2}% from cpu's outputs (relative L2)", relative * 100.0);
    if shapes_agree && relative <= allowed {
        Outcome::pass(seen)
    } else {
        Outcome::fail(
            format!(
                "cpu's outputs within {:.0}% (relative L2, for {} weights)",
                allowed * 100.0,
                model.precision().name()
            ),
            if shapes_agree { seen } else { "outputs of other sizes".into() },
            format!("validate the model on {name} with edgert validate before trusting its answers"),
        )
    }
}
