//! `.cu` sources compiled at first use by NVRTC (shipped in JetPack; no nvcc needed to cross-build),
//! for the GPU's own architecture, and cached on disk under a key of the source, NVRTC's version and
//! the architecture, so later starts skip the compile.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudarc::nvrtc::{self, CompileOptions, Ptx};
use sha2::{Digest, Sha256};

use super::device::check_library;
use super::GpuError;

/// NVRTC's version, `(12, 6)`.
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    check_library(
        "nvrtc",
        "libnvrtc (CUDA's runtime compiler)",
        "install CUDA's NVRTC (JetPack has it; elsewhere the CUDA toolkit or PyPI's nvidia-cuda-nvrtc-cu12) and add its folder to LD_LIBRARY_PATH",
    )?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion only writes the two integers.
    unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| super::driver_error("nvrtcVersion", e))?;
    Ok((major, minor))
}

/// Where compiled kernels are kept: `EDGERT_KERNEL_CACHE`, else `$XDG_CACHE_HOME/edgert/kernels`,
/// else `~/.cache/edgert/kernels`.
pub fn cache_dir() -> PathBuf {
    crate::user_cache::dir("EDGERT_KERNEL_CACHE", "kernels")
}

/// PTX of `source` for compute capability `sm` (`(8, 7)` on Orin), from the cache or compiled now.
pub fn ptx(name: &str, source: &str, sm: (i32, i32)) -> Result<Ptx, GpuError> {
    ptx_cached_in(&cache_dir(), name, source, sm)
}

/// `ptx` with the cache in `dir`. A cache that cannot be written only costs the next start a compile.
fn ptx_cached_in(dir: &Path, name: &str, source: &str, sm: (i32, i32)) -> Result<Ptx, GpuError> {
    let nvrtc = nvrtc_version()?;
    let arch = format!("compute_{}{}", sm.0, sm.1);
    let key = Sha256::digest(format!("{source}\n{arch}\nnvrtc {}.{}", nvrtc.0, nvrtc.1).as_bytes());
    let hex: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{name}-{arch}-nvrtc{}.{}-{hex}.ptx", nvrtc.0, nvrtc.1));
    if let Ok(text) = crate::infile::read_to_string(&path, crate::infile::TEXT) {
        return Ok(Ptx::from_src(text));
    }
    let options = CompileOptions {
        // CompileOptions wants a &'static str; one per architecture compiled, once per process.
        arch: Some(Box::leak(arch.into_boxed_str())),
        name: Some(format!("{name}.cu")),
        ..CompileOptions::default()
    };
    let ptx = nvrtc::compile_ptx_with_opts(source, options).map_err(|e| {
        let log = match e {
            nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        };
        // NVRTC's log spans lines; errors here are one line.
        GpuError::Compile {
            kernel: format!("{name}.cu"),
            log: log.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    })?;
    if std::fs::create_dir_all(dir).is_ok() {
        let _ = crate::outfile::replace(&path, |file| file.write_all(ptx.to_src().as_bytes()));
    }
    Ok(ptx)
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
    fn the_preprocessing_kernels_compile_for_jetson_and_desktop_gpus_and_are_cached() {
        if !nvrtc_here() {
            return;
        }
        let source = crate::preprocess::gpu::SOURCE;
        let dir = tempfile::tempdir().unwrap();
        let ptx = |sm| super::ptx_cached_in(dir.path(), "fused", source, sm);
        // Xavier, Orin, and a desktop Ada GPU.
        for sm in [(7, 2), (8, 7), (8, 9)] {
            let ptx = ptx(sm).unwrap().to_src();
            assert!(ptx.contains(&format!(".target sm_{}{}", sm.0, sm.1)), "{}", &ptx[..ptx.len().min(400)]);
            for kernel in ["edgert_fused_f32", "edgert_fused_f16"] {
                assert!(ptx.contains(&format!(".entry {kernel}")), "{kernel} missing");
            }
        }
        let cached: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(cached.len(), 3, "{cached:?}");
        // A second request reads the cache: a cached file edited by hand is what comes back.
        let path = dir.path().join(&cached[0]);
        std::fs::write(&path, "// cached").unwrap();
        let name = cached[0].to_string_lossy();
        let sm = if name.contains("compute_72") {
            (7, 2)
        } else if name.contains("compute_87") {
            (8, 7)
        } else {
            (8, 9)
        };
        assert_eq!(ptx(sm).unwrap().to_src(), "// cached");
    }

    #[test]
    fn a_kernel_that_does_not_compile_returns_nvrtcs_log() {
        if !nvrtc_here() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let error = super::ptx_cached_in(
            dir.path(),
            "broken",
            "extern \"C\" __global__ void k() { undeclared(); }",
            (8, 7),
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("NVRTC could not compile broken.cu") && message.contains("undeclared"),
            "{message}"
        );
    }
}
