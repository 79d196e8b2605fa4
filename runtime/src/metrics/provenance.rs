//! Where a measurement comes from: board, L4T release, kernel, power mode, CUDA and TensorRT
//! versions, and the edgert build. Every report carries it, so runs from different boards or
//! JetPack releases are never compared unknowingly.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

use super::sysfs::{entries, read_trimmed};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// `/proc/device-tree/model`, e.g. `NVIDIA Jetson Orin Nano Developer Kit`.
    pub board: Option<String>,
    /// From `/etc/nv_tegra_release`, e.g. `36.3.0`.
    pub l4t: Option<String>,
    /// The JetPack major release that L4T belongs to, e.g. `6`.
    pub jetpack: Option<&'static str>,
    pub kernel: Option<String>,
    /// `nvpmodel -q`: the power mode's name and number, e.g. `MAXN (0)`.
    pub nvpmodel: Option<String>,
    pub cuda: Option<String>,
    pub tensorrt: Option<String>,
    pub edgert_version: &'static str,
    pub edgert_git: &'static str,
}

/// The build, where a tool can find it in the binary without running it (`deploy/edgert-deploy`
/// names what it copies to a board of another architecture); kept through LTO and stripping.
#[used]
static IDENT: &str =
    concat!("edgert-ident: ", env!("CARGO_PKG_VERSION"), " git ", env!("EDGERT_GIT_HASH"), "\n");

impl Provenance {
    pub fn read(root: &Path) -> Provenance {
        let l4t = read_trimmed(&root.join("etc/nv_tegra_release")).and_then(|t| l4t_release(&t));
        Provenance {
            board: read_trimmed(&root.join("proc/device-tree/model")),
            jetpack: l4t.as_deref().and_then(jetpack),
            l4t,
            kernel: read_trimmed(&root.join("proc/sys/kernel/osrelease")),
            nvpmodel: nvpmodel(),
            cuda: cuda_version(root),
            tensorrt: tensorrt_version(root),
            edgert_version: crate::VERSION,
            edgert_git: env!("EDGERT_GIT_HASH"),
        }
    }
}

/// `# R36 (release), REVISION: 3.0, GCID: …` → `36.3.0`.
fn l4t_release(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("# R"))?;
    let major = line.strip_prefix("# R")?.split_whitespace().next()?;
    let revision = line.split("REVISION:").nth(1)?.split(',').next()?.trim();
    Some(format!("{major}.{revision}"))
}

/// L4T's major release to JetPack's: R32 is JetPack 4 (Nano, TX1, TX2, Xavier), R34/R35 JetPack 5
/// (Xavier, Orin), R36 JetPack 6 (Orin), R38/R39 JetPack 7 (Thor; Orin from 7.2).
fn jetpack(l4t: &str) -> Option<&'static str> {
    match l4t.split('.').next()? {
        "32" => Some("4"),
        "34" | "35" => Some("5"),
        "36" => Some("6"),
        "38" | "39" => Some("7"),
        _ => None,
    }
}

/// The power mode from `nvpmodel -q` (on the PATH of every Jetson), which prints
/// `NV Power Mode: MAXN` and then the mode's number.
fn nvpmodel() -> Option<String> {
    let out = Command::new("nvpmodel").arg("-q").output().ok()?;
    parse_nvpmodel(&String::from_utf8_lossy(&out.stdout))
}

fn parse_nvpmodel(text: &str) -> Option<String> {
    let name = text.lines().find_map(|l| l.split_once("NV Power Mode:"))?.1.trim();
    let number = text.lines().map(str::trim).find(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()));
    Some(match number {
        Some(n) => format!("{name} ({n})"),
        None => name.to_string(),
    })
}

/// CUDA toolkit version: `version.json` (CUDA ≥ 11) or `version.txt` (JetPack 4's CUDA 10.2).
fn cuda_version(root: &Path) -> Option<String> {
    let cuda = root.join("usr/local/cuda");
    if let Some(json) = read_trimmed(&cuda.join("version.json")) {
        let value: serde_json::Value = serde_json::from_str(&json).ok()?;
        return value["cuda"]["version"].as_str().map(String::from);
    }
    read_trimmed(&cuda.join("version.txt"))?.strip_prefix("CUDA Version ").map(|v| v.trim().to_string())
}

/// TensorRT's version from the name of `libnvinfer.so.X.Y.Z` in the multiarch library folder.
fn tensorrt_version(root: &Path) -> Option<String> {
    library_version(root, "libnvinfer")
}

/// A library's full version from the name of `LIB.so.X.Y.Z` in the system's library folders.
pub fn library_version(root: &Path, library: &str) -> Option<String> {
    let prefix = format!("{library}.so.");
    ["usr/lib/aarch64-linux-gnu", "usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib"].iter().find_map(|dir| {
        entries(&root.join(dir)).iter().find_map(|p| {
            let name = p.file_name()?.to_str()?;
            let version = name.strip_prefix(&prefix)?;
            (version.split('.').count() >= 3).then(|| version.to_string())
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn l4t_release_from_its_header_line() {
        let text = "# R36 (release), REVISION: 3.0, GCID: 36191598, BOARD: generic, EABI: aarch64, DATE: Mon May  6 17:34:21 UTC 2024\n# KERNEL_VARIANT: oot\n";
        assert_eq!(super::l4t_release(text).as_deref(), Some("36.3.0"));
        assert_eq!(super::l4t_release("garbage"), None);
    }

    #[test]
    fn jetpack_from_l4t() {
        let cases =
            [("32.7.1", Some("4")), ("35.4.1", Some("5")), ("36.3.0", Some("6")), ("38.2.0", Some("7"))];
        for (l4t, jetpack) in cases.into_iter().chain([("28.2.1", None), ("", None), ("x", None)]) {
            assert_eq!(super::jetpack(l4t), jetpack, "{l4t}");
        }
    }

    #[test]
    fn nvpmodel_query_output() {
        assert_eq!(super::parse_nvpmodel("NV Power Mode: MAXN\n0\n").as_deref(), Some("MAXN (0)"));
        assert_eq!(super::parse_nvpmodel("NV Power Mode: 15W\n").as_deref(), Some("15W"));
        assert_eq!(super::parse_nvpmodel("nvpmodel: command not allowed\n"), None);
    }
}
