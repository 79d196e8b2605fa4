//! NVRTC, CUDA's runtime compiler, through its C API, opened by the name each CUDA release gives it:
//! `libnvrtc.so.11.2` on JetPack 5 (CUDA 11.2 to 11.8), `libnvrtc.so.12`, `libnvrtc.so.13`. A
//! runtime-only image has no `libnvrtc.so` symlink, and cudarc's loader tries neither 11.x name.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use libloading::Library;

use super::{GpuError, BUILT_FOR};

type Program = *mut c_void;

/// The functions edgert calls, resolved once.
pub struct Nvrtc {
    pub version: (i32, i32),
    /// The real architectures it compiles for, `[75, 80, ..., 90]`.
    pub archs: Vec<i32>,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    _library: Library,
}

/// The names NVRTC has had on Linux, this binary's CUDA major first (a cubin from a newer major's
/// NVRTC may not load on the driver), then newer majors, then the development symlink.
pub fn candidates(built_for_major: i32) -> Vec<&'static str> {
    let by_major: [(i32, &[&str]); 3] = [
        (13, &["libnvrtc.so.13"]),
        (12, &["libnvrtc.so.12"]),
        (11, &["libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0"]),
    ];
    let mut names: Vec<&str> = Vec::new();
    for (_, sonames) in by_major.iter().filter(|(m, _)| *m == built_for_major) {
        names.extend(sonames.iter());
    }
    // A newer major's NVRTC alone on a machine means a driver at least as new.
    for (_, sonames) in by_major.iter().filter(|(m, _)| *m > built_for_major) {
        names.extend(sonames.iter());
    }
    names.push("libnvrtc.so");
    names
}

/// The package that ships NVRTC, for the error when it is missing.
fn package(built_for_major: i32) -> &'static str {
    match built_for_major {
        11 => "JetPack 5: apt install cuda-nvrtc-11-4",
        12 => "JetPack 6: apt install cuda-nvrtc-12-6 (or 12-2); elsewhere PyPI's nvidia-cuda-nvrtc-cu12",
        _ => "JetPack 7: apt install cuda-nvrtc-13-0; elsewhere PyPI's nvidia-cuda-nvrtc (CUDA 13)",
    }
}

/// NVRTC, opened on first use.
pub fn get() -> Result<&'static Nvrtc, GpuError> {
    static NVRTC: OnceLock<Result<Nvrtc, GpuError>> = OnceLock::new();
    NVRTC.get_or_init(|| open(&candidates(BUILT_FOR / 1000))).as_ref().map_err(Clone::clone)
}

fn open(names: &[&str]) -> Result<Nvrtc, GpuError> {
    // SAFETY: opening runs the library's initialisers; this is NVIDIA's own library.
    let Some(library) = names.iter().find_map(|n| unsafe { Library::new(*n) }.ok()) else {
        return Err(GpuError::MissingLibrary {
            library: "libnvrtc (CUDA's runtime compiler)".into(),
            tried: names.join(", "),
            fix: format!(
                "install NVRTC ({}) and add its folder to LD_LIBRARY_PATH",
                package(BUILT_FOR / 1000)
            ),
        });
    };
    let missing =
        |name: &str| GpuError::Driver(format!("libnvrtc has no {name}: it is older than CUDA 11.2"));
    macro_rules! get {
        ($name:literal) => {
            // SAFETY: the signature is the one NVRTC's header (nvrtc.h) declares for this name.
            *unsafe { library.get($name.as_bytes()) }.map_err(|_| missing($name))?
        };
    }
    let version_fn: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int = get!("nvrtcVersion");
    let count_fn: unsafe extern "C" fn(*mut c_int) -> c_int = get!("nvrtcGetNumSupportedArchs");
    let archs_fn: unsafe extern "C" fn(*mut c_int) -> c_int = get!("nvrtcGetSupportedArchs");
    let (mut major, mut minor, mut count) = (0, 0, 0);
    // SAFETY: each writes the integers it is given, the last `count` of them.
    let archs = unsafe {
        if version_fn(&mut major, &mut minor) != 0 || count_fn(&mut count) != 0 {
            return Err(GpuError::Driver("nvrtcVersion failed".into()));
        }
        let mut archs = vec![0; count.max(0) as usize];
        if archs_fn(archs.as_mut_ptr()) != 0 {
            return Err(GpuError::Driver("nvrtcGetSupportedArchs failed".into()));
        }
        archs
    };
    Ok(Nvrtc {
        version: (major, minor),
        archs,
        create: get!("nvrtcCreateProgram"),
        compile: get!("nvrtcCompileProgram"),
        log_size: get!("nvrtcGetProgramLogSize"),
        log: get!("nvrtcGetProgramLog"),
        cubin_size: get!("nvrtcGetCUBINSize"),
        cubin: get!("nvrtcGetCUBIN"),
        ptx_size: get!("nvrtcGetPTXSize"),
        ptx: get!("nvrtcGetPTX"),
        destroy: get!("nvrtcDestroyProgram"),
        error_string: get!("nvrtcGetErrorString"),
        _library: library,
    })
}

/// What to compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Machine code for `sm_XY`: the driver loads it as it is.
    Cubin(i32),
    /// PTX for `compute_XY`, which the driver compiles when loading.
    Ptx(i32),
}

impl Target {
    /// `sm_87`, `compute_87`.
    pub fn name(self) -> String {
        match self {
            Target::Cubin(a) => format!("sm_{a}"),
            Target::Ptx(a) => format!("compute_{a}"),
        }
    }
}

