//! ONNX's own backend test data (the `onnx` wheel's `onnx/backend/test/data`, `edgert::conformance`)
//! on `cpu`, `cpu-tract` and, where ONNX Runtime is found, `ort`: every case passes except those
//! `fixtures/conformance/not-passing.txt` lists, each with its outcome and a part of its reason, and
//! nothing listed passes (so the list stays true). The data comes from `EDGERT_ONNX_TEST_DATA`
//! (`.ci/run` installs the wheel); without it the test says SKIPPED, unless
//! `EDGERT_REQUIRE_ONNX_TEST_DATA=1` (set by CI) makes that a failure.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use edgert::conformance::{self, run};

fn data() -> Option<PathBuf> {
    let found = std::env::var_os("EDGERT_ONNX_TEST_DATA").map(PathBuf::from).filter(|p| p.is_dir());
    let why = "EDGERT_ONNX_TEST_DATA does not name onnx/backend/test/data (pip install onnx)";
    or_skipped(found, "EDGERT_REQUIRE_ONNX_TEST_DATA", "conformance", why)
}

/// `case → backend → (outcome label, reason part)` from the listing.
fn listed() -> BTreeMap<(String, String), (String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/not-passing.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut map = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let fields: Vec<&str> = line.split(" | ").map(str::trim).collect();
        let [case, backends, label, reason] = fields[..] else {
            panic!("{}: bad line {line:?}", path.display())
        };
        for backend in backends.split_whitespace() {
            map.insert((case.to_string(), backend.to_string()), (label.to_string(), reason.to_string()));
        }
    }
    map
}

#[test]
fn onnx_backend_test_data_on_every_usable_backend() {
    let Some(root) = data() else { return };
    let mut cases = conformance::discover(&root).unwrap();
    assert!(cases.len() >= 140, "{} cases: the data is incomplete", cases.len());
    let all: Vec<String> = cases.iter().map(|c| format!("{}/{}", c.suite, c.name)).collect();
    if emulated() {
        // The light models are ImageNet-sized; under an emulator they would take minutes, and the
        // operator suites run the same kernels.
        cases.retain(|c| c.suite != "light");
    }
    let (backends, missing) = conformance::backends();
    if let Some(why) = missing {
        or_skipped(None::<()>, "EDGERT_REQUIRE_ORT", "conformance on ort", &why);
    }
    let mut listed = listed();
    let mut wrong = Vec::new();
    for case in &cases {
        let id = format!("{}/{}", case.suite, case.name);
        for (name, backend) in &backends {
            let outcome = run::run(case, backend.as_ref());
            let expected = listed.remove(&(id.clone(), name.to_string()));
            let ok = match (&outcome, &expected) {
                (run::Outcome::Passed { .. }, None) => true,
                (run::Outcome::Failed(why) | run::Outcome::NotSupported(why), Some((label, part))) => {
                    outcome.label() == label && why.contains(part.as_str())
                }
                _ => false,
            };
            if !ok {
                wrong.push(format!("{id} on {name}: {outcome} (listed: {expected:?})"));
            }
        }
    }
    let unknown: Vec<_> = listed.keys().filter(|(case, _)| !all.contains(case)).collect();
    assert!(unknown.is_empty(), "listed, but no such case: {unknown:?}");
    assert!(wrong.is_empty(), "{} outcomes differ from the listing:\n{}", wrong.len(), wrong.join("\n"));
}

/// A TensorFlow-style channel pad (tf2onnx): zeros from a `ConstantOfShape` without `value`,
/// concatenated to the input's channels, into a depthwise convolution, then a `Selu` without
/// `alpha` or `gamma`. tract-onnx 0.23.9 read the missing value as an f64 zero and refused the
/// model; edgert writes the spec's defaults first (`model::spec_defaults`). Each backend's output
/// is compared with ONNX Runtime's.
#[test]
fn spec_defaults_on_a_tf_style_channel_pad() {
    use edgert::backend::{Backend, PrepareOptions};
    use edgert::model::{BareModelOptions, Model};
    use edgert::tensor::HostTensor;
    use prost::Message;
    use tract_onnx::pb;

    let weights: Vec<f32> = (0..4 * 9).map(|i| ((i * 7) % 11) as f32 / 11.0 - 0.4).collect();
    let g = pb::GraphProto {
        name: "tf_pad".into(),
        node: vec![
            graph::node("ConstantOfShape", &["pad_shape"], "zeros", vec![]),
            graph::node("Concat", &["x", "zeros"], "padded", vec![graph::int_attr("axis", 1)]),
            graph::node(
                "Conv",
                &["padded", "w"],
                "conv",
                vec![
                    graph::int_attr("group", 4),
                    graph::ints_attr("kernel_shape", &[3, 3]),
                    graph::ints_attr("pads", &[1, 1, 1, 1]),
                ],
            ),
            graph::node("Selu", &["conv"], "y", vec![]),
        ],
        initializer: vec![
            graph::int64s("pad_shape", vec![1, 1, 6, 6]),
            graph::floats("w", &[4, 1, 3, 3], weights),
        ],
        input: vec![graph::tensor_info("x", &[1, 3, 6, 6])],
        output: vec![graph::tensor_info("y", &[1, 4, 6, 6])],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tf_pad.onnx");
    std::fs::write(&path, graph::model(g, 13).encode_to_vec()).unwrap();

    let model = Model::load(&path, &BareModelOptions::default()).unwrap();
    let input = HostTensor::new(vec![1, 3, 6, 6], (0..108).map(|i| (i as f32 * 0.37).sin()).collect());
    let run = |backend: &dyn Backend| -> Vec<f32> {
        let prepared = backend.prepare(&model, &PrepareOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        prepared.spawn().unwrap().run(&input).unwrap().remove(0).data
    };
    let (backends, missing) = conformance::backends();
    let outputs: Vec<(&str, Vec<f32>)> = backends.iter().map(|(name, b)| (*name, run(b.as_ref()))).collect();
    // The fourth channel is the pad: its convolution sees zeros only, and Selu(0) = 0.
    assert!(outputs[0].1[3 * 36..].iter().all(|&v| v == 0.0), "{:?}", &outputs[0].1[3 * 36..]);
    let ort = outputs.iter().find(|(name, _)| *name == "ort");
    let why = missing.unwrap_or_default();
    let Some((_, reference)) =
        or_skipped(ort, "EDGERT_REQUIRE_ORT", "the comparison with ONNX Runtime", &why)
    else {
        return;
    };
    for (name, values) in &outputs {
        for (i, (a, b)) in values.iter().zip(reference).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 + 1e-4 * b.abs(),
                "{name}, value {i}: {a} against ONNX Runtime's {b}"
            );
        }
    }
}
