//! `edgert run`: predictions for images, folders of images and labelled tensor sets, or for a
//! frame source through the camera pipeline (`run_source`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::json_out::{JsonTo, Lines};
use super::prediction_text::{prediction_json, prediction_line};
use super::ModelArgs;
use crate::backend;
use crate::capture;
use crate::pipeline::{Pipeline, Sample};
use crate::postprocess::Prediction;
use crate::saved_outputs;
use crate::Error;
use clap::{ArgGroup, Args};

#[derive(Args)]
#[command(group(ArgGroup::new("what").required(true).args(["input", "source"])))]
pub struct RunArgs {
    #[command(flatten)]
    backend_flags: super::backend_args::BackendFlags,
    #[command(flatten)]
    model: ModelArgs,
    /// An image, a folder of images, or an .npz with `x` samples (and `y` labels).
    #[arg(long, short, value_name = "PATH")]
    input: Option<PathBuf>,
    #[command(flatten)]
    pub(super) source: super::source_args::SourceArgs,
    /// With --source: stop after this many frames.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    frames: Option<u64>,
    /// With --source: stop capturing after this many seconds.
    #[arg(long, value_parser = super::source_args::seconds)]
    duration_s: Option<f64>,
    #[arg(long, default_value = "cpu", help = super::backend_args::backend_help("The backend that runs the model"))]
    backend: String,
    /// Classes to show for classifiers (default: the manifest's top_k).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    top_k: Option<u16>,
    /// One JSON object per input or frame (JSON Lines; with --source, a summary at the end): alone,
    /// on stdout in place of the text lines; with FILE, written there as they come.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<JsonTo>,
    /// With --input: every output of each input, whole, as one .npz per input under DIR (arrays
    /// named as the model names its outputs), to compare with another runtime.
    #[arg(long, value_name = "DIR")]
    save_outputs: Option<PathBuf>,
}

/// What each prediction prints, and where its outputs are saved.
struct Emit<'a> {
    lines: Lines,
    save: Option<(&'a Path, Vec<String>)>,
}

impl Emit<'_> {
    /// Predicts `sample` and saves its outputs where asked; `at` is the input given, the file in it,
    /// and the sample's index in a tensor set.
    fn one(
        &self,
        pipeline: &mut Pipeline,
        sample: Sample,
        at: (&Path, &Path, Option<usize>),
    ) -> crate::Result<Prediction> {
        let (prediction, outputs) = pipeline.predict_with_outputs(sample)?;
        if let Some((dir, names)) = &self.save {
            let (input, file, index) = at;
            saved_outputs::write(&saved_outputs::path_for(dir, input, file, index), names, &outputs)?;
        }
        Ok(prediction)
    }

    /// Prints a prediction of input `name`, with its label when known.
    fn print(&mut self, name: &str, prediction: &Prediction, label: Option<i64>) -> anyhow::Result<()> {
        self.lines
            .result(|| prediction_line(name, prediction, label), || prediction_json(name, prediction, label))
    }
}

pub fn main(args: RunArgs, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    args.source.check(&[("--frames", args.frames.is_some()), ("--duration-s", args.duration_s.is_some())])?;
    if args.save_outputs.is_some() && args.input.is_none() {
        // clap's `requires` does not see through the `what` group.
        let why = "--save-outputs saves the outputs of --input's images or tensors; give --input";
        return Err(crate::Error::Usage(why.into()).into());
    }
    let mut model = args.model.load()?;
    if let (Some(k), crate::model::TaskSpec::Classification(spec)) = (args.top_k, &mut model.manifest.task) {
        spec.top_k = k as usize;
    }
    let selected = backend::select_with(&args.backend, &args.backend_flags.options())?;
    if let Some(reason) = &selected.fallback {
        eprintln!("edgert: warning: backend {}: {reason}", selected.requested);
    }
    if let Some(dir) = &args.save_outputs {
        saved_outputs::check_folder(dir)?;
    }
    super::json_out::check(args.json.as_ref())?;
    let names = model.outputs.iter().map(|o| o.name.clone()).collect();
    let mut pipeline = Pipeline::open(model, selected, args.backend_flags.prepare())?;
    let mut emit = Emit {
        lines: Lines::new(args.json.as_ref()),
        save: args.save_outputs.as_deref().map(|dir| (dir, names)),
    };
    match &args.input {
        Some(input) if capture::is_npz(input) => run_tensors(&mut pipeline, input, &mut emit),
        Some(input) => run_images(&mut pipeline, input, &mut emit),
        None => super::run_source::main(
            &mut pipeline,
            &args.source,
            args.frames,
            args.duration_s,
            emit.lines,
            stop,
        ),
    }
}

/// Each image in turn; a bad image is reported and skipped, and the exit code says so at the end.
fn run_images(pipeline: &mut Pipeline, input: &Path, out: &mut Emit) -> anyhow::Result<ExitCode> {
    let files = capture::list_images(input)?;
    let single = files.len() == 1 && files[0] == input;
    let mut failed = 0;
    for file in &files {
        let prediction = capture::load_image(file)
            .and_then(|image| out.one(pipeline, Sample::Image(&image), (input, file, None)));
        match prediction {
            Ok(prediction) => out.print(&file.display().to_string(), &prediction, None)?,
            Err(e) if single => return Err(e.into()),
            Err(e) => {
                eprintln!("edgert: error: {}", crate::error::one_line(&e));
                failed += 1;
            }
        }
    }
    if failed > 0 {
        eprintln!("edgert: {failed} of {} inputs failed", files.len());
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every sample of a tensor set; with labels, the accuracy on stderr.
fn run_tensors(pipeline: &mut Pipeline, input: &Path, out: &mut Emit) -> anyhow::Result<ExitCode> {
    let item_shape = pipeline.model.manifest.input.shape[1..].to_vec();
    let set = capture::npz::load(input, &item_shape)?;
    for (i, &label) in set.labels.iter().flatten().enumerate() {
        let model = &pipeline.model;
        model
            .class_id(label)
            .map_err(|reason| Error::input(input, format!("'y' at sample {i}: {reason}")))?;
    }
    let mut correct = 0;
    for i in 0..set.len() {
        let prediction = out.one(pipeline, Sample::Tensor(set.item(i)), (input, input, Some(i)))?;
        let label = set.labels.as_ref().map(|l| l[i]);
        if let (Some(label), Some(top1)) = (label, prediction.top1()) {
            correct += usize::from(label == top1 as i64);
        }
        out.print(&format!("{}#{i}", input.display()), &prediction, label)?;
    }
    if set.labels.is_some() {
        let n = set.len();
        eprintln!(
            "accuracy {:.2} % ({correct}/{n}) on {}",
            100.0 * correct as f64 / n.max(1) as f64,
            input.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