/// The target for a GPU of compute capability `sm` (`87`) among the architectures NVRTC has:
/// its own, else the newest of the same major below it (machine code runs on later minors of a
/// major), else PTX of the newest below it; None when NVRTC has nothing at or below it (CUDA 13
/// has no sm_72: Xavier needs JetPack 5's CUDA 11.4).
pub fn target(sm: i32, archs: &[i32]) -> Option<Target> {
    if archs.contains(&sm) {
        return Some(Target::Cubin(sm));
    }
    let below = archs.iter().copied().filter(|&a| a < sm);
    if let Some(same_major) = below.clone().filter(|&a| a / 10 == sm / 10).max() {
        return Some(Target::Cubin(same_major));
    }
    below.max().map(Target::Ptx)
}

impl Nvrtc {
    /// `source` compiled for `target`: a cubin, or PTX text without its NUL.
    pub fn compile(&self, name: &str, source: &str, target: Target) -> Result<Vec<u8>, GpuError> {
        let failed = |what: &str, code: c_int| {
            // SAFETY: nvrtcGetErrorString returns a static string for any code.
            let text = unsafe { CStr::from_ptr((self.error_string)(code)) }.to_string_lossy().into_owned();
            GpuError::Driver(format!("{what} failed: {text}"))
        };
        let source_c =
            CString::new(source).map_err(|_| GpuError::Input(format!("{name}: a NUL in the source")))?;
        let name_c = CString::new(format!("{name}.cu")).expect("kernel names have no NUL");
        let option = CString::new(format!("--gpu-architecture={}", target.name())).expect("no NUL");
        let options = [option.as_ptr()];
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: the strings live through the calls; the program is destroyed below, once.
        unsafe {
            let code = (self.create)(
                &mut program,
                source_c.as_ptr(),
                name_c.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if code != 0 {
                return Err(failed("nvrtcCreateProgram", code));
            }
            let result = self.compile_program(program, &options, target, name);
            (self.destroy)(&mut program);
            result.map_err(|e| match e {
                Err(code) => failed("nvrtcCompileProgram", code),
                Ok(error) => error,
            })
        }
    }

    /// The image, or Ok(the compile error with NVRTC's log) / Err(a failed call's code).
    unsafe fn compile_program(
        &self,
        program: Program,
        options: &[*const c_char],
        target: Target,
        name: &str,
    ) -> Result<Vec<u8>, Result<GpuError, c_int>> {
        let compiled = (self.compile)(program, options.len() as c_int, options.as_ptr());
        if compiled != 0 {
            let mut size = 0usize;
            let mut log = String::new();
            if (self.log_size)(program, &mut size) == 0 && size > 0 {
                let mut bytes = vec![0u8; size];
                if (self.log)(program, bytes.as_mut_ptr().cast()) == 0 {
                    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                    log = String::from_utf8_lossy(&bytes[..end]).into_owned();
                }
            }
            let log = if log.trim().is_empty() { format!("NVRTC error {compiled}") } else { log };
            // NVRTC's log spans lines; errors here are one line.
            let log = log.split_whitespace().collect::<Vec<_>>().join(" ");
            return Err(Ok(GpuError::Compile { kernel: format!("{name}.cu"), log }));
        }
        let (size_fn, get_fn) = match target {
            Target::Cubin(_) => (self.cubin_size, self.cubin),
            Target::Ptx(_) => (self.ptx_size, self.ptx),
        };
        let mut size = 0usize;
        let code = size_fn(program, &mut size);
        if code != 0 {
            return Err(Err(code));
        }
        let mut image = vec![0u8; size];
        let code = get_fn(program, image.as_mut_ptr().cast());
        if code != 0 {
            return Err(Err(code));
        }
        if matches!(target, Target::Ptx(_)) {
            // PTX comes NUL-terminated.
            while image.last() == Some(&0) {
                image.pop();
            }
        }
        Ok(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gpu_gets_machine_code_where_nvrtc_has_its_major() {
        let cuda12 = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        let cuda13 = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];
        // Orin on either; Xavier on 12; Thor (sm 11.0) on 13.
        assert_eq!(target(87, &cuda12), Some(Target::Cubin(87)));
        assert_eq!(target(72, &cuda12), Some(Target::Cubin(72)));
        assert_eq!(target(110, &cuda13), Some(Target::Cubin(110)));
        // A GPU newer than NVRTC: the newest of its major, else PTX the driver compiles.
        assert_eq!(target(121, &cuda13[..11]), Some(Target::Cubin(120)));
        assert_eq!(target(100, &cuda12), Some(Target::Ptx(90)));
        // CUDA 13 has nothing for Xavier's sm 7.2.
        assert_eq!(target(72, &cuda13), None);
        assert_eq!((Target::Cubin(87).name(), Target::Ptx(90).name()), ("sm_87".into(), "compute_90".into()));
    }

    #[test]
    fn the_sonames_of_this_builds_cuda_come_first() {
        let jetpack5 = candidates(11);
        assert_eq!(jetpack5[0], "libnvrtc.so.11.2");
        assert!(jetpack5.contains(&"libnvrtc.so.12") && jetpack5.last() == Some(&"libnvrtc.so"));
        assert_eq!(candidates(12)[..2], ["libnvrtc.so.12", "libnvrtc.so.13"]);
        assert!(!candidates(13).contains(&"libnvrtc.so.12"));
    }

    #[test]
    fn missing_nvrtc_names_the_sonames_tried_and_the_package() {
        let error = open(&["libedgert-no-such-nvrtc.so.11.2"]).err().unwrap();
        let message = error.to_string();
        assert!(message.starts_with("libnvrtc (CUDA's runtime compiler) not found"), "{message}");
        assert!(
            message.contains("libedgert-no-such-nvrtc.so.11.2") && message.contains("apt install"),
            "{message}"
        );
    }
}
