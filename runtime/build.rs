//! Records the git commit edgert is built from and the tract version it links, for the provenance
//! in every report.

use std::process::Command;

fn main() {
    let hash = std::env::var("EDGERT_GIT_HASH").ok().or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=EDGERT_GIT_HASH={}", hash.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rerun-if-env-changed=EDGERT_GIT_HASH");
    println!(
        "cargo:rustc-env=EDGERT_TRACT_VERSION={}",
        locked_version("tract-onnx").unwrap_or_else(|| "unknown".into())
    );
    for path in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs", "../Cargo.lock"] {
        println!("cargo:rerun-if-changed={path}");
    }
}

/// A package's version in the workspace's Cargo.lock.
fn locked_version(package: &str) -> Option<String> {
    let lock = std::fs::read_to_string("../Cargo.lock").ok()?;
    let mut lines = lock.lines();
    lines.find(|l| *l == format!("name = \"{package}\""))?;
    Some(lines.next()?.strip_prefix("version = \"")?.trim_end_matches('"').to_string())
}
