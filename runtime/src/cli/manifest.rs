//! `edgert manifest`: the manifest edgert would use for a bare model, written out with every key
//! commented, for a user to keep beside the model or to edit where edgert guessed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::{emit, ModelArgs};
use crate::model::manifest_text;
use crate::{Error, Result};

#[derive(Args)]
pub struct ManifestArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Write it here (in the model's folder or above it) rather than to stdout (where it is
    /// written to be saved beside the model).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn main(args: ManifestArgs) -> anyhow::Result<ExitCode> {
    if args.model.model.extension().is_some_and(|e| e == "toml") {
        let why = format!("{} is a manifest already; give the model file", args.model.model.display());
        return Err(Error::Usage(why).into());
    }
    if crate::model::is_engine_file(&args.model.model) {
        let why = "an engine's manifest is written from its ONNX model: run `edgert manifest` on that";
        return Err(Error::input(&args.model.model, why).into());
    }
    if let Some(out) = &args.output {
        if out.extension().is_none_or(|e| e != "toml") {
            return Err(Error::Usage(format!("{}: a manifest's name ends in .toml", out.display())).into());
        }
        super::check_outputs([&args.output])?;
    }
    let mut model = args.model.load()?;
    // Printed, it is meant to be saved beside the model.
    let folder = match &args.output {
        Some(out) => out.parent().unwrap_or(Path::new("")),
        None => model.file.parent().unwrap_or(Path::new("")),
    };
    let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder }.to_owned();
    let relative = |path: &Path| beside(&folder, path);
    let mut manifest = model.manifest.clone();
    manifest.model.file = relative(&model.file)?;
    manifest.model.labels = manifest.model.labels.as_deref().map(relative).transpose()?;
    if manifest.model.labels.is_none() {
        manifest.model.names = model.labels.take();
    }
    let text = manifest_text::commented(&manifest, &model.notes);
    match &args.output {
        Some(out) => {
            crate::outfile::write_atomically(out, |w| std::io::Write::write_all(w, text.as_bytes()))
                .map_err(|e| Error::Write { path: out.clone(), reason: e.to_string() })?;
            eprintln!("edgert: wrote {}", out.display());
        }
        None => emit(text.trim_end())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` relative to `folder`, where the manifest goes: a manifest names files in its folder or
/// below it.
fn beside(folder: &Path, path: &Path) -> Result<PathBuf> {
    let absolute = |p: &Path| std::path::absolute(p).map_err(|e| Error::read(p, e));
    let (folder_abs, path_abs) = (absolute(folder)?, absolute(path)?);
    path_abs.strip_prefix(&folder_abs).map(Path::to_owned).map_err(|_| {
        Error::Usage(format!(
            "{} is not in the manifest's folder {} or below it: write the manifest beside the model",
            path.display(),
            folder.display()
        ))
    })
}
