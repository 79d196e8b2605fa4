//! `--preprocess gpu`: the preprocess stage runs the fused pass as a CUDA kernel writing each
//! batch straight into GPU memory, and the inference stage hands that memory to the backend in
//! place (`Session::run_on_device`), so no tensor crosses back to the host. On a Jetson that
//! registers host memory the kernels read each frame in the frame buffer the capture stage wrote
//! (`PinnedFrame`); elsewhere frames reach the GPU through `FrameUpload`: copied by the CPU into
//! mapped memory (a Jetson) or into pinned memory and then the GPU's. Without the `cuda` feature
//! the types exist but cannot be made, so the stages need no `cfg`.

use crate::backend::Session;
use crate::gpu_sync::GpuSync;
use crate::preprocess::fused::FusedPreprocess;
use crate::{Error, Result};

/// Refuses a backend that only takes host tensors, before anything opens.
fn check_backend(session: &dyn Session, backend: &str) -> Result<()> {
    if session.takes_device_input() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--preprocess gpu writes the model's input in GPU memory, which backend '{backend}' does not read: \
         use --backend tensorrt"
    )))
}

#[cfg(feature = "cuda")]
pub use enabled::{DeviceBuffer, GpuStage, PinnedFrame};

#[cfg(feature = "cuda")]
mod enabled {
    use std::sync::Arc;

