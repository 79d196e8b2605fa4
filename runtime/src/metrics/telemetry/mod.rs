//! A snapshot of what the board is doing besides inference: process and system memory, clocks, GPU
//! load and temperatures. Read from sysfs and procfs under a root; where sysfs shows neither thermal
//! zones nor a GPU but `tegrastats` is on the PATH, its lines fill in what sysfs leaves empty:
//! temperatures, memory, GPU load and clock, per-core CPU loads and clocks, the EMC clock.

pub(crate) mod run;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::clocks::{Clock, ClockReader, Clocks, CpuCore, Gpu};
use super::system_memory::SystemMemory;
use super::thermal::{Zone, ZoneReader};
use super::{memory, tegrastats};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// This process's resident set now.
    pub rss_bytes: Option<u64>,
    pub memory: Option<SystemMemory>,
    pub clocks: Clocks,
    pub zones: Vec<Zone>,
}

/// Reads snapshots from one root: its files found once and kept open, with tegrastats running
/// when it is the fallback.
pub struct Telemetry {
    root: PathBuf,
    clocks: ClockReader,
    zones: ZoneReader,
    tegrastats: Option<tegrastats::Stream>,
}

/// Where clocks, temperatures and loads are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TelemetrySource {
    Sysfs,
    /// tegrastats' output, where sysfs cannot be read.
    Tegrastats,
}

impl Telemetry {
    pub fn open(root: &Path) -> Telemetry {
        let (clocks, zones) = (ClockReader::open(root), ZoneReader::open(root));
        let sysfs_blind = zones.read().is_empty() && clocks.read().gpu.is_none();
        let tegrastats = (sysfs_blind && tegrastats::on_path())
            .then(|| tegrastats::Stream::start(Duration::from_millis(100)).ok())
            .flatten();
        Telemetry { root: root.to_owned(), clocks, zones, tegrastats }
    }

    /// Tegrastats when it fills in for sysfs, else sysfs.
    pub fn source(&self) -> TelemetrySource {
        if self.tegrastats.is_some() {
            TelemetrySource::Tegrastats
        } else {
            TelemetrySource::Sysfs
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            rss_bytes: memory::rss_bytes(),
            memory: SystemMemory::read(&self.root),
            clocks: self.clocks.read(),
            zones: self.zones.read(),
        };
        if let Some(line) = self.tegrastats.as_ref().and_then(|s| s.latest()) {
            fill_from_tegrastats(&mut snapshot, &line);
        }
        snapshot
    }
}

/// Fills what sysfs left empty from a tegrastats line.
fn fill_from_tegrastats(snapshot: &mut Snapshot, line: &tegrastats::Line) {
    if snapshot.zones.is_empty() {
        snapshot.zones = line
            .temperatures_c
            .iter()
            .map(|(name, celsius)| Zone { name: name.clone(), celsius: *celsius, trip_c: None })
            .collect();
    }
    let clocks = &mut snapshot.clocks;
    if clocks.gpu.is_none() && (line.gpu_load_pct.is_some() || line.gpu_mhz().is_some()) {
        clocks.gpu = Some(Gpu {
            device: "tegrastats".into(),
            clock: line.gpu_mhz().map(Clock::current),
            load_pct: line.gpu_load_pct,
            gpc_mhz: line.gpc_mhz.clone(),
        });
    }
    if clocks.cpus.iter().all(|c| c.clock.is_none()) && !line.cpu_mhz.is_empty() {
        clocks.cpus = (line.cpu_mhz.iter().zip(&line.cpu_load_pct).enumerate())
            .map(|(core, (mhz, load))| CpuCore {
                core,
                // tegrastats prints `off` for a core that is off, which reads as neither.
                online: mhz.is_some() || load.is_some(),
                clock: mhz.map(Clock::current),
                load_pct: *load,
            })
            .collect();
    }
    if clocks.emc_mhz.is_none() {
        (clocks.emc_mhz, clocks.emc_load_pct) = (line.emc_mhz, line.emc_load_pct);
    }
    if snapshot.memory.is_none() {
        if let (Some(used), Some(total)) = (line.ram_used_mb, line.ram_total_mb) {
            let mb = 1 << 20;
            let swap_total = line.swap_total_mb.unwrap_or(0) * mb;
            snapshot.memory = Some(SystemMemory {
                total_bytes: total * mb,
                available_bytes: (total - used.min(total)) * mb,
                used_bytes: used * mb,
                swap_total_bytes: swap_total,
                swap_used_bytes: line.swap_used_mb.unwrap_or(0) * mb,
                nvmap_used_bytes: None,
                gpu_visible_bytes: None,
            });
        }
    }
}
