//! `--backend tensorrt`: serialized TensorRT engines, built from the model's ONNX on this machine
//! (and cached: engines are specific to the TensorRT version and GPU) or loaded from `.engine` /
//! `.plan` files. TensorRT is reached through edgert's own C API (`shim/edgert_trt.h`), compiled
//! where TensorRT's headers exist, with libnvinfer and libcudart resolved at run time.

pub(crate) mod cache;
pub(crate) mod calibration;
#[cfg(test)]
mod calibration_tests;
mod device;
pub(crate) mod engine_file;
mod error;
mod ffi;
mod handles;
mod library;
#[cfg(test)]
pub(crate) mod mock;
pub(crate) mod options;
mod session;
mod staging;
#[cfg(test)]
mod tests;
pub(crate) mod version;

use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use calibration::{Calibration, CalibrationSet};
pub use error::TrtError;
pub use options::{BuildPrecision, TrtOptions};

use super::{Backend, PrepareOptions, Prepared, Unavailable, Unsupported};
use crate::choice::Choice;
use crate::model::Model;
use crate::precision::Precision;
use crate::tensor::DataType;
use crate::{Error, Result};
use cache::{EngineCache, EngineInfo};
use calibration::Feeder;
use handles::Runtime;

/// The symbols the shim calls, and the libraries they live in (kept open while in use).
type Loaded = Result<(ffi::Symbols, Option<Arc<library::Libraries>>), TrtError>;
type Loader = fn() -> Loaded;

pub struct TensorrtBackend {
    /// The shim's functions; None when this binary was built without TensorRT's headers.
    api: Option<&'static ffi::Api>,
    load: Loader,
    options: TrtOptions,
    /// Opened on first use and kept: `check`, `version` and `prepare` each need it, and opening
    /// loads libnvinfer and creates a TensorRT runtime.
    runtime: OnceLock<Result<Arc<Runtime>, TrtError>>,
}

#[cfg(edgert_trt_shim)]
const LINKED: Option<&'static ffi::Api> = Some(&ffi::LINKED);
#[cfg(not(edgert_trt_shim))]
const LINKED: Option<&'static ffi::Api> = None;

fn load_libraries() -> Loaded {
    let libraries = library::load()?;
    Ok((libraries.symbols, Some(libraries)))
}

impl Default for TensorrtBackend {
    /// The linked shim, the machine's libraries, and the default options.
    fn default() -> Self {
        TensorrtBackend::with_options(TrtOptions::default())
    }
}

impl TensorrtBackend {
    /// The linked shim and the machine's libraries, with these options.
    pub fn with_options(options: TrtOptions) -> TensorrtBackend {
        TensorrtBackend::with(LINKED, load_libraries, options)
    }

    fn with(api: Option<&'static ffi::Api>, load: Loader, options: TrtOptions) -> TensorrtBackend {
        TensorrtBackend { api, load, options, runtime: OnceLock::new() }
    }

    /// TensorRT's runtime on this machine: shim, libraries, a supported version and a GPU.
    fn runtime(&self) -> Result<Arc<Runtime>, TrtError> {
        let open = || {
            let api = self.api.ok_or(TrtError::NoShim)?;
            let (symbols, libraries) = (self.load)()?;
            Runtime::open(api, &symbols, libraries, self.options.sync).map(Arc::new)
        };
        self.runtime.get_or_init(open).clone()
    }

    fn unavailable(&self, reason: TrtError) -> Error {
        Error::unavailable("tensorrt", reason)
    }

    /// What to do when libnvinfer was found only through `TENSORRT_LIB_DIR` (builds need its
    /// folder on `LD_LIBRARY_PATH`).
    pub fn search_path_fix(&self) -> Option<String> {
        self.runtime().ok().and_then(|r| r.search_path_fix())
    }

    /// Whether this TensorRT builds models in their own types only (11 and later: no precision flags).
    pub fn builds_typed(&self) -> std::result::Result<bool, TrtError> {
        Ok(!self.runtime()?.version.has_precision_flags())
    }

