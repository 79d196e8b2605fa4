//! What the `cpu` and `cuda` backends share: a model as tract's typed graph at one batch size, with
//! its input and output specs, and a tract plan as `Prepared` and `Session`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::ThreadPool;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::runtime::{Runnable, State};
use tract_onnx::tract_hir::internal::DimLike;

use super::tract_cache::{self, CacheKey, LoadCache};
use super::{cannot_run, constant_dequantize, tract_checks, tract_memory, PrepareOptions, Prepared, Session};
use crate::error::one_line;
use crate::model::{onnx, spec_defaults, Model};
use crate::panics::contained;
use crate::tensor::ElementType;
use crate::tensor::{Batch, DataType, HostTensor, TensorSpec};
use crate::{Error, Result};

pub struct TractModel {
    /// Decluttered, not yet optimized for a runtime.
    pub typed: TypedModel,
    pub input: TensorSpec,
    pub outputs: Vec<TensorSpec>,
}

/// Parses the model, pins its input to the batch size and declutters it, or reads that result from
/// the load cache where one is set (`tract_cache`); refuses it where it would take more than the
/// memory limit (`tract_memory`).
pub fn decluttered(model: &Model, options: &PrepareOptions, backend: &str) -> Result<TractModel> {
    let batch = options.batch;
    let path = &model.file;
    let proto = model.onnx(&format!("the {backend} backend"))?;
    onnx::check_operators(path, proto, backend).map_err(cannot_run::with_alternatives)?;
    let invalid = |stage: &str, e: TractError| cannot_run::tract(path, backend, stage, &e);
    let shape = model.input_shape(batch);
    let dtype = model.manifest.input.dtype;
    let analyse = || {
        let panicked = cannot_run::tract_panic(path, backend, "analysis");
        contained(|| analysed(model, proto, &shape, dtype, backend), panicked)
    };
    let typed = match LoadCache::from_env().filter(|_| tract_cache::self_contained(proto)) {
        Some(cache) => {
            let key = CacheKey {
                model_sha256: model.sha256.clone(),
                input: model.manifest.input.name.clone(),
                dtype: dtype.name().into(),
                shape: shape.clone(),
            };
            cache.decluttered(&key, analyse)?
        }
        None => analyse()?,
    };
    tract_memory::check(path, &typed, options.memory, backend)?;
    let outputs = typed
        .output_outlets()
        .map_err(|e| invalid("outputs", e))?
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let fact = typed.outlet_fact(o)?;
            // tract keeps the ONNX output order; its node names may differ from the tensor names.
            let onnx_name = model.outputs.get(i).map(|spec| spec.name.clone());
            Ok(TensorSpec {
                name: onnx_name.unwrap_or_else(|| typed.node(o.node).name.clone()),
                shape: fact.shape.iter().map(|d| d.to_usize().ok()).collect(),
                dtype: data_type(fact.datum_type),
            })
        })
        .collect::<TractResult<Vec<_>>>()
        .map_err(|e| invalid("outputs", e))?;
    let input = TensorSpec {
        name: model.manifest.input.name.clone(),
        shape: shape.iter().map(|&d| Some(d)).collect(),
        dtype: dtype.into(),
    };
    Ok(TractModel { typed, input, outputs })
}

/// tract's element type as edgert's; quantized 8- and 32-bit values by their storage type.
fn data_type(datum: DatumType) -> DataType {
    match datum.unquantized() {
        DatumType::F32 => DataType::F32,
        DatumType::F16 => DataType::F16,
        DatumType::F64 => DataType::F64,
        DatumType::I8 => DataType::I8,
        DatumType::U8 => DataType::U8,
        DatumType::I16 => DataType::I16,
        DatumType::U16 => DataType::U16,
        DatumType::I32 => DataType::I32,
        DatumType::I64 => DataType::I64,
        DatumType::Bool => DataType::Bool,
        DatumType::String => DataType::String,
        _ => DataType::Other,
    }
}

