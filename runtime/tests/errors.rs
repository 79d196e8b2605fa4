//! Every bad input gets one line on stderr naming the file and the problem, exit code 2 for bad
//! input and 1 for a failure while running, and never a panic.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use prost::Message;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn chelsea() -> PathBuf {
    image("chelsea.png")
}

#[test]
fn missing_model_file() {
    fails(
        &["run", "--model", "no/such.onnx", "--input", s(&chelsea())],
        2,
        &["no/such.onnx", "no such file"],
    );
}

#[test]
fn missing_input_file() {
    fails(&["run", "--model", s(&model("digits_mlp_nchw.toml")), "--input", "nope.png"], 2, &["nope.png"]);
}

#[test]
fn truncated_onnx() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(model("mobilenetv2_int8_qdq.onnx")).unwrap();
    let path = dir.path().join("truncated.onnx");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    fails(
        &["run", "--model", s(&path), "--input", s(&chelsea())],
        2,
        &["truncated.onnx", "not a valid ONNX model"],
    );
}

#[test]
fn corrupt_onnx() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.onnx");
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&path, noise).unwrap();
    fails(&["inspect", "--model", s(&path)], 2, &["corrupt.onnx", "not a valid ONNX model"]);
}

#[test]
fn unsupported_operator() {
    let dir = tempfile::tempdir().unwrap();
    let mut proto =
        tract_onnx::pb::ModelProto::decode(&*std::fs::read(model("digits_mlp_nchw.onnx")).unwrap()).unwrap();
    let node = proto.graph.as_mut().unwrap().node.iter_mut().find(|n| n.op_type == "Relu").unwrap();
    node.op_type = "FancyActivation".into();
    let name = node.name.clone();
    let path = dir.path().join("custom_op.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    fails(
        &["run", "--model", s(&path), "--input", s(&model("digits_test.npz"))],
        2,
        &[
            "custom_op.onnx: the cpu backend cannot run this model: ",
            &format!("node '{name}' (FancyActivation): unsupported operator 'FancyActivation'"),
        ],
    );
}

/// A valid model the `cpu` backend cannot run (PRelu of opset 6 with a slope per channel, which
/// tract-onnx reads with opset 7's broadcasting): the backend is blamed with the node, not the file.
#[test]
fn a_valid_model_the_backend_cannot_run_blames_the_backend_and_names_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let g = tract_onnx::pb::GraphProto {
        node: vec![graph::node("PRelu", &["x", "slope"], "y", vec![])],
        initializer: vec![graph::floats("slope", &[3], vec![0.1, 0.2, 0.3])],
        input: vec![graph::tensor_info("x", &[2, 3, 4])],
        output: vec![graph::tensor_info("y", &[2, 3, 4])],
        ..Default::default()
    };
    let path = dir.path().join("prelu_opset6.onnx");
    std::fs::write(&path, graph::model(g, 6).encode_to_vec()).unwrap();
    let args = ["bench", "-m", s(&path), "--duration-s", "0.1", "--warmup-ms", "0", "--idle-s", "0"];
    let out = edgert(&args);
    let err = stderr(&out);
    assert!(!err.contains("not a valid ONNX model"), "{err}");
    if std::env::var_os("ORT_DYLIB_PATH").is_some_and(|p| Path::new(&p).is_file()) {
        assert!(err.trim_end().ends_with("; try --backend ort"), "ONNX Runtime is found: {err}");
    }
    fails(
        &args,
        2,
        &["prelu_opset6.onnx: the cpu backend cannot run this model: node 'y' (Prelu): analysis: "],
    );
}

#[test]
fn manifest_with_wrong_sha256() {
    let dir = tempfile::tempdir().unwrap();
    let m = edited_manifest(dir.path(), "digits_mlp_nchw.toml", |t| {
        let line = t.lines().find(|l| l.starts_with("sha256")).unwrap().to_string();
        t.replace(&line, &format!("sha256 = \"{}\"", "0".repeat(64)))
    });
    fails(
        &["inspect", "--model", s(&m)],
        2,
        &["digits_mlp_nchw.toml", "sha256 of digits_mlp_nchw.onnx is", "update the manifest"],
    );
}

#[test]
fn manifest_with_wrong_input_name() {
    let dir = tempfile::tempdir().unwrap();
    let m = edited_manifest(dir.path(), "digits_mlp_nchw.toml", |t| {
        t.replace("name = \"input\"", "name = \"pixels\"")
    });
    fails(
        &["inspect", "--model", s(&m)],
        2,
        &["digits_mlp_nchw.toml", "input 'pixels' is not in the model", "input"],
    );
}