    /// The device's DLA cores (Xavier and Orin AGX and NX: 1 or 2; Orin Nano and desktop GPUs: 0).
    pub fn dla_cores(&self) -> std::result::Result<u32, TrtError> {
        Ok(self.runtime()?.device.dla_cores.max(0) as u32)
    }

    /// Prepares a serialized engine file (`trtexec --saveEngine`, Ultralytics `.engine`, or
    /// `edgert build-engine`), refusing one built for another TensorRT or GPU with how to rebuild.
    pub fn prepare_engine_file(&self, path: &Path, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let (engine, _) = self.load_engine_file(path)?;
        session::check_io_memory(&engine, path, options.batch, options.memory)?;
        session::TrtPrepared::checked(engine, path)
    }

    /// An engine file's inputs and outputs as TensorRT reads them (`edgert inspect`), whatever
    /// their types and number, with what edgert's sidecar says it was built for.
    pub fn list_engine(&self, path: &Path) -> Result<EngineListing> {
        let (engine, built) = self.load_engine_file(path)?;
        let runtime = self.runtime().map_err(|r| self.unavailable(r))?;
        let tensors = engine
            .tensors
            .iter()
            .map(|t| ListedTensor {
                name: t.name.clone(),
                mode: if t.is_input { "input" } else { "output" },
                dtype: ffi::data_type(t.dtype),
                shape: t.dims.clone(),
                format: t.format.clone(),
            })
            .collect();
        Ok(EngineListing { tensorrt: runtime.version.key(), sm: runtime.sm(), built, tensors })
    }

    fn load_engine_file(&self, path: &Path) -> Result<(handles::Engine, Option<EngineInfo>)> {
        let runtime = self.runtime().map_err(|r| self.unavailable(r))?;
        let refused = |reason: &dyn std::fmt::Display| {
            let fix =
                "Engines only run on the TensorRT release and GPU they were built for: rebuild it on this \
                       machine with `edgert build-engine`";
            Error::input(path, format!("TensorRT cannot run this engine: {reason}. {fix}"))
        };
        let built = cache::read_info(path)?;
        if let Some(reason) = built.as_ref().and_then(|i| i.mismatch(&runtime.version.key(), &runtime.sm())) {
            return Err(refused(&reason));
        }
        if let Some(core) = self.options.dla_core {
            check_dla(&runtime, core)?;
        }
        let plan = engine_file::read_plan(path)?;
        let engine = runtime.load(&plan, self.options.dla_core).map_err(|e| refused(&e))?;
        Ok((engine, built))
    }

    /// A manifest's engine, whose input must be the one the manifest names.
    fn prepare_engine_for(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        let prepared = self.prepare_engine_file(&model.file, options)?;
        let (wanted, found) = (&model.manifest.input.name, &prepared.inputs()[0].name);
        if wanted != found {
            let reason = format!("input '{wanted}' is not in the engine (its input: {found})");
            return Err(Error::manifest(model.source_path(), reason));
        }
        Ok(prepared)
    }

    /// A serialized engine built from a model, without where TensorRT placed the layers.
    #[cfg(test)]
    pub fn build(&self, model: &Model, batch: usize) -> Result<(Vec<u8>, EngineInfo)> {
        self.build_placed(model, batch).map(|built| (built.plan, built.info))
    }

    /// Builds a serialized engine from a model, with where TensorRT placed the layers: what
    /// `prepare` and `edgert build-engine` do (`build-engine` and `doctor` say the placements).
    pub fn build_placed(&self, model: &Model, batch: usize) -> Result<Built> {
        model.onnx("building an engine")?;
        let runtime = self.runtime().map_err(|r| self.unavailable(r))?;
        let (info, feeder) = planned(&runtime, model, batch, &self.options)?;
        let (plan, placement) = build_with(&runtime, model, batch, &self.options, feeder)?;
        Ok(Built { plan, info, placement })
    }
}

