//! `edgert validate`: does a candidate keep the reference's quality? Exit 0 within budget, 3 over.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;

use super::stop::INTERRUPTED;
use super::{load_model, parse_budget};
use crate::validate::{self, data::Dataset, ValidateConfig, ValidateReport};

/// The exit code of a candidate over budget, for deployment scripts to gate on.
pub const OVER_BUDGET: u8 = 3;

#[derive(Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    backend_flags: super::backend_args::BackendFlags,
    /// The model to compare against (manifest or .onnx), usually FP32.
    #[arg(long, value_name = "M")]
    reference: PathBuf,
    /// The model to judge: INT8, pruned, another backend's build.
    #[arg(long, value_name = "M")]
    candidate: PathBuf,
    #[command(flatten)]
    data: DataArgs,
    #[arg(long, default_value = "cpu", help = super::backend_args::backend_help("The backend the reference runs on"))]
    reference_backend: String,
    #[arg(long, default_value = "cpu", help = super::backend_args::backend_help("The backend the candidate runs on"))]
    candidate_backend: String,
    /// The report as JSON (schema edgert.validate/1): alone, on stdout with the table on stderr;
    /// with FILE, written there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
}

/// The labelled data to judge on, and how much quality may be lost: shared with `tune`.
#[derive(Args)]
pub struct DataArgs {
    /// An .npz with `x` (and `y` labels), or a folder of images labelled by sub-folder or CSV.
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// For an image folder: `file,label` rows (label: class id or name).
    #[arg(long, value_name = "FILE")]
    labels_csv: Option<PathBuf>,
    /// Quality the candidate may lose, in percent of the reference's (MLPerf keeps 99 %: 1%).
    #[arg(long, default_value = "1%", value_parser = parse_budget)]
    pub budget: f64,
}

impl DataArgs {
    /// The data set, checked against the model it is judged by.
    pub fn load(&self, model: &crate::model::Model) -> crate::Result<Dataset> {
        Dataset::load(&self.data, model, self.labels_csv.as_deref())
    }
}

pub fn main(args: ValidateArgs, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    super::json_out::check(args.json.as_ref())?;
    let reference = load_model(&args.reference)?;
    let candidate = load_model(&args.candidate)?;
    let data = args.data.load(&reference)?;
    let config = ValidateConfig {
        reference_backend: args.reference_backend.clone(),
        candidate_backend: args.candidate_backend.clone(),
        backend_options: args.backend_flags.options(),
        prepare: args.backend_flags.prepare(),
        budget: args.data.budget,
        stop,
    };
    let report = validate::validate(&reference, &candidate, &data, &config)?;
    super::json_out::summary(args.json.as_ref(), text(&report).trim_end())?;
    if let Some(json) = &args.json {
        super::json_out::document(json, &report)?;
    }
    Ok(match (report.interrupted, report.gate.within_budget) {
        (true, _) => ExitCode::from(INTERRUPTED),
        (false, true) => ExitCode::SUCCESS,
        (false, false) => ExitCode::from(OVER_BUDGET),
    })
}

fn pct(v: f64) -> String {
    format!("{:.2} %", v * 100.0)
}

fn text(r: &ValidateReport) -> String {
    let interrupted = if r.interrupted { ", interrupted: the figures are of these only" } else { "" };
    let mut out = format!("data       {} ({} samples{interrupted})\n", r.data, r.samples);
    for (name, side) in [("reference", &r.reference), ("candidate", &r.candidate)] {
        let accuracy = side.accuracy.map_or(String::new(), |a| format!(", accuracy {}", pct(a)));
        out += &format!("{name:<10} {} ({}, {}){accuracy}\n", side.model, side.precision, side.backend);
    }
    if let Some(drop) = r.accuracy_drop {
        out += &format!("drop       {} relative\n", pct(drop));
    }
    if let (Some(agree), Some(top5)) = (r.top1_agreement, r.reference_top1_in_candidate_top5) {
        out += &format!(
            "top-1      agreement {}, reference top-1 in candidate top-5 {}\n",
            pct(agree),
            pct(top5)
        );
    }
    if let Some(map) = r.map50 {
        let matched = match r.gate.metric {
            "mask_map50" => "masks",
            "oks_map50" => "keypoints (OKS)",
            "rotated_map50" => "rotated boxes",
            _ => "boxes",
        };
        out += &format!("mAP@0.5    {:.4} against the reference's {matched}\n", map);
    }
    if let Some(miou) = r.miou {
        out += &format!("mIoU       {:.4} against the reference's class maps\n", miou);
    }
    out += &format!(
        "outputs    cosine mean {:.6}, min {:.6}; |diff| max {:.4}, mean {:.5}\n",
        r.cosine_mean, r.cosine_min, r.max_abs_diff, r.mean_abs_diff
    );
    for w in &r.worst_inputs {
        let id = |c: Option<usize>| c.map_or("-".to_string(), |c| c.to_string());
        out += &format!(
            "worst      {} cosine {:.6}, top-1 {} → {}\n",
            w.input,
            w.cosine,
            id(w.reference_top1),
            id(w.candidate_top1)
        );
    }
    let g = &r.gate;
    if r.interrupted {
        out += &format!("verdict    none: interrupted after {} samples\n", r.samples);
        return out;
    }
    out += &format!(
        "verdict    {} {:.4} {} required {:.4} (budget {}): {}\n",
        g.metric,
        g.value,
        if g.within_budget { ">=" } else { "<" },
        g.required,
        pct(r.budget),
        if g.within_budget { "within budget" } else { "OVER BUDGET" }
    );
    out
}
