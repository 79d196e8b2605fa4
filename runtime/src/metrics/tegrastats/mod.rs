//! The `tegrastats` fallback: where sysfs cannot be read (a container, a locked-down image) but
//! `tegrastats` is on the PATH, its lines give power, RAM, GPU load and temperatures. The format
//! changes between JetPack releases, so fields are found by name, never by position.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::limits;
use crate::metrics::error::SensorError;

/// One parsed line. Power rails keep the line's order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Line {
    pub ram_used_mb: Option<u64>,
    pub ram_total_mb: Option<u64>,
    pub swap_used_mb: Option<u64>,
    pub swap_total_mb: Option<u64>,
    pub gpu_load_pct: Option<f64>,
    /// Every GPC's clock as printed (one before AGX Orin); `gpu_mhz` is the first.
    pub gpc_mhz: Vec<f64>,
    /// Per core: `None` when the core is off.
    pub cpu_mhz: Vec<Option<f64>>,
    pub cpu_load_pct: Vec<Option<f64>>,
    pub emc_load_pct: Option<f64>,
    pub emc_mhz: Option<f64>,
    pub temperatures_c: BTreeMap<String, f64>,
    /// Rail name and its current power in milliwatts.
    pub rails_mw: Vec<(String, f64)>,
}

/// `2338/7620MB` → (2338, 7620).
fn used_of(token: &str) -> Option<(u64, u64)> {
    let (used, total) = token.trim_end_matches("MB").split_once('/')?;
    Some((used.parse().ok()?, total.parse().ok()?))
}

/// A load and its clocks: `0%@921`, `0%@[305]`, `45%@[1300,1300]` (one per GPC), `12%` → (load,
/// MHz). An unreadable clock makes the whole token unreadable, not a shorter list.
fn load_at(token: &str) -> Option<(f64, Vec<f64>)> {
    let (load, clocks) = match token.split_once('@') {
        Some((l, f)) => (l, Some(f.trim_matches(|c| c == '[' || c == ']'))),
        None => (token, None),
    };
    let load = limits::PERCENT.check("", load.strip_suffix('%')?.parse().ok()?).ok()?;
    let mhz = clocks.map_or(Some(Vec::new()), |list| {
        list.split(',').map(|f| limits::MHZ.check("", f.parse().ok()?).ok()).collect()
    })?;
    Some((load, mhz))
}

/// The cores of `[3%@102,2%@102,off]` (JetPack 4 to 7) or of `[3%,2%,off]@1420` (the older form
/// with one clock for all): per core, its load and clock, `None` when off or unreadable.
fn cores(list: &str, shared_mhz: Option<f64>) -> Vec<(Option<f64>, Option<f64>)> {
    list.split(',')
        .map(|core| match load_at(core) {
            Some((load, mhz)) => (Some(load), mhz.first().copied().or(shared_mhz)),
            None => (None, None),
        })
        .collect()
}

/// A rail's reading, current first: `4977mW/4977mW` (JetPack 5/6: current/average), `1191/1191`
/// (JetPack 4, no unit), `5139mW/5139mW/5139mW` (JetPack 7: current/average/max), or `4977mW`.
/// A lone number without a unit is not a rail (`APE 150` is a clock).
fn milliwatts(token: &str) -> Option<f64> {
    let values: Vec<&str> = token.split('/').collect();
    if values.len() > 3 || (values.len() == 1 && !token.ends_with("mW")) {
        return None;
    }
    let number = |s: &str| {
        let mw = s.strip_suffix("mW").unwrap_or(s).parse::<f64>().ok()?;
        limits::WATTS.check("", mw / 1e3).ok().map(|_| mw)
    };
    let mut readings = values.into_iter().map(number);
    let current = readings.next()??;
    readings.all(|r| r.is_some()).then_some(current)
}

/// Rails the sensor lists but nothing is wired to, as sysfs's `NC` channels.
const UNCONNECTED_RAIL: &str = "NC";