/// The backend against the mock shim, for other modules' tests (`doctor`): a TensorRT 10.3 on an
/// Orin (2 DLA cores) whose calls are `api`'s (`mock::API`, `API_WRONG_OUTPUTS`, `API_BUILD_FAILS`,
/// `API_NO_DLA_LAYERS`).
#[cfg(test)]
pub(crate) fn mocked(api: &'static ffi::Api, options: TrtOptions) -> TensorrtBackend {
    TensorrtBackend::with(Some(api), tests::orin_trt10, options)
}

/// `mocked` with TensorRT 11.1, which has no precision flags.
#[cfg(test)]
pub(crate) fn mocked_trt11(options: TrtOptions) -> TensorrtBackend {
    TensorrtBackend::with(Some(&mock::API), tests::orin_trt11, options)
}

/// A built engine: the plan, what it was built from and for, and where its layers run.
pub struct Built {
    pub plan: Vec<u8>,
    pub info: EngineInfo,
    pub placement: Placement,
}

/// Where a build placed the network's layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub layers: u32,
    /// Of `layers`, those on the DLA core asked for (0 without one): the rest run on the GPU.
    pub on_dla: u32,
}

/// What `list_engine` found: the engine's tensors on this machine's TensorRT and GPU.
#[derive(Debug, serde::Serialize)]
pub struct EngineListing {
    pub tensorrt: String,
    pub sm: String,
    /// edgert's sidecar, when edgert built the engine.
    pub built: Option<EngineInfo>,
    pub tensors: Vec<ListedTensor>,
}

#[derive(Debug, serde::Serialize)]
pub struct ListedTensor {
    pub name: String,
    /// `input` or `output`.
    pub mode: &'static str,
    pub dtype: DataType,
    /// `-1`: dynamic, set per run.
    pub shape: Vec<i64>,
    /// TensorRT's description of the memory format (linear, or a vectorized one edgert refuses).
    pub format: Option<String>,
}

/// The precision an engine of `model` is built in: the one asked for, else INT8 when
/// calibrating, else what the model's weights are. A Q/DQ model builds with INT8 and FP16 both
/// (`best`): TensorRT needs the INT8 flag for its Q/DQ nodes, and FP16 keeps the layers between
/// them out of FP32; an FP8 Q/DQ model needs the FP8 flag instead. DLA runs FP16 and INT8 only, so
/// FP32 becomes FP16 there, as trtexec does. TensorRT 11 has no precision flags: it builds the
/// types the model has (`check_request` refuses asking for others).
fn precision(runtime: &Runtime, model: &Model, options: &TrtOptions) -> BuildPrecision {
    if !runtime.version.has_precision_flags() {
        return BuildPrecision::Typed;
    }
    let asked = match (options.precision, &options.calibration) {
        (Some(precision), _) => precision,
        (None, Some(_)) => BuildPrecision::Int8,
        (None, None) => BuildPrecision::for_weights(model.precision()),
    };
    match asked {
        _ if model.precision() == Precision::Fp8 => BuildPrecision::Fp8,
        _ if model.precision() == Precision::Int8Qdq => BuildPrecision::Best,
        BuildPrecision::Fp32 if options.dla_core.is_some() => BuildPrecision::Fp16,
        other => other,
    }
}

/// TensorRT 11 builds a model in the types it has: a precision, calibration or DLA core that would
/// need others is refused with what to give instead.
fn check_typed(runtime: &Runtime, model: &Model, options: &TrtOptions) -> Result<()> {
    let own = BuildPrecision::for_weights(model.precision());
    let path = model.source_path();
    let version = &runtime.version;
    if let Some(asked) = options.precision.filter(|&asked| asked != own) {
        let reason = format!(
            "--trt-precision {}: TensorRT {version} builds a model in the types it has ({}) and has no flag to \
             change them: leave --trt-precision out, or give a model of that precision (models/variants.py \
             makes FP16 and Q/DQ ones)",
            asked.name(),
            model.precision().name()
        );
        return Err(Error::input(path, reason));
    }
    if options.dla_core.is_some() && model.precision() == Precision::Fp32 {
        let reason = format!(
            "--trt-dla: DLA runs FP16 and INT8 only, and TensorRT {version} builds this FP32 model as FP32: give \
             an FP16 or Q/DQ model"
        );
        return Err(Error::input(path, reason));
    }
    Ok(())
}

