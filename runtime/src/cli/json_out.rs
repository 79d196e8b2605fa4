//! `--json [FILE]`, the same in every command: alone (or `--json -`), JSON on stdout in place of
//! the text; with FILE, the text on stdout as usual and the JSON in FILE.

use std::fs::File;
use std::io::{LineWriter, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// Where a command's JSON goes.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonTo {
    Stdout,
    File(PathBuf),
}

/// The value of `--json`: `-` (what a bare `--json` stands for) or a file.
pub fn parse(text: &str) -> Result<JsonTo, String> {
    match text {
        "-" => Ok(JsonTo::Stdout),
        "" => Err("an empty FILE: give a path, or --json alone for stdout".into()),
        path => Ok(JsonTo::File(path.into())),
    }
}

/// Whether JSON takes stdout, so the text goes elsewhere or nowhere.
pub fn on_stdout(json: Option<&JsonTo>) -> bool {
    json == Some(&JsonTo::Stdout)
}

/// Checks a FILE writable before a run spends time on it.
pub fn check(json: Option<&JsonTo>) -> Result<(), Error> {
    match json {
        Some(JsonTo::File(path)) => crate::outfile::check_writable(path),
        _ => Ok(()),
    }
}

/// One JSON document, pretty-printed: on stdout, or written whole to FILE as every report is.
pub fn document(json: &JsonTo, value: &impl serde::Serialize) -> anyhow::Result<()> {
    match json {
        JsonTo::Stdout => super::emit(&serde_json::to_string_pretty(value)?),
        JsonTo::File(path) => Ok(crate::bench::formats::write_json(value, path)?),
    }
}

/// A command's summary text beside its JSON: on stdout, or on stderr when JSON takes stdout.
pub fn summary(json: Option<&JsonTo>, text: &str) -> anyhow::Result<()> {
    if on_stdout(json) {
        eprintln!("{text}");
        Ok(())
    } else {
        super::emit(text)
    }
}

/// What a command that prints as results come (`run`, `monitor`) writes: a line of text per
/// result on stdout, and its JSON line on stdout in its place or in FILE. FILE grows a whole,
/// flushed line at a time, so a reader following it never sees half a record.
pub struct Lines {
    json: Option<JsonTo>,
    file: Option<LineWriter<File>>,
}

impl Lines {
    pub fn new(json: Option<&JsonTo>) -> Self {
        Lines { json: json.cloned(), file: None }
    }

    /// A result: `text` for people, `value` for programs; either is only made when it is printed.
    pub fn result(
        &mut self,
        text: impl FnOnce() -> String,
        value: impl FnOnce() -> serde_json::Value,
    ) -> anyhow::Result<()> {
        if !on_stdout(self.json.as_ref()) {
            super::emit(&text())?;
        }
        self.json_only(value)
    }

    /// A JSON line with no text beside it (a run's closing summary).
    pub fn json_only(&mut self, value: impl FnOnce() -> serde_json::Value) -> anyhow::Result<()> {
        match &self.json {
            None => Ok(()),
            Some(JsonTo::Stdout) => super::emit(&value().to_string()),
            Some(JsonTo::File(path)) => {
                let fail = |e: std::io::Error| Error::Write { path: path.clone(), reason: e.to_string() };
                if self.file.is_none() {
                    self.file = Some(LineWriter::new(File::create(path).map_err(fail)?));
                }
                let file = self.file.as_mut().expect("opened above");
                Ok(writeln!(file, "{}", value()).map_err(fail)?)
            }
        }
    }
}

/// The path of a FILE, for commands that refuse to write over their own inputs.
pub fn file(json: Option<&JsonTo>) -> Option<&Path> {
    match json {
        Some(JsonTo::File(path)) => Some(path),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dash_is_stdout_and_an_empty_value_is_refused() {
        assert_eq!(parse("-"), Ok(JsonTo::Stdout));
        assert_eq!(parse("out.json"), Ok(JsonTo::File("out.json".into())));
        assert!(parse("").unwrap_err().contains("empty"));
    }

    #[test]
    fn lines_to_a_file_are_whole_json_records_and_the_file_is_made_on_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.json");
        let mut lines = Lines::new(Some(&JsonTo::File(path.clone())));
        assert!(!path.exists(), "nothing to write yet, so no file");
        lines.json_only(|| serde_json::json!({ "n": 1 })).unwrap();
        lines.json_only(|| serde_json::json!({ "n": 2 })).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let values: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(values, [serde_json::json!({ "n": 1 }), serde_json::json!({ "n": 2 })]);
    }

    #[test]
    fn lines_to_a_file_that_cannot_be_made_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-folder").join("lines.json");
        let mut lines = Lines::new(Some(&JsonTo::File(path.clone())));
        let e = lines.json_only(|| serde_json::json!({})).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
}
