//! `deploy/`: the deploy and on-device benchmark scripts against a real sshd on 127.0.0.1 (a
//! throwaway key, started by the test), the Ansible playbook against localhost, and shellcheck.
//! Where sshd, rsync, ansible-playbook or shellcheck are missing these say SKIPPED, unless
//! `EDGERT_REQUIRE_DEPLOY=1` (CI installs them and sets it).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether the test can run here; prints SKIPPED (or fails, when required) when not.
fn usable(test: &str, programs: &[&str]) -> bool {
    let why = if std::env::var_os("EDGERT_TEST_RUNNER").is_some() {
        "the edgert under test is for another architecture (EDGERT_TEST_RUNNER): the local target cannot run it".to_string()
    } else if let Some(missing) = programs.iter().find(|p| !have(p)) {
        format!("{missing} is not installed")
    } else {
        return true;
    };
    assert!(std::env::var("EDGERT_REQUIRE_DEPLOY").as_deref() != Ok("1"), "{test}: {why}");
    eprintln!("SKIPPED {test}: {why}");
    false
}

/// sshd on a free loopback port, with a throwaway host key and client key; killed on drop.
struct LocalSsh {
    dir: tempfile::TempDir,
    port: u16,
    sshd: Child,
}

impl LocalSsh {
    fn start() -> LocalSsh {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            let keygen = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .output()
                .unwrap();
            assert!(keygen.status.success(), "{}", String::from_utf8_lossy(&keygen.stderr));
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        // sshd wants its privilege-separation folder.
        // (Creating it needs root; sshd run by another user does without.)
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             PermitRootLogin prohibit-password\nAcceptEnv none\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let sshd = Command::new(sshd_path())
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts");
        let ssh = LocalSsh { dir, port, sshd };
        let deadline = Instant::now() + Duration::from_secs(20);
        let probe =
            || Command::new("sh").args(["-c", &format!("{} 127.0.0.1 true", ssh.ssh())]).output().unwrap();
        while !probe().status.success() {
            assert!(Instant::now() < deadline, "sshd on port {port} did not accept the test key");
            std::thread::sleep(Duration::from_millis(200));
        }
        ssh
    }

    /// The ssh command the scripts are given.
    fn ssh(&self) -> String {
        format!(
            "ssh -p {} -i {}/client_key -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.port,
            self.dir.path().display()
        )
    }
}