/// Refuses, before anything is built or cached, what TensorRT would refuse or do wrong: a
/// precision the model cannot build in, a DLA core the device lacks, a batch a fixed-shape
/// model cannot take.
fn check_request(runtime: &Runtime, model: &Model, batch: usize, options: &TrtOptions) -> Result<()> {
    let path = model.source_path();
    if !runtime.version.has_precision_flags() {
        check_typed(runtime, model, options)?;
    }
    if model.precision() == Precision::Fp8 && !runtime.version.has_fp8() {
        let reason = format!(
            "has FP8 Q/DQ nodes, and TensorRT {} has no FP8 kernels (10 and later have, on GPUs of compute \
             capability 8.9 and up)",
            runtime.version
        );
        return Err(Error::input(path, reason));
    }
    let quantized = matches!(model.precision(), Precision::Int8Qdq | Precision::Fp8);
    if let (true, Some(asked @ (BuildPrecision::Fp32 | BuildPrecision::Fp16))) =
        (quantized, options.precision)
    {
        let flag = if model.precision() == Precision::Fp8 { "FP8" } else { "INT8" };
        let reason = format!(
            "is quantized (Q/DQ nodes), which TensorRT builds only with {flag} enabled, not --trt-precision {}: \
             leave --trt-precision out{}",
            asked.name(),
            if flag == "INT8" { ", or give int8 or best" } else { "" }
        );
        return Err(Error::input(path, reason));
    }
    let building = precision(runtime, model, options);
    if !quantized && options.calibration.is_none() && building.int8() {
        let reason = format!(
            "--trt-precision {}: INT8 needs scales, and the model has no Q/DQ nodes: give a Q/DQ model \
             (models/variants.py makes one) or a calibration set (--calib)",
            building.name()
        );
        return Err(Error::input(path, reason));
    }
    if let Some(core) = options.dla_core {
        check_dla(runtime, core)?;
        if options.precision == Some(BuildPrecision::Fp32) {
            eprintln!("edgert: DLA runs FP16 and INT8 only: building in FP16, as trtexec does");
        }
    }
    let name = &model.manifest.input.name;
    let declared = model.inputs.iter().find(|t| &t.name == name).map(|t| t.shape.clone()).unwrap_or_default();
    let wanted = model.input_shape(batch);
    let fixed = |(d, w): (&Option<usize>, &usize)| d.is_some_and(|d| d != *w);
    if declared.len() == wanted.len() && declared.iter().zip(&wanted).any(fixed) {
        let text = |dims: Vec<String>| dims.join("x");
        let declared = text(declared.iter().map(|d| d.map_or("?".into(), |d| d.to_string())).collect());
        let reason = format!(
            "input '{name}' has the fixed shape {declared}, and TensorRT builds it at that shape only, not \
             {}: export the model with a dynamic batch (torch.onnx.export's dynamic_axes) or run it at the \
             batch it has",
            text(wanted.iter().map(|d| d.to_string()).collect())
        );
        return Err(Error::input(path, reason));
    }
    Ok(())
}

/// Refuses a DLA core the device does not have: TensorRT would quietly run on the GPU.
fn check_dla(runtime: &Runtime, core: u32) -> Result<()> {
    let cores = runtime.device.dla_cores;
    if i64::from(core) >= i64::from(cores) {
        return Err(Error::Usage(format!(
            "--trt-dla {core}: this device has {cores} DLA cores (Xavier and Orin AGX or NX have 1 or 2, Orin \
             Nano and other GPUs none)"
        )));
    }
    Ok(())
}

