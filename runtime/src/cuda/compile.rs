//! `.cu` sources compiled at first use by NVRTC (shipped in JetPack; no nvcc needed to cross-build)
//! to machine code for the GPU's own architecture, so the driver never compiles PTX (a driver older
//! than NVRTC refuses its PTX), and cached on disk under a key of the source, NVRTC's and the
//! driver's versions and the target, so later starts skip the compile.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudarc::nvrtc::Ptx;
use sha2::{Digest, Sha256};

use super::nvrtc::{self, Nvrtc, Target};
use super::GpuError;

/// NVRTC's version, `(12, 6)`.
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    Ok(nvrtc::get()?.version)
}

/// Where compiled kernels are kept: `EDGERT_KERNEL_CACHE`, else `$XDG_CACHE_HOME/edgert/kernels`,
/// else `~/.cache/edgert/kernels`.
pub fn cache_dir() -> PathBuf {
    crate::user_cache::dir("EDGERT_KERNEL_CACHE", "kernels")
}

/// Kernels ready to load, and how they were had.
pub struct Compiled {
    pub module: Ptx,
    pub target: Target,
    /// Taken from the cache rather than compiled now.
    pub cached: bool,
}

/// `source` for compute capability `sm` (`(8, 7)` on Orin), from the cache or compiled now.
pub fn kernels(name: &str, source: &str, sm: (i32, i32)) -> Result<Compiled, GpuError> {
    let driver = super::device::driver_version().ok();
    kernels_cached_in(nvrtc::get()?, driver, &cache_dir(), name, source, sm)
}

/// `kernels` with the cache in `dir`. A cache that cannot be written only costs the next start a
/// compile.
fn kernels_cached_in(
    nvrtc: &Nvrtc,
    driver: Option<i32>,
    dir: &Path,
    name: &str,
    source: &str,
    sm: (i32, i32),
) -> Result<Compiled, GpuError> {
    let wanted = sm.0 * 10 + sm.1;
    let (major, minor) = nvrtc.version;
    let target = nvrtc::target(wanted, &nvrtc.archs).ok_or_else(|| {
        GpuError::Driver(format!(
            "NVRTC {major}.{minor} does not compile for sm_{wanted} (its oldest is sm_{}): install the NVRTC \
             of this board's JetPack",
            nvrtc.archs.iter().min().copied().unwrap_or(0)
        ))
    })?;
    if target != Target::Cubin(wanted) {
        eprintln!(
            "edgert: NVRTC {major}.{minor} does not know sm_{wanted}: compiling for {} instead",
            target.name()
        );
    }
    let arch = target.name();
    let key =
        Sha256::digest(format!("{source}\n{arch}\nnvrtc {major}.{minor}\ndriver {driver:?}").as_bytes());
    let hex: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let extension = match target {
        Target::Cubin(_) => "cubin",
        Target::Ptx(_) => "ptx",
    };
    let path = dir.join(format!("{name}-{arch}-nvrtc{major}.{minor}-{hex}.{extension}"));
    let module = |image: Vec<u8>| match target {
        Target::Cubin(_) => Ptx::from_binary(image),
        Target::Ptx(_) => Ptx::from_src(String::from_utf8_lossy(&image).into_owned()),
    };
    if let Ok(Some(image)) = crate::infile::read_if_present(&path, crate::infile::TEXT) {
        return Ok(Compiled { module: module(image), target, cached: true });
    }
    let image = nvrtc.compile(name, source, target)?;
    if std::fs::create_dir_all(dir).is_ok() {
        let _ = crate::outfile::replace(&path, |file| file.write_all(&image));
    }
    Ok(Compiled { module: module(image), target, cached: false })
}

#[cfg(test)]
mod tests {
    /// Runs where libnvrtc is found (`.ci/run` installs PyPI's, and sets EDGERT_REQUIRE_NVRTC so
    /// the test cannot quietly skip); no GPU is needed to compile.
    fn nvrtc_here() -> bool {
        match super::nvrtc_version() {
            Ok(_) => true,
            Err(e) if std::env::var_os("EDGERT_REQUIRE_NVRTC").is_some() => {
                panic!("EDGERT_REQUIRE_NVRTC is set: {e}")
            }
            Err(e) => {
                eprintln!("SKIPPED nvrtc: {e}");
                false
            }
        }
    }

    #[test]
    fn the_preprocessing_kernels_compile_to_machine_code_for_jetson_and_desktop_gpus_and_are_cached() {
        if !nvrtc_here() {
            return;
        }
        let nvrtc = super::nvrtc::get().unwrap();
        let source = crate::preprocess::gpu::SOURCE;
        let dir = tempfile::tempdir().unwrap();
        let kernels = |sm| super::kernels_cached_in(nvrtc, None, dir.path(), "fused", source, sm).unwrap();
        // Xavier, Orin, and a desktop Ada GPU.
        for sm in [(7, 2), (8, 7), (8, 9)] {
            let compiled = kernels(sm);
            assert_eq!(compiled.target, super::Target::Cubin(sm.0 * 10 + sm.1));
            assert!(!compiled.cached);
            let file = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().contains(&format!("sm_{}{}", sm.0, sm.1)))
                .unwrap();
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(&bytes[..4], b"\x7fELF", "a cubin is an ELF image");
            for kernel in ["edgert_fused_f32", "edgert_fused_f16"] {
                assert!(bytes.windows(kernel.len()).any(|w| w == kernel.as_bytes()), "{kernel} missing");
            }
            assert!(kernels(sm).cached, "the second request is the cache's");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        // A driver update is a new entry.
        let updated =
            super::kernels_cached_in(nvrtc, Some(12080), dir.path(), "fused", source, (8, 7)).unwrap();
        assert!(!updated.cached);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn a_kernel_that_does_not_compile_returns_nvrtcs_log() {
        if !nvrtc_here() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let error = super::kernels_cached_in(
            super::nvrtc::get().unwrap(),
            None,
            dir.path(),
            "broken",
            "extern \"C\" __global__ void k() { undeclared(); }",
            (8, 7),
        )
        .err()
        .unwrap();
        let message = error.to_string();
        assert!(
            message.starts_with("NVRTC could not compile broken.cu") && message.contains("undeclared"),
            "{message}"
        );
    }
}
