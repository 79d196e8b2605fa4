//! Errors for a model that loaded (edgert parsed and checked it: `model::onnx::read_proto`) but that
//! a backend cannot run: which node stopped it, where the backend says, and which other backends
//! usable here might run it. "Not a valid ONNX model" stays for files that are not one.

use std::path::Path;

use super::registry;
use crate::error::one_line;
use crate::Error;

/// `; try --backend ort` (or several): the other backends that are usable here, or nothing.
pub fn alternatives(failed: &str) -> String {
    let others: Vec<String> = registry()
        .iter()
        .filter(|b| b.name() != failed && b.check().is_ok())
        .map(|b| format!("--backend {}", b.name()))
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!("; try {}", others.join(" or "))
    }
}

/// An operator the backend has no importer for, as a model it cannot run, with the alternatives
/// named; other errors as they are.
pub fn with_alternatives(e: Error) -> Error {
    match e {
        Error::UnsupportedOperator { path, op, node, backend } => {
            cannot_run(&path, &backend, format!("node '{node}' ({op}): unsupported operator '{op}'"))
        }
        other => other,
    }
}

/// A tract failure at `stage` (parse, analysis, plan…) of a model `backend` was preparing.
pub fn tract(path: &Path, backend: &str, stage: &str, e: &impl std::fmt::Display) -> Error {
    let text = one_line(e);
    let node = tract_node(&text).map_or(String::new(), |(name, op)| format!("node '{name}' ({op}): "));
    cannot_run(path, backend, format!("{node}{stage}: {text}"))
}

/// A panic in tract at `stage` of a model `backend` was preparing, as `tract` says a failure there
/// (for `panics::contained`, which wants an error maker of its own).
pub fn tract_panic(path: &Path, backend: &str, stage: &'static str) -> impl Fn(String) -> Error + 'static {
    let (path, backend) = (path.to_owned(), backend.to_owned());
    move |panic| tract(&path, &backend, stage, &format!("tract failed unexpectedly: {panic}"))
}

/// ONNX Runtime refusing a session for a model edgert could read.
pub fn ort(path: &Path, version: &str, e: &impl std::fmt::Display) -> Error {
    let text = one_line(e);
    let node = ort_node(&text).map_or(String::new(), |(name, op)| format!("node '{name}' ({op}): "));
    cannot_run(path, "ort", format!("{node}ONNX Runtime {version}: {text}"))
}

/// `reason` (which names the node) as a model `backend` cannot run, with the alternatives named.
pub(super) fn cannot_run(path: &Path, backend: &str, reason: String) -> Error {
    let reason = reason + &alternatives(backend);
    Error::BackendCannotRun { path: path.to_owned(), backend: backend.into(), reason }
}

/// The node tract names in its error chain: `… node #12 "conv_3" Conv …` → ("conv_3", "Conv").
fn tract_node(text: &str) -> Option<(String, String)> {
    let (_, after) = text.split_once("node #")?;
    let (digits, rest) = after.split_once(' ')?;
    digits.chars().all(|c| c.is_ascii_digit()).then_some(())?;
    let (name, rest) = rest.strip_prefix('"')?.split_once('"')?;
    let op = rest.split_whitespace().next()?.trim_end_matches(':');
    Some((name.to_string(), op.to_string()))
}

/// `Could not find an implementation for AveragePool(1) node with name 'pool'` → ("pool",
/// "AveragePool opset 1").
fn ort_node(text: &str) -> Option<(String, String)> {
    let (_, after) = text.split_once("implementation for ")?;
    let (op, rest) = after.split_once('(')?;
    let (version, rest) = rest.split_once(')')?;
    let name = rest.split_once("node with name '")?.1.split_once('\'')?.0;
    Some((name.to_string(), format!("{op} opset {version}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_tract_names() {
        let text = r#"analysis: Translating node #2 "prelu_1" Prelu ToTypedTranslator: Output mismatch"#;
        assert_eq!(tract_node(text), Some(("prelu_1".into(), "Prelu".into())));
        assert_eq!(tract_node(r#"Failed analyse for node #17 "" Conv: x"#), Some(("".into(), "Conv".into())));
        for nothing in ["", "node #", "node #x \"a\" B", "node #3 a B", "node #3 \"unclosed"] {
            assert_eq!(tract_node(nothing), None, "{nothing}");
        }
    }

    #[test]
    fn the_node_onnx_runtime_names() {
        let text = "Could not find an implementation for AveragePool(1) node with name 'pool'";
        assert_eq!(ort_node(text), Some(("pool".into(), "AveragePool opset 1".into())));
        assert_eq!(ort_node("Load model failed"), None);
    }

    #[test]
    fn the_message_names_the_backend_the_node_and_what_else_to_try() {
        let e = tract(Path::new("m.onnx"), "cpu", "analysis", &r#"Translating node #2 "p" Prelu: bad"#);
        let text = e.to_string();
        assert!(
            text.starts_with("m.onnx: the cpu backend cannot run this model: node 'p' (Prelu): analysis: "),
            "{text}"
        );
        assert_eq!(e.exit_code(), 2);
        assert!(!alternatives("cpu").contains("--backend cpu"));
    }
}