/// The calibration set's feeder, once the calibration makes sense for this model and TensorRT.
fn feeder(runtime: &Runtime, model: &Model, batch: usize, options: &TrtOptions) -> Result<Option<Feeder>> {
    let Some(calibration) = &options.calibration else {
        return Ok(None);
    };
    if !runtime.version.has_int8_calibrator() {
        return Err(Error::Usage(format!(
            "--calib: TensorRT {} has no INT8 calibrator (TensorRT 11 removed it); quantize the model with \
             Q/DQ nodes instead (models/variants.py)",
            runtime.version
        )));
    }
    let precision = precision(runtime, model, options);
    if !precision.int8() {
        return Err(Error::Usage(format!(
            "--calib calibrates INT8: it needs precision int8 or best, not {}",
            precision.name()
        )));
    }
    if model.precision() == Precision::Int8Qdq {
        let reason = "is already quantized (Q/DQ nodes), and TensorRT takes its INT8 scales from them: \
                      calibrate its FP32 model, or build this one without --calib";
        return Err(Error::input(model.source_path(), reason));
    }
    if model.inputs.len() != 1 {
        let reason = format!("has {} inputs; calibration feeds models with one", model.inputs.len());
        return Err(Error::input(model.source_path(), reason));
    }
    Feeder::open(model, calibration.set.clone(), batch).map(Some)
}

/// What an engine of `model` at `batch` would be built as, on this runtime.
fn engine_info(
    runtime: &Runtime,
    model: &Model,
    batch: usize,
    options: &TrtOptions,
    feeder: Option<&Feeder>,
) -> Result<EngineInfo> {
    let precision = precision(runtime, model, options);
    let shape: Vec<String> = model.input_shape(batch).iter().map(|d| d.to_string()).collect();
    Ok(EngineInfo {
        model_sha256: model.sha256.clone(),
        tensorrt: runtime.version.key(),
        sm: runtime.sm(),
        device: runtime.identity.key(),
        tactic_libraries: runtime.identity.tactic_libraries.clone(),
        dla_core: options.dla_core,
        precision: precision.name().into(),
        profile: shape.join("x"),
        calibration_sha256: feeder.map(Feeder::digest).transpose()?,
        sparsity: options.sparsity,
    })
}

/// The engine to build, and the calibration set's feeder when calibrating.
fn planned(
    runtime: &Runtime,
    model: &Model,
    batch: usize,
    options: &TrtOptions,
) -> Result<(EngineInfo, Option<Feeder>)> {
    check_request(runtime, model, batch, options)?;
    let feeder = feeder(runtime, model, batch, options)?;
    let info = engine_info(runtime, model, batch, options, feeder.as_ref())?;
    Ok((info, feeder))
}

/// The model's path as the ONNX parser takes it (absolute), to find external weights beside it.
fn absolute_c_path(path: &Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    // A path from the OS has no NUL byte.
    std::ffi::CString::new(absolute.as_os_str().as_bytes()).unwrap_or_default()
}

/// The workspace an engine build may take, in MiB: `--trt-workspace-mb`, else, on an integrated
/// GPU (a Jetson, whose GPU memory is the system's), half the memory free when TensorRT opened,
/// else None: TensorRT's default, all of the device's memory.
fn workspace(runtime: &Runtime, options: &TrtOptions) -> Option<u64> {
    match options.workspace_mb {
        Some(mib) => Some(mib),
        None if runtime.device.integrated == 1 => runtime.identity.free_mib.map(|free| (free / 2).max(1)),
        None => None,
    }
}

/// Reads a cache file that may not exist yet.
fn read_if_present(file: Option<&Path>) -> Result<Vec<u8>> {
    match file {
        Some(file) => Ok(crate::infile::read_if_present(file, crate::infile::MODEL)?.unwrap_or_default()),
        None => Ok(Vec::new()),
    }
}

fn write_cache_file(file: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(file, bytes).map_err(|e| Error::Write { path: file.to_owned(), reason: e.to_string() })
}

