//! `edgert inspect` of a TensorRT engine: its inputs and outputs (names, modes, types, shapes) as
//! this machine's TensorRT reads them, and what edgert's sidecar says it was built for.

use std::path::Path;
use std::process::ExitCode;

#[cfg(not(feature = "tensorrt"))]
pub fn main(_path: &Path, _json: Option<&super::json_out::JsonTo>) -> anyhow::Result<ExitCode> {
    Err(crate::Error::BackendUnavailable {
        name: "tensorrt".into(),
        reason:
            "an engine is read by TensorRT, which is not compiled into this binary (build with --features \
                 tensorrt)"
                .into(),
    }
    .into())
}

#[cfg(feature = "tensorrt")]
pub fn main(path: &Path, json: Option<&super::json_out::JsonTo>) -> anyhow::Result<ExitCode> {
    use crate::backend::tensorrt::TensorrtBackend;

    let listing = TensorrtBackend::default().list_engine(path)?;
    let bytes = std::fs::metadata(path).map_err(|e| crate::Error::read(path, e))?.len();
    if let Some(json) = json {
        let report = serde_json::json!({ "path": path, "bytes": bytes, "engine": listing });
        super::json_out::document(json, &report)?;
        if super::json_out::on_stdout(Some(json)) {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let mut out = format!("engine     {} ({bytes} bytes)\n", path.display());
    out += &format!("tensorrt   {} on a GPU of compute capability {}\n", listing.tensorrt, listing.sm);
    out += &match &listing.built {
        Some(b) => format!(
            "built      by edgert: {}, input {}, model sha256 {}\n",
            b.precision, b.profile, b.model_sha256
        ),
        None => "built      by another tool (no edgert sidecar)\n".into(),
    };
    for t in &listing.tensors {
        let dims: Vec<String> =
            t.shape.iter().map(|&d| if d < 0 { "?".into() } else { d.to_string() }).collect();
        out += &format!("{:<10} {} {} [{}]\n", t.mode, t.name, t.dtype, dims.join(", "));
    }
    super::emit(out.trim_end())?;
    Ok(ExitCode::SUCCESS)
}
