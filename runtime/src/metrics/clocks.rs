//! CPU, GPU and memory-controller (EMC) clocks, and GPU load, from sysfs. Clocks are "locked" when
//! every governor's minimum equals its maximum (what `jetson_clocks` does), the state a benchmark wants.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::sysfs::{entries, read_trimmed, NumberFile};
use crate::limits;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    pub cur_mhz: f64,
    /// The governor's limits; `None` where only the current clock is known (tegrastats).
    pub min_mhz: Option<f64>,
    pub max_mhz: Option<f64>,
}

impl Clock {
    /// A clock whose governor is not known, as tegrastats prints it.
    pub fn current(cur_mhz: f64) -> Clock {
        Clock { cur_mhz, min_mhz: None, max_mhz: None }
    }

    /// Whether the governor pins it; `None` when its limits are not known.
    pub fn locked(&self) -> Option<bool> {
        Some(self.min_mhz? == self.max_mhz?)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuCore {
    pub core: usize,
    /// Jetson power modes switch cores off.
    pub online: bool,
    /// `None` for a core offline or without cpufreq (most virtual machines).
    pub clock: Option<Clock>,
    /// Busy percentage, where tegrastats gives it (sysfs does not).
    pub load_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gpu {
    /// The devfreq device, e.g. `17000000.ga10b`.
    pub device: String,
    pub clock: Option<Clock>,
    /// Busy percentage over the driver's last window.
    pub load_pct: Option<f64>,
    /// Each GPC's clock where tegrastats lists several (AGX Orin, Thor); `clock` is the first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpc_mhz: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clocks {
    pub cpus: Vec<CpuCore>,
    pub gpu: Option<Gpu>,
    /// Needs debugfs (root) on Jetson; `None` where unreadable.
    pub emc_mhz: Option<f64>,
    /// Where tegrastats gives it.
    pub emc_load_pct: Option<f64>,
}

/// Integrated-GPU devfreq names across Jetson generations (Nano, TX2, Xavier, Orin), besides
/// those with `gpu` in them.
const GPU_DEVFREQ: &[&str] = &["ga10b", "gv11b", "gp10b", "gm20b"];
/// EMC rate in Hz: JetPack 5/6 (BPMP) and JetPack 4.
const EMC_RATE: &[&str] = &["sys/kernel/debug/bpmp/debug/clk/emc/rate", "sys/kernel/debug/clk/emc/clk_rate"];

/// A clock's current, minimum and maximum files, in kHz (cpufreq) or Hz (devfreq).
struct ClockFiles {
    cur: NumberFile,
    min: NumberFile,
    max: NumberFile,
    /// To MHz.
    scale: f64,
}

impl ClockFiles {
    fn open(dir: &Path, [cur, min, max]: [&str; 3], scale: f64) -> ClockFiles {
        let f = |name: &str| NumberFile::new(&dir.join(name));
        ClockFiles { cur: f(cur), min: f(min), max: f(max), scale }
    }

    fn read(&self) -> Option<Clock> {
        let mhz = |f: &NumberFile| f.read().ok().and_then(|v| limits::MHZ.check("", v * self.scale).ok());
        Some(Clock {
            cur_mhz: mhz(&self.cur)?,
            min_mhz: Some(mhz(&self.min)?),
            max_mhz: Some(mhz(&self.max)?),
        })
    }
}

/// The clock files of a root, found once and kept open for sampling.
pub struct ClockReader {
    cpus: Vec<(usize, bool, ClockFiles)>,
    gpu: Option<(String, ClockFiles, Option<NumberFile>)>,
    emc: Option<NumberFile>,
}

impl ClockReader {
    pub fn open(root: &Path) -> ClockReader {
        let cpus = entries(&root.join("sys/devices/system/cpu"))
            .iter()
            .filter_map(|dir| {
                let core: usize = dir.file_name()?.to_str()?.strip_prefix("cpu")?.parse().ok()?;
                let online = read_trimmed(&dir.join("online")).is_none_or(|v| v != "0");
                let names = ["scaling_cur_freq", "scaling_min_freq", "scaling_max_freq"];
                Some((core, online, ClockFiles::open(&dir.join("cpufreq"), names, 1e-3)))
            })
            .collect();
        let emc = EMC_RATE.iter().map(|p| root.join(p)).find(|p| p.exists()).map(|p| NumberFile::new(&p));
        ClockReader { cpus, gpu: gpu(root), emc }
    }

    pub fn read(&self) -> Clocks {
        Clocks {
            cpus: self
                .cpus
                .iter()
                .map(|(core, online, files)| CpuCore {
                    core: *core,
                    online: *online,
                    clock: if *online { files.read() } else { None },
                    load_pct: None,
                })
                .collect(),
            gpu: self.gpu.as_ref().map(|(device, files, load)| Gpu {
                device: device.clone(),
                clock: files.read(),
                // `load` is per mille.
                load_pct: load
                    .as_ref()
                    .and_then(|l| l.read().ok())
                    .and_then(|permille| limits::PERCENT.check("", permille / 10.0).ok()),
                gpc_mhz: Vec::new(),
            }),
            emc_mhz: self
                .emc
                .as_ref()
                .and_then(|f| f.read().ok())
                .and_then(|hz| limits::MHZ.check("", hz / 1e6).ok()),
            emc_load_pct: None,
        }
    }
}

impl Clocks {
    pub fn read(root: &Path) -> Clocks {
        ClockReader::open(root).read()
    }

    /// Whether every clock with a governor is pinned; `None` when no governor can be read.
    pub fn locked(&self) -> Option<bool> {
        let gpu = self.gpu.as_ref().and_then(|g| g.clock.as_ref());
        let mut governed =
            self.cpus.iter().filter_map(|c| c.clock.as_ref()).chain(gpu).filter_map(Clock::locked).peekable();
        governed.peek()?;
        Some(governed.all(|locked| locked))
    }
}

/// The GPU's devfreq folder, its clock files and its load file: on the GPU's platform device
/// (devfreq's `device` link) or, on JetPack 4 and 5, also at `/sys/devices/gpu.0/load`.
fn gpu(root: &Path) -> Option<(String, ClockFiles, Option<NumberFile>)> {
    let dir: PathBuf = entries(&root.join("sys/class/devfreq")).into_iter().find(|d| {
        let name = d.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        name.contains("gpu") || GPU_DEVFREQ.iter().any(|g| name.ends_with(&format!(".{g}")))
    })?;
    let files = ClockFiles::open(&dir, ["cur_freq", "min_freq", "max_freq"], 1e-6);
    let load = [dir.join("device/load"), root.join("sys/devices/gpu.0/load")]
        .into_iter()
        .find(|p| p.exists())
        .map(|p| NumberFile::new(&p));
    Some((dir.file_name()?.to_string_lossy().into_owned(), files, load))
}