#[test]
fn manifest_with_wrong_shape() {
    let dir = tempfile::tempdir().unwrap();
    let m =
        edited_manifest(dir.path(), "digits_mlp_nchw.toml", |t| t.replace("[1, 1, 8, 8]", "[1, 1, 9, 9]"));
    fails(&["inspect", "--model", s(&m)], 2, &["digits_mlp_nchw.toml", "[1, 1, 9, 9]", "[?, 1, 8, 8]"]);
}

#[test]
fn manifest_whose_input_type_is_not_the_models() {
    let dir = tempfile::tempdir().unwrap();
    // The model takes f16; the manifest, without dtype, says f32.
    let m = edited_manifest(dir.path(), "digits_mlp_f16_input.toml", |t| t.replace("dtype = \"f16\"\n", ""));
    fails(
        &["inspect", "--model", s(&m)],
        2,
        &["digits_mlp_f16_input.toml", "input 'input' is f16 in the model but input.dtype is f32"],
    );
    let m = edited_manifest(dir.path(), "digits_mlp_f16_input.toml", |t| t.replace("\"f16\"", "\"i8\""));
    fails(&["inspect", "--model", s(&m)], 2, &["digits_mlp_f16_input.toml", "invalid manifest", "i8"]);
}

#[test]
fn bare_model_with_an_input_type_edgert_cannot_feed() {
    let dir = tempfile::tempdir().unwrap();
    let mut proto =
        tract_onnx::pb::ModelProto::decode(&*std::fs::read(model("digits_mlp_nchw.onnx")).unwrap()).unwrap();
    let input = &mut proto.graph.as_mut().unwrap().input[0];
    let Some(tract_onnx::pb::type_proto::Value::TensorType(t)) =
        input.r#type.as_mut().unwrap().value.as_mut()
    else {
        panic!("a tensor input")
    };
    t.elem_type = tract_onnx::pb::tensor_proto::DataType::Int64 as i32;
    let path = dir.path().join("int64_input.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    fails(
        &["run", "--model", s(&path), "--input", s(&chelsea())],
        2,
        &["int64_input.onnx", "input 'input' is i64; edgert feeds f32, f16 or u8 inputs"],
    );
}

#[test]
fn manifest_that_is_not_toml_or_has_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let m = edited_manifest(dir.path(), "digits_mlp_nchw.toml", |t| {
        t.replace("[classification]", "[classification]\ncolour = 3")
    });
    fails(&["inspect", "--model", s(&m)], 2, &["digits_mlp_nchw.toml", "invalid manifest", "colour"]);
}

#[test]
fn input_that_is_not_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.png");
    std::fs::write(&path, "not pixels").unwrap();
    fails(
        &["run", "--model", s(&model("mobilenetv2_int8_qdq.toml")), "--input", s(&path)],
        2,
        &["notes.png", "not an image"],
    );
}

#[test]
fn a_bad_image_in_a_folder_does_not_lose_the_other_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(chelsea(), dir.path().join("a.png")).unwrap();
    std::fs::write(dir.path().join("b.png"), "broken").unwrap();
    let out = edgert(&["run", "--model", s(&model("mobilenetv2_int8_qdq.toml")), "--input", s(dir.path())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("a.png: 28"), "{}", stdout(&out));
    assert!(stderr(&out).contains("b.png: not an image"), "{}", stderr(&out));
}

#[test]
fn npz_with_the_wrong_shape() {
    fails(
        &["run", "--model", s(&model("digits_mlp_nchw.toml")), "--input", s(&model("mnist_test.npz"))],
        2,
        &["mnist_test.npz", "'x' has shape [2000, 1, 28, 28]", "[1, 8, 8]"],
    );
}

