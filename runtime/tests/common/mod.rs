//! Paths and helpers shared by the integration tests.
#![allow(dead_code)]

pub mod graph;

use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

pub fn model(name: &str) -> PathBuf {
    models().join(name)
}

pub fn image(name: &str) -> PathBuf {
    models().join("images").join(name)
}

/// Runs the edgert binary with arguments; through `EDGERT_TEST_RUNNER` (e.g. qemu-aarch64) when set,
/// for binaries of another architecture.
pub fn edgert(args: &[&str]) -> Output {
    command(args).output().expect("edgert starts")
}

/// The edgert command, not yet run, for tests that set its environment or read it while it runs.
pub fn command(args: &[&str]) -> Command {
    let binary = env!("CARGO_BIN_EXE_edgert");
    let runner = std::env::var("EDGERT_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut command = match words.next() {
        // Found on this process's PATH now: a test may give the command another PATH.
        Some(program) => {
            let mut c = Command::new(on_path(program));
            c.args(words).arg(binary);
            c
        }
        None => Command::new(binary),
    };
    command.args(args);
    command
}

/// Starts edgert with its stdout read line by line as it comes, and its stderr piped.
pub fn spawn(args: &[&str]) -> (std::process::Child, Lines<BufReader<std::process::ChildStdout>>) {
    let mut child = command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// A program's path as this process's PATH finds it, or its name where the PATH has none.
fn on_path(program: &str) -> PathBuf {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}

/// Raw outputs of a manifest's model through a selected backend, one vector per input, each input
/// preprocessed as the manifest says.
pub fn raw_outputs(
    backend: edgert::backend::Selected,
    manifest: &str,
    inputs: &[edgert::pipeline::Sample],
) -> Vec<Vec<f32>> {
    let model = edgert::model::Model::load(&model(manifest), &Default::default()).unwrap();
    let mut p = edgert::pipeline::Pipeline::open(model, backend, Default::default()).unwrap();
    inputs
        .iter()
        .map(|s| {
            let (input, _) = p.preprocess(&[*s]).unwrap();
            p.infer(&input).unwrap().into_iter().flat_map(|t| t.data).collect()
        })
        .collect()
}

/// The index of the largest value: a classifier's top-1 class.
pub fn top1(v: &[f32]) -> usize {
    v.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0
}

/// Whether the binary runs under an emulator (`EDGERT_TEST_RUNNER`, e.g. qemu-aarch64).
pub fn emulated() -> bool {
    std::env::var_os("EDGERT_TEST_RUNNER").is_some_and(|r| !r.is_empty())
}

/// `found`, or `None` after printing `SKIPPED test: why`: a failure instead where the switch
/// `require` is `1`, as CI sets it for what it installs.
pub fn or_skipped<T>(found: Option<T>, require: &str, test: &str, why: &str) -> Option<T> {
    if found.is_none() {
        assert!(std::env::var(require).as_deref() != Ok("1"), "{test}: {why} ({require}=1)");
        eprintln!("SKIPPED {test}: {why}");
    }
    found
}

/// YOLOv3-tiny FP32's manifest (its name in models/), where its model is here (35 MB, untracked:
/// models/fetch.sh brings it) and the tests run natively. Under an emulator its runs took minutes
/// of CI for no code of their own: MobileNetV2 FP32 and YOLOv3-tiny INT8 run the same kernels and
/// heads there.
pub fn yolo_fp32() -> Option<&'static str> {
    let onnx = model("yolov3_tiny_coco_fp32.onnx");
    if emulated() || !onnx.exists() {
        eprintln!(
            "skipped: YOLOv3-tiny FP32 ({} absent or emulated); the INT8 model stands in",
            onnx.display()
        );
        return None;
    }
    Some("yolov3_tiny_coco_fp32.toml")
}

/// A path that cannot exist, whoever runs the test (root included) and whatever else runs on the
/// machine: it lies under a regular file.
pub fn missing(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml").join(name)
}

/// Runs edgert as `edgert` does, killing it if it has not ended within `limit`: a test of a
/// command that must not block fails rather than hangs.
pub fn edgert_within(args: &[&str], limit: std::time::Duration) -> Output {
    let child = command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("edgert starts");
    let pid = child.id() as i32;
    let (ended, wait) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = wait.recv_timeout(limit).is_err();
        if late {
            // SAFETY: kill(2) on the child, which the test thread has not reaped: it is waiting.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        late
    });
    let out = child.wait_with_output().unwrap();
    let _ = ended.send(());
    assert!(!watchdog.join().unwrap(), "{args:?} did not end within {limit:?}");
    out
}

