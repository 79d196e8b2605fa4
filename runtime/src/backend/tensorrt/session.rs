//! A loaded engine as a `Prepared` plan, and one execution context per `Session`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use half::f16;

use super::error::TrtError;
use super::ffi;
use super::handles::{Buffer, Context, Engine};
use super::staging::{bytes, Staging};
use crate::backend::{DeviceBatch, DeviceTiming, Prepared, Session};
use crate::limits::{elements, MemoryLimit};
use crate::tensor::{Batch, DataType, HostTensor, TensorSpec};
use crate::{Error, Result};

pub struct TrtPrepared {
    engine: Arc<Engine>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    path: PathBuf,
}

fn spec(tensor: &super::handles::EngineTensor) -> TensorSpec {
    TensorSpec {
        name: tensor.name.clone(),
        shape: tensor.dims.iter().map(|&d| usize::try_from(d).ok()).collect(),
        dtype: ffi::data_type(tensor.dtype),
    }
}

impl TrtPrepared {
    /// Checks that edgert can feed the engine: one input, f32 (what `HostTensor` holds) or f16
    /// (`trtexec --inputIOFormats=fp16:chw`), converted on the host; outputs of those types or of
    /// the integer and boolean ones NMS plugins give, read into f32.
    pub fn checked(engine: Engine, path: &Path) -> Result<Box<dyn Prepared>> {
        let refuse = |reason: String| Error::input(path, reason);
        let inputs: Vec<TensorSpec> = engine.tensors.iter().filter(|t| t.is_input).map(spec).collect();
        let outputs: Vec<TensorSpec> = engine.tensors.iter().filter(|t| !t.is_input).map(spec).collect();
        if inputs.len() != 1 {
            return Err(refuse(format!(
                "the engine has {} inputs; edgert feeds engines with one",
                inputs.len()
            )));
        }
        if let Some(vectorized) = engine.tensors.iter().find(|t| !t.linear) {
            let format = vectorized.format.as_deref().unwrap_or("not linear");
            return Err(refuse(format!(
                "tensor '{}' is in the format \"{format}\", whose memory is not the dense tensor edgert \
                 reads and writes: rebuild the engine with linear IO formats (trtexec --inputIOFormats=fp32:chw \
                 --outputIOFormats=fp32:chw, or edgert build-engine)",
                vectorized.name
            )));
        }
        if let Some(other) = inputs.iter().find(|t| !matches!(t.dtype, DataType::F32 | DataType::F16)) {
            return Err(refuse(format!(
                "input '{}' is {}; edgert feeds engines f32 or f16 inputs (build the engine with an FP32 or \
                 FP16 input: FP32 is the default of `edgert build-engine` and of trtexec)",
                other.name, other.dtype
            )));
        }
        if let Some(other) = outputs.iter().find(|t| Staging::for_type(t.dtype).is_none()) {
            return Err(refuse(format!(
                "output '{}' is {}; edgert reads f32, f16, i32, i64 and bool outputs (build the engine with \
                 FP32 outputs: the default of `edgert build-engine` and of trtexec)",
                other.name, other.dtype
            )));
        }
        Ok(Box::new(TrtPrepared { engine: Arc::new(engine), inputs, outputs, path: path.to_owned() }))
    }
}

/// Refuses an engine whose inputs and outputs at `batch` (a dynamic dimension taken as `batch`)
/// would take more than `limit`: each in its GPU buffer (memory a Jetson's CPU shares), as f32 on
/// the host, and, for tensors of other types, in the host's staging copy.
pub fn check_io_memory(engine: &Engine, path: &Path, batch: usize, limit: MemoryLimit) -> Result<()> {
    let bytes: u128 = engine
        .tensors
        .iter()
        .map(|t| {
            let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d).unwrap_or(batch)).collect();
            // A value takes its type's bytes on the GPU (f32's 4 where nothing is staged), as many
            // again in the host's staging copy (none for f32), and 4 as f32 on the host.
            let dtype = ffi::data_type(t.dtype);
            let on_gpu = match Staging::staged_bytes(dtype) {
                0 => 4,
                staged => staged,
            };
            elements(&shape).saturating_mul(on_gpu + Staging::staged_bytes(dtype) + 4)
        })
        .sum();
    let what = || {
        format!(
            "{}: the engine's inputs and outputs at batch {batch} (on the GPU and as f32 on the host)",
            path.display()
        )
    };
    Ok(limit.check_bytes(what, bytes)?)
}

impl Prepared for TrtPrepared {
    fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    fn spawn(&self) -> Result<Box<dyn Session>> {
        let context = self.engine.context().map_err(|reason| self.failed(reason))?;
        let half = |t: &TensorSpec| t.dtype == DataType::F16;
        Ok(Box::new(TrtSession {
            context,
            path: self.path.clone(),
            shape: Vec::new(),
            outputs: Vec::new(),
            input_f16: half(&self.inputs[0]).then(Vec::new),
            staging: self
                .outputs
                .iter()
                .map(|t| Staging::for_type(t.dtype).expect("TrtPrepared checked the output types"))
                .collect(),
            last: None,
        }))
    }
}

