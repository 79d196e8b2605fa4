//! How a CPU thread waits for the GPU (`--gpu-sync`). CUDA's default spins while a process has
//! fewer contexts than cores: on a 4 to 6 core Jetson that takes a whole core from capture and
//! preprocessing for every wait, and spends energy on it. Blocking sleeps until the GPU signals,
//! at the cost of a wake-up; yielding spins but gives the core to any thread that wants it.

use crate::choice::Choice;

/// The scheduling of the CUDA context edgert's GPU work runs in (the device's primary context,
/// which the CUDA runtime, TensorRT and cudarc share).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuSync {
    Spin,
    #[default]
    Block,
    Yield,
}

impl Choice for GpuSync {
    const ALL: &'static [Self] = &[GpuSync::Spin, GpuSync::Block, GpuSync::Yield];

    fn name(self) -> &'static str {
        match self {
            GpuSync::Spin => "spin",
            GpuSync::Block => "block",
            GpuSync::Yield => "yield",
        }
    }
}

impl GpuSync {
    /// The scheduling flag, the same number in the driver API (`CU_CTX_SCHED_*`) and the runtime
    /// API (`cudaDeviceSchedule*`).
    pub fn flag(self) -> u32 {
        match self {
            GpuSync::Spin => 1,
            GpuSync::Yield => 2,
            GpuSync::Block => 4,
        }
    }
}
