//! Page-locked host memory for frames on their way to the GPU. Each frame is copied into it by the
//! CPU, from the capture's own buffer (which CUDA cannot read: V4L2's are not page-locked). On a
//! Jetson (an integrated GPU: one memory for CPU and GPU) it is mapped into the GPU's address
//! space and kernels read the frame where the CPU wrote it: no copy to device memory. On a
//! discrete GPU it is pinned, so the copy to the device runs asynchronously at full bandwidth,
//! without the driver's bounce buffer.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice};

use super::{driver_error, GpuError};

pub struct FrameUpload {
    stream: Arc<CudaStream>,
    mapped: bool,
    staging: Option<PinnedHostSlice<u8>>,
    /// Where kernels read the frame: the staging memory's mapped address, or
    /// `device`'s.
    address: u64,
    device: Option<CudaSlice<u8>>,
}

impl FrameUpload {
    pub fn new(stream: Arc<CudaStream>) -> Result<FrameUpload, GpuError> {
        let context = stream.context();
        let attribute = |a| context.attribute(a).map_err(|e| driver_error("reading the GPU's attributes", e));
        let mapped = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? == 1
            && attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? == 1;
        Ok(FrameUpload { stream, mapped, staging: None, address: 0, device: None })
    }

    /// Whether kernels read frames from mapped host memory (integrated GPUs).
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// Puts `frame` where this stream's kernels read it and returns that device address, valid
    /// until the next call.
    pub fn upload(&mut self, frame: &[u8]) -> Result<u64, GpuError> {
        let held = self.staging.as_ref().map(|s| s.len());
        for step in steps(held, frame.len(), self.mapped) {
            match step {
                Step::Synchronize => {
                    self.stream.synchronize().map_err(|e| driver_error("waiting for the last frame", e))?
                }
                Step::Reallocate => self.allocate(frame.len())?,
                Step::Write => {
                    let staging = self.staging.as_mut().expect("allocated before written");
                    // Waits for the last copy out of the staging memory, if any is still running.
                    let host =
                        staging.as_mut_slice().map_err(|e| driver_error("waiting for the last upload", e))?;
                    host.copy_from_slice(frame);
                }
                Step::CopyToDevice => {
                    let (staging, device) = (self.staging.as_ref(), self.device.as_mut());
                    if let (Some(staging), Some(device)) = (staging, device) {
                        self.stream
                            .memcpy_htod(staging, device)
                            .map_err(|e| driver_error("copying the frame to the GPU", e))?;
                    }
                }
            }
        }
        Ok(self.address)
    }

    fn allocate(&mut self, bytes: usize) -> Result<(), GpuError> {
        let context = self.stream.context();
        let flags = match self.mapped {
            true => sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            false => sys::CU_MEMHOSTALLOC_PORTABLE,
        };
        let what = format!("allocating {bytes} bytes of page-locked memory for frames");
        // SAFETY: the memory is written in full by `upload` before any read.
        let staging = unsafe { context.alloc_pinned_with_flags::<u8>(bytes, flags) }
            .map_err(|e| driver_error(&what, e))?;
        if self.mapped {
            let host = staging.as_ptr().map_err(|e| driver_error(&what, e))?;
            let mut address: sys::CUdeviceptr = 0;
            // SAFETY: `host` is the start of memory allocated with CU_MEMHOSTALLOC_DEVICEMAP.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut address, host as *mut _, 0) }
                .result()
                .map_err(|e| driver_error("mapping the frame memory for the GPU", e))?;
            self.address = address;
            self.device = None;
        } else {
            let device = self
                .stream
                .alloc_zeros::<u8>(bytes)
                .map_err(|e| driver_error("cudaMalloc for the frame", e))?;
            let (address, _) = device.device_ptr(&self.stream);
            self.address = address;
            self.device = Some(device);
        }
        self.staging = Some(staging);
        Ok(())
    }
}

/// Host memory a frame is captured into, registered with the driver and mapped into an
/// integrated GPU's address space: kernels read the frame where the capture wrote it, and
/// `FrameUpload`'s copy is not needed. Unregistered when dropped, before the memory is freed.
pub struct Registered {
    context: Arc<CudaContext>,
    host: usize,
    bytes: usize,
    address: u64,
}