fn build_with(
    runtime: &Runtime,
    model: &Model,
    batch: usize,
    options: &TrtOptions,
    mut feeder: Option<Feeder>,
) -> Result<(Vec<u8>, Placement)> {
    let path = &model.file;
    let precision = precision(runtime, model, options);
    let onnx = model.onnx_bytes()?;
    let timing_cache = read_if_present(options.timing_cache.as_deref())?;
    let calibration_cache_file = options.calibration.as_ref().and_then(|c| c.cache.as_deref());
    let calibration_cache = read_if_present(calibration_cache_file)?;
    // One profile, pinned to the batch asked for: a dynamic batch in the model becomes `batch`.
    let shape: Vec<i64> = model.input_shape(batch).iter().map(|&d| d as i64).collect();
    if shape.len() > ffi::MAX_DIMS {
        return Err(Error::input(path, "the input has more than 8 dimensions, TensorRT's limit"));
    }
    let mut dims = [0i64; ffi::MAX_DIMS];
    dims[..shape.len()].copy_from_slice(&shape);
    let calibrator = feeder.as_mut().map(|f| f.raw(&calibration_cache));
    let model_path = absolute_c_path(path);
    let mut build_options = ffi::BuildOptions {
        fp16: precision.fp16() as i32,
        int8: precision.int8() as i32,
        sparsity: options.sparsity as i32,
        dla_core: options.dla_core.map_or(-1, |c| c as i32),
        workspace_bytes: workspace(runtime, options).map_or(0, |mib| (mib as i64).saturating_mul(1 << 20)),
        timing_cache: timing_cache.as_ptr().cast(),
        timing_cache_bytes: timing_cache.len(),
        profile_nb_dims: shape.len() as i32,
        profile_min: dims,
        profile_opt: dims,
        profile_max: dims,
        calibrator: calibrator.as_ref().map_or(std::ptr::null(), |c| c as *const ffi::Calibrator),
        model_path: model_path.as_ptr(),
        fp8: precision.fp8() as i32,
    };
    if let (None, Some(mib)) = (options.workspace_mb, workspace(runtime, options)) {
        eprintln!(
            "edgert: the build may take {mib} MiB of workspace, half the memory free on this integrated GPU \
             (--trt-workspace-mb sets it)"
        );
    }
    let mut built = runtime.build(&onnx, &build_options);
    // A timing cache from another TensorRT release or GPU only costs this build its head start:
    // built without it, and replaced by the one this build writes.
    if let (Err(TrtError::TimingCacheRefused(reason)), Some(file)) = (&built, &options.timing_cache) {
        eprintln!("edgert: {}: {reason}; building without it, and replacing it", file.display());
        (build_options.timing_cache, build_options.timing_cache_bytes) = (std::ptr::null(), 0);
        built = runtime.build(&onnx, &build_options);
    }
    // The calibration set's own error (an unreadable image) says more than TensorRT's.
    if let Some(error) = feeder.as_mut().and_then(|f| f.error.take()) {
        return Err(error);
    }
    let (plan, new_timing_cache, report) = built.map_err(|reason| {
        let fix = runtime.search_path_fix().map(|fix| format!(". {fix}")).unwrap_or_default();
        Error::input(path, format!("TensorRT {} could not build an engine: {reason}{fix}", runtime.version))
    })?;
    let placement =
        Placement { layers: report.layers.max(0) as u32, on_dla: report.dla_layers.max(0) as u32 };
    if let (Some(core), 0) = (options.dla_core, placement.on_dla) {
        eprintln!(
            "edgert: warning: none of the {} layers of {} can run on DLA {core}: the engine runs on the GPU",
            placement.layers,
            path.display()
        );
    }
    if let Some(file) = &options.timing_cache {
        if !new_timing_cache.is_empty() {
            write_cache_file(file, &new_timing_cache)?;
        }
    }
    if let (Some(file), Some(feeder)) = (calibration_cache_file, &feeder) {
        if !feeder.cache_out.is_empty() {
            write_cache_file(file, &feeder.cache_out)?;
        }
    }
    Ok((plan, placement))
}