fn is_rail_name(name: &str) -> bool {
    name != UNCONNECTED_RAIL
        && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `gpu@44.75C` or `cpu@52.968C/52.968C` (JetPack 7: current/average) → ("gpu", 44.75); `-256`
/// readings (no sensor) are dropped.
fn temperature(token: &str) -> Option<(String, f64)> {
    let (name, values) = token.split_once('@')?;
    let mut readings = values.split('/').map(|v| v.strip_suffix('C')?.parse::<f64>().ok());
    let celsius = readings.next()??;
    if values.split('/').count() > 2 || !readings.all(|r| r.is_some()) {
        return None;
    }
    let real = celsius > -255.0 && limits::CELSIUS.check("", celsius).is_ok();
    (real && !name.is_empty()).then(|| (name.to_string(), celsius))
}

pub fn parse(text: &str) -> Line {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut line = Line::default();
    let mut i = 0;
    while i < tokens.len() {
        let (name, next) = (tokens[i], tokens.get(i + 1).copied().unwrap_or(""));
        let mut consumed = true;
        let rail_mw = if is_rail_name(name) { milliwatts(next) } else { None };
        match (name, rail_mw) {
            ("RAM", _) => (line.ram_used_mb, line.ram_total_mb) = used_of(next).unzip(),
            ("SWAP", _) => (line.swap_used_mb, line.swap_total_mb) = used_of(next).unzip(),
            ("GR3D_FREQ", _) => {
                let (load, gpcs) = load_at(next).unzip();
                (line.gpu_load_pct, line.gpc_mhz) = (load, gpcs.unwrap_or_default());
            }
            ("EMC_FREQ", _) => {
                let (load, mhz) = load_at(next).unzip();
                (line.emc_load_pct, line.emc_mhz) = (load, mhz.and_then(|m| m.first().copied()));
            }
            ("CPU", _) if next.starts_with('[') => {
                let (list, shared) = next.trim_start_matches('[').split_once(']').unwrap_or((next, ""));
                let shared_mhz =
                    shared.strip_prefix('@').and_then(|f| limits::MHZ.check("", f.parse().ok()?).ok());
                (line.cpu_load_pct, line.cpu_mhz) = cores(list, shared_mhz).into_iter().unzip();
            }
            (UNCONNECTED_RAIL, _) if milliwatts(next).is_some() => {}
            (_, Some(mw)) => line.rails_mw.push((name.to_string(), mw)),
            _ => {
                consumed = false;
                if let Some((zone, celsius)) = temperature(name) {
                    line.temperatures_c.insert(zone, celsius);
                }
            }
        }
        i += if consumed { 2 } else { 1 };
    }
    line
}

/// Module-input rails; without one the total is the sum of rails, as with sysfs.
const TOTAL_RAILS: &[&str] = &["VDD_IN", "POM_5V_IN"];

impl Line {
    /// The GPU's clock: the first GPC's where there are several (AGX Orin, Thor).
    pub fn gpu_mhz(&self) -> Option<f64> {
        self.gpc_mhz.first().copied()
    }

    /// The total's rail name (`None`: sum of rails) and watts.
    pub fn total_w(&self) -> (Option<&'static str>, Option<f64>) {
        match TOTAL_RAILS.iter().find(|t| self.rails_mw.iter().any(|r| r.0 == **t)) {
            Some(t) => (Some(t), self.rails_mw.iter().find(|r| r.0 == *t).map(|r| r.1 / 1e3)),
            None if self.rails_mw.is_empty() => (None, None),
            None => (None, Some(self.rails_mw.iter().map(|r| r.1).sum::<f64>() / 1e3)),
        }
    }
}

/// A running `tegrastats --interval N` whose latest line is kept; killed on drop.
pub struct Stream {
    child: Child,
    latest: Arc<Mutex<Option<Line>>>,
}

impl Stream {
    /// Starts tegrastats and waits for its first line (at most `interval` + 2 s).
    pub fn start(interval: Duration) -> Result<Stream, SensorError> {
        let mut child = Command::new("tegrastats")
            .arg("--interval")
            .arg(interval.as_millis().max(1).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| SensorError::Tegrastats(format!("cannot start: {e}")))?;
        let stdout = child.stdout.take().ok_or(SensorError::Tegrastats("no output".into()))?;
        let latest = Arc::new(Mutex::new(None));
        let shared = latest.clone();
        std::thread::Builder::new()
            .name("edgert-tegrastats".into())
            .spawn(move || {
                for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                    *shared.lock().unwrap_or_else(|e| e.into_inner()) = Some(parse(&text));
                }
            })
            .map_err(|e| SensorError::Tegrastats(e.to_string()))?;
        let stream = Stream { child, latest };
        let deadline = Instant::now() + interval + Duration::from_secs(2);
        while stream.latest().is_none() {
            if Instant::now() > deadline {
                return Err(SensorError::Tegrastats("printed no line".into()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(stream)
    }

    pub fn latest(&self) -> Option<Line> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a `tegrastats` executable is on the PATH.
pub fn on_path() -> bool {
    crate::metrics::program::find("tegrastats").is_some()
}

#[cfg(test)]
mod tests;
