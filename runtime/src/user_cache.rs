//! Where edgert keeps what it builds for this machine (TensorRT engines, compiled GPU kernels): a
//! variable naming the folder, else `$XDG_CACHE_HOME/edgert/<what>`, else `~/.cache/edgert/<what>`;
//! writes go through `outfile::replace`.

use std::path::PathBuf;

pub fn dir(variable: &str, what: &str) -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(variable)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("edgert").join(what)))
        .or_else(|| var("HOME").map(|d| d.join(".cache/edgert").join(what)))
        .unwrap_or_else(|| PathBuf::from(format!(".edgert-{what}")))
}
