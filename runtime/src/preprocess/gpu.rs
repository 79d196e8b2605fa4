//! The fused pass on an NVIDIA GPU (feature `cuda`): `FusedPreprocess`'s plan (the same taps, gain
//! and bias as the CPU pass) uploaded once, each frame put where the GPU reads it (`FrameUpload`:
//! in place on a Jetson), and one kernel launch (`kernels/fused.cu`, compiled by NVRTC for this
//! GPU) writing the model's input in device memory, as f32 or f16: straight into the inference
//! input buffer. Tests compare it with the CPU reference on a machine with a GPU.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaViewMut, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};

use super::fused::{FusedPreprocess, Tap};
use super::Geometry;
use crate::cuda::host::FrameUpload;
use crate::cuda::{compile, driver_error, GpuError};
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{ChannelOrder, Layout};

/// The kernels' source, compiled at first use.
pub const SOURCE: &str = include_str!("kernels/fused.cu");

/// `Tap` as the kernel reads it.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct GpuTap {
    i0: i32,
    i1: i32,
    w1: f32,
    inside: i32,
}

// SAFETY: plain integers and floats, laid out as `struct Tap` in fused.cu.
unsafe impl DeviceRepr for GpuTap {}

/// The kernel's `Params`, field for field.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    frame: u64,
    stride: i32,
    frame_height: i32,
    format: i32,
    columns: u64,
    rows: u64,
    width: i32,
    height: i32,
    order: i32,
    layout: i32,
    gain: [f32; 3],
    bias: [f32; 3],
    pad: f32,
}

// SAFETY: device addresses, integers and floats, laid out as `struct Params` in fused.cu.
unsafe impl DeviceRepr for Params {}

/// A value type the kernels write.
pub trait Output: DeviceRepr {
    const KERNEL: &'static str;
}

impl Output for f32 {
    const KERNEL: &'static str = "edgert_fused_f32";
}

/// f16, as its bits.
impl Output for u16 {
    const KERNEL: &'static str = "edgert_fused_f16";
}

pub struct GpuPreprocess {
    plan: FusedPreprocess,
    stream: Arc<CudaStream>,
    columns: CudaSlice<GpuTap>,
    rows: CudaSlice<GpuTap>,
    kernels: [CudaFunction; 2],
    frames: FrameUpload,
}

fn taps(taps: &[Tap]) -> Result<Vec<GpuTap>, GpuError> {
    let index =
        |i: usize| i32::try_from(i).map_err(|_| GpuError::Input(format!("a frame side of {i} pixels")));
    taps.iter()
        .map(|t| Ok(GpuTap { i0: index(t.i0)?, i1: index(t.i1)?, w1: t.w1, inside: t.inside as i32 }))
        .collect()
}

impl GpuPreprocess {
    /// Compiles (or takes from the cache) the kernels for this GPU and uploads the plan.
    pub fn new(context: &Arc<CudaContext>, plan: FusedPreprocess) -> Result<GpuPreprocess, GpuError> {
        let sm =
            context.compute_capability().map_err(|e| driver_error("reading the compute capability", e))?;
        let compiled = compile::kernels("fused", SOURCE, sm)?;
        let module =
            context.load_module(compiled.module).map_err(|e| driver_error("loading the kernels", e))?;
        let load = |name| module.load_function(name).map_err(|e| driver_error(name, e));
        let kernels = [load(f32::KERNEL)?, load(u16::KERNEL)?];
        let stream = context.default_stream();
        let upload =
            |t: &[Tap]| stream.clone_htod(&taps(t)?).map_err(|e| driver_error("uploading the plan", e));
        let (columns, rows) = (upload(&plan.columns)?, upload(&plan.rows)?);
        let frames = FrameUpload::new(stream.clone())?;
        Ok(GpuPreprocess { plan, stream, columns, rows, kernels, frames })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Values in the output (one batch item).
    pub fn item_len(&self) -> usize {
        self.plan.item_len()
    }

    /// Whether frames are read in place from mapped host memory (an integrated GPU).
    pub fn is_mapped(&self) -> bool {
        self.frames.is_mapped()
    }

    /// Puts `frame` where the GPU reads it and fills `out` (`item_len` values, f32 or f16 bits) on
    /// the stream; the result is ready once the stream is synchronized.
    pub fn run<T: Output>(&mut self, frame: &Frame, out: &mut CudaViewMut<T>) -> Result<Geometry, GpuError> {
        self.plan.check(frame, out.len()).map_err(|e| GpuError::Input(e.to_string()))?;
        let bytes = frame.format.frame_bytes(frame.stride, frame.height);
        let frame_ptr = self.frames.upload(&frame.data[..bytes])?;
        self.launch(frame, frame_ptr, out)
    }

    /// `run` on a frame the GPU reads where it is (`Registered` memory at `address`): no copy.
    /// The caller keeps the frame's memory unchanged until the stream is synchronized.
    pub fn run_in_place<T: Output>(
        &mut self,
        frame: &Frame,
        address: u64,
        out: &mut CudaViewMut<T>,
    ) -> Result<Geometry, GpuError> {
        self.plan.check(frame, out.len()).map_err(|e| GpuError::Input(e.to_string()))?;
        self.launch(frame, address, out)
    }

    fn launch<T: Output>(
        &mut self,
        frame: &Frame,
        frame_ptr: u64,
        out: &mut CudaViewMut<T>,
    ) -> Result<Geometry, GpuError> {
        let stream = &self.stream;
        let (columns, _columns_sync) = self.columns.device_ptr(stream);
        let (rows, _rows_sync) = self.rows.device_ptr(stream);
        let plan = &self.plan;
        let params = Params {
            frame: frame_ptr,
            stride: frame.stride as i32,
            frame_height: frame.height as i32,
            format: match frame.format {
                PixelFormat::Yuyv => 0,
                PixelFormat::Nv12 => 1,
                PixelFormat::Grey => 2,
                PixelFormat::Rgb24 => 3,
                PixelFormat::Bgr24 => 4,
            },
            columns,
            rows,
            width: plan.width as i32,
            height: plan.height as i32,
            order: match plan.channels {
                ChannelOrder::Rgb => 0,
                ChannelOrder::Bgr => 1,
                ChannelOrder::Gray => 2,
            },
            layout: match plan.layout {
                Layout::Nchw => 0,
                Layout::Nhwc => 1,
            },
            gain: plan.gain,
            bias: plan.bias,
            pad: plan.pad,
        };
        let kernel = &self.kernels[if T::KERNEL == f32::KERNEL { 0 } else { 1 }];
        let config = LaunchConfig {
            grid_dim: ((plan.width as u32).div_ceil(16), (plan.height as u32).div_ceil(16), 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(kernel);
        launch.arg(&params).arg(out);
        // SAFETY: `params` matches the kernel's `Params`; every address in it is live GPU-visible
        // memory of the sizes the plan was made for, checked by the callers.
        unsafe { launch.launch(config) }
            .map_err(|e| driver_error("launching the preprocessing kernel", e))?;
        Ok(plan.geometry())
    }
}

#[cfg(test)]
mod tests;