    use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};

    use super::GpuSync;
    use crate::backend::DeviceBatch;
    use crate::cuda::host::Registered;
    use crate::cuda::{device, driver_error, GpuError};
    use crate::frame::Frame;
    use crate::preprocess::fused::FusedPreprocess;
    use crate::preprocess::gpu::GpuPreprocess;
    use crate::preprocess::Geometry;
    use crate::stream::error::PassError;
    use crate::tensor::DataType;
    use crate::Result;

    pub struct GpuStage {
        pass: GpuPreprocess,
        stream: Arc<CudaStream>,
        /// The engine's input is f16.
        half: bool,
        batch_len: usize,
    }

    /// One batch of the model's input in GPU memory.
    pub enum DeviceBuffer {
        F32(CudaSlice<f32>),
        F16(CudaSlice<u16>),
    }

    impl DeviceBuffer {
        pub fn input<'a>(&self, shape: &'a [usize]) -> DeviceBatch<'a> {
            let (address, half) = match self {
                DeviceBuffer::F32(slice) => (slice.device_ptr(slice.stream()).0, false),
                DeviceBuffer::F16(slice) => (slice.device_ptr(slice.stream()).0, true),
            };
            // SAFETY: the batch's own device memory, of `shape` (the batch the stage was opened
            // for) in its element type; the slot that holds it is neither reused nor freed until
            // the inference stage's run on it has returned.
            unsafe { DeviceBatch::new(address, shape, half) }
        }
    }

    /// A frame slot's memory, registered for the GPU to read in place.
    pub struct PinnedFrame(Registered);

    /// Registers frame slots' memory as they are made, on whichever thread makes them.
    #[derive(Clone)]
    pub struct Pinner {
        context: Arc<CudaContext>,
    }

    impl Pinner {
        pub fn pin(&self, buffer: &mut Vec<u8>) -> Option<PinnedFrame> {
            Registered::new(&self.context, buffer).map(PinnedFrame)
        }
    }

    impl GpuStage {
        /// GPU 0, the kernels compiled for it, and the batch layout of `input_shape`.
        pub fn open(
            fused: FusedPreprocess,
            input_dtype: DataType,
            input_shape: &[usize],
            sync: GpuSync,
        ) -> Result<GpuStage> {
            let context = device::open(0, sync)?;
            let pass = GpuPreprocess::new(&context, fused)?;
            let stream = pass.stream().clone();
            let half = input_dtype == DataType::F16;
            Ok(GpuStage { pass, stream, half, batch_len: input_shape.iter().product() })
        }

        pub fn is_mapped(&self) -> bool {
            self.pass.is_mapped()
        }

        /// What registers frame memory for the kernels to read in place; None where frames are
        /// copied for them (a discrete GPU, a driver without host registration).
        pub fn pinner(&self) -> Option<Pinner> {
            let context = self.stream.context().clone();
            Registered::supported(&context).then_some(Pinner { context })
        }

        /// Preprocesses `frame` into item `k` of `batch`, which is allocated on first use: read
        /// where it is when it lies in `pinned` memory (waited for before returning, so the
        /// capture may write the memory again), else copied for the GPU.
        pub fn fill(
            &mut self,
            batch: &mut Option<DeviceBuffer>,
            k: usize,
            frame: &Frame,
            pinned: Option<&PinnedFrame>,
        ) -> Result<Geometry, PassError> {
            if batch.is_none() {
                *batch = Some(self.allocate()?);
            }
            let len = self.pass.item_len();
            let range = k * len..(k + 1) * len;
            let bytes = frame.format.frame_bytes(frame.stride, frame.height).min(frame.data.len());
            let in_place = pinned.and_then(|p| p.0.address_of(&frame.data[..bytes]));
            let pass = &mut self.pass;
            let done = match (batch.as_mut().expect("allocated above"), in_place) {
                (DeviceBuffer::F32(slice), None) => pass.run(frame, &mut slice.slice_mut(range)),
                (DeviceBuffer::F16(slice), None) => pass.run(frame, &mut slice.slice_mut(range)),
                (DeviceBuffer::F32(slice), Some(at)) => {
                    pass.run_in_place(frame, at, &mut slice.slice_mut(range))
                }
                (DeviceBuffer::F16(slice), Some(at)) => {
                    pass.run_in_place(frame, at, &mut slice.slice_mut(range))
                }
            };
            let geometry = done?;
            if in_place.is_some() {
                self.finish()?;
            }
            Ok(geometry)
        }

        /// Waits for the batch's kernels, so the inference stage reads finished input.
        pub fn finish(&self) -> Result<(), PassError> {
            Ok(self.stream.synchronize().map_err(|e| driver_error("preprocessing on the GPU", e))?)
        }

        fn allocate(&self) -> Result<DeviceBuffer, GpuError> {
            let what = |e| driver_error("cudaMalloc for a batch of the model's input", e);
            Ok(match self.half {
                true => DeviceBuffer::F16(self.stream.alloc_zeros(self.batch_len).map_err(what)?),
                false => DeviceBuffer::F32(self.stream.alloc_zeros(self.batch_len).map_err(what)?),
            })
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub use disabled::{DeviceBuffer, GpuStage, PinnedFrame};

#[cfg(not(feature = "cuda"))]
mod disabled {
    use super::GpuSync;
    use crate::backend::DeviceBatch;
    use crate::frame::Frame;
    use crate::preprocess::fused::FusedPreprocess;
    use crate::preprocess::Geometry;
    use crate::stream::error::PassError;
    use crate::tensor::DataType;
    use crate::{Error, Result};

    /// Never made: this binary has no CUDA.
    pub enum GpuStage {}
    pub enum DeviceBuffer {}
    pub enum PinnedFrame {}
    #[derive(Clone)]
    pub enum Pinner {}

    impl Pinner {
        pub fn pin(&self, _buffer: &mut Vec<u8>) -> Option<PinnedFrame> {
            match *self {}
        }
    }

    impl DeviceBuffer {
        pub fn input<'a>(&self, _shape: &'a [usize]) -> DeviceBatch<'a> {
            match *self {}
        }
    }

    impl GpuStage {
        pub fn open(
            _fused: FusedPreprocess,
            _input_dtype: DataType,
            _input_shape: &[usize],
            _sync: GpuSync,
        ) -> Result<GpuStage> {
            Err(Error::BackendUnavailable {
                name: "cuda".into(),
                reason: "--preprocess gpu: CUDA is not compiled into this binary (build with --features \
                         cuda-11040, cuda-12020, cuda-12060 or cuda-13000, the CUDA of the target)"
                    .into(),
            })
        }

        pub fn is_mapped(&self) -> bool {
            match *self {}
        }

        pub fn pinner(&self) -> Option<Pinner> {
            match *self {}
        }

        pub fn fill(
            &mut self,
            _batch: &mut Option<DeviceBuffer>,
            _k: usize,
            _frame: &Frame,
            _pinned: Option<&PinnedFrame>,
        ) -> Result<Geometry, PassError> {
            match *self {}
        }

        pub fn finish(&self) -> Result<(), PassError> {
            match *self {}
        }
    }
}

