//! `edgert inspect`: what a model is made of.

use std::process::ExitCode;

use clap::Args;

use super::{emit, inspect_engine as engine, ModelArgs};
use crate::model::inspect::{self, InspectReport};

#[derive(Args)]
pub struct InspectArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The report as JSON (schema edgert.inspect/1): alone, on stdout in place of the text; with
    /// FILE, written there.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
    json: Option<super::json_out::JsonTo>,
}

pub fn main(args: InspectArgs) -> anyhow::Result<ExitCode> {
    // An engine, bare or named by a manifest, is read by TensorRT: its tensors are all it tells.
    if crate::model::is_engine_file(&args.model.model) {
        return engine::main(&args.model.model, args.json.as_ref());
    }
    let model = args.model.load()?;
    if model.is_engine() {
        return engine::main(&model.file, args.json.as_ref());
    }
    let report = inspect::inspect(&model)?;
    if let Some(json) = &args.json {
        super::json_out::document(json, &report)?;
    }
    if !super::json_out::on_stdout(args.json.as_ref()) {
        emit(text(&report).trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn text(r: &InspectReport) -> String {
    let mut out = format!(
        "model      {} (opset {}, {:.2} MB, sha256 {})\n",
        r.path,
        r.opset,
        r.file_bytes as f64 / 1e6,
        r.sha256
    );
    for (kind, specs) in [("input", &r.inputs), ("output", &r.outputs)] {
        for s in specs {
            out += &format!("{kind:<10} {} {} {}\n", s.name, s.dtype, s.shape_text());
        }
    }
    let carries = r.detect_carries.map_or(String::new(), |c| format!(" with {c}"));
    let format = r.detect_format.map_or(String::new(), |f| format!(", format {f}{carries}"));
    out += &format!("task       {}{format}\n", r.task);
    out += &format!("precision  {}\n", r.precision);
    out += &format!("parameters {} ({})\n", r.parameters, weight_bytes(r));
    out += &format!(
        "MACs       {}\n",
        r.macs.map_or("unknown".into(), |m| format!("{:.1} M at batch 1", m as f64 / 1e6))
    );
    let s = &r.sparsity;
    out += &format!(
        "sparsity   {}: {:.2} % of {} layer weights are zero; {:.2} % of {} 4-groups meet 2:4\n",
        s.pattern,
        s.zero_share * 100.0,
        s.weights,
        s.share_2_4 * 100.0,
        s.groups_2_4
    );
    let ops: Vec<String> = r.operators.iter().map(|(op, n)| format!("{op} {n}")).collect();
    out += &format!("operators  {}\n", ops.join(", "));
    out
}

fn weight_bytes(r: &InspectReport) -> String {
    r.weight_bytes
        .iter()
        .map(|(t, b)| format!("{t} {:.2} MB", *b as f64 / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}
