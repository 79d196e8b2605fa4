//! Opening the GPU: libcuda present, a driver at least as new as the CUDA API this binary is built
//! for (an older one would be missing symbols cudarc panics on), then device `ordinal`.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};

use super::{driver_error, version_text, GpuError, BUILT_FOR};
use crate::choice::Choice;
use crate::gpu_sync::GpuSync;

/// Whether a library cudarc would load can be opened, by the names cudarc tries.
pub(crate) fn check_library(name: &str, library: &str, fix: &str) -> Result<(), GpuError> {
    let candidates = cudarc::get_lib_name_candidates(name);
    // SAFETY: opening runs the library's initialisers; these are NVIDIA's own libraries.
    if candidates.iter().any(|c| unsafe { libloading::Library::new(c) }.is_ok()) {
        return Ok(());
    }
    // cudarc also tries Windows-style spellings; name the Linux ones.
    let is_linux = |c: &&String| c.starts_with(&format!("lib{name}.so"));
    let mut linux: Vec<&str> = Vec::new();
    for candidate in candidates.iter().filter(is_linux) {
        if !linux.contains(&candidate.as_str()) {
            linux.push(candidate);
        }
    }
    let others = candidates.iter().filter(|c| !is_linux(c)).count();
    let tried = format!("{} and {others} other spellings", linux.join(", "));
    Err(GpuError::MissingLibrary { library: library.into(), tried, fix: fix.into() })
}

/// The driver's CUDA version, `12060` for 12.6.
pub fn driver_version() -> Result<i32, GpuError> {
    check_library(
        "cuda",
        "libcuda (the NVIDIA driver)",
        "install the NVIDIA driver (JetPack has it) or run on a machine with an NVIDIA GPU",
    )?;
    let mut version = 0;
    // SAFETY: cuDriverGetVersion exists in every driver and only writes `version`.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| driver_error("cuDriverGetVersion", e))?;
    Ok(version)
}

/// The driver's CUDA version, when it is at least the one this binary is built for.
pub fn compatible_driver() -> Result<i32, GpuError> {
    check_driver(driver_version()?)
}

/// `driver`, when this binary's CUDA API runs on it. CUDA 10 (JetPack 4) has no feature to
/// rebuild with, so it is told apart from a driver one update away.
fn check_driver(driver: i32) -> Result<i32, GpuError> {
    if driver < 11000 {
        return Err(GpuError::JetPack4(version_text(driver)));
    }
    if driver < BUILT_FOR {
        return Err(GpuError::DriverTooOld {
            driver: version_text(driver),
            built: version_text(BUILT_FOR),
            built_code: BUILT_FOR,
        });
    }
    Ok(driver)
}

/// Device `ordinal`'s primary context, after every check, its waits scheduled as `sync` says.
pub fn open(ordinal: usize, sync: GpuSync) -> Result<Arc<CudaContext>, GpuError> {
    compatible_driver()?;
    schedule(ordinal, sync)?;
    CudaContext::new(ordinal).map_err(|e| match e.0 {
        sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => GpuError::NoDevice(String::new()),
        sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE => GpuError::NoDevice(format!(" numbered {ordinal}")),
        _ => driver_error(&format!("opening GPU {ordinal}"), e),
    })
}

/// Sets how threads wait for device `ordinal`'s primary context, which the CUDA runtime, TensorRT
/// and tract share: before it is first used, or (the `_v2` call) while it is in use.
pub fn schedule(ordinal: usize, sync: GpuSync) -> Result<(), GpuError> {
    let no_device = |ordinal: usize| GpuError::NoDevice(format!(" numbered {ordinal}"));
    let index = i32::try_from(ordinal).map_err(|_| no_device(ordinal))?;
    let mut device: sys::CUdevice = 0;
    // SAFETY: cuInit and cuDeviceGet write only what they are given; the flags are a scheduling
    // flag the driver defines, applied to this device's primary context.
    unsafe {
        sys::cuInit(0).result().map_err(|e| match e.0 {
            sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => GpuError::NoDevice(String::new()),
            _ => driver_error("cuInit", e),
        })?;
        sys::cuDeviceGet(&mut device, index).result().map_err(|_| no_device(ordinal))?;
        sys::cuDevicePrimaryCtxSetFlags_v2(device, sync.flag())
            .result()
            .map_err(|e| driver_error(&format!("--gpu-sync {}", sync.name()), e))
    }
}

/// GPU `ordinal` as `info` names it: `NVIDIA H200 (sm 9.0), driver CUDA 12.8`.
pub fn describe(ordinal: usize) -> Result<String, GpuError> {
    let driver = compatible_driver()?;
    let context = open(ordinal, GpuSync::default())?;
    let name = context.name().map_err(|e| driver_error("reading the GPU's name", e))?;
    let (major, minor) =
        context.compute_capability().map_err(|e| driver_error("reading the compute capability", e))?;
    Ok(format!("{name} (sm {major}.{minor}), driver CUDA {}", version_text(driver)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_the_error_names_libcuda_the_names_tried_and_the_fix() {
        let error = match open(0, GpuSync::default()) {
            Ok(_) => return eprintln!("skipped: this machine has an NVIDIA driver and GPU"),
            Err(e) => e,
        };
        let message = error.to_string();
        match error {
            GpuError::MissingLibrary { .. } => {
                assert!(message.starts_with("libcuda (the NVIDIA driver) not found"), "{message}");
                assert!(message.contains("libcuda.so.1") && message.contains("LD_LIBRARY_PATH"), "{message}");
                assert!(message.contains("install the NVIDIA driver"), "{message}");
            }
            // A driver without a GPU (a container with the library mounted) is also no GPU.
            other => {
                assert!(matches!(other, GpuError::NoDevice(_) | GpuError::DriverTooOld { .. }), "{message}")
            }
        }
    }

    #[test]
    fn jetpack_4s_cuda_10_is_refused_with_the_backends_it_can_use() {
        let message = check_driver(10020).unwrap_err().to_string();
        assert!(message.contains("supports CUDA 10.2 (JetPack 4"), "{message}");
        assert!(
            message.contains("JetPack 5 or later") && message.contains("--backend cpu or ort"),
            "{message}"
        );
        assert!(!message.contains("rebuild"), "{message}");
        // Every build's CUDA is 11.4 or later: 11.3 is one driver update away.
        assert!(matches!(check_driver(11030), Err(GpuError::DriverTooOld { .. })));
        assert_eq!(check_driver(13000).unwrap(), 13000);
    }

    #[test]
    fn an_old_driver_is_refused_with_both_versions_and_the_fix() {
        let message = GpuError::DriverTooOld {
            driver: version_text(11040),
            built: version_text(12060),
            built_code: 12060,
        }
        .to_string();
        assert!(message
            .contains("supports CUDA 11.4 but this edgert is built for CUDA 12.6 (feature cuda-12060)"));
        assert!(message.contains("update the driver"), "{message}");
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn the_gpu_opens() {
        let context = open(0, GpuSync::default()).unwrap();
        let (major, minor) = context.compute_capability().unwrap();
        eprintln!(
            "{} (sm {major}.{minor}), driver CUDA {}",
            context.name().unwrap(),
            version_text(driver_version().unwrap())
        );
    }
}