/// Why `--preprocess gpu` gives these frames other values than `--preprocess cpu`: the kernel runs
/// the fused pass alone, sampling bilinearly, where the CPU path first downscales RGB24, BGR24
/// and GREY frames that shrink with an antialiasing filter (as PIL and torchvision do). None
/// where both run the same pass (YUYV and NV12 are sampled bilinearly on both; no shrink).
pub fn differs_from_cpu(plan: &crate::preprocess::plan::FramePlan, frames: &str) -> Option<String> {
    plan.downscales().then(|| {
        format!(
            "--preprocess gpu samples these {frames} frames bilinearly as they shrink into the input, where \
             --preprocess cpu antialiases them first, as PIL and torchvision do: a model's answers can differ. \
             Prefer --preprocess cpu for this source, or a capture size near the model's input (docs/gpu.md)"
        )
    })
}

/// Opens the GPU stage when asked for. The kernel runs the fused pass alone (`differs_from_cpu`).
pub fn open(
    on_gpu: bool,
    fused: &FusedPreprocess,
    session: &dyn Session,
    backend: &str,
    input: &crate::tensor::TensorSpec,
    input_shape: &[usize],
    sync: GpuSync,
) -> Result<Option<GpuStage>> {
    if !on_gpu {
        return Ok(None);
    }
    check_backend(session, backend)?;
    GpuStage::open(fused.clone(), input.dtype, input_shape, sync).map(Some)
}

/// The GPU stage against the CPU pass; needs an NVIDIA GPU (`benches/gpu-check.sh` runs it).
#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::{DeviceBuffer, GpuStage};
    use crate::frame::{Frame, PixelFormat};
    use crate::model::manifest::{Layout, PreprocessSpec, ResizeMode};
    use crate::preprocess::fused::FusedPreprocess;
    use crate::tensor::DataType;

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn a_batch_preprocessed_on_the_gpu_matches_the_cpu_pass_in_f32_and_f16() {
        let spec = PreprocessSpec { resize: ResizeMode::Letterbox, ..PreprocessSpec::imagenet() };
        let (width, height) = (640, 480);
        let fused = FusedPreprocess::new(&spec, 224, 224, Layout::Nchw, width, height).unwrap();
        let bytes = PixelFormat::Yuyv.frame_bytes(width * 2, height);
        let frames: Vec<Vec<u8>> = (0..2).map(|seed| crate::capture::pattern::noise(bytes, seed)).collect();
        let frame = |k: usize| Frame::new(PixelFormat::Yuyv, width, height, width * 2, &frames[k]).unwrap();
        let mut want = vec![0f32; 2 * fused.item_len()];
        for (k, item) in want.chunks_mut(fused.item_len()).enumerate() {
            fused.run(&frame(k), item).unwrap();
        }
        for dtype in [DataType::F32, DataType::F16] {
            let shape = [2, 3, 224, 224];
            let mut stage = GpuStage::open(fused.clone(), dtype, &shape, Default::default()).unwrap();
            let mut batch = None;
            for k in 0..2 {
                stage.fill(&mut batch, k, &frame(k), None).unwrap();
            }
            stage.finish().unwrap();
            let batch = batch.unwrap();
            assert_eq!(batch.input(&shape).half(), dtype == DataType::F16);
            let got: Vec<f32> = match &batch {
                DeviceBuffer::F32(slice) => slice.stream().clone_dtoh(slice).unwrap(),
                DeviceBuffer::F16(slice) => slice
                    .stream()
                    .clone_dtoh(slice)
                    .unwrap()
                    .into_iter()
                    .map(|b| half::f16::from_bits(b).to_f32())
                    .collect(),
            };
            let worst =
                got.iter().zip(&want).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0.0, f32::max);
            assert!(worst <= 1e-3, "{dtype}: max difference {worst} (mapped: {})", stage.is_mapped());
        }
    }
}