impl Drop for LocalSsh {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

fn sshd_path() -> String {
    ["/usr/sbin/sshd", "/usr/bin/sshd"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("sshd").into()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn script(name: &str, args: &[&str]) -> Output {
    script_env(name, args, &[])
}

fn script_env(name: &str, args: &[&str], env: &[(&str, &Path)]) -> Output {
    Command::new(deploy_dir().join(name)).args(args).envs(env.iter().copied()).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The edgert under test without its debug information (hundreds of MB in a test build), as a
/// release would ship it; made once per test process.
fn binary() -> &'static str {
    static STRIPPED: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    let (_, path) = STRIPPED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("edgert");
        let strip =
            Command::new("strip").arg("-o").arg(&path).arg(env!("CARGO_BIN_EXE_edgert")).output().unwrap();
        assert!(strip.status.success(), "{}", String::from_utf8_lossy(&strip.stderr));
        (dir, path)
    });
    path.to_str().unwrap()
}

/// Deploys the edgert under test and the digits model to 127.0.0.1 under `dest`; the doctor's
/// results come back to `reports` beside it.
fn deploy(ssh: &LocalSsh, dest: &Path, version: &str, extra: &[&str]) -> Output {
    let (manifest, ssh) = (model("digits_mlp_nchw.toml"), ssh.ssh());
    let reports = reports_of(dest);
    let mut args =
        vec!["--binary", binary(), "--model", s(&manifest), "--dest", s(dest), "--version", version];
    args.extend(["--reports", s(&reports)]);
    args.extend(["--ssh", &ssh, "--allow-non-jetson", "--min-free-mb", "1"]);
    args.extend(extra);
    args.push("127.0.0.1");
    script("edgert-deploy", &args)
}

/// Where `deploy` keeps the doctor's results for a deployment under `dest`.
fn reports_of(dest: &Path) -> PathBuf {
    dest.parent().unwrap().join("reports")
}

fn current(dest: &Path) -> String {
    std::fs::read_link(dest.join("current")).unwrap().display().to_string()
}

#[test]
fn deploy_then_redeploy_then_roll_back_over_ssh() {
    if !usable("deploy_then_redeploy_then_roll_back_over_ssh", &["sshd", "ssh-keygen", "rsync"]) {
        return;
    }
    let ssh = LocalSsh::start();
    let board = tempfile::tempdir().unwrap();
    let dest = board.path().join("opt/edgert");
    let first = deploy(&ssh, &dest, "v1", &[]);
    assert!(first.status.success(), "{}", text(&first));
    assert_eq!(current(&dest), "releases/v1");
    for file in
        ["edgert", "edgert-bench-device", "models/digits_mlp_nchw.toml", "models/digits_mlp_nchw.onnx"]
    {
        assert!(dest.join("current").join(file).is_file(), "{file} not deployed");
    }
    // The deployed binary runs from the link, and finds its model beside the manifest.
    let run = Command::new(dest.join("current/edgert"))
        .args(["inspect", "--model", s(&dest.join("current/models/digits_mlp_nchw.toml"))])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));

    // The doctor ran on the board from the new release: its result stays there and came back.
    let doctor = reports_of(&dest).join("127.0.0.1-v1.doctor.json");
    assert!(dest.join("releases/v1/doctor.json").is_file(), "{}", text(&first));
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&doctor).unwrap()).unwrap();
    assert_eq!(result["schema"], "edgert.doctor/1");
    assert!(result["quick"].as_bool().unwrap());
    assert!(
        stdout(&first).contains(&format!("127.0.0.1: edgert doctor: {} failed check(s)", result["failed"])),
        "{}",
        text(&first)
    );

    let second = deploy(&ssh, &dest, "v2", &["--no-doctor"]);
    assert!(second.status.success(), "{}", text(&second));
    assert!(!reports_of(&dest).join("127.0.0.1-v2.doctor.json").exists(), "--no-doctor ran it");
    // A fleet's doctor results in one table.
    let merged = edgert(&["report", "merge", s(&doctor)]);
    assert!(merged.status.success(), "{}", text(&merged));
    assert!(stdout(&merged).contains("| 127.0.0.1-v1.doctor.json |"), "{}", text(&merged));
    assert_eq!(current(&dest), "releases/v2");
    assert!(dest.join("releases/v1/edgert").is_file(), "the earlier release stays for rollback");

    let back = script("edgert-deploy", &["--rollback", "--dest", s(&dest), "--ssh", &ssh.ssh(), "127.0.0.1"]);
    assert!(back.status.success(), "{}", text(&back));
    assert!(stdout(&back).contains("releases/v1"), "{}", text(&back));
    assert_eq!(current(&dest), "releases/v1");
    let again =
        script("edgert-deploy", &["--rollback", "--dest", s(&dest), "--ssh", &ssh.ssh(), "127.0.0.1"]);
    assert_eq!(again.status.code(), Some(1), "nothing before v1: {}", text(&again));
    assert!(stderr(&again).contains("no release before 'v1'"), "{}", text(&again));
    let forward = script(
        "edgert-deploy",
        &["--rollback", "--to", "v2", "--dest", s(&dest), "--ssh", &ssh.ssh(), "127.0.0.1"],
    );
    assert!(forward.status.success(), "{}", text(&forward));
    assert_eq!(current(&dest), "releases/v2");
}

