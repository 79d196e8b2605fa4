//! Records the git commit edgert is built from, for the provenance in every report.

use std::process::Command;

fn main() {
    let hash = std::env::var("EDGERT_GIT_HASH").ok().or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=EDGERT_GIT_HASH={}", hash.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rerun-if-env-changed=EDGERT_GIT_HASH");
    for path in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