/// A `.npy` of `shape` holding `data` (little-endian values of numpy type `descr`).
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}", dims.join(" "));
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// Eight-by-eight blank samples for the digits model, labelled `labels`.
fn digits_npz(dir: &Path, name: &str, labels: &[i64]) -> PathBuf {
    use std::io::Write;
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let x = vec![0u8; labels.len() * 64 * 4];
    let y: Vec<u8> = labels.iter().flat_map(|l| l.to_le_bytes()).collect();
    for (entry, bytes) in
        [("x.npy", npy("<f4", &[labels.len(), 1, 8, 8], &x)), ("y.npy", npy("<i8", &[labels.len()], &y))]
    {
        zip.start_file(entry, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    path
}

/// Labels no prediction can match would make a silent 0 % accuracy: refused, naming the sample.
#[test]
fn labels_that_are_no_class_of_the_model_are_refused_naming_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let fine = digits_npz(dir.path(), "fine.npz", &[0, 9, 3]);
    let out = edgert(&["run", "-m", s(&digits), "--input", s(&fine)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let negative = digits_npz(dir.path(), "negative.npz", &[0, -1, 3]);
    let past = digits_npz(dir.path(), "past.npz", &[0, 9, 10]);
    fails(
        &["run", "-m", s(&digits), "--input", s(&negative)],
        2,
        &["negative.npz: 'y' at sample 1: label -1 is not a class id (0 or more)"],
    );
    fails(
        &["run", "-m", s(&digits), "--input", s(&past)],
        2,
        &[
            "past.npz: 'y' at sample 2: label 10 is not a class of",
            "digits_mlp_nchw.toml (it has 10, from 0)",
        ],
    );
    fails(
        &["validate", "--reference", s(&digits), "--candidate", s(&digits), "--data", s(&past)],
        2,
        &["past.npz#2: label 10 is not a class of"],
    );
}

#[test]
fn unknown_backend() {
    fails(
        &["run", "--backend", "tpu", "--model", s(&model("digits_mlp_nchw.toml")), "--input", s(&chelsea())],
        2,
        &["unknown backend 'tpu'", "known: ", "cpu, "],
    );
}

#[test]
fn gpu_backends_absent_from_this_build_are_runtime_failures_with_the_fix() {
    // With a GPU backend compiled in, `gpu` says why it is not usable instead.
    let fix = match (cfg!(feature = "cuda-backend"), cfg!(feature = "tensorrt")) {
        (true, _) => "cuda: libcuda (the NVIDIA driver) not found",
        (false, true) => "tensorrt: ",
        (false, false) => "--features cuda",
    };
    fails(
        &["bench", "--backend", "gpu", "--model", s(&model("digits_mlp_nchw.toml"))],
        1,
        &["backend 'gpu' is not usable here", fix],
    );
    #[cfg(not(feature = "tensorrt"))]
    fails(
        &["bench", "--backend", "tensorrt", "--model", s(&model("digits_mlp_nchw.toml"))],
        1,
        &["tensorrt", "--features tensorrt"],
    );
}

#[cfg(not(feature = "tensorrt"))]
#[test]
fn build_engine_without_tensorrt_compiled_in_says_how_to_get_it() {
    let digits = model("digits_mlp_nchw.toml");
    let out = missing("m.engine");
    let args = ["build-engine", "--model", s(&digits), "--out", s(&out)];
    fails(&args, 1, &["backend 'tensorrt' is not usable here", "build with --features tensorrt"]);
}

/// `build-engine`'s flags took `run`'s names; the old ones parse, each with a warning.
#[test]
fn build_engine_old_spellings_still_parse_and_name_the_new_ones() {
    let digits = model("digits_mlp_nchw.toml");
    let out = missing("m.engine");
    let out = edgert(&["build-engine", "--onnx", s(&digits), "--workspace=64", "--out", s(&out)]);
    let err = stderr(&out);
    assert!(err.contains("warning: build-engine --onnx is now --model;"), "{err}");
    assert!(err.contains("warning: build-engine --workspace is now --trt-workspace-mb;"), "{err}");
    // Parsed: what follows is the build's own error (no TensorRT here), not clap's.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("tensorrt") && !err.contains("unexpected argument"), "{err}");
}

/// The machines that run these tests have no TensorRT: the backend and `build-engine` must say
/// what is missing (the shim when the build found no headers, else libnvinfer) and where to get it.
#[cfg(feature = "tensorrt")]
#[test]
fn tensorrt_on_a_machine_without_it_names_what_is_missing() {
    let names_what_is_missing =
        |err: &str| err.contains("libnvinfer not found") || err.contains("without TensorRT's headers");
    let digits_path = model("digits_mlp_nchw.toml");
    let digits = s(&digits_path);
    let images = env!("CARGO_MANIFEST_DIR").to_string() + "/../models/images";
    let engine = common::missing("m.engine");
    let engine = s(&engine);
    for args in [
        vec!["bench", "--backend", "tensorrt", "--model", digits],
        vec!["build-engine", "--model", digits, "--out", engine],
        vec!["build-engine", "--model", digits, "--out", engine, "--calib", &images],
    ] {
        let out = edgert(&args);
        let err = stderr(&out);
        if out.status.success() {
            eprintln!("skipped: TensorRT is usable here");
            return;
        }
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("edgert: error: backend 'tensorrt' is not usable here: ")
                && names_what_is_missing(&err),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    fails(
        &["build-engine", "--model", digits, "--out", "/tmp/m.engine", "--calib-cache", "/tmp/c"],
        2,
        &["--calib"],
    );
}

#[test]
fn bad_bench_settings() {
    fails(&["bench", "--model", s(&model("digits_mlp_nchw.toml")), "--batch", "0"], 2, &["--batch"]);
    fails(
        &["bench", "--model", s(&model("digits_mlp_nchw.toml")), "--duration-s", "NaN"],
        2,
        &["--duration-s"],
    );
}

#[test]
fn unwritable_report_is_a_runtime_failure() {
    fails(
        &[
            "bench",
            "--model",
            s(&model("digits_mlp_nchw.toml")),
            "--duration-s",
            "0",
            "--min-iterations",
            "1",
            "--json",
            s(&missing("r.json")),
        ],
        1,
        &[s(&missing("r.json")), "cannot write"],
    );
}

/// Without an NVIDIA driver, `--backend cuda` names the missing library and the fix.
#[cfg(feature = "cuda-backend")]
#[test]
fn cuda_on_a_machine_without_a_driver_names_libcuda() {
    let digits = model("digits_mlp_nchw.toml");
    let out = edgert(&["bench", "--backend", "cuda", "--model", s(&digits)]);
    if out.status.success() {
        return eprintln!("skipped: this machine has an NVIDIA GPU");
    }
    fails(
        &["bench", "--backend", "cuda", "--model", s(&digits)],
        1,
        &[
            "backend 'cuda' is not usable here: libcuda (the NVIDIA driver) not found",
            "libcuda.so.1",
            "install the NVIDIA driver",
        ],
    );
}

/// A manifest naming a TensorRT engine (here a stand-in file: nothing below loads it).
fn engine_manifest(dir: &Path) -> PathBuf {
    let engine = dir.join("digits.engine");
    std::fs::write(&engine, b"stand-in for a serialized TensorRT engine").unwrap();
    let sha256 = edgert::model::digest::sha256_file(&engine).unwrap();
    edited_manifest(dir, "digits_mlp_nchw.toml", |t| {
        let file = t.lines().find(|l| l.starts_with("file")).unwrap().to_string();
        let sum = t.lines().find(|l| l.starts_with("sha256")).unwrap().to_string();
        t.replace(&file, "file = \"digits.engine\"").replace(&sum, &format!("sha256 = \"{sha256}\""))
    })
}

#[test]
fn an_engine_runs_only_on_tensorrt_and_inspect_reads_it_through_tensorrt() {
    let dir = tempfile::tempdir().unwrap();
    let m = engine_manifest(dir.path());
    fails(
        &["run", "--model", s(&m), "--input", s(&chelsea()), "--backend", "cpu"],
        2,
        &[
            "digits_mlp_nchw.toml",
            "digits.engine is a TensorRT engine: run it with --backend tensorrt, not cpu",
        ],
    );
    // inspect lists an engine's tensors through TensorRT, which this machine lacks: not compiled
    // in, built without its headers, or no libnvinfer.
    let why = ["build with --features tensorrt", "without TensorRT's headers", "libnvinfer not found"];
    for engine in [m.clone(), dir.path().join("digits.engine")] {
        let out = edgert(&["inspect", "--model", s(&engine)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.starts_with("edgert: error: backend 'tensorrt' is not usable here: "), "{err}");
        assert!(why.iter().any(|w| err.contains(w)) && err.lines().count() == 1, "{err}");
    }
    fails(
        &["bench", "--model", s(&dir.path().join("digits.engine"))],
        2,
        &["digits.engine: is a TensorRT engine whose file has no Ultralytics header: it needs a manifest"],
    );
    // An Ultralytics header lacking what a bare run needs, or broken.
    let cases = [
        (r#"{"task": "detect", "batch": 1}"#, "header has no 'imgsz'"),
        (r#"{"task": "detect", "imgsz": [0, 640]}"#, "metadata 'imgsz'"),
        (r#"{"task": "detect", "imgsz": 640, "batch": 0}"#, "metadata 'batch'"),
        (r#"{"task": "detect", "imgsz": 640, "names": {"a": "b"}}"#, "metadata 'names'"),
        (r#"{"producer": "someone"}"#, "header is not Ultralytics metadata"),
    ];
    for (json, wanted) in cases {
        let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(json.as_bytes());
        bytes.extend_from_slice(b"plan");
        std::fs::write(dir.path().join("header.engine"), bytes).unwrap();
        fails(&["bench", "--model", s(&dir.path().join("header.engine"))], 2, &["header.engine: ", wanted]);
    }
    // The manifest's sha256 guards an engine as it guards an ONNX file.
    std::fs::write(dir.path().join("digits.engine"), b"another engine").unwrap();
    fails(&["run", "--model", s(&m), "--input", s(&chelsea())], 2, &["sha256 of digits.engine is"]);
}

/// A stand-in for the NVIDIA driver, compiled here: libcuda with the two calls edgert makes before
/// any other, answering CUDA `version` and, for cuInit, `init_error` (100: no device).
#[cfg(feature = "cuda")]
fn fake_libcuda(dir: &Path, version: i32, init_error: i32) -> PathBuf {
    let source = dir.join("fake_libcuda.c");
    std::fs::write(
        &source,
        format!(
            "int cuDriverGetVersion(int* v) {{ *v = {version}; return 0; }}\n\
             int cuInit(unsigned flags) {{ (void)flags; return {init_error}; }}\n"
        ),
    )
    .unwrap();
    let library = dir.join("libcuda.so");
    let cc = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) builds the stand-in driver");
    assert!(cc.success());
    dir.to_owned()
}

/// Driver problems a machine without a GPU can still show: no driver, a driver older than the
/// CUDA this build calls, and a driver that finds no GPU.
#[cfg(feature = "cuda")]
#[test]
fn cuda_without_a_usable_driver_or_gpu_says_which() {
    let info = |library_path: Option<&Path>| {
        let mut command = command(&["info", "--json"]);
        if let Some(dir) = library_path {
            command.env("LD_LIBRARY_PATH", dir);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let info: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(info["gpu"]["usable"], false, "{info}");
        info["gpu"]["reason"].as_str().unwrap().to_string()
    };
    if std::path::Path::new("/dev/nvidiactl").exists() {
        return eprintln!("skipped: this machine has an NVIDIA driver, which would answer first");
    }
    let none = info(None);
    assert!(none.starts_with("libcuda (the NVIDIA driver) not found"), "{none}");
    let (old_dir, no_gpu_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let old = info(Some(&fake_libcuda(old_dir.path(), 11000, 0)));
    assert!(old.contains("the NVIDIA driver supports CUDA 11.0 but this edgert is built for CUDA"), "{old}");
    assert!(old.contains("update the driver"), "{old}");
    let no_gpu = info(Some(&fake_libcuda(no_gpu_dir.path(), 13000, 100)));
    assert!(no_gpu.starts_with("no NVIDIA GPU: the driver loaded but reports no device"), "{no_gpu}");
}

/// TensorRT's flags in a build without TensorRT say how to get it, in one line, rather than
/// clap's "unexpected argument".
#[cfg(not(feature = "tensorrt"))]
#[test]
fn tensorrt_flags_in_a_build_without_it_say_how_to_get_it() {
    let digits = model("digits_mlp_nchw.toml");
    for flags in [&["--trt-precision", "fp16"][..], &["--trt-sparsity"], &["--trt-engine-cache", "/tmp"]] {
        let args = [&["bench", "-m", s(&digits), "--duration-s", "0"][..], flags].concat();
        fails(&args, 2, &[flags[0], "built without TensorRT: build it with --features tensorrt"]);
    }
}

/// A model exported for batch 1 whose graph reshapes to constant shapes cannot run at batch 2:
/// the error says why, not only what tract's analysis tripped on.
#[test]
fn a_batch_the_exported_graph_cannot_take_is_explained() {
    let model = model("detect/yolo11n.onnx");
    fails(
        &["bench", "-m", s(&model), "--batch", "2", "--duration-s", "0", "--min-iterations", "1"],
        2,
        &["cannot run this model: at batch 2 (the input 'images' fixes batch 1", "dynamic=True", "Reshape"],
    );
}
