//! `edgert build-engine`: a serialized TensorRT engine from an ONNX model, built on this machine
//! (engines only run on the TensorRT release and GPU they were built for), with a sidecar saying
//! what it was built from and for.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct BuildEngineArgs {
    /// Model manifest (.toml) or ONNX file.
    #[arg(long, short, value_name = "M", alias = "onnx")]
    model: PathBuf,
    /// Engine precision (default: the model's own, INT8 for Q/DQ models).
    #[arg(long, value_enum, value_name = "P", alias = "precision")]
    #[cfg(feature = "tensorrt")]
    trt_precision: Option<crate::backend::tensorrt::BuildPrecision>,
    /// Calibrator-based INT8 for a model without Q/DQ nodes (TensorRT 8.5 to 10): images (a
    /// folder, through the manifest's preprocessing) or an .npz of inputs. Implies --trt-precision int8.
    #[arg(long, value_name = "DIR|NPZ")]
    calib: Option<PathBuf>,
    /// TensorRT's calibration cache: used instead of --calib's batches when it exists, written after.
    #[arg(long, value_name = "FILE")]
    calib_cache: Option<PathBuf>,
    /// Build for this DLA core (Xavier, Orin AGX/NX), falling back to the GPU per layer.
    #[arg(long, value_name = "N", alias = "dla")]
    trt_dla: Option<u32>,
    /// Allow 2:4 structured-sparse kernels (Ampere and Orin).
    #[arg(long, alias = "sparsity")]
    trt_sparsity: bool,
    /// Builder workspace limit [default: on a Jetson, half the free memory].
    #[arg(long, value_name = "MB", alias = "workspace")]
    trt_workspace_mb: Option<u64>,
    /// Timing cache read before and written after the build: later builds go faster.
    #[arg(long, value_name = "FILE", alias = "timing-cache")]
    trt_timing_cache: Option<PathBuf>,
    /// Batch size the engine takes.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Where to write the engine (its description goes beside it, as OUT.json).
    #[arg(long, value_name = "E")]
    out: PathBuf,
}

#[cfg(not(feature = "tensorrt"))]
pub fn main(_args: BuildEngineArgs) -> anyhow::Result<ExitCode> {
    Err(crate::Error::BackendUnavailable {
        name: "tensorrt".into(),
        reason: "not compiled into this binary (build with --features tensorrt)".into(),
    }
    .into())
}

#[cfg(feature = "tensorrt")]
pub fn main(args: BuildEngineArgs) -> anyhow::Result<ExitCode> {
    use crate::backend::tensorrt::{cache, Calibration, TensorrtBackend, TrtOptions};
    use crate::validate::calibration_set::CalibrationData;
    use crate::Error;

    if args.calib_cache.is_some() && args.calib.is_none() {
        return Err(Error::Usage(
            "--calib-cache needs --calib: the set to calibrate on when the cache is missing".into(),
        )
        .into());
    }
    if args.batch == 0 {
        return Err(Error::Usage("--batch must be at least 1".into()).into());
    }
    let model = super::load_model(&args.model)?;
    let options = TrtOptions {
        precision: args.trt_precision,
        dla_core: args.trt_dla,
        workspace_mb: args.trt_workspace_mb,
        sparsity: args.trt_sparsity,
        engine_cache: None,
        timing_cache: args.trt_timing_cache.clone(),
        calibration: match &args.calib {
            Some(set) => Some(Calibration {
                set: std::sync::Arc::new(CalibrationData::open(&model, set)?),
                cache: args.calib_cache.clone(),
            }),
            None => None,
        },
        sync: crate::gpu_sync::GpuSync::default(),
    };
    let started = std::time::Instant::now();
    let built = TensorrtBackend::with_options(options).build_placed(&model, args.batch)?;
    let (plan, info) = (&built.plan, &built.info);
    cache::write(&args.out, plan, info)?;
    let dla = match info.dla_core {
        Some(core) => {
            format!(", {} of {} layers on DLA {core}", built.placement.on_dla, built.placement.layers)
        }
        None => String::new(),
    };
    super::emit(&format!(
        "{}: {} bytes, TensorRT {}, compute {}, {}, input {}{dla}, built in {:.1} s",
        args.out.display(),
        plan.len(),
        info.tensorrt,
        info.sm,
        info.precision,
        info.profile,
        started.elapsed().as_secs_f64()
    ))?;
    Ok(ExitCode::SUCCESS)
}