/// Runs edgert (within a minute) and checks the failure: exit code, one line, the message parts,
/// no panic.
pub fn fails(args: &[&str], code: i32, parts: &[&str]) {
    let out = edgert_within(args, std::time::Duration::from_secs(60));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("edgert: error: "), "{err}");
    for part in parts {
        assert!(err.contains(part), "{err:?} lacks {part:?}");
    }
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// ImageNet cat classes (torchvision order): tabby, tiger cat, Persian, Siamese, Egyptian cat.
pub const CAT_CLASSES: std::ops::RangeInclusive<usize> = 281..=285;

/// A hand-made board tree under `tests/fixtures/sysfs` (see its README).
pub fn fixture(board: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs").join(board)
}

/// A copy of a manifest in `dir`, with its model and labels, edited by `edit`.
pub fn edited_manifest(dir: &Path, manifest: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(model(manifest)).unwrap();
    for line in text.lines() {
        if let Some(file) = line.strip_prefix("file = \"").or_else(|| line.strip_prefix("labels = \"")) {
            let file = file.trim_end_matches('"');
            std::fs::copy(model(file), dir.join(file)).unwrap();
        }
    }
    let path = dir.join(manifest);
    std::fs::write(&path, edit(text)).unwrap();
    path
}

/// Copies a fixture tree so a test can change it.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The bench report's JSON Schema.
pub fn schema() -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/edgert.bench-3.schema.json"))
            .unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

/// A short bench of the digits MLP with the board's sensors under `root`: the JSON report (checked
/// against the schema), the CSV text and stderr.
pub fn bench_on_board(root: &Path, extra: &[&str]) -> (serde_json::Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let model = model("digits_mlp_nchw.toml");
    let mut args =
        vec!["bench", "--model", model.to_str().unwrap(), "--duration-s", "0.3", "--warmup-ms", "0"];
    args.extend(["--sysfs-root", root.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    args.extend(["--csv", csv.to_str().unwrap()]);
    args.extend(extra);
    let out = edgert(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: Vec<String> = schema().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    (report, std::fs::read_to_string(&csv).unwrap(), stderr(&out))
}

/// A folder of executable shell scripts, `(name, body)`, to put on the PATH.
pub fn fake_tools(tools: &[(&str, &str)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in tools {
        let script = dir.path().join(name);
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// A folder holding one executable shell script named `name`, to put on the PATH.
pub fn fake_tool(name: &str, body: &str) -> tempfile::TempDir {
    fake_tools(&[(name, body)])
}

/// The body of a fake `tegrastats` that prints a fixture line every 50 ms.
pub fn tegrastats_body(line_file: &str) -> String {
    let line = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tegrastats").join(line_file);
    format!("while true; do cat '{}'; sleep 0.05; done", line.display())
}

/// A fake `tegrastats` that prints a fixture line every 50 ms.
pub fn fake_tegrastats(line_file: &str) -> tempfile::TempDir {
    fake_tool("tegrastats", &tegrastats_body(line_file))
}

/// The PATH with `dir` first.
pub fn path_with(dir: &Path) -> String {
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

/// The CPUs this process may run on (as `taskset -p` shows them), which an edgert started from
/// here inherits.
pub fn allowed_cpus() -> Vec<usize> {
    cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap())
}

/// A /proc status's `Cpus_allowed_list` (`0-3,6`), as a list.
fn cpus_allowed(status: &str) -> Vec<usize> {
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    list.split(',')
        .flat_map(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap()
        })
        .collect()
}

/// The CPUs each thread of a running edgert's `cpu` pools (`edgert-cpu-N`) may run on, sorted:
/// the last reading, before it exits, that found `count` of them (pinning follows a thread's
/// start, so an early one could miss it). Empty if none found that many.
pub fn pool_affinities(child: &mut std::process::Child, count: usize) -> Vec<Vec<usize>> {
    let tasks = format!("/proc/{}/task", child.id());
    let mut last = Vec::new();
    while child.try_wait().unwrap().is_none() {
        let mut seen = Vec::new();
        for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            if comm.starts_with("edgert-cpu-") && status.contains("Cpus_allowed_list:") {
                seen.push(cpus_allowed(&status));
            }
        }
        if seen.len() == count {
            seen.sort();
            last = seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    last
}

/// Starts edgert, sends SIGTERM after `after`, and waits for it.
pub fn terminated(args: &[&str], after: std::time::Duration) -> Output {
    terminated_timed(args, after).0
}

/// Starts edgert, sends SIGTERM after `after`, and waits for it: its output, and how long it
/// took to end after the signal.
pub fn terminated_timed(args: &[&str], after: std::time::Duration) -> (Output, std::time::Duration) {
    let child = command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(after);
    let signalled = std::time::Instant::now();
    // SAFETY: kill(2) on a child this test started and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    (out, signalled.elapsed())
}

/// Held by the tests whose figures need the machine's CPUs to themselves (a browser's timing, a
/// flood of clients, frames counted against a clock): a test binary runs its tests in parallel,
/// and one of these beside another starves both.
pub fn cpus_to_myself() -> std::sync::MutexGuard<'static, ()> {
    static HELD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
