//! The `edgert` binary end to end: run, bench (report schema, CSV), inspect, info.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn run_prints_a_cat_for_chelsea_and_json_lines_for_a_folder() {
    let chelsea = image("chelsea.png");
    let out = edgert(&[
        "run",
        "--model",
        model("mobilenetv2_int8_qdq.toml").to_str().unwrap(),
        "--input",
        chelsea.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("chelsea.png: 28"), "{text}");

    let folder = models().join("images");
    let out = edgert(&[
        "run",
        "-m",
        model("mobilenetv2_fp32.toml").to_str().unwrap(),
        "-i",
        folder.to_str().unwrap(),
        "--json",
        "--top-k",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7, "one line per photo");
    let chelsea = lines.iter().find(|l| l["input"].as_str().unwrap().ends_with("chelsea.png")).unwrap();
    let classes = chelsea["prediction"]["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 3);
    assert!(CAT_CLASSES.contains(&(classes[0]["class_id"].as_u64().unwrap() as usize)), "{chelsea}");
}

#[test]
fn run_finds_bus_and_people_with_yolo_int8() {
    let out = edgert(&[
        "run",
        "--model",
        model("yolov3_tiny_coco_int8_qdq.toml").to_str().unwrap(),
        "--input",
        image("bus.jpg").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("bus 0.") && text.contains("person 0."), "{text}");
}

#[test]
fn run_on_digits_npz_reaches_97_percent() {
    let out = edgert(&[
        "run",
        "--model",
        model("digits_mlp_nchw.toml").to_str().unwrap(),
        "--input",
        model("digits_test.npz").to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 360);
    let correct = lines
        .iter()
        .filter(|l| l["label"].as_u64() == l["prediction"]["classes"][0]["class_id"].as_u64())
        .count();
    assert!(correct as f64 / 360.0 >= 0.97, "{correct}/360");
    assert!(stderr(&out).contains(&format!("({correct}/360)")), "{}", stderr(&out));
}

#[test]
fn bare_onnx_runs_with_defaults() {
    let out = edgert(&[
        "run",
        "--model",
        model("mnist_mlp_nchw.onnx").to_str().unwrap(),
        "--input",
        model("mnist_test.npz").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let acc: f64 =
        stderr(&out).split("accuracy ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(acc >= 95.0, "{acc}");
}

/// The arrays of an `.npz` `run --save-outputs` wrote: name → (shape, values).
fn read_npz(path: &std::path::Path) -> std::collections::BTreeMap<String, (Vec<u64>, Vec<f32>)> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut arrays = std::collections::BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().unwrap().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
        let shape = npy.shape().to_vec();
        arrays.insert(name, (shape, npy.into_vec::<f32>().unwrap()));
    }
    arrays
}

#[test]
fn run_saves_every_output_whole_as_npz() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    std::fs::create_dir_all(&photos).unwrap();
    std::fs::copy(image("chelsea.png"), photos.join("chelsea.png")).unwrap();
    std::fs::copy(image("bus.jpg"), photos.join("bus.jpg")).unwrap();
    let out_dir = dir.path().join("outputs");
    let manifest = model("mobilenetv2_fp32.toml");
    let out = edgert(&[
        "run",
        "-m",
        manifest.to_str().unwrap(),
        "-i",
        photos.to_str().unwrap(),
        "--save-outputs",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cat = read_npz(&out_dir.join("chelsea.png.npz"));
    let (shape, logits) = &cat["logits"];
    assert_eq!(shape, &[1, 1000]);
    assert_eq!(top1(logits), 285, "Egyptian cat");
    let images = [capture_image("chelsea.png")];
    let samples: Vec<_> = images.iter().map(edgert::pipeline::Sample::Image).collect();
    let expected = raw_outputs(edgert::backend::select("cpu").unwrap(), "mobilenetv2_fp32.toml", &samples);
    assert_eq!(logits, &expected[0], "the logits the pipeline computes, bit for bit");
    assert!(out_dir.join("bus.jpg.npz").is_file());

    let digits = model("digits_mlp_nchw.toml");
    let set = model("digits_test.npz");
    let out = edgert(&[
        "run",
        "-m",
        digits.to_str().unwrap(),
        "-i",
        set.to_str().unwrap(),
        "--save-outputs",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(out_dir.join("digits_test")).unwrap().count(), 360);
    assert_eq!(read_npz(&out_dir.join("digits_test/359.npz")).values().next().unwrap().0, [1, 10]);

    // A file where the folder should be; a folder that cannot be made; no --input.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let chelsea = image("chelsea.png");
    let m = manifest.to_str().unwrap();
    fails(
        &["run", "-m", m, "-i", chelsea.to_str().unwrap(), "--save-outputs", file.to_str().unwrap()],
        1,
        &["file: cannot write: not a folder"],
    );
    let under_file = missing("outputs");
    fails(
        &["run", "-m", m, "-i", chelsea.to_str().unwrap(), "--save-outputs", under_file.to_str().unwrap()],
        1,
        &["outputs: cannot write: "],
    );
    fails(
        &["run", "-m", m, "--source", "synthetic:64x48", "--save-outputs", out_dir.to_str().unwrap()],
        2,
        &["--input"],
    );
}

fn capture_image(name: &str) -> image::DynamicImage {
    edgert::capture::load_image(&image(name)).unwrap()
}

#[test]
fn bench_writes_a_report_that_validates_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let out = edgert(&[
        "bench",
        "--model",
        model("mobilenetv2_int8_qdq.toml").to_str().unwrap(),
        "--batch",
        "1,2",
        "--threads",
        "2",
        "--warmup-ms",
        "20",
        "--duration-s",
        "0.3",
        "--min-iterations",
        "5",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("batch sweep") && text.contains("end_to_end") && text.contains("p99"), "{text}");

    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let validator = schema();
    let errors: Vec<String> = validator.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    for (pointer, value) in [("/schema", Value::from("edgert.bench/1")), ("/provenance", Value::Null)] {
        let mut changed = report.clone();
        *changed.pointer_mut(pointer).unwrap() = value;
        assert!(!validator.is_valid(&changed), "{pointer} changed, still valid");
    }
    assert_eq!(report["model"]["precision"], "int8-qdq");
    assert_eq!(report["threads"], 2);
    match common::allowed_cpus()[..] {
        [a, b, ..] => {
            assert_eq!(report["pinned_cpus"], serde_json::json!([a, b]));
            assert!(text.contains(&format!("2 thread(s) pinned to CPUs {a},{b},")), "{text}");
        }
        _ => assert!(report["pinned_cpus"].is_null()),
    }
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["batch"].as_u64().unwrap()).collect::<Vec<_>>(), vec![1, 2]);
    for run in runs {
        let e2e = &run["stages"]["end_to_end"];
        assert!(e2e["count"].as_u64().unwrap() >= 5);
        assert!(
            e2e["min_ms"].as_f64() <= e2e["p50_ms"].as_f64()
                && e2e["p50_ms"].as_f64() <= e2e["p99_ms"].as_f64()
        );
        let batch = run["batch"].as_f64().unwrap();
        let (fps, ips) = (run["frames_per_s"].as_f64().unwrap(), run["inferences_per_s"].as_f64().unwrap());
        assert!((fps - ips * batch).abs() < 1e-6 * fps);
    }
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert!(csv_text.starts_with("batch,stage,count,"));
    assert_eq!(csv_text.lines().count(), 1 + 2 * 4, "{csv_text}");
}

#[test]
fn bench_with_no_pin_leaves_the_threads_to_the_os_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let m = model("digits_mlp_nchw.toml");
    let flags = ["--threads", "2", "--warmup-ms", "0", "--duration-s", "0.05", "--min-iterations", "3"];
    let out = edgert(
        &[&["bench", "-m", m.to_str().unwrap(), "--no-pin", "--json", json.to_str().unwrap()], &flags[..]]
            .concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("2 thread(s), input"), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["pinned_cpus"].is_null(), "{}", report["pinned_cpus"]);
}

#[test]
fn bench_on_labelled_tensors_and_an_image_input() {
    let out = edgert(&[
        "bench",
        "-m",
        model("digits_mlp_nchw.toml").to_str().unwrap(),
        "--input",
        model("digits_test.npz").to_str().unwrap(),
        "--duration-s",
        "0.1",
        "--warmup-ms",
        "0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("digits_test.npz"));
}

#[test]
fn inspect_reports_precision_parameters_macs_and_sparsity() {
    let out = edgert(&["inspect", "--model", model("mobilenetv2_fp32.toml").to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(r["precision"], "fp32");
    assert_eq!(r["operators"]["Conv"], 52);
    // torchvision's MobileNetV2: 3.5 M parameters, about 300 M MACs at 224×224.
    let params = r["parameters"].as_u64().unwrap();
    assert!((3_400_000..3_600_000).contains(&params), "{params}");
    let macs = r["macs"].as_u64().unwrap();
    assert!((290_000_000..320_000_000).contains(&macs), "{macs}");
    assert!(r["sparsity"]["zero_share"].as_f64().unwrap() < 0.01);

    let out = edgert(&["inspect", "--model", model("mobilenetv2_int8_qdq.onnx").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("precision  int8-qdq"), "{}", stdout(&out));
}

#[test]
fn info_lists_backends_and_why_the_gpu_ones_are_absent() {
    let out = edgert(&["info", "--json"]);
    assert!(out.status.success());
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let backends = info["backends"].as_array().unwrap();
    let cpu = backends.iter().find(|b| b["name"] == "cpu").unwrap();
    assert_eq!((cpu["compiled"].as_bool(), cpu["usable"].as_bool()), (Some(true), Some(true)));
    let trt = backends.iter().find(|b| b["name"] == "tensorrt").unwrap();
    assert_eq!(trt["compiled"], cfg!(feature = "tensorrt"));
    if !cfg!(feature = "tensorrt") {
        assert!(trt["reason"].as_str().unwrap().contains("--features tensorrt"));
    }
    assert_eq!(info["gpu"]["compiled"], cfg!(feature = "cuda"));
    if !cfg!(feature = "cuda") {
        assert!(info["gpu"]["reason"].as_str().unwrap().contains("--features cuda-11040"));
    }
    assert_eq!(info["gstreamer"]["compiled"], cfg!(feature = "gstreamer"));
    if !cfg!(feature = "gstreamer") {
        assert!(info["gstreamer"]["reason"].as_str().unwrap().contains("--features gstreamer"));
    }
    assert!(stdout(&edgert(&["info"])).contains("cpu       compiled in, usable here"));
}

#[test]
fn edgert_cpu_kernels_picks_whose_operators_cpu_runs_and_reports_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, input, json) =
        (model("digits_mlp_nchw.toml"), model("digits_test.npz"), dir.path().join("r.json"));
    let args = [
        "bench",
        "-m",
        manifest.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--duration-s",
        "0.1",
        "--warmup-ms",
        "0",
        "--json",
        json.to_str().unwrap(),
    ];
    let version = |kernels: &str| {
        let out = command(&args).env("EDGERT_CPU_KERNELS", kernels).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        report["backend"]["version"].as_str().unwrap().to_string()
    };
    let (ours, tracts) = (version("edgert"), version("tract"));
    assert!(ours.contains("edgert's convolution and fake-quantize kernels"), "{ours}");
    // Integer INT8 convolutions are named where they run: on processors with dot products.
    assert_eq!(
        ours.contains("INT8 convolutions on integers"),
        edgert::backend::tract_ops::has_dot_product(),
        "{ours}"
    );
    assert!(tracts.starts_with("tract-onnx") && !tracts.contains("edgert"), "{tracts}");
    // Asked for by name, or reached by `gpu-or-cpu` falling back: the same one line, exit 1.
    let fallback = [&args[..], &["--backend", "gpu-or-cpu"]].concat();
    for args in [&args[..], &fallback[..]] {
        let out = command(args).env("EDGERT_CPU_KERNELS", "fast").output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("EDGERT_CPU_KERNELS is 'fast'"), "{}", stderr(&out));
    }
}

#[test]
fn gpu_or_cpu_falls_back_and_says_so() {
    let out = edgert(&[
        "run",
        "--backend",
        "gpu-or-cpu",
        "--model",
        model("digits_mlp_nchw.toml").to_str().unwrap(),
        "--input",
        model("digits_test.npz").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("fell back to cpu"), "{}", stderr(&out));
}

#[test]
fn the_tract_load_cache_gives_the_same_results_and_survives_a_damaged_entry() {
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = dir.path().join("tract");
    // With `cache`, EDGERT_TRACT_CACHE names it; without, it is unset, and HOME a folder of the test's.
    let run = |name: &str, cache: Option<&std::path::Path>| {
        let (manifest, photo) = (model(name), image("chelsea.png"));
        let mut command = command(&["run", "-m", manifest.to_str().unwrap(), "-i", photo.to_str().unwrap()]);
        match cache {
            Some(cache) => command.env("EDGERT_TRACT_CACHE", cache),
            None => command
                .env_remove("EDGERT_TRACT_CACHE")
                .env("HOME", home.path())
                .env("XDG_CACHE_HOME", home.path()),
        };
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let entries = || std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
    let uncached = run("mobilenetv2_int8_qdq.toml", None);
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "no cache unless asked for");

    let first = run("mobilenetv2_int8_qdq.toml", Some(&cache));
    assert_eq!(entries(), 1);
    let second = run("mobilenetv2_int8_qdq.toml", Some(&cache));
    assert!(stderr(&second).is_empty(), "{}", stderr(&second));
    assert_eq!(stdout(&first), stdout(&uncached));
    assert_eq!(stdout(&second), stdout(&uncached));

    let entry = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap().path();
    std::fs::write(&entry, b"damaged").unwrap();
    let third = run("mobilenetv2_int8_qdq.toml", Some(&cache));
    assert_eq!(stdout(&third), stdout(&uncached));
    let warning = stderr(&third);
    assert_eq!(warning.trim().lines().count(), 1, "{warning}");
    assert!(
        warning.contains("warning: load cache") && warning.contains(entry.to_str().unwrap()),
        "{warning}"
    );

    run("mobilenetv2_fp32.toml", Some(&cache));
    assert_eq!(entries(), 2);
}

/// `--json` means one thing in every command: alone, JSON on stdout; with FILE, JSON there and
/// the text on stdout as usual.
#[test]
fn json_alone_takes_stdout_and_json_file_keeps_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let digits = digits.to_str().unwrap();

    // A document command (inspect): the same report either way.
    let file = dir.path().join("inspect.json");
    let out = edgert(&["inspect", "-m", digits, "--json", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("precision  fp32"), "the text stays on stdout: {}", stdout(&out));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let printed: Value =
        serde_json::from_str(&stdout(&edgert(&["inspect", "-m", digits, "--json"]))).unwrap();
    assert_eq!(written, printed);

    // A command of results as they come (run): JSON Lines in the file, a text line per input on stdout.
    let file = dir.path().join("run.json");
    let input = model("digits_test.npz");
    let out = edgert(&["run", "-m", digits, "-i", input.to_str().unwrap(), "--json", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().filter(|l| l.contains("digits_test.npz#")).count(), 360);
    let lines: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 360);
    assert!(lines.iter().all(|l| l["prediction"]["classes"].is_array() && l["label"].is_i64()));

    // A measuring command (bench): a bare --json puts the report on stdout, the table on stderr.
    let out = edgert(&["bench", "-m", digits, "--duration-s", "0", "--min-iterations", "2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("stdout is the report alone");
    assert_eq!(report["schema"], "edgert.bench/3");
    assert!(stderr(&out).contains("p99"), "the table goes to stderr: {}", stderr(&out));
}

#[test]
fn json_refuses_an_empty_file_and_a_report_it_compares() {
    let digits = model("digits_mlp_nchw.toml");
    let out = edgert(&["inspect", "-m", digits.to_str().unwrap(), "--json="]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("empty FILE"), "{}", stderr(&out));

    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.json");
    std::fs::write(&before, "{}").unwrap();
    let (b, a) = (before.to_str().unwrap(), model("digits_mlp_nchw.toml"));
    fails(
        &["report", "compare", b, a.to_str().unwrap(), "--json", b],
        2,
        &["write over a report it compares", b],
    );
    assert_eq!(std::fs::read_to_string(&before).unwrap(), "{}", "BEFORE untouched");
}
