//! System memory from `/proc/meminfo`. On a Jetson the CPU and GPU share DRAM, so this is also the
//! GPU's memory; `NvMapMemUsed` is what the GPU driver (nvmap) holds of it.

use std::path::Path;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemMemory {
    pub total_bytes: u64,
    pub available_bytes: u64,
    /// Total less available: what the page cache cannot give back.
    pub used_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_used_bytes: u64,
    /// Jetson only: memory allocated through nvmap (GPU buffers, camera and codec surfaces).
    pub nvmap_used_bytes: Option<u64>,
    /// Jetson only (where nvmap exists): what the integrated GPU can address, which on unified
    /// memory is all of system memory, shared with the CPU (`cudaMemGetInfo` reports the same).
    pub gpu_visible_bytes: Option<u64>,
}

impl SystemMemory {
    /// Reads `proc/meminfo` under `root`; `None` where it is missing or lacks the basic fields.
    pub fn read(root: &Path) -> Option<SystemMemory> {
        parse(&crate::infile::read_to_string(&root.join("proc/meminfo"), crate::infile::SENSOR).ok()?)
    }
}

fn parse(meminfo: &str) -> Option<SystemMemory> {
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.split(':').next() == Some(name))?;
        let kib: u64 = line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    };
    let total_bytes = field("MemTotal")?;
    let available_bytes = field("MemAvailable")?;
    let swap_total_bytes = field("SwapTotal").unwrap_or(0);
    Some(SystemMemory {
        total_bytes,
        available_bytes,
        used_bytes: total_bytes.saturating_sub(available_bytes),
        swap_total_bytes,
        swap_used_bytes: swap_total_bytes.saturating_sub(field("SwapFree").unwrap_or(swap_total_bytes)),
        nvmap_used_bytes: field("NvMapMemUsed"),
        gpu_visible_bytes: field("NvMapMemUsed").map(|_| total_bytes),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_in_kib_and_nvmap_when_the_kernel_has_it() {
        let text = "MemTotal:        7620000 kB\nMemFree:  100 kB\nMemAvailable:    5000000 kB\n\
                    SwapTotal:       3810000 kB\nSwapFree:        3800000 kB\nNvMapMemUsed:     123456 kB\n";
        let m = super::parse(text).unwrap();
        assert_eq!(m.used_bytes, 2_620_000 * 1024);
        assert_eq!(m.swap_used_bytes, 10_000 * 1024);
        assert_eq!(m.nvmap_used_bytes, Some(123_456 * 1024));
        assert_eq!(m.gpu_visible_bytes, Some(7_620_000 * 1024), "unified memory: all of it");
        let desktop = super::parse("MemTotal: 100 kB\nMemAvailable: 40 kB\n").unwrap();
        assert_eq!(desktop.gpu_visible_bytes, None);
        assert_eq!(
            (desktop.used_bytes, desktop.swap_used_bytes, desktop.nvmap_used_bytes),
            (60 * 1024, 0, None)
        );
        assert_eq!(super::parse("MemFree: 1 kB\n"), None);
    }
}
