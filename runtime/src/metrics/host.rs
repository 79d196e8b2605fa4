//! What machine a report came from: CPU model, cores, kernel, and the Jetson board when there is one.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub arch: String,
    pub os: String,
    pub cpu: String,
    pub logical_cpus: usize,
    pub kernel: String,
    /// `/proc/device-tree/model` on boards that have one (every Jetson).
    pub board: Option<String>,
}

impl Host {
    pub fn describe() -> Host {
        Host {
            arch: std::env::consts::ARCH.into(),
            os: std::env::consts::OS.into(),
            cpu: cpu_model().unwrap_or_else(|| "unknown".into()),
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            board: read_trimmed("/proc/device-tree/model"),
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!text.is_empty()).then(|| text.to_string())
}

/// The CPU model from `/proc/cpuinfo` (`model name` on x86, `Model`/`CPU part` on ARM).
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_model(&info)
}

fn parse_cpu_model(info: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "CPU part"].iter().find_map(|key| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == *key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_model_on_x86_and_arm() {
        assert_eq!(
            super::parse_cpu_model("processor\t: 0\nmodel name\t: AMD EPYC\n").as_deref(),
            Some("AMD EPYC")
        );
        assert_eq!(super::parse_cpu_model("processor\t: 0\nCPU part\t: 0xd42\n").as_deref(), Some("0xd42"));
    }
}
