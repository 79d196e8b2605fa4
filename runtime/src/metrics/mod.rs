//! Measurements: latency statistics, process and system memory, power, clocks, temperatures, and
//! where a report comes from. Readers of sysfs and procfs take a root folder (see `sysfs`).

pub mod clocks;
pub mod cpu_time;
pub mod deadline;
pub mod error;
pub mod host;
pub mod memory;
pub mod periodic;
pub mod power;
pub mod program;
pub mod provenance;
pub mod stats;
pub mod sysfs;
pub mod system_memory;
pub mod tegrastats;
pub mod telemetry;
pub mod thermal;