#[test]
fn a_failing_board_check_copies_nothing_and_names_the_reason() {
    if !usable("a_failing_board_check_copies_nothing_and_names_the_reason", &["sshd", "ssh-keygen", "rsync"])
    {
        return;
    }
    let ssh = LocalSsh::start();
    let board = tempfile::tempdir().unwrap();
    let dest = board.path().join("edgert");
    // An aarch64 ELF header is all the architecture check reads.
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[18] = 183;
    let arm = board.path().join("edgert-aarch64");
    std::fs::write(&arm, header).unwrap();
    let host_arch = std::env::consts::ARCH;
    let manifest = model("digits_mlp_nchw.toml");
    let reports = board.path().join("reports");
    let base = ["--model", s(&manifest), "--dest", s(&dest), "--ssh", &ssh.ssh(), "--reports", s(&reports)];
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["--binary", s(&arm), "--allow-non-jetson"], format!("the board is {host_arch} but")),
        (vec!["--binary", binary()], "no /etc/nv_tegra_release".into()),
        (
            vec!["--binary", binary(), "--allow-non-jetson", "--min-free-mb", "999999999"],
            "not enough disk".into(),
        ),
        (vec!["--binary", binary(), "--ssh", "ssh -o BatchMode=yes -p 1"], "cannot connect over ssh".into()),
    ];
    for (extra, message) in cases {
        let args = [&base[..], &extra, &["127.0.0.1"]].concat();
        let out = script("edgert-deploy", &args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", text(&out));
        let err = stderr(&out);
        assert!(err.contains("127.0.0.1: ") && err.contains(&message), "{extra:?}: {err}");
        assert!(!dest.exists(), "{extra:?}: copied despite the failed check");
    }
    // Boards by their L4T release file: too old for the binary's glibc, unreadable, and Thor.
    let release = board.path().join("nv_tegra_release");
    let with_release = |first_line: &str| {
        std::fs::write(&release, format!("{first_line}\n# KERNEL_VARIANT: oot\n")).unwrap();
        let args = [&base[..], &["--binary", binary(), "--min-free-mb", "1", "127.0.0.1"]].concat();
        script_env("edgert-deploy", &args, &[("EDGERT_L4T_RELEASE", &release)])
    };
    for (line, message) in [
        ("# R28 (release), REVISION: 2.1, GCID: 1", "L4T 28.2.1 is older than JetPack 4"),
        ("garbage", "does not read as an L4T release: 'garbage'"),
    ] {
        let out = with_release(line);
        assert_eq!(out.status.code(), Some(1), "{line}: {}", text(&out));
        assert!(stderr(&out).contains(message), "{line}: {}", text(&out));
        assert!(!dest.exists(), "{line}: copied despite the failed check");
    }
    let thor = with_release("# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64");
    assert!(thor.status.success(), "{}", text(&thor));
    assert!(
        text(&thor).contains("127.0.0.1: ") && text(&thor).contains("L4T 38.2.0 (JetPack 7)"),
        "{}",
        text(&thor)
    );

    let binary = missing("edgert");
    let missing = script("edgert-deploy", &["--binary", binary.to_str().unwrap(), "127.0.0.1"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains(&format!("{}: no such binary", binary.display())),
        "{}",
        text(&missing)
    );
    // Without --binary, from a checkout where neither build has run: the build to run is named.
    let empty = tempfile::tempdir().unwrap();
    let unbuilt = Command::new(deploy_dir().join("edgert-deploy"))
        .arg("127.0.0.1")
        .current_dir(empty.path())
        .output()
        .unwrap();
    assert_eq!(unbuilt.status.code(), Some(2));
    assert!(
        stderr(&unbuilt).contains("no edgert binary built: run cross/build-aarch64.sh"),
        "{}",
        text(&unbuilt)
    );
}

#[test]
fn dry_run_prints_the_plan_and_touches_nothing() {
    if !usable("dry_run_prints_the_plan_and_touches_nothing", &[]) {
        return;
    }
    let board = tempfile::tempdir().unwrap();
    let dest = board.path().join("edgert");
    let manifest = model("digits_mlp_nchw.toml");
    let out = script(
        "edgert-deploy",
        &[
            "--dry-run",
            "--binary",
            binary(),
            "--model",
            s(&manifest),
            "--dest",
            s(&dest),
            "--version",
            "v9",
            "--unit",
            "--model models/digits_mlp_nchw.toml --input /data",
            "--ssh",
            "false",
            "board-a",
            "board-b",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plan = stdout(&out);
    // The binary is named with the version and commit it reports of itself.
    let info: serde_json::Value = serde_json::from_slice(&edgert(&["info", "--json"]).stdout).unwrap();
    let (version, git) = (&info["provenance"]["edgert_version"], &info["provenance"]["edgert_git"]);
    let size = std::fs::metadata(binary()).unwrap().len();
    let named =
        format!("binary {}: edgert {} git {}, ", binary(), version.as_str().unwrap(), git.as_str().unwrap());
    assert!(plan.contains(&named) && plan.contains(&format!(", {size} bytes")), "no '{named}' in {plan}");
    for line in [
        "./models/digits_mlp_nchw.onnx",
        "would copy to board-b:",
        "would relink board-a:",
        "would run edgert doctor --quick on board-b",
        "ExecStart=",
        "/current/edgert run --model models/digits_mlp_nchw.toml",
    ] {
        assert!(plan.contains(line), "no '{line}' in {plan}");
    }
    assert!(!dest.exists());
}

#[test]
fn the_systemd_unit_runs_edgert_from_the_current_link_and_restarts_it() {
    if !usable(
        "the_systemd_unit_runs_edgert_from_the_current_link_and_restarts_it",
        &["sshd", "ssh-keygen", "rsync"],
    ) {
        return;
    }
    let ssh = LocalSsh::start();
    let board = tempfile::tempdir().unwrap();
    let (dest, units) = (board.path().join("edgert"), board.path().join("units"));
    let out = deploy(
        &ssh,
        &dest,
        "v1",
        &["--unit", "--model models/digits_mlp_nchw.toml", "--unit-dir", s(&units)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let unit = std::fs::read_to_string(units.join("edgert.service")).unwrap();
    let exec = format!("ExecStart={}/current/edgert run --model models/digits_mlp_nchw.toml", dest.display());
    for line in [exec.as_str(), "Restart=on-failure", "StandardOutput=journal", "WantedBy=multi-user.target"]
    {
        assert!(unit.lines().any(|l| l == line), "no '{line}' in {unit}");
    }
    assert!(
        stdout(&out).contains("not started"),
        "outside /etc/systemd/system it is only written: {}",
        text(&out)
    );
}

/// A stand-in for jetson_clocks that logs each call, so a test can see the clocks locked and restored.
fn fake_jetson_clocks(dir: &Path) -> (PathBuf, PathBuf) {
    let (tool, log) = (dir.join("jetson_clocks"), dir.join("jetson_clocks.log"));
    let body = format!(
        "#!/bin/sh\necho \"${{*:-lock}}\" >> {log}\ncase \"$1\" in --store) echo state > \"$2\";; --show) echo 'GPU MinFreq=306000000 MaxFreq=918000000';; esac\n",
        log = log.display()
    );
    std::fs::write(&tool, body).unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (tool, log)
}

/// Whether a process of process group `group` is running `edgert bench` (exec'd, not the shell
/// forked to start it).
fn bench_running(group: u32) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else { return false };
    processes.flatten().any(|process| {
        let stat = std::fs::read_to_string(process.path().join("stat")).unwrap_or_default();
        // "pid (name) state ppid pgrp ...": the name may hold spaces, so read after its ')'.
        let pgrp = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse().ok());
        let cmdline = std::fs::read(process.path().join("cmdline")).unwrap_or_default();
        pgrp == Some(group) && cmdline.split(|&b| b == 0).nth(1) == Some(&b"bench"[..])
    })
}

fn calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

#[test]
fn bench_on_a_deployed_board_locks_and_restores_clocks_and_brings_reports_back() {
    if !usable(
        "bench_on_a_deployed_board_locks_and_restores_clocks_and_brings_reports_back",
        &["sshd", "ssh-keygen", "rsync"],
    ) {
        return;
    }
    let ssh = LocalSsh::start();
    let board = tempfile::tempdir().unwrap();
    let dest = board.path().join("edgert");
    let deployed = deploy(&ssh, &dest, "v1", &[]);
    assert!(deployed.status.success(), "{}", text(&deployed));
    let (clocks, log) = fake_jetson_clocks(board.path());
    let workstation = tempfile::tempdir().unwrap();
    let out_dir = workstation.path().join("reports");
    let model_on_board = dest.join("current/models/digits_mlp_nchw.toml");
    let out = script(
        "edgert-bench-device",
        &[
            "--host",
            "127.0.0.1",
            "--ssh",
            &ssh.ssh(),
            "--dest",
            s(&dest),
            "--out",
            s(&out_dir),
            "--models",
            s(&model_on_board),
            "--batches",
            "1,2",
            "--backends",
            "cpu",
            "--duration-s",
            "0.2",
            // Words with spaces reach the board as one argument.
            "--scenario",
            "offline --min-queries 50",
            "--jetson-clocks",
            s(&clocks),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(calls(&log), ["--show", "--store", "lock", "--restore", "--show"]);
    for file in [
        "digits_mlp_nchw_cpu.json",
        "summary.md",
        "summary.csv",
        "summary.svg",
        "nvpmodel.txt",
        "clocks-before.txt",
    ] {
        assert!(out_dir.join(file).is_file(), "{file} did not come back");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("digits_mlp_nchw_cpu.json")).unwrap())
            .unwrap();
    let errors: Vec<String> = schema().iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(report["runs"].as_array().unwrap().len(), 2);
    assert_eq!(report["runs"][1]["scenario"]["name"], "offline");
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert_eq!(summary.lines().filter(|l| l.contains("digits_mlp_nchw")).count(), 2, "{summary}");
}

/// `--scenario server` on the board: no --batch, the server's flags passed on; a scenario that
/// does not exist, or batches where the scenario forms its own, refused before the clocks move.
#[test]
fn bench_device_runs_a_server_scenario_and_refuses_bad_ones() {
    if !usable("bench_device_runs_a_server_scenario_and_refuses_bad_ones", &[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = model("digits_mlp_nchw.toml");
    let server = ["--duration-s", "0.1", "--scenario", "server --qps 100,200 --min-queries 30 --max-batch 2"];
    let (mut command, log, out_dir) = bench_locally(dir.path(), s(&good), &server);
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("digits_mlp_nchw_cpu.json")).unwrap())
            .unwrap();
    let offered: Vec<_> =
        report["runs"].as_array().unwrap().iter().map(|r| r["scenario"]["offered_qps"].clone()).collect();
    assert_eq!(offered, [100.0, 200.0]);
    assert!(out_dir.join("summary.svg").is_file(), "the server chart");
    assert_eq!(calls(&log), ["--show", "--store", "lock", "--restore", "--show"]);
    for (extra, says) in [
        (&["--scenario", "warp-speed"][..], "--scenario 'warp-speed' is not single-stream"),
        (
            &["--scenario", "server --qps 10", "--batches", "1,2"][..],
            "--batches is for single-stream and offline",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mut command, log, _) = bench_locally(dir.path(), s(&good), extra);
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(stderr(&out).contains(says), "{}", text(&out));
        assert!(calls(&log).is_empty(), "the clocks were not touched");
    }
}

/// The on-device script run locally, as on the board, with the fake jetson_clocks.
fn bench_locally(dir: &Path, models: &str, extra: &[&str]) -> (Command, PathBuf, PathBuf) {
    let (clocks, log) = fake_jetson_clocks(dir);
    let out_dir = dir.join("reports");
    let mut command = Command::new(deploy_dir().join("edgert-bench-device"));
    command.args([
        "--edgert",
        binary(),
        "--models",
        models,
        "--out",
        s(&out_dir),
        "--jetson-clocks",
        s(&clocks),
    ]);
    command.args(extra);
    (command, log, out_dir)
}

#[test]
fn a_failing_run_or_ctrl_c_still_restores_the_clocks() {
    if !usable("a_failing_run_or_ctrl_c_still_restores_the_clocks", &[]) {
        return;
    }
    // A model that fails: the other runs go on, the failure is named, the exit is non-zero.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[model]\nfile = \"missing.onnx\"\n").unwrap();
    let good = model("digits_mlp_nchw.toml");
    let models = format!("{},{}", s(&broken), s(&good));
    let (mut command, log, out_dir) = bench_locally(dir.path(), &models, &["--duration-s", "0.1"]);
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("FAILED") && stderr(&out).contains("broken.toml"), "{}", text(&out));
    assert_eq!(calls(&log), ["--show", "--store", "lock", "--restore", "--show"]);
    assert!(out_dir.join("digits_mlp_nchw_cpu.json").is_file(), "the good model still ran");

    // Ctrl-C in the middle of a long run: the clocks come back and the exit says interrupted.
    let dir = tempfile::tempdir().unwrap();
    let (mut command, log, _) = bench_locally(dir.path(), s(&good), &["--duration-s", "60"]);
    // In a process group of its own, as a shell runs a job: Ctrl-C signals the whole group.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // And with Ctrl-C's default action, as a shell starts a foreground job. Run from a background
    // job (`cargo test &` in a script) the tests inherit SIGINT ignored, and bash can neither trap
    // nor reset a signal ignored when it started.
    // SAFETY: signal() is async-signal-safe, and nothing else runs in the child before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !calls(&log).contains(&"lock".to_string()) {
        assert!(Instant::now() < deadline, "the clocks were never locked");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Not before `edgert bench` runs: a Ctrl-C that lands while bash forks it goes to the forked
    // shell, which ignores it, and bash then ignores it too (its "wait and cooperative exit").
    while !bench_running(child.id()) {
        assert!(Instant::now() < deadline, "edgert bench never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let kill = Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(calls(&log), ["--show", "--store", "lock", "--restore", "--show"]);
}

#[test]
fn without_jetson_clocks_the_bench_refuses_unless_told_to_run_unlocked() {
    if !usable("without_jetson_clocks_the_bench_refuses_unless_told_to_run_unlocked", &[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = model("digits_mlp_nchw.toml");
    let (mut command, _, out_dir) = bench_locally(dir.path(), s(&good), &["--duration-s", "0.1"]);
    let clocks = missing("jetson_clocks");
    let out = command.args(["--jetson-clocks", clocks.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let message = format!("'{}' not found", clocks.display());
    assert!(stderr(&out).contains(&message), "{}", text(&out));
    assert!(!out_dir.join("digits_mlp_nchw_cpu.json").exists(), "no bench ran");

    let out = command.arg("--no-lock-clocks").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(out_dir.join("digits_mlp_nchw_cpu.json").is_file());
}

#[test]
fn a_thread_sweep_benches_the_cpu_backends_at_each_count_and_gpu_ones_once() {
    if !usable("a_thread_sweep_benches_the_cpu_backends_at_each_count_and_gpu_ones_once", &[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = model("digits_mlp_nchw.toml");
    let sweep = ["--threads", "1,2", "--backends", "cpu,gpu-or-cpu", "--duration-s", "0.1"];
    let (mut command, _, out_dir) = bench_locally(dir.path(), s(&good), &sweep);
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let threads = |name: &str| {
        let report = std::fs::read_to_string(out_dir.join(name)).unwrap();
        serde_json::from_str::<serde_json::Value>(&report).unwrap()["threads"].as_u64()
    };
    assert_eq!(threads("digits_mlp_nchw_cpu_t1.json"), Some(1));
    assert_eq!(threads("digits_mlp_nchw_cpu_t2.json"), Some(2));
    assert_eq!(threads("digits_mlp_nchw_gpu-or-cpu_t1.json"), Some(1));
    assert!(!out_dir.join("digits_mlp_nchw_gpu-or-cpu_t2.json").exists(), "a GPU backend runs once");
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    let two = if allowed_cpus().len() >= 2 { "2 pinned" } else { "2" };
    assert!(summary.contains(&format!("| cpu | {two} | single-stream | 1 |")), "{summary}");

    for bad in ["0", "1,,2", "two", "1,2,"] {
        let dir = tempfile::tempdir().unwrap();
        let (mut command, log, _) = bench_locally(dir.path(), s(&good), &["--threads", bad]);
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--threads {bad}: {}", text(&out));
        assert!(stderr(&out).contains(&format!("--threads '{bad}'")), "{}", text(&out));
        assert!(calls(&log).is_empty(), "nothing ran, the clocks untouched");
    }
}

#[test]
fn pin_on_and_off_benches_the_cpu_backends_threads_both_ways() {
    if !usable("pin_on_and_off_benches_the_cpu_backends_threads_both_ways", &[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = model("digits_mlp_nchw.toml");
    let sweep =
        ["--threads", "1,2", "--pin", "on,off", "--backends", "cpu,gpu-or-cpu", "--duration-s", "0.1"];
    let (mut command, _, out_dir) = bench_locally(dir.path(), s(&good), &sweep);
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let pinned = |name: &str| {
        let report = std::fs::read_to_string(out_dir.join(name)).unwrap();
        !serde_json::from_str::<serde_json::Value>(&report).unwrap()["pinned_cpus"].is_null()
    };
    assert_eq!(pinned("digits_mlp_nchw_cpu_t2.json"), allowed_cpus().len() >= 2);
    assert!(!pinned("digits_mlp_nchw_cpu_t2_nopin.json"));
    for once in ["digits_mlp_nchw_cpu_t1_nopin.json", "digits_mlp_nchw_gpu-or-cpu_t2_nopin.json"] {
        assert!(!out_dir.join(once).exists(), "{once}: one thread, or not the cpu backend, runs once");
    }
    assert!(
        stderr(&out).contains("bench digits_mlp_nchw_cpu_t2_nopin: batches 1, 2 thread(s), not pinned"),
        "{}",
        text(&out)
    );

    for bad in ["yes", "on,on", "on,off,", "off,"] {
        let dir = tempfile::tempdir().unwrap();
        let (mut command, log, _) = bench_locally(dir.path(), s(&good), &["--pin", bad]);
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--pin {bad}: {}", text(&out));
        assert!(calls(&log).is_empty(), "nothing ran, the clocks untouched");
    }
}

#[test]
fn the_ansible_playbook_deploys_and_benchmarks_localhost() {
    if !usable("the_ansible_playbook_deploys_and_benchmarks_localhost", &["ansible-playbook"]) {
        return;
    }
    let playbook = deploy_dir().join("ansible/edgert.yml");
    let inventory = deploy_dir().join("ansible/inventory.example.ini");
    let check = Command::new("ansible-playbook")
        .args(["--syntax-check", "-i"])
        .arg(&inventory)
        .arg(&playbook)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));

    let dir = tempfile::tempdir().unwrap();
    let (clocks, log) = fake_jetson_clocks(dir.path());
    let (dest, collected) = (dir.path().join("board/edgert"), dir.path().join("collected"));
    let vars = serde_json::json!({
        "edgert_binary": binary(),
        "edgert_models": [s(&model("digits_mlp_nchw.toml"))],
        "edgert_dest": s(&dest),
        "edgert_version": "v1",
        "edgert_allow_non_jetson": true,
        "edgert_min_free_mb": 1,
        "edgert_jetson_clocks": s(&clocks),
        "edgert_bench_batches": "1,2",
        "edgert_bench_duration_s": 0.2,
        "edgert_reports_dir": s(&collected),
        // Modules run with the Python that runs Ansible, not whichever `python3` is found first.
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
    });
    let run = Command::new("ansible-playbook")
        .args(["-i", "localhost,", "-c", "local", "-e"])
        .arg(vars.to_string())
        .arg(&playbook)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    assert_eq!(current(&dest), "releases/v1");
    let reports = collected.join("localhost");
    assert!(reports.join("digits_mlp_nchw_cpu.json").is_file(), "{}", text(&run));
    assert!(reports.join("summary.md").is_file());
    let doctor: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join("doctor.json")).unwrap()).unwrap();
    assert_eq!(doctor["schema"], "edgert.doctor/1", "{}", text(&run));
    assert_eq!(calls(&log), ["--show", "--store", "lock", "--restore", "--show"]);
}

#[test]
fn the_scripts_are_shellcheck_clean() {
    if !usable("the_scripts_are_shellcheck_clean", &["shellcheck"]) {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let scripts = [
        "deploy/edgert-deploy",
        "deploy/edgert-bench-device",
        "cross/test-aarch64.sh",
        "cross/build-aarch64.sh",
        "cross/check-aarch64.sh",
        "cross/check-tensorrt-shim.sh",
        "benches/pipeline_throughput.sh",
        "benches/gpu-check.sh",
        "benches/soak.sh",
        ".ci/run",
        "models/fetch.sh",
    ];
    let out = Command::new("shellcheck").args(scripts.map(|s| root.join(s))).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}
