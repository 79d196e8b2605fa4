//! Measurements: latency statistics, process memory, and a description of the host.

pub mod host;
pub mod memory;
pub mod power;
pub mod stats;
