//! Finding and checking the ONNX Runtime library: `--ort-lib`, else `ORT_DYLIB_PATH`, else the usual
//! install locations (system folders, JetPack's, pip's `onnxruntime/capi/`). Before `ort` loads it,
//! the file's architecture and version are checked, so a wrong library is a clear error naming the
//! file and what was found, not a crash.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::LibraryError;

/// The oldest ONNX Runtime whose API `ort` is built for (`api-17` in Cargo.toml).
pub const MIN_MINOR: u32 = 17;

/// Folders searched when neither the flag nor the variable names a library.
fn search_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).filter(|d| !d.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    let arch = std::env::consts::ARCH;
    for dir in [
        format!("/usr/lib/{arch}-linux-gnu"),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
        "/opt/onnxruntime/lib".into(),
        "/usr/local/onnxruntime/lib".into(),
    ] {
        dirs.push(dir.into());
    }
    // pip installs: `site-packages/onnxruntime/capi/libonnxruntime.so.<version>`.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let pythons = ["/usr/lib", "/usr/local/lib"]
        .into_iter()
        .map(PathBuf::from)
        .chain(home.map(|h| h.join(".local/lib")));
    for base in pythons {
        for python in crate::metrics::sysfs::entries(&base) {
            let is_python = python.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3"));
            if is_python {
                for packages in ["site-packages", "dist-packages"] {
                    dirs.push(python.join(packages).join("onnxruntime/capi"));
                }
            }
        }
    }
    dirs
}

/// `libonnxruntime.so` or a versioned `libonnxruntime.so.1.32.0` in a folder.
fn find_in(dir: &Path) -> Option<PathBuf> {
    crate::metrics::sysfs::entries(dir).into_iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == "libonnxruntime.so" || n.starts_with("libonnxruntime.so."))
    })
}

/// Where the library is: `flag` (`--ort-lib`) wins over `ORT_DYLIB_PATH` and the search; or an
/// error naming every place looked at and the fix.
pub fn resolve(flag: Option<&Path>) -> Result<PathBuf, LibraryError> {
    if let Some(path) = flag {
        return existing(path, "--ort-lib");
    }
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        return existing(Path::new(&path), "ORT_DYLIB_PATH");
    }
    let dirs = search_folders();
    dirs.iter().find_map(|d| find_in(d)).ok_or_else(|| {
        let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        LibraryError::NotFound { searched: searched.join(", ") }
    })
}

fn existing(path: &Path, from: &'static str) -> Result<PathBuf, LibraryError> {
    if path.is_file() {
        Ok(path.to_owned())
    } else {
        Err(LibraryError::Missing { path: path.to_owned(), from })
    }
}

/// The ELF machine this binary runs on, as `e_machine` numbers.
fn own_machine() -> Option<(u16, &'static str)> {
    match std::env::consts::ARCH {
        "x86_64" => Some((62, "x86_64")),
        "aarch64" => Some((183, "aarch64")),
        _ => None,
    }
}

fn machine_name(code: u16) -> String {
    match code {
        3 => "x86 (32-bit)".into(),
        40 => "arm (32-bit)".into(),
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        other => format!("ELF machine {other}"),
    }
}

/// Checks that `path` is a 64-bit ELF library for this machine's architecture.
pub fn check_elf(path: &Path) -> Result<(), LibraryError> {
    let unreadable = |reason: String| LibraryError::Unreadable { path: path.to_owned(), reason };
    let file = crate::infile::try_open(path, crate::infile::LIBRARY).map_err(unreadable)?;
    let mut bytes = Vec::with_capacity(20);
    file.take(20).read_to_end(&mut bytes).map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Err(LibraryError::NotElf { path: path.to_owned() });
    }
    let machine = if bytes[5] == 1 {
        u16::from_le_bytes([bytes[18], bytes[19]])
    } else {
        u16::from_be_bytes([bytes[18], bytes[19]])
    };
    match own_machine() {
        Some((own, name)) if own != machine => {
            Err(LibraryError::OtherMachine { path: path.to_owned(), built: machine_name(machine), own: name })
        }
        _ => Ok(()),
    }
}

/// Checks the file, loads it, and reads its version; an ONNX Runtime older than 1.17 is refused.
pub fn check(path: &Path) -> Result<String, LibraryError> {
    check_elf(path)?;
    let version = read_version(path)?;
    let minor = version.split('.').nth(1).and_then(|m| m.parse::<u32>().ok());
    match minor {
        Some(m) if m >= MIN_MINOR => Ok(version),
        _ => Err(LibraryError::TooOld { path: path.to_owned(), version, min_minor: MIN_MINOR }),
    }
}

/// `OrtGetApiBase()->GetVersionString()` of the library.
fn read_version(path: &Path) -> Result<String, LibraryError> {
    // SAFETY: loading runs the library's initializers; the file was checked to be an ELF library
    // for this architecture, and it is the library the user asked for.
    let library = unsafe { libloading::Library::new(path) }
        .map_err(|e| LibraryError::Load { path: path.to_owned(), reason: e.to_string() })?;
    // SAFETY: the symbol's type is ONNX Runtime's `const OrtApiBase* OrtGetApiBase(void)`.
    let get_base: libloading::Symbol<unsafe extern "C" fn() -> *const ort::sys::OrtApiBase> =
        unsafe { library.get(b"OrtGetApiBase") }
            .map_err(|_| LibraryError::NotOrt { path: path.to_owned() })?;
    // SAFETY: OrtGetApiBase returns a pointer to a static struct, or null from a broken library.
    let base = unsafe { get_base() };
    if base.is_null() {
        return Err(LibraryError::NoApiBase { path: path.to_owned() });
    }
    // SAFETY: GetVersionString returns a static NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(((*base).GetVersionString)()) };
    Ok(text.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(machine: u16) -> tempfile::NamedTempFile {
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2; // 64-bit
        header[5] = 1; // little-endian
        header[18..20].copy_from_slice(&machine.to_le_bytes());
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), header).unwrap();
        file
    }

    #[test]
    fn a_library_for_another_architecture_is_named_as_such() {
        let (own, name) = own_machine().unwrap();
        let other = if own == 62 { 183 } else { 62 };
        let library = elf(other);
        let err = check_elf(library.path()).unwrap_err();
        let expected =
            LibraryError::OtherMachine { path: library.path().into(), built: machine_name(other), own: name };
        assert_eq!(err, expected);
        assert!(err.to_string().contains(&format!("built for {}", machine_name(other))), "{err}");
        assert!(check_elf(elf(own).path()).is_ok());
        let text = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(text.path(), "not a library").unwrap();
        assert_eq!(check_elf(text.path()).unwrap_err(), LibraryError::NotElf { path: text.path().into() });
    }
}