/// What `decluttered` caches: the ONNX graph, constant weights dequantized and the spec's defaults
/// written where tract reads others, translated with its input pinned to `shape`, typed and
/// decluttered.
pub(super) fn analysed(
    model: &Model,
    proto: &pb::ModelProto,
    shape: &[usize],
    dtype: ElementType,
    backend: &str,
) -> Result<TypedModel> {
    let path = &model.file;
    let invalid = |stage: &str, e: TractError| cannot_run::tract(path, backend, stage, &e);
    let dir = path.parent().and_then(|d| d.to_str());
    let folded = constant_dequantize::fold(proto);
    let proto = folded.as_ref().unwrap_or(proto);
    let filled = spec_defaults::fill(proto);
    let proto = filled.as_ref().unwrap_or(proto);
    let mut graph = onnx::framework().parse(proto, dir).map_err(|e| invalid("parse", e))?.model;
    let input_index = graph
        .input_outlets()
        .map_err(|e| invalid("inputs", e))?
        .iter()
        .position(|o| graph.node(o.node).name == model.manifest.input.name)
        .unwrap_or(0);
    let datum = match dtype {
        ElementType::F32 => f32::datum_type(),
        ElementType::F16 => f16::datum_type(),
        ElementType::U8 => u8::datum_type(),
    };
    graph.set_input_fact(input_index, datum.fact(shape).into()).map_err(|e| invalid("input shape", e))?;
    let typed = graph.into_typed().and_then(|t| t.into_decluttered()).map_err(|e| invalid("analysis", e))?;
    tract_checks::check(path, backend, &typed)?;
    Ok(typed)
}

/// A tract plan as a `Prepared`: `cpu` and `cuda` differ only in the runtime that made the plan.
pub struct TractPrepared {
    plan: Box<dyn Runnable>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    dtype: ElementType,
    path: PathBuf,
    pool: Option<Arc<ThreadPool>>,
}

impl TractPrepared {
    pub fn new(plan: Box<dyn Runnable>, input: TensorSpec, outputs: Vec<TensorSpec>, model: &Model) -> Self {
        let (dtype, path) = (model.manifest.input.dtype, model.file.clone());
        TractPrepared { plan, inputs: vec![input], outputs, dtype, path, pool: None }
    }

    /// Runs each inference on one of `pool`'s threads, the pool the plan splits its operators
    /// over (`--threads`): that thread then takes its share of each split, so as many threads
    /// work as were asked for. Run from the caller's thread, the plan kept one more thread
    /// awake than that, and on a machine with no spare core the pool's waiting threads took
    /// turns with it (benches/RESULTS.md).
    pub fn on_pool(self, pool: Option<Arc<ThreadPool>>) -> Self {
        TractPrepared { pool, ..self }
    }
}

/// The error a panic in tract while it runs the model at `path` becomes.
pub fn inference_panic(path: &Path) -> impl Fn(String) -> Error + Clone + Send + Sync + 'static {
    let path = path.to_owned();
    move |panic| Error::Inference {
        path: path.clone(),
        reason: format!("tract failed unexpectedly: {panic}"),
    }
}

fn failed(path: &Path, e: TractError) -> Error {
    Error::Inference { path: path.to_owned(), reason: one_line(&e) }
}

impl Prepared for TractPrepared {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn spawn(&self) -> Result<Box<dyn Session>> {
        let state = self.plan.spawn().map_err(|e| failed(&self.path, e))?;
        let expected = self.inputs[0].shape.iter().map(|d| d.unwrap_or(0)).collect();
        let (dtype, path, pool) = (self.dtype, self.path.clone(), self.pool.clone());
        Ok(Box::new(TractSession { state, expected, dtype, path, pool }))
    }
}

struct TractSession {
    state: Box<dyn State>,
    expected: Vec<usize>,
    dtype: ElementType,
    path: PathBuf,
    pool: Option<Arc<ThreadPool>>,
}

impl Session for TractSession {
    fn run_batch(&mut self, input: Batch) -> Result<Vec<HostTensor>> {
        if input.shape != self.expected {
            return Err(Error::Inference {
                path: self.path.clone(),
                reason: format!("input shape {:?}, plan compiled for {:?}", input.shape, self.expected),
            });
        }
        // tract wants its input owned: one copy (converted to the model's type where it is not
        // that already), small next to the model's own run.
        let tensor = match self.dtype {
            ElementType::F32 => Tensor::from_shape(input.shape, &input.values.to::<f32>()),
            ElementType::F16 => Tensor::from_shape(input.shape, &input.values.to::<f16>()),
            ElementType::U8 => Tensor::from_shape(input.shape, &input.values.to::<u8>()),
        }
        .map_err(|e| failed(&self.path, e))?;
        let (state, path) = (&mut self.state, &self.path);
        let panicked = inference_panic(path);
        // Contained on the thread that runs it: a pool's.
        let run = move || {
            contained(|| state.run(tvec!(tensor.into_tvalue())).map_err(|e| failed(path, e)), panicked)
        };
        let outputs = match &self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        }?;
        outputs
            .iter()
            .map(|value| {
                let values = value.cast_to::<f32>()?;
                let view = values.to_plain_array_view::<f32>()?;
                Ok(HostTensor::new(view.shape().to_vec(), view.iter().copied().collect()))
            })
            .collect::<TractResult<Vec<_>>>()
            .map_err(|e| failed(&self.path, e))
    }
}