impl Backend for TensorrtBackend {
    fn name(&self) -> &'static str {
        "tensorrt"
    }

    fn check(&self) -> Result<(), Unavailable> {
        Ok(self.runtime().map(|_| ())?)
    }

    fn version(&self) -> Option<String> {
        self.runtime().ok().map(|r| {
            let device = r.identity.key().map(|d| format!(", {d}")).unwrap_or_default();
            let plugins = if r.plugins { "" } else { ", without libnvinfer_plugin" };
            let workspace = match workspace(&r, &self.options) {
                Some(mib) => format!("; engine builds take at most {mib} MiB of workspace"),
                None => String::new(),
            };
            format!("TensorRT {} (sm {}{device}{plugins}){workspace}", r.version.key(), r.sm())
        })
    }

    fn supports(&self, precision: Precision) -> Result<(), Unsupported> {
        match precision {
            Precision::Fp32 | Precision::Fp16 | Precision::Int8Qdq | Precision::Engine => Ok(()),
            Precision::Fp8 => {
                let runtime = self.runtime().map_err(Unavailable::from)?;
                let sm = (runtime.device.sm_major, runtime.device.sm_minor);
                // A TensorRT without FP8 kernels is refused when the model is prepared, with its fix.
                if sm >= (8, 9) {
                    Ok(())
                } else {
                    Err(Unsupported::Fp8Compute { sm: runtime.sm() })
                }
            }
        }
    }

    /// The engine for this model, batch, precision and machine: from the engine cache, or built
    /// now (minutes on a Jetson) and cached.
    fn prepare(&self, model: &Model, options: &PrepareOptions) -> Result<Box<dyn Prepared>> {
        if model.is_engine() {
            return self.prepare_engine_for(model, options);
        }
        let runtime = self.runtime().map_err(|r| self.unavailable(r))?;
        let trt = &self.options;
        let (info, feeder) = planned(&runtime, model, options.batch, trt)?;
        let cache = EngineCache { dir: trt.engine_cache.clone().unwrap_or_else(EngineCache::default_dir) };
        // A cache that cannot be read is built around, as one that cannot be written is.
        let stored = cache.load(&info).unwrap_or_else(|e| {
            eprintln!("edgert: warning: {}; building the engine", crate::error::one_line(&e));
            None
        });
        let cached = match stored {
            // An entry TensorRT refuses (a TensorRT update the key missed, a damaged file) is
            // built again, as a missing one is.
            Some(plan) => match runtime.load(&plan, trt.dla_core) {
                Ok(engine) => Some(engine),
                Err(reason) => {
                    let entry = cache.path(&info);
                    eprintln!(
                        "edgert: TensorRT cannot load {}: {reason}; building it again",
                        entry.display()
                    );
                    None
                }
            },
            None => None,
        };
        let engine = match cached {
            Some(engine) => engine,
            None => {
                let (model_path, dir) = (model.file.display(), cache.dir.display());
                eprintln!("edgert: building a TensorRT engine for {model_path} (cached in {dir})");
                let (plan, _) = build_with(&runtime, model, options.batch, trt, feeder)?;
                // A build can take minutes: a cache that cannot take it costs the next run a
                // build, not this run its engine.
                if let Err(e) = cache.store(&info, &plan) {
                    eprintln!(
                        "edgert: warning: {}; the engine just built is used, and will be built again next time",
                        crate::error::one_line(&e)
                    );
                }
                runtime.load(&plan, trt.dla_core).map_err(|reason| {
                    Error::input(
                        &model.file,
                        format!("TensorRT cannot load the engine it just built: {reason}"),
                    )
                })?
            }
        };
        session::check_io_memory(&engine, &model.file, options.batch, options.memory)?;
        session::TrtPrepared::checked(engine, &model.file)
    }
}
