//! The backend flags every command that runs a model takes (`run`, `bench`, `validate`, `tune`):
//! where ONNX Runtime is and how `--backend ort` runs it (`--ort-*`), and how `--backend tensorrt`
//! builds engines and where it keeps them (`--trt-*`). They become a `BackendOptions` value that
//! `backend::select_with` hands to each backend.

#[cfg(any(feature = "ort", feature = "tensorrt"))]
use std::path::PathBuf;

use clap::Args;

use crate::backend::{Pinning, PrepareOptions};
use crate::limits::MemoryLimit;

#[cfg(feature = "ort")]
use crate::backend::ort::{OrtOptions, Provider};
#[cfg(feature = "tensorrt")]
use crate::backend::tensorrt::{BuildPrecision, TrtOptions};
use crate::backend::BackendOptions;
use crate::gpu_sync::GpuSync;

/// What a backend flag takes, from this binary's registry: the backends built in (in priority
/// order), those built without and the feature that adds each, and `gpu`, `gpu-or-cpu`.
pub fn backend_help(what: &str) -> String {
    let built: Vec<String> = crate::backend::registry().iter().map(|b| b.name().to_string()).collect();
    let mut help = format!("{what}: {}", built.join(", "));
    let missing: Vec<String> = crate::backend::NOT_COMPILED
        .iter()
        .map(|(name, feature)| format!("{name} (feature {feature})"))
        .collect();
    if !missing.is_empty() {
        help += &format!("; not built in: {}", missing.join(", "));
    }
    help + "; gpu: the best usable GPU backend, or an error; gpu-or-cpu: the best usable GPU backend, else cpu, \
        saying so. `edgert info` says which are usable here"
}

#[derive(Args, Clone)]
pub struct BackendFlags {
    /// Intra-op threads (at most this machine's CPUs, unless --force-threads).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Take --threads as given, even past this machine's CPUs.
    #[arg(long)]
    force_threads: bool,
    /// Leave the `cpu` backend's threads to the OS scheduler rather than pin them one to a CPU
    /// (the first --threads of those this process may run on: see `taskset`).
    #[arg(long)]
    no_pin: bool,
    /// The most memory one input batch or model tensor may take [default: half of this
    /// machine's memory].
    #[arg(long, env = "EDGERT_MAX_MEMORY_MB", value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    max_memory_mb: Option<u64>,
    /// How threads wait for the GPU: block (sleep until it signals: no CPU core spent), spin (the
    /// lowest wake-up latency, a core busy for every wait) or yield.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = GpuSync::Block)]
    gpu_sync: GpuSync,
    #[cfg(feature = "ort")]
    #[command(flatten)]
    ort: OrtFlags,
    #[cfg(feature = "tensorrt")]
    #[command(flatten)]
    trt: TrtFlags,
    #[cfg(not(feature = "tensorrt"))]
    #[command(flatten)]
    _trt: TrtFlagsNotBuilt,
}

impl BackendFlags {
    /// Threads and the memory limit, at batch 1: `--threads` past this machine's CPUs is lowered
    /// to them, with a warning, since more threads than cores only take turns.
    pub fn prepare(&self) -> PrepareOptions {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut threads = self.threads as usize;
        if threads > cpus && !self.force_threads {
            eprintln!("edgert: warning: --threads {threads} is more than the {cpus} CPUs here; using {cpus} (--force-threads to insist)");
            threads = cpus;
        }
        let memory = self.max_memory_mb.map_or_else(MemoryLimit::of_machine, MemoryLimit::from_mib);
        let pinning = if self.no_pin { Pinning::Off } else { Pinning::From(0) };
        PrepareOptions { batch: 1, threads, memory, pinning, gpu_sync: self.gpu_sync }
    }

    /// Whether `--threads` past the CPUs is taken as given.
    pub fn force_threads(&self) -> bool {
        self.force_threads
    }

    /// Whether `backend` runs on this machine's CPUs with these flags (cpu, or ort's CPU provider).
    pub fn on_cpu(&self, backend: &str) -> bool {
        match backend {
            "cpu" => true,
            #[cfg(feature = "ort")]
            "ort" => self.ort.ort_provider == Provider::Cpu,
            _ => false,
        }
    }

    pub fn options(&self) -> BackendOptions {
        BackendOptions {
            #[cfg(feature = "ort")]
            ort: self.ort.options(),
            #[cfg(feature = "tensorrt")]
            tensorrt: TrtOptions { sync: self.gpu_sync, ..self.trt.options() },
        }
    }
}

