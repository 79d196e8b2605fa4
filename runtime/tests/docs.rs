//! The docs against the code, so they cannot drift apart: the commands README.md and the guides
//! show, run as a reader would (in order, each page in a folder of its own that sees the
//! repository's `models/`; a command that cannot run without a board, a GPU, a camera or a
//! network says so at its end, `# not in CI: WHY`, and any other must succeed); every error
//! message in the code has its entry in docs/troubleshooting.md; docs/reference/cli.md is what
//! the CLI's own definition says.

mod common;

use std::path::Path;
use std::process::Command;

const MARK: &str = "# not in CI:";
/// The longest any page's command may take, in seconds.
const COMMAND_LIMIT_S: u32 = 300;

/// A command of a page: its text (continuation lines joined) and the line it starts on.
#[derive(Debug, PartialEq)]
struct Shown {
    line: usize,
    text: String,
}

/// The commands of `page`'s indented code blocks, as Markdown reads them (blank lines between
/// indented lines do not end a block). In a block that starts with `$ `, a transcript, only the
/// `$ ` lines are commands (the rest is their output); elsewhere every line is. A `$E` command in
/// a transcript's output, which would go unrun, is a panic.
fn commands(page: &str) -> Vec<Shown> {
    let mut shown = Vec::new();
    let mut block: Vec<(usize, &str)> = Vec::new();
    let lines = page.lines().enumerate().map(|(i, l)| (i + 1, l)).chain([(0, "")]);
    for (number, line) in lines {
        if let Some(code) = line.strip_prefix("    ").filter(|_| number > 0) {
            block.push((number, code));
            continue;
        }
        if line.trim().is_empty() && number > 0 && !block.is_empty() {
            continue;
        }
        let transcript = block.first().is_some_and(|(_, l)| l.starts_with("$ "));
        let mut pending: Option<Shown> = None;
        for &(n, code) in &block {
            let code = code.trim_end();
            let code = if transcript {
                match (code.strip_prefix("$ "), &pending) {
                    (Some(c), _) => c,
                    (None, Some(_)) => code.trim_start(),
                    // `edgert …` may be output (`edgert info` prints its version so); `$E` is not.
                    (None, None) if code.starts_with("$E ") => {
                        panic!("line {n}: `{code}` is in a transcript's output: start it with `$ `")
                    }
                    (None, None) => continue,
                }
            } else {
                code.trim_start()
            };
            if code.starts_with('#') && pending.is_none() {
                continue;
            }
            let (body, continued) = match code.strip_suffix('\\') {
                Some(body) => (body.trim_end(), true),
                None => (code, false),
            };
            let command = pending.get_or_insert(Shown { line: n, text: String::new() });
            if !command.text.is_empty() {
                command.text.push(' ');
            }
            command.text += body;
            if !continued {
                shown.extend(pending.take());
            }
        }
        block.clear();
    }
    shown
}

/// What the test does with a command: run it (as edgert's arguments), leave it (CI itself builds
/// and tests), or skip it for the reason it gives.
#[derive(Debug, PartialEq)]
enum Plan {
    Run(String),
    Built,
    Skip(String),
}

fn plan(command: &str) -> Result<Plan, String> {
    if let Some((_, why)) = command.split_once(MARK) {
        let why = why.trim();
        return if why.is_empty() {
            Err("says not in CI without saying why".into())
        } else {
            Ok(Plan::Skip(why.into()))
        };
    }
    // A comment after a command is the reader's, not the shell's business here.
    let command = command.split(" # ").next().unwrap_or(command).trim();
    let cargo_builds = ["cargo build", "cargo test", "E=target/release/edgert"];
    if cargo_builds.iter().any(|c| command.starts_with(c)) {
        return Ok(Plan::Built);
    }
    for prefix in ["$E ", "edgert ", "cargo run --release -- "] {
        if let Some(args) = command.strip_prefix(prefix) {
            return Ok(Plan::Run(args.into()));
        }
    }
    Err(format!("is neither an edgert command nor marked '{MARK} WHY'"))
}

