//! `edgert report merge|compare|plot`: bench reports from many boards and runs, put side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::emit;
use crate::report::{compare, doctor, merge, plot, read_all, read_for_merge, BenchFile, Merged};
use crate::Error;

#[derive(Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    command: ReportCommand,
}

#[derive(Subcommand)]
enum ReportCommand {
    /// One table across boards and runs: markdown on stdout, optionally CSV.
    Merge {
        /// Bench reports (`bench --json`, edgert.bench/3 or /2), and doctor results (`doctor --json`,
        /// edgert.doctor/1) listed in a table of their own.
        #[arg(required = true, value_name = "FILES")]
        files: Vec<PathBuf>,
        /// Also write the table as CSV.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
    },
    /// The change of every latency percentile, throughput, memory and energy figure; changes
    /// within the runs' own spread are marked as noise.
    Compare {
        #[arg(value_name = "BEFORE")]
        before: PathBuf,
        #[arg(value_name = "AFTER")]
        after: PathBuf,
        /// The comparison as JSON: alone, on stdout in place of the table; with FILE, written there
        /// (never over BEFORE or AFTER).
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", value_parser = super::json_out::parse)]
        json: Option<super::json_out::JsonTo>,
    },
    /// Latency CDFs overlaid, and throughput and p99 against batch size, as one SVG.
    Plot {
        #[arg(required = true, value_name = "FILES")]
        files: Vec<PathBuf>,
        #[arg(long, value_name = "F.svg")]
        out: PathBuf,
    },
}

pub fn main(args: ReportArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ReportCommand::Merge { files, csv } => {
            let (mut benches, mut doctors) = (Vec::new(), Vec::new());
            for file in &files {
                match read_for_merge(file)? {
                    Merged::Bench(b) => benches.push(b),
                    Merged::Doctor(d) => doctors.push(d),
                }
            }
            let rows = merge::rows(&benches);
            if let Some(path) = csv {
                crate::outfile::write_atomically(&path, |file| Ok(merge::write_csv(&rows, file)?))
                    .map_err(|e| Error::Write { path: path.clone(), reason: e.to_string() })?;
            }
            let mut tables = Vec::new();
            if !benches.is_empty() {
                tables.push(merge::markdown(&rows));
            }
            if !doctors.is_empty() {
                tables.push(doctor::markdown(&doctors));
            }
            emit(tables.join("\n").trim_end())?;
        }
        ReportCommand::Compare { before, after, json } => {
            if let Some(out) = super::json_out::file(json.as_ref())
                .filter(|out| [before.as_path(), after.as_path()].contains(out))
            {
                let why = "--json would write over a report it compares; name another file";
                return Err(crate::Error::input(out, why).into());
            }
            super::json_out::check(json.as_ref())?;
            let comparison = compare::compare(&BenchFile::read(&before)?, &BenchFile::read(&after)?);
            if let Some(json) = &json {
                super::json_out::document(json, &comparison)?;
            }
            if !super::json_out::on_stdout(json.as_ref()) {
                emit(compare::text(&comparison).trim_end())?;
            }
        }
        ReportCommand::Plot { files, out } => {
            plot::write_svg(&read_all(&files)?, &out)?;
            eprintln!("edgert: wrote {}", out.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