#[cfg(feature = "ort")]
#[derive(Args, Clone)]
struct OrtFlags {
    /// ONNX Runtime library for `--backend ort` (else ORT_DYLIB_PATH, else the usual locations).
    #[arg(long, value_name = "FILE")]
    ort_lib: Option<PathBuf>,
    /// ONNX Runtime execution provider; cuda and tensorrt need an ONNX Runtime GPU build.
    #[arg(long, value_enum, default_value_t = Provider::Cpu)]
    ort_provider: Provider,
    /// TensorRT provider: allow FP16 kernels.
    #[arg(long)]
    ort_trt_fp16: bool,
    /// TensorRT provider: INT8 (Q/DQ models).
    #[arg(long)]
    ort_trt_int8: bool,
    /// TensorRT provider: cache built engines in this folder.
    #[arg(long, value_name = "DIR")]
    ort_trt_cache: Option<PathBuf>,
    /// TensorRT provider: run on this DLA core.
    #[arg(long, value_name = "N")]
    ort_trt_dla: Option<u32>,
}

#[cfg(feature = "ort")]
impl OrtFlags {
    fn options(&self) -> OrtOptions {
        OrtOptions {
            library: self.ort_lib.clone(),
            provider: self.ort_provider,
            trt_fp16: self.ort_trt_fp16,
            trt_int8: self.ort_trt_int8,
            trt_cache: self.ort_trt_cache.clone(),
            trt_dla: self.ort_trt_dla,
        }
    }
}

#[cfg(feature = "tensorrt")]
#[derive(Args, Clone)]
struct TrtFlags {
    /// TensorRT: engine precision (default: the model's own, INT8 for Q/DQ models).
    #[arg(long, value_enum, value_name = "P")]
    trt_precision: Option<BuildPrecision>,
    /// TensorRT: run on this DLA core (Xavier, Orin AGX/NX), falling back to the GPU per layer.
    #[arg(long, value_name = "N")]
    trt_dla: Option<u32>,
    /// TensorRT: builder workspace limit.
    #[arg(long, value_name = "MB")]
    trt_workspace_mb: Option<u64>,
    /// TensorRT: allow 2:4 structured-sparse kernels (Ampere and Orin).
    #[arg(long)]
    trt_sparsity: bool,
    /// TensorRT: folder of built engines (default: EDGERT_ENGINE_CACHE, else ~/.cache/edgert/engines).
    #[arg(long, value_name = "DIR")]
    trt_engine_cache: Option<PathBuf>,
    /// TensorRT: timing cache read before and written after each build.
    #[arg(long, value_name = "FILE")]
    trt_timing_cache: Option<PathBuf>,
}

#[cfg(feature = "tensorrt")]
impl TrtFlags {
    fn options(&self) -> TrtOptions {
        TrtOptions {
            precision: self.trt_precision,
            dla_core: self.trt_dla,
            workspace_mb: self.trt_workspace_mb,
            sparsity: self.trt_sparsity,
            engine_cache: self.trt_engine_cache.clone(),
            timing_cache: self.trt_timing_cache.clone(),
            calibration: None,
            sync: GpuSync::default(),
        }
    }
}

/// TensorRT's flags in a binary built without it: hidden, and taken only to say how to get them,
/// rather than clap's "unexpected argument".
#[cfg(not(feature = "tensorrt"))]
#[derive(Args, Clone)]
struct TrtFlagsNotBuilt {
    #[arg(long, hide = true, value_parser = needs_tensorrt)]
    trt_precision: Option<String>,
    #[arg(long, hide = true, value_parser = needs_tensorrt)]
    trt_dla: Option<String>,
    #[arg(long, hide = true, value_parser = needs_tensorrt)]
    trt_workspace_mb: Option<String>,
    #[arg(long, hide = true, num_args = 0, default_missing_value = "", value_parser = needs_tensorrt)]
    trt_sparsity: Option<String>,
    #[arg(long, hide = true, value_parser = needs_tensorrt)]
    trt_engine_cache: Option<String>,
    #[arg(long, hide = true, value_parser = needs_tensorrt)]
    trt_timing_cache: Option<String>,
}

#[cfg(not(feature = "tensorrt"))]
fn needs_tensorrt(_: &str) -> Result<String, String> {
    Err("this edgert is built without TensorRT: build it with --features tensorrt on the board (docs/gpu.md)"
        .into())
}