/// Runs every command of the page at `relative` (from the repository's root), in order.
fn run_page(relative: &str) {
    if common::emulated() {
        return eprintln!("skipped: the pages' commands run in the native suite");
    }
    let root = root();
    let page = std::fs::read_to_string(root.join(relative)).unwrap();
    let shown = commands(&page);
    assert!(!shown.is_empty(), "{relative}: no commands found");
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("models"), dir.path().join("models")).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_edgert"), bin.join("edgert")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for Shown { line, text } in &shown {
        let args = match plan(text) {
            Ok(Plan::Run(args)) => args,
            Ok(Plan::Built) => continue,
            Ok(Plan::Skip(why)) => {
                eprintln!("{relative}:{line}: not run ({why})");
                continue;
            }
            Err(why) => panic!("{relative}:{line}: `{text}` {why}"),
        };
        // Bounded, so a command that never ends (a `--loop` without `--frames`) fails rather than
        // holding CI.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("timeout {COMMAND_LIMIT_S} edgert {args}"))
            .current_dir(dir.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{relative}:{line}: `{text}` exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn readme_commands_run() {
    run_page("README.md");
}

#[test]
fn first_board_guide_commands_run() {
    run_page("docs/guide/first-board.md");
}

#[test]
fn your_model_guide_commands_run() {
    run_page("docs/guide/your-model.md");
}

#[test]
fn commands_are_read_from_blocks_and_transcripts() {
    let page = "Text\n\n    $E run -m a.toml \\\n        --input b.png\n    # a comment\n    cargo build --release\n\n\
        Between\n\n    $ edgert doctor --quick\n    | output | line |\n    …\n\nAnd\n\n    $E bench x  # not in CI: needs a board\n";
    let texts: Vec<String> = commands(page).into_iter().map(|s| s.text).collect();
    assert_eq!(
        texts,
        [
            "$E run -m a.toml --input b.png",
            "cargo build --release",
            "edgert doctor --quick",
            "$E bench x  # not in CI: needs a board"
        ]
    );
    assert_eq!(commands(page)[0].line, 3);
    let hidden = std::panic::catch_unwind(|| commands("    $ edgert info\n    output\n\n    $E doctor\n"));
    assert!(hidden.is_err(), "a command after a transcript's output, in the same block, would not run");
}

#[test]
fn every_command_is_run_built_or_skipped_with_a_reason() {
    assert_eq!(plan("$E run -m m.toml"), Ok(Plan::Run("run -m m.toml".into())));
    assert_eq!(plan("cargo run --release -- bench -m m.toml"), Ok(Plan::Run("bench -m m.toml".into())));
    assert_eq!(plan("cargo build --release && E=target/release/edgert"), Ok(Plan::Built));
    assert_eq!(
        plan("$E run --source csi://0  # not in CI: needs a CSI camera"),
        Ok(Plan::Skip("needs a CSI camera".into()))
    );
    assert!(plan("$E run --source csi://0  # not in CI:").unwrap_err().contains("without saying why"));
    assert!(plan("scp edgert board:").unwrap_err().contains("neither"));
    assert_eq!(plan("$E bench --find-peak  # the highest QPS"), Ok(Plan::Run("bench --find-peak".into())));
}

/// The repository's root.
fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// The message templates of `source`'s `#[error("...")]` attributes, continuation lines joined as
/// Rust joins them.
fn error_templates(source: &str) -> Vec<String> {
    let mut templates = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("#[error(") {
        rest = &rest[at + "#[error(".len()..];
        let Some(open) = rest.find(|c: char| !c.is_whitespace()).filter(|&i| rest[i..].starts_with('"'))
        else {
            continue; // `transparent`
        };
        let mut text = String::new();
        let mut chars = rest[open + 1..].chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('\n') => {
                        let after = chars.as_str().trim_start();
                        chars = after.chars();
                    }
                    Some(escaped) => text.push(escaped),
                    None => break,
                },
                c => text.push(c),
            }
        }
        templates.push(text);
    }
    templates
}

/// The literal runs of a template between its `{...}` placeholders, trimmed, of two words or more:
/// what a reader sees of the message whatever the values.
fn literal_runs(template: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for c in template.chars() {
        match c {
            '{' => {
                depth += 1;
                runs.push(std::mem::take(&mut current));
            }
            '}' if depth > 0 => depth -= 1,
            c if depth == 0 => current.push(c),
            _ => {}
        }
    }
    runs.push(current);
    runs.into_iter()
        .map(|run| run.trim_matches(|c: char| c.is_whitespace() || ":;,.'\"()".contains(c)).to_string())
        .filter(|run| run.split_whitespace().count() >= 2)
        .collect()
}

/// Every error a user can meet is explained: each message's words are in docs/troubleshooting.md.
#[test]
fn every_error_message_has_a_troubleshooting_entry() {
    let page = std::fs::read_to_string(root().join("docs/troubleshooting.md")).unwrap();
    let mut sources = vec![root().join("runtime/src")];
    let mut missing = Vec::new();
    let mut checked = 0;
    while let Some(dir) = sources.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            for template in error_templates(&std::fs::read_to_string(&path).unwrap()) {
                for run in literal_runs(&template) {
                    checked += 1;
                    if !page.contains(&run) {
                        missing.push(format!("{}: \"{run}\" (of \"{template}\")", path.display()));
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} message parts found: is the scan broken?");
    assert!(missing.is_empty(), "not in docs/troubleshooting.md:\n{}", missing.join("\n"));
}

#[test]
fn error_templates_are_read_as_rust_reads_them() {
    let source = "#[error(\"{}: not a valid ONNX model: {reason}\", path.display())]\n\
        #[error(transparent)]\n#[error(\n    \"TensorRT {version} is too old: \\\n     use --backend cpu\"\n)]";
    assert_eq!(
        error_templates(source),
        ["{}: not a valid ONNX model: {reason}", "TensorRT {version} is too old: use --backend cpu"]
    );
    assert_eq!(literal_runs("{}: not a valid ONNX model: {reason}"), ["not a valid ONNX model"]);
    assert_eq!(literal_runs("unknown backend '{name}' (known: {known})"), ["unknown backend"]);
}

/// docs/reference/cli.md is what `edgert help-markdown` prints; `EDGERT_BLESS=1` rewrites it.
#[test]
fn the_cli_reference_is_the_clis_own() {
    let out = common::edgert(&["help-markdown"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let generated = common::stdout(&out);
    let path = root().join("docs/reference/cli.md");
    if std::env::var_os("EDGERT_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written == generated,
        "docs/reference/cli.md differs from `edgert help-markdown`: run `EDGERT_BLESS=1 cargo test --test docs` and commit it"
    );
}