impl Registered {
    /// The `capacity()` of `buffer` registered and mapped; None where the GPU does not read host
    /// memory in place (a discrete GPU, a driver without host registration) or the driver
    /// refuses this memory (it shares a page with memory registered already).
    pub fn new(context: &Arc<CudaContext>, buffer: &mut Vec<u8>) -> Option<Registered> {
        if !Registered::supported(context) || buffer.capacity() == 0 || context.bind_to_thread().is_err() {
            return None;
        }
        let (host, bytes) = (buffer.as_mut_ptr(), buffer.capacity());
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        // SAFETY: `bytes` bytes at `host` are the buffer's allocation, which `FrameSlot` keeps (and
        // does not reallocate) while this registration lives, and frees only after it.
        unsafe { sys::cuMemHostRegister_v2(host.cast(), bytes, flags) }.result().ok()?;
        // From here on `Drop` unregisters, also when the mapping below fails.
        let mut registered = Registered { context: context.clone(), host: host as usize, bytes, address: 0 };
        // SAFETY: `host` starts the memory just registered with CU_MEMHOSTREGISTER_DEVICEMAP.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut registered.address, host.cast(), 0) }
            .result()
            .ok()?;
        Some(registered)
    }

    /// Whether the GPU reads registered host memory in place: an integrated GPU that maps host
    /// memory, with a driver that registers it.
    pub fn supported(context: &Arc<CudaContext>) -> bool {
        let attribute = |a| context.attribute(a).unwrap_or(0);
        attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED) == 1
            && attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) == 1
            && attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED) == 1
    }

    /// Where kernels read `data`, when it lies in this memory.
    pub fn address_of(&self, data: &[u8]) -> Option<u64> {
        let start = data.as_ptr() as usize;
        let inside = start >= self.host && start + data.len() <= self.host + self.bytes;
        inside.then(|| self.address + (start - self.host) as u64)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.context.bind_to_thread();
        // SAFETY: registered in `new`, unregistered once, while the memory is still allocated.
        let _ = unsafe { sys::cuMemHostUnregister(self.host as *mut _) };
    }
}

/// What an upload does, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Waits for the stream: its kernels and copies of the last frame are done with the memory.
    Synchronize,
    /// Frees the staging (and device) memory and allocates it at the new frame's size.
    Reallocate,
    /// Copies the frame into the staging memory.
    Write,
    /// Copies the staging memory to the device (discrete GPUs).
    CopyToDevice,
}

/// The steps of uploading a frame of `bytes` when `held` bytes of staging exist. Memory a kernel
/// may still read is neither freed (a frame of another size) nor overwritten (mapped) before
/// the stream is waited for.
fn steps(held: Option<usize>, bytes: usize, mapped: bool) -> Vec<Step> {
    let resize = held != Some(bytes);
    let mut steps = Vec::new();
    if resize && held.is_some() || !resize && mapped {
        steps.push(Step::Synchronize);
    }
    if resize {
        steps.push(Step::Reallocate);
    }
    steps.push(Step::Write);
    if !mapped {
        steps.push(Step::CopyToDevice);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::{steps, Step::*};

    #[test]
    fn memory_a_kernel_may_read_is_waited_for_before_it_is_freed_or_overwritten() {
        // A new size frees the old buffers: on a Jetson a kernel may still read the mapped frame,
        // on a desktop GPU a copy may still read the pinned one.
        for mapped in [true, false] {
            let changed = steps(Some(640 * 480 * 2), 1280 * 720 * 2, mapped);
            assert_eq!(changed[..2], [Synchronize, Reallocate], "mapped {mapped}");
        }
        // The same size: mapped memory is overwritten only after the last frame's kernels; pinned
        // memory waits for its own copy (`as_mut_slice`), not for the whole stream.
        assert_eq!(steps(Some(100), 100, true), [Synchronize, Write]);
        assert_eq!(steps(Some(100), 100, false), [Write, CopyToDevice]);
        // The first frame: nothing to wait for.
        assert_eq!(steps(None, 100, true), [Reallocate, Write]);
        assert_eq!(steps(None, 100, false), [Reallocate, Write, CopyToDevice]);
    }
}
