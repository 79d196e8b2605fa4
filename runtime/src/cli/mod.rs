//! The `edgert` command line: arguments are parsed and checked into a configuration before
//! anything runs; errors print one line on stderr and exit 2 (bad input) or 1 (runtime failure).

mod backend_args;
mod bench;
mod board_view;
mod build_engine;
mod capture;
mod choices;
mod doctor;
mod info;
mod inspect;
mod inspect_engine;
mod json_out;
mod manifest;
mod measure_args;
mod monitor;
mod output_args;
mod prediction_text;
mod prometheus;
mod renamed;
mod report;
mod run;
mod run_source;
mod scenario_args;
mod source_args;
mod stop;
mod tune;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use crate::choice::Choice;
use crate::model::{BareModelOptions, Model, Task};

#[derive(Parser)]
#[command(
    name = "edgert",
    version,
    about = "Edge-inference runtime for NVIDIA Jetson: run, benchmark and inspect ONNX models",
    long_about = "Edge-inference runtime for NVIDIA Jetson: run, benchmark and inspect ONNX models.\n\n\
        A model is given as a TOML manifest (file, sha256, task, input, preprocessing) or as a bare \
        .onnx file with defaults. Logs go to stderr, results to stdout."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a model on an image, a folder of images, an .npz tensor set or a live source (--source:
    /// a camera, a video, a stream); print predictions.
    Run(run::RunArgs),
    /// Measure latency per stage, throughput and memory, for one or more batch sizes.
    Bench(Box<bench::BenchArgs>),
    /// Record raw frames from a source (synthetic, images, a recording) with their timestamps.
    Capture(capture::CaptureArgs),
    /// Show a model's inputs, outputs, operators, parameters, MACs, precision and sparsity.
    Inspect(inspect::InspectArgs),
    /// Write the manifest edgert would use for a bare model, every key commented, to keep or edit.
    Manifest(manifest::ManifestArgs),
    /// Show the host, board, versions, usable backends, and one reading of power, memory, clocks, temperatures.
    Info(info::InfoArgs),
    /// Show power, memory, clocks, GPU load and temperatures live; optionally serve them to Prometheus.
    Monitor(monitor::MonitorArgs),
    /// Compare a candidate model (INT8, pruned) with a reference on labelled data; exit 3 over budget.
    Validate(validate::ValidateArgs),
    /// Bench and validate variants × backends; Pareto front of latency and accuracy; pick one.
    Tune(tune::TuneArgs),
    /// Bench reports side by side: `merge` into one table, `compare` before/after, `plot` to SVG.
    Report(report::ReportArgs),
    /// Build a TensorRT engine from an ONNX model on this machine (needs --features tensorrt).
    BuildEngine(build_engine::BuildEngineArgs),
    /// Check every hardware path on this board, layer by layer: pass, fail (with the fix) or skip (why).
    Doctor(doctor::DoctorArgs),
    /// Every command and flag as Markdown: docs/reference/cli.md.
    #[command(hide = true)]
    HelpMarkdown,
}

impl Command {
    /// Ctrl-C and SIGTERM handled for this command (`stop`): the commands that end early with what
    /// they have get `stop::GRACE` to, the others end at once.
    fn stop_on_signal(&self) -> anyhow::Result<Arc<AtomicBool>> {
        let (name, ends_early) = match self {
            Command::Run(args) => ("run", args.source.source.is_some()),
            Command::Bench(_) => ("bench", true),
            Command::Capture(_) => ("capture", true),
            Command::Inspect(_) => ("inspect", false),
            Command::Manifest(_) => ("manifest", false),
            Command::Info(_) => ("info", false),
            Command::Monitor(_) => ("monitor", false),
            Command::Validate(_) => ("validate", true),
            Command::Tune(_) => ("tune", true),
            Command::Report(_) => ("report", false),
            Command::BuildEngine(_) => ("build-engine", false),
            Command::Doctor(_) => ("doctor", false),
            Command::HelpMarkdown => ("help-markdown", false),
        };
        stop::on_signal(name, if ends_early { stop::GRACE } else { std::time::Duration::ZERO })
    }
}