impl TrtPrepared {
    fn failed(&self, reason: TrtError) -> Error {
        Error::Inference { path: self.path.clone(), reason: reason.to_string() }
    }
}

struct TrtSession {
    context: Context,
    path: PathBuf,
    /// The input shape last set on the context, and the output shapes it gave.
    shape: Vec<usize>,
    outputs: Vec<Vec<usize>>,
    /// Staging for an f16 input (None: f32) and for each output, kept between runs.
    input_f16: Option<Vec<f16>>,
    staging: Vec<Staging>,
    last: Option<DeviceTiming>,
}

impl TrtSession {
    fn set_shape(&mut self, shape: &[usize]) -> Result<(), TrtError> {
        let tensors = self.context.engine().tensors.clone();
        let input = tensors.iter().position(|t| t.is_input).expect("TrtPrepared checked one input");
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        self.context.set_input_shape(input, &dims)?;
        let mut outputs = Vec::new();
        for (index, tensor) in tensors.iter().enumerate().filter(|(_, t)| !t.is_input) {
            let dims = self.context.shape(index)?;
            // Every input shape is set: what is still unknown depends on the values (NonZero, NMS).
            if dims.iter().any(|&d| d < 0) {
                return Err(TrtError::DataDependentShape { output: tensor.name.clone(), dims });
            }
            outputs.push(dims.iter().map(|&d| d as usize).collect());
        }
        self.shape = shape.to_vec();
        self.outputs = outputs;
        Ok(())
    }
}

/// Where a run's input is.
enum Input<'a> {
    Host(Batch<'a>),
    Device(&'a DeviceBatch<'a>),
}

impl TrtSession {
    fn run_from(&mut self, input: Input) -> Result<Vec<HostTensor>> {
        let path = self.path.clone();
        let failed = |reason: &dyn std::fmt::Display| Error::Inference {
            path: path.clone(),
            reason: reason.to_string(),
        };
        let shape = match input {
            Input::Host(batch) => batch.shape,
            Input::Device(device) => device.shape(),
        };
        if *shape != self.shape {
            self.set_shape(shape).map_err(|e| failed(&e))?;
        }
        let mut outputs: Vec<HostTensor> =
            self.outputs.iter().map(|shape| HostTensor::zeros(shape)).collect();
        // Host values not of the engine's input type are converted here, kept until the run ends.
        let converted: Cow<[f32]>;
        let input_buffer = match input {
            Input::Host(batch) => match &mut self.input_f16 {
                Some(staged) => {
                    staged.resize(batch.values.len(), f16::ZERO);
                    batch.values.convert_into(staged);
                    Buffer::In(bytes(staged))
                }
                None => {
                    converted = batch.values.to::<f32>();
                    Buffer::In(bytes(&converted))
                }
            },
            Input::Device(device) => {
                // TensorRT's rule for the addresses it is given (IExecutionContext::setTensorAddress).
                if device.address() % 256 != 0 {
                    return Err(failed(&format!(
                        "the GPU input at {:#x} is not aligned to 256 bytes, as TensorRT requires",
                        device.address()
                    )));
                }
                if device.half() != self.input_f16.is_some() {
                    let (engine, given) = if device.half() { ("f32", "f16") } else { ("f16", "f32") };
                    return Err(failed(&format!(
                        "the engine's input is {engine}, the GPU input given is {given}"
                    )));
                }
                let values: usize = device.shape().iter().product();
                let size = if device.half() { 2 } else { 4 };
                Buffer::Device(device.address() as *mut std::ffi::c_void, values * size)
            }
        };
        let mut input_buffer = Some(input_buffer);
        let mut output_bytes = self.staging.iter_mut().zip(outputs.iter_mut()).map(|(s, o)| s.memory(o));
        let mut buffers: Vec<Buffer> = self
            .context
            .engine()
            .tensors
            .iter()
            .map(|t| match t.is_input {
                true => input_buffer.take().expect("TrtPrepared checked one input"),
                false => Buffer::Out(output_bytes.next().expect("one per output")),
            })
            .collect();
        // SAFETY: host buffers are live slices; a device buffer is a `DeviceBatch`, whose maker
        // vouched (`DeviceBatch::new`) for that many bytes of GPU-visible memory until we return.
        let timing = unsafe { self.context.run(&mut buffers) }.map_err(|e| failed(&e))?;
        drop(buffers);
        for (output, staging) in outputs.iter_mut().zip(&self.staging) {
            staging.finish(output);
        }
        self.last = Some(DeviceTiming {
            h2d_ms: timing.h2d_ms as f64,
            compute_ms: timing.compute_ms as f64,
            d2h_ms: timing.d2h_ms as f64,
            enqueue_ms: timing.enqueue_ms as f64,
        });
        Ok(outputs)
    }
}

impl Session for TrtSession {
    fn run_batch(&mut self, input: Batch) -> Result<Vec<HostTensor>> {
        self.run_from(Input::Host(input))
    }

    fn device_timing(&self) -> Option<DeviceTiming> {
        self.last
    }

    fn takes_device_input(&self) -> bool {
        true
    }

    fn run_on_device(&mut self, input: &DeviceBatch) -> Result<Vec<HostTensor>> {
        self.run_from(Input::Device(input))
    }
}
