//! Programs the board's tools come as (`tegrastats`, `jetson_clocks`, `nvpmodel`): found on the
//! PATH the way a shell finds them, so a missing one is said before it is run.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// The first executable file of that name on the PATH.
pub fn find(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}