/// How a command names its model.
#[derive(Args, Clone)]
struct ModelArgs {
    /// Model manifest (.toml) or bare ONNX file (.onnx).
    #[arg(long, short, value_name = "M")]
    model: PathBuf,
    /// For a bare .onnx: what its outputs mean (default: the Ultralytics metadata's task; else
    /// classification for [N, C] outputs, detect where they fit a detector format, else raw).
    #[arg(long, value_enum)]
    task: Option<Task>,
    /// For a bare .onnx: class names, one per line (default: the Ultralytics metadata's names).
    #[arg(long, value_name = "FILE")]
    labels: Option<PathBuf>,
    /// For a bare .onnx whose input size is dynamic: its HEIGHTxWIDTH, or one side for a square
    /// (default: the Ultralytics metadata's imgsz).
    #[arg(long, value_name = "HxW", value_parser = parse_imgsz)]
    imgsz: Option<(usize, usize)>,
    /// Detectors: the lowest score kept (default: the manifest's, else 0.25).
    #[arg(long, value_name = "F")]
    confidence: Option<f32>,
    /// Detectors: the overlap above which NMS drops the lower-scored box (default: the manifest's).
    #[arg(long, value_name = "F")]
    iou: Option<f32>,
    /// Detectors: the most boxes kept per image (default: the manifest's, else 300).
    #[arg(long, value_name = "N")]
    max_det: Option<usize>,
    /// Detectors: NMS across classes rather than per class.
    #[arg(long)]
    agnostic: bool,
}

impl ModelArgs {
    fn load(&self) -> crate::Result<Model> {
        let bare = BareModelOptions { task: self.task, labels: self.labels.clone(), imgsz: self.imgsz };
        if self.model.extension().is_some_and(|e| e == "toml") {
            let given: Vec<&str> = [
                ("--task", self.task.is_some()),
                ("--labels", self.labels.is_some()),
                ("--imgsz", self.imgsz.is_some()),
            ]
            .iter()
            .filter(|(_, given)| *given)
            .map(|(flag, _)| *flag)
            .collect();
            if !given.is_empty() {
                return Err(crate::Error::Usage(format!(
                    "{} is for a bare model; {} says them: edit it instead",
                    given.join(", "),
                    self.model.display()
                )));
            }
        }
        let mut model = warned(Model::load(&self.model, &bare))?;
        self.apply_detect_flags(&mut model)?;
        Ok(model)
    }

    /// --confidence, --iou, --max-det and --agnostic over the manifest's, checked as it is.
    fn apply_detect_flags(&self, model: &mut Model) -> crate::Result<()> {
        use crate::model::TaskSpec;
        let given =
            self.confidence.is_some() || self.iou.is_some() || self.max_det.is_some() || self.agnostic;
        if !given {
            return Ok(());
        }
        match &mut model.manifest.task {
            TaskSpec::Detect(spec) => {
                spec.confidence = self.confidence.unwrap_or(spec.confidence);
                spec.iou = self.iou.unwrap_or(spec.iou);
                spec.max_det = self.max_det.unwrap_or(spec.max_det);
                spec.agnostic |= self.agnostic;
            }
            TaskSpec::Yolo(spec) if self.max_det.is_none() && !self.agnostic => {
                spec.confidence = self.confidence.unwrap_or(spec.confidence);
                spec.iou = self.iou.unwrap_or(spec.iou);
            }
            other => {
                return Err(crate::Error::Usage(format!(
                    "--confidence, --iou, --max-det and --agnostic are for detectors; {} is a {} model{}",
                    self.model.display(),
                    other.kind().name(),
                    if matches!(other, TaskSpec::Yolo(_)) {
                        " (which takes --confidence and --iou)"
                    } else {
                        ""
                    }
                )))
            }
        }
        model.manifest.check_self(model.source_path())
    }
}

