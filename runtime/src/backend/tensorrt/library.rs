//! Finding TensorRT and the CUDA runtime at run time: libnvinfer, then its own release's
//! libnvonnxparser (optional: only building engines needs it), libnvinfer_plugin (optional: only
//! engines with TensorRT's plugins need it) and the libcudart it runs on, resolved with dlopen so
//! the binary starts on machines without them and says what is missing, where it looked, and the
//! fix.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use super::error::TrtError;
use super::ffi::Symbols;
use super::version::TrtVersion;

const NVINFER: &[&str] = &["libnvinfer.so.10", "libnvinfer.so.8", "libnvinfer.so.11", "libnvinfer.so"];

/// What goes with a libnvinfer of major `major`: its ONNX parser and plugin library (same major),
/// and the CUDA runtimes its releases are built for, the likeliest first (TensorRT 8.5 and 8.6:
/// CUDA 11 on JetPack 5, 12 on desktops; 10.x: CUDA 12, 13 from 10.13 on JetPack 7; 11: CUDA 13).
struct Companions {
    parser: String,
    plugin: String,
    cudart: &'static [&'static str],
}

/// What goes with TensorRT `version`, decided before any CUDA library is looked for: a release
/// edgert cannot run (JetPack 4's 8.2 on CUDA 10.2) is refused as such, not as a missing runtime.
fn companions_for(version: TrtVersion) -> Result<Companions, TrtError> {
    if !version.is_supported() {
        return Err(TrtError::TooOld { version: version.to_string() });
    }
    Ok(companions(version.major))
}

fn companions(major: i32) -> Companions {
    let cudart: &[&str] = match major {
        ..=8 => &["libcudart.so.11.0", "libcudart.so.12"],
        9 | 10 => &["libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0"],
        _ => &["libcudart.so.13"],
    };
    Companions {
        parser: format!("libnvonnxparser.so.{major}"),
        plugin: format!("libnvinfer_plugin.so.{major}"),
        cudart,
    }
}

/// The loaded libraries, kept open as long as any runtime made from their symbols lives.
pub struct Libraries {
    pub symbols: Symbols,
    /// The folder libnvinfer was found in when the dynamic loader cannot find it there: TensorRT
    /// opens libnvinfer_builder_resource and its plugin libraries by name, which then fails.
    pub off_search_path: Option<PathBuf>,
    _open: Vec<Library>,
}

impl Libraries {
    /// What to do when libnvinfer came from a folder the loader does not search.
    pub fn search_path_fix(&self) -> Option<String> {
        self.off_search_path.as_ref().map(|dir| {
            format!(
                "TensorRT was found in {dir}, which LD_LIBRARY_PATH does not name, and it opens \
                 libnvinfer_builder_resource and its plugins by name from there: \
                 export LD_LIBRARY_PATH={dir}:$LD_LIBRARY_PATH",
                dir = dir.display()
            )
        })
    }
}

/// Libraries as `load` would give them, found in `off_search_path`, holding nothing open.
#[cfg(test)]
pub fn found_in(symbols: Symbols, off_search_path: PathBuf) -> Libraries {
    Libraries { symbols, off_search_path: Some(off_search_path), _open: Vec::new() }
}

/// Whether the dynamic loader searches `dir` by way of `LD_LIBRARY_PATH` (`ld_library_path`).
fn named_in(dir: &Path, ld_library_path: Option<&std::ffi::OsStr>) -> bool {
    let same = |entry: &Path| entry == dir || entry.canonicalize().ok() == dir.canonicalize().ok();
    ld_library_path.is_some_and(|paths| std::env::split_paths(paths).any(|entry| same(&entry)))
}

/// Folders tried after the dynamic loader's own search: `TENSORRT_LIB_DIR`, then where JetPack and
/// NVIDIA's packages install.
fn folders() -> Vec<PathBuf> {
    let arch = std::env::consts::ARCH;
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("TENSORRT_LIB_DIR").map(PathBuf::from).into_iter().collect();
    for dir in [
        format!("/usr/lib/{arch}-linux-gnu"),
        "/usr/local/cuda/lib64".into(),
        format!("/usr/local/cuda/targets/{arch}-linux/lib"),
        "/usr/local/tensorrt/lib".into(),
    ] {
        dirs.push(dir.into());
    }
    dirs
}

