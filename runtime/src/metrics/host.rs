//! What machine a report came from: architecture, CPU model and cores (the board, L4T release and
//! versions are in `provenance`).

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub arch: String,
    pub os: String,
    pub cpu: String,
    pub logical_cpus: usize,
}

impl Host {
    pub fn describe() -> Host {
        Host {
            arch: std::env::consts::ARCH.into(),
            os: std::env::consts::OS.into(),
            cpu: cpu_model().unwrap_or_else(|| "unknown".into()),
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The CPU model from `/proc/cpuinfo` (`model name` on x86, `Model`/`CPU part` on ARM).
fn cpu_model() -> Option<String> {
    let info = crate::infile::read_to_string("/proc/cpuinfo".as_ref(), crate::infile::SENSOR).ok()?;
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