/// `640`, `480x640`: an input's (height, width).
fn parse_imgsz(text: &str) -> Result<(usize, usize), String> {
    let side =
        |s: &str| s.trim().parse::<usize>().ok().filter(|&v| (1..=crate::frame::MAX_SIDE).contains(&v));
    let parsed = match text.split_once(['x', 'X']) {
        Some((h, w)) => side(h).zip(side(w)),
        None => side(text).map(|s| (s, s)),
    };
    parsed.ok_or_else(|| {
        format!("'{text}' is not HEIGHTxWIDTH or one side, each in [1, {}]", crate::frame::MAX_SIDE)
    })
}

/// A model named without task or labels flags (validate, tune): manifests say them.
fn load_model(path: &std::path::Path) -> crate::Result<Model> {
    warned(Model::load(path, &BareModelOptions::default()))
}

fn warned(model: crate::Result<Model>) -> crate::Result<Model> {
    for warning in model.iter().flat_map(Model::warnings) {
        eprintln!("edgert: warning: {warning}");
    }
    model
}

/// Output files, checked writable before a run spends its time (`outfile::check_writable`).
fn check_outputs<'a>(paths: impl IntoIterator<Item = &'a Option<PathBuf>>) -> crate::Result<()> {
    paths.into_iter().flatten().try_for_each(|p| crate::outfile::check_writable(p))
}

/// A budget in percent, `1%` or `1`, as a fraction.
fn parse_budget(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!("'{text}' is not a percentage between 0 and 100")),
    }
}

pub fn main() -> ExitCode {
    crate::panics::install_hook();
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => {
            renamed::warnings(&raw).iter().for_each(|w| eprintln!("edgert: warning: {w}"));
            cli
        }
        // Help and version, asked for or shown for a bare command: clap's own text.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
        Err(e) => {
            eprintln!("edgert: error: {}", usage_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let result = cli.command.stop_on_signal().and_then(|stop| match cli.command {
        Command::Run(args) => run::main(args, stop),
        Command::Bench(args) => bench::main(*args, stop),
        Command::Capture(args) => capture::main(args, stop),
        Command::Inspect(args) => inspect::main(args),
        Command::Manifest(args) => manifest::main(args),
        Command::Info(args) => info::main(args),
        Command::Monitor(args) => monitor::main(args),
        Command::Validate(args) => validate::main(args, stop),
        Command::Tune(args) => tune::main(args, stop),
        Command::Report(args) => report::main(args),
        Command::BuildEngine(args) => build_engine::main(args),
        Command::Doctor(args) => doctor::main(args),
        Command::HelpMarkdown => reference(),
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("edgert: error: {}", crate::error::one_line(&err));
            ExitCode::from(exit_code(&err))
        }
    }
}

/// The CLI reference: every command and flag, from clap's definition (docs/reference/cli.md).
fn reference() -> anyhow::Result<ExitCode> {
    let options = clap_markdown::MarkdownOptions::new()
        .title("Command-line reference".into())
        .show_footer(false)
        .show_table_of_contents(true);
    emit(clap_markdown::help_markdown_custom::<Cli>(&options).trim_end())?;
    Ok(ExitCode::SUCCESS)
}

/// Clap's usage error as one line, like every other error: its message (which may list missing
/// arguments on lines of their own) without the usage and hint that follow.
fn usage_line(rendered: &str) -> String {
    let message = rendered.split("\n\n").next().unwrap_or(rendered);
    let message = message.strip_prefix("error: ").unwrap_or(message);
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// 2 for bad input, 1 for anything else, read from the library error in the chain.
fn exit_code(err: &anyhow::Error) -> u8 {
    err.chain().find_map(|e| e.downcast_ref::<crate::Error>()).map_or(1, crate::Error::exit_code)
}

/// Writes a line to stdout; a closed pipe ends the command quietly rather than panicking.
fn emit(line: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => Ok(other?),
    }
}
