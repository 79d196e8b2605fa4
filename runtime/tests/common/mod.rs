//! Paths and helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

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
        Some(program) => {
            let mut c = Command::new(program);
            c.args(words).arg(binary);
            c
        }
        None => Command::new(binary),
    };
    command.args(args);
    command
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// ImageNet cat classes (torchvision order): tabby, tiger cat, Persian, Siamese, Egyptian cat.
pub const CAT_CLASSES: std::ops::RangeInclusive<usize> = 281..=285;
