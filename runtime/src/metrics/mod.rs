//! Measurements: latency statistics, process and system memory, power, clocks, temperatures, and
//! where a report comes from. Readers of sysfs and procfs take a root folder (see `sysfs`).

pub mod clocks;
pub(crate) mod cpu_time;
pub(crate) mod deadline;
pub mod error;
pub(crate) mod host;
pub(crate) mod memory;
pub mod periodic;
pub mod power;
pub(crate) mod program;
pub(crate) mod provenance;
pub(crate) mod stats;
pub(crate) mod sysfs;
pub(crate) mod system_memory;
pub mod tegrastats;
pub mod telemetry;
pub mod thermal;