fn open(names: &[&str], what: &str, fix: &'static str) -> Result<Library, TrtError> {
    open_from(names, &folders(), what, fix).map(|(library, _)| library)
}

/// The first of `names` the dynamic loader finds, else the first found in `dirs`, with the folder
/// it came from in that case.
fn open_from(
    names: &[&str],
    dirs: &[PathBuf],
    what: &str,
    fix: &'static str,
) -> Result<(Library, Option<PathBuf>), TrtError> {
    for name in names {
        // SAFETY: loading runs the library's initialisers; these are NVIDIA's own libraries.
        if let Ok(library) = unsafe { Library::new(*name) } {
            return Ok((library, None));
        }
        for dir in dirs {
            let path = dir.join(name);
            if path.exists() {
                // SAFETY: as above.
                match unsafe { Library::new(&path) } {
                    Ok(library) => return Ok((library, Some(dir.clone()))),
                    Err(e) => {
                        // libloading says "dlopen failed"; the loader's own reason is its source.
                        let reason = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
                        return Err(TrtError::Unloadable { path, what: what.into(), reason });
                    }
                }
            }
        }
    }
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(TrtError::NotFound { what: what.into(), names: names.join(", "), folders: searched.join(", "), fix })
}

/// A function from `library`, or an error saying the library is not the one edgert needs.
fn symbol<T: Copy>(library: &Library, name: &'static str, what: &'static str) -> Result<T, TrtError> {
    // SAFETY: the caller names the C signature `T` the header of that library declares.
    unsafe { library.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| TrtError::MissingSymbol { library: what, symbol: name })
}

/// The libcudart libnvinfer already pulled into the process (its own dependency), if any.
fn already_loaded(names: &[&str]) -> Option<Library> {
    names.iter().find_map(|name| {
        // SAFETY: RTLD_NOLOAD only finds a library already loaded; nothing is initialised.
        unsafe { libloading::os::unix::Library::open(Some(*name), libc::RTLD_NOW | libc::RTLD_NOLOAD) }
            .ok()
            .map(Library::from)
    })
}

/// The first of `names` loaded already or found by the dynamic loader; None when none is.
fn optional(names: &[&str]) -> Option<Library> {
    // SAFETY: loading runs the library's initialisers; these are NVIDIA's own libraries.
    already_loaded(names).or_else(|| names.iter().find_map(|name| unsafe { Library::new(*name) }.ok()))
}

