//! ONNX's backend test data on every usable backend (`edgert::conformance`): a line per case and
//! backend, then the count of each outcome per suite and backend as a Markdown table.
//!
//!     cargo run --release --example onnx_conformance -- DATA_DIR [NAME_PART...]
//!
//! DATA_DIR is the `onnx` wheel's `onnx/backend/test/data`
//! (`python3 -c 'import onnx, os; print(os.path.dirname(onnx.__file__))'`/backend/test/data);
//! NAME_PART keeps the cases whose name contains one of them. `--backend ort` needs
//! `ORT_DYLIB_PATH` (docs/conformance.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use edgert::conformance::{self, run};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next().map(PathBuf::from) else {
        eprintln!("usage: onnx_conformance DATA_DIR [NAME_PART...]");
        return ExitCode::from(2);
    };
    let filters: Vec<String> = args.collect();
    let cases = match conformance::discover(&root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onnx_conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let (backends, missing) = conformance::backends();
    if let Some(why) = missing {
        eprintln!("ort not run: {why}");
    }
    // (suite, backend) → (passed, failed, not supported)
    let mut counts: BTreeMap<(usize, usize), [usize; 3]> = BTreeMap::new();
    for case in
        cases.iter().filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
    {
        let suite = conformance::SUITES.iter().position(|s| *s == case.suite).unwrap_or(0);
        for (b, (name, backend)) in backends.iter().enumerate() {
            let outcome = run::run(case, backend.as_ref());
            println!("{}/{} on {name}: {outcome}", case.suite, case.name);
            let slot = match outcome {
                run::Outcome::Passed { .. } => 0,
                run::Outcome::Failed(_) => 1,
                run::Outcome::NotSupported(_) => 2,
            };
            counts.entry((suite, b)).or_default()[slot] += 1;
        }
    }
    let names: Vec<&str> = backends.iter().map(|(n, _)| *n).collect();
    println!("\n| suite | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    for (s, suite) in conformance::SUITES.iter().enumerate() {
        let cells: Vec<String> = (0..names.len())
            .map(|b| counts.get(&(s, b)).map_or("—".into(), |[p, f, n]| format!("{p} / {f} / {n}")))
            .collect();
        println!("| {suite} | {} |", cells.join(" | "));
    }
    println!("\n(passed / failed / not supported)");
    ExitCode::SUCCESS
}
