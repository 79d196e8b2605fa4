//! A loaded engine as a `Prepared` plan, and one execution context per `Session`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use half::f16;

use super::error::TrtError;
use super::ffi;
use super::handles::{Buffer, Context, Engine};
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
    /// Checks that edgert can feed the engine: one input; f32 tensors (what `HostTensor` holds), or
    /// f16 ones (`trtexec --inputIOFormats=fp16:chw`), converted on the host.
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
        if let Some(other) =
            inputs.iter().chain(&outputs).find(|t| !matches!(t.dtype, DataType::F32 | DataType::F16))
        {
            return Err(refuse(format!(
                "tensor '{}' is {}; edgert exchanges f32 and f16 tensors with engines (build the engine with \
                 FP32 or FP16 inputs and outputs: FP32 is the default of `edgert build-engine` and of trtexec)",
                other.name, other.dtype
            )));
        }
        Ok(Box::new(TrtPrepared { engine: Arc::new(engine), inputs, outputs, path: path.to_owned() }))
    }
}

/// Refuses an engine whose inputs and outputs at `batch` (a dynamic dimension taken as `batch`)
/// would take more than `limit`: each in its GPU buffer (memory a Jetson's CPU shares), as f32 on
/// the host, and, for f16 tensors, in the host's staging copy.
pub fn check_io_memory(engine: &Engine, path: &Path, batch: usize, limit: MemoryLimit) -> Result<()> {
    let bytes: u128 = engine
        .tensors
        .iter()
        .map(|t| {
            let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d).unwrap_or(batch)).collect();
            // 8 bytes a value either way: an f32 tensor's 4 on the GPU and 4 on the host; an f16
            // one's 2 on the GPU, 2 staged on the host and 4 as f32.
            elements(&shape).saturating_mul(8)
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
            outputs_f16: self.outputs.iter().map(|t| half(t).then(Vec::new)).collect(),
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
    /// Staging for an f16 input and f16 outputs (None: the tensor is f32), kept between runs.
    input_f16: Option<Vec<f16>>,
    outputs_f16: Vec<Option<Vec<f16>>>,
    last: Option<DeviceTiming>,
}

/// Values whose every bit pattern is valid: a tensor's memory as bytes, both ways.
trait Plain: Copy {}
impl Plain for f32 {}
impl Plain for f16 {}

fn bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `Plain` values are plain bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

fn bytes_mut<T: Plain>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and any bytes are some `Plain` value.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values)) }
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
        for (staged, output) in self.outputs_f16.iter_mut().zip(&outputs) {
            if let Some(staged) = staged {
                staged.resize(output.data.len(), f16::ZERO);
            }
        }
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
        let mut output_bytes =
            outputs.iter_mut().zip(self.outputs_f16.iter_mut()).map(|(o, staged)| match staged {
                Some(staged) => bytes_mut(staged),
                None => bytes_mut(&mut o.data),
            });
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
        for (output, staged) in outputs.iter_mut().zip(&self.outputs_f16) {
            if let Some(staged) = staged {
                output.data = staged.iter().map(|v| v.to_f32()).collect();
            }
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