/// Opens TensorRT and the CUDA runtime and resolves everything the shim calls.
pub fn load() -> Result<Arc<Libraries>, TrtError> {
    const TRT_FIX: &str =
        "install TensorRT (JetPack ships it; on a desktop, NVIDIA's TensorRT packages) or set TENSORRT_LIB_DIR to its folder";
    let (nvinfer, found_in) = open_from(NVINFER, &folders(), "TensorRT's libnvinfer", TRT_FIX)?;
    let ld_library_path = std::env::var_os("LD_LIBRARY_PATH");
    let off_search_path = found_in.filter(|dir| !named_in(dir, ld_library_path.as_deref()));
    let (i, c) = ("libnvinfer", "libcudart");
    let get_version: unsafe extern "C" fn() -> i32 = symbol(&nvinfer, "getInferLibVersion", i)?;
    // SAFETY: getInferLibVersion takes nothing and returns the release number.
    let version = TrtVersion::decode(unsafe { get_version() });
    let (major, with) = (version.major, companions_for(version)?);
    let cudart = match already_loaded(with.cudart) {
        Some(cudart) => cudart,
        None => open(
            with.cudart,
            &format!("the CUDA runtime libcudart that TensorRT {major} runs on"),
            "install the CUDA runtime (JetPack ships it) or add its folder to LD_LIBRARY_PATH",
        )?,
    };
    let parser = open(&[with.parser.as_str()], "libnvonnxparser", TRT_FIX).ok();
    let plugin = open(&[with.plugin.as_str()], "libnvinfer_plugin", TRT_FIX).ok();
    let mut symbols = Symbols {
        create_infer_runtime: Some(symbol(&nvinfer, "createInferRuntime_INTERNAL", i)?),
        create_infer_builder: Some(symbol(&nvinfer, "createInferBuilder_INTERNAL", i)?),
        get_infer_lib_version: Some(get_version),
        // SAFETY: TensorRT 10's `int32_t getInferLibBuildVersion()`; absent before 10.
        get_infer_lib_build_version: unsafe { nvinfer.get(b"getInferLibBuildVersion") }.ok().map(|s| *s),
        create_onnx_parser: None,
        init_plugins: None,
        cuda_malloc: Some(symbol(&cudart, "cudaMalloc", c)?),
        cuda_free: Some(symbol(&cudart, "cudaFree", c)?),
        cuda_memcpy_async: Some(symbol(&cudart, "cudaMemcpyAsync", c)?),
        cuda_stream_create_with_flags: Some(symbol(&cudart, "cudaStreamCreateWithFlags", c)?),
        cuda_stream_destroy: Some(symbol(&cudart, "cudaStreamDestroy", c)?),
        cuda_stream_synchronize: Some(symbol(&cudart, "cudaStreamSynchronize", c)?),
        cuda_event_create: Some(symbol(&cudart, "cudaEventCreate", c)?),
        cuda_event_destroy: Some(symbol(&cudart, "cudaEventDestroy", c)?),
        cuda_event_record: Some(symbol(&cudart, "cudaEventRecord", c)?),
        cuda_event_elapsed_time: Some(symbol(&cudart, "cudaEventElapsedTime", c)?),
        cuda_get_device: Some(symbol(&cudart, "cudaGetDevice", c)?),
        cuda_device_get_attribute: Some(symbol(&cudart, "cudaDeviceGetAttribute", c)?),
        cuda_get_error_string: Some(symbol(&cudart, "cudaGetErrorString", c)?),
        cuda_mem_get_info: Some(symbol(&cudart, "cudaMemGetInfo", c)?),
        cuda_set_device_flags: Some(symbol(&cudart, "cudaSetDeviceFlags", c)?),
        ..Symbols::default()
    };
    let mut open_libraries = vec![nvinfer, cudart];
    // What engines are keyed by besides the GPU's compute capability; each optional.
    if let Some(driver) = optional(&["libcuda.so.1"]) {
        // SAFETY: the driver API's `CUresult cuInit(unsigned)`, `cuDeviceGet(CUdevice*, int)` and
        // `cuDeviceGetName(char*, int, CUdevice)`, with CUresult and CUdevice ints.
        unsafe {
            symbols.cu_init = driver.get(b"cuInit").ok().map(|s| *s);
            symbols.cu_device_get = driver.get(b"cuDeviceGet").ok().map(|s| *s);
            symbols.cu_device_get_name = driver.get(b"cuDeviceGetName").ok().map(|s| *s);
        }
        open_libraries.push(driver);
    }
    if major < 10 {
        if let Some(cudnn) = optional(&["libcudnn.so.8", "libcudnn.so.9"]) {
            // SAFETY: `size_t cudnnGetVersion(void)`.
            symbols.cudnn_get_version = unsafe { cudnn.get(b"cudnnGetVersion") }.ok().map(|s| *s);
            open_libraries.push(cudnn);
        }
        if let Some(cublaslt) = optional(&["libcublasLt.so.11", "libcublasLt.so.12"]) {
            // SAFETY: `size_t cublasLtGetVersion(void)`.
            symbols.cublaslt_get_version = unsafe { cublaslt.get(b"cublasLtGetVersion") }.ok().map(|s| *s);
            open_libraries.push(cublaslt);
        }
    }
    if let Some(parser) = parser {
        symbols.create_onnx_parser = Some(symbol(&parser, "createNvOnnxParser_INTERNAL", "libnvonnxparser")?);
        open_libraries.push(parser);
    }
    if let Some(plugin) = plugin {
        symbols.init_plugins = Some(symbol(&plugin, "initLibNvInferPlugins", "libnvinfer_plugin")?);
        open_libraries.push(plugin);
    }
    Ok(Arc::new(Libraries { symbols, off_search_path, _open: open_libraries }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parser_plugins_and_cuda_runtime_follow_libnvinfers_major() {
        let jetpack5 = super::companions(8);
        assert_eq!(
            (jetpack5.parser.as_str(), jetpack5.plugin.as_str()),
            ("libnvonnxparser.so.8", "libnvinfer_plugin.so.8")
        );
        assert_eq!(jetpack5.cudart[0], "libcudart.so.11.0");
        let jetpack6 = super::companions(10);
        assert_eq!(jetpack6.parser, "libnvonnxparser.so.10");
        assert_eq!(jetpack6.cudart[..2], ["libcudart.so.12", "libcudart.so.13"]);
        assert_eq!(super::companions(11).cudart, ["libcudart.so.13"]);
    }

    /// A libnvinfer found through TENSORRT_LIB_DIR rather than the loader: its folder is said,
    /// unless LD_LIBRARY_PATH names it (TensorRT opens its builder resource by name).
    #[test]
    fn a_library_found_outside_the_loaders_search_says_which_folder_to_add() {
        let dir = tempfile::tempdir().unwrap();
        let name = "libedgert-test-loadable.so.10";
        // Any loadable library stands in for libnvinfer: this machine's libm.
        let libm =
            ["/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6"]
                .into_iter()
                .find(|p| std::path::Path::new(p).exists());
        let Some(libm) = libm else { return eprintln!("skipped: no libm.so.6 where expected") };
        std::fs::copy(libm, dir.path().join(name)).unwrap();
        let (_, found_in) = super::open_from(&[name], &[dir.path().to_owned()], "libnvinfer", "fix").unwrap();
        assert_eq!(found_in.as_deref(), Some(dir.path()));
        let elsewhere = std::ffi::OsString::from("/usr/local/lib:/opt/other");
        assert!(!super::named_in(dir.path(), Some(&elsewhere)));
        assert!(!super::named_in(dir.path(), None));
        let named = std::env::join_paths([std::path::Path::new("/opt/other"), dir.path()]).unwrap();
        assert!(super::named_in(dir.path(), Some(&named)));
        let libraries = super::Libraries {
            symbols: super::Symbols::default(),
            off_search_path: found_in,
            _open: Vec::new(),
        };
        let fix = libraries.search_path_fix().unwrap();
        assert!(
            fix.contains(&format!("export LD_LIBRARY_PATH={}:$LD_LIBRARY_PATH", dir.path().display())),
            "{fix}"
        );
    }

    #[test]
    fn jetpack_4s_tensorrt_is_refused_before_any_cuda_runtime_is_looked_for() {
        for (encoded, text) in [(8201, "8.2.1"), (7103, "7.1.3")] {
            let version = super::TrtVersion::decode(encoded);
            let error = super::companions_for(version).err().unwrap();
            let message = error.to_string();
            assert!(message.starts_with(&format!("TensorRT {text} is too old")), "{message}");
            assert!(
                message.contains("JetPack 4") && message.contains("use --backend cpu or ort"),
                "{message}"
            );
            assert!(!message.contains("install the CUDA runtime"), "{message}");
        }
        assert!(super::companions_for(super::TrtVersion::decode(8502)).is_ok());
    }

    #[test]
    fn a_machine_without_tensorrt_gets_an_error_naming_the_library_the_search_and_the_fix() {
        if super::load().is_ok() {
            eprintln!("skipped: TensorRT is installed here");
            return;
        }
        let error = super::load().err().unwrap();
        assert!(matches!(error, super::TrtError::NotFound { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("libnvinfer.so.10") || message.contains("libcudart"), "{message}");
        assert!(message.contains("LD_LIBRARY_PATH"), "{message}");
        assert!(message.contains(&format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH)), "{message}");
        assert!(
            message.contains("TENSORRT_LIB_DIR") || message.contains("install the CUDA runtime"),
            "{message}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_library_for_this_machine_is_named_with_the_loaders_reason() {
        let dir = tempfile::tempdir().unwrap();
        let name = "libedgert-test-nvinfer.so.10";
        std::fs::write(dir.path().join(name), b"not an ELF file").unwrap();
        let error = super::open_from(&[name], &[dir.path().to_owned()], "TensorRT's libnvinfer", "fix")
            .map(|_| ())
            .err()
            .unwrap();
        let super::TrtError::Unloadable { path, reason, .. } = &error else { panic!("{error:?}") };
        assert_eq!(*path, dir.path().join(name));
        assert!(reason.contains("ELF") || reason.contains("too short"), "{reason}");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{}: cannot load TensorRT's libnvinfer: ", path.display())),
            "{message}"
        );
    }
}
