//! Pruned models: the CPU backend runs them, and `inspect` reports their sparsity and 2:4 structure.

mod common;

use common::*;
use edgert::backend::{self, PrepareOptions};
use edgert::capture;
use edgert::model::{inspect, BareModelOptions, Model};
use edgert::pipeline::{Pipeline, Sample};
use prost::Message;
use tract_onnx::pb;

/// Zeroes the two smallest-magnitude weights of every 4 consecutive input weights of `fc0`
/// ([out 64, in 64], used with transB, so inputs run along axis 1): the 2:4 pattern.
fn prune_fc0_two_of_four(dir: &std::path::Path) -> std::path::PathBuf {
    let bytes = std::fs::read(model("digits_mlp_nchw.onnx")).unwrap();
    let mut proto = pb::ModelProto::decode(&*bytes).unwrap();
    let weight =
        proto.graph.as_mut().unwrap().initializer.iter_mut().find(|t| t.name == "fc0.weight").unwrap();
    let mut values: Vec<f32> = if weight.raw_data.is_empty() {
        weight.float_data.clone()
    } else {
        weight.raw_data.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
    };
    for group in values.chunks_mut(4) {
        let mut order = [0, 1, 2, 3];
        order.sort_by(|&a, &b| group[a].abs().total_cmp(&group[b].abs()));
        group[order[0]] = 0.0;
        group[order[1]] = 0.0;
    }
    weight.float_data.clear();
    weight.raw_data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let path = dir.join("digits_mlp_2_4.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    path
}

#[test]
fn a_two_four_pruned_model_runs_and_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let path = prune_fc0_two_of_four(dir.path());
    let model = Model::load(&path, &BareModelOptions::default()).unwrap();

    let report = inspect::inspect(&model).unwrap();
    let s = &report.sparsity;
    // fc0 has 64 × 16 groups, all pruned to 2:4; fc1 (10 × 16 groups) is dense.
    assert_eq!(s.groups_2_4, 64 * 16 + 10 * 16);
    assert!(s.groups_2_4_met >= 64 * 16, "{s:?}");
    assert!(s.zero_weights >= 64 * 64 / 2, "{s:?}");
    assert_eq!(report.precision, "fp32");
    assert_eq!(s.pattern, "unstructured", "fc1 is dense, so not every group meets 2:4");

    let mut pipeline =
        Pipeline::open(model, backend::select("cpu").unwrap(), PrepareOptions::default()).unwrap();
    let set = capture::npz::load(&common::model("digits_test.npz"), &[1, 8, 8]).unwrap();
    let labels = set.labels.as_ref().unwrap();
    let correct = (0..set.len())
        .filter(|&i| {
            pipeline.predict(Sample::Tensor(set.item(i))).unwrap().top1() == Some(labels[i] as usize)
        })
        .count();
    // Half the first layer's weights gone: still far above chance (10 %), below the dense 97 %.
    assert!(correct > 360 / 2, "{correct}/360");
    eprintln!("2:4-pruned digits MLP: {correct}/360");
}

#[test]
fn the_dense_model_meets_2_4_almost_nowhere() {
    let model = Model::load(&model("digits_mlp_nchw.onnx"), &BareModelOptions::default()).unwrap();
    let s = inspect::inspect(&model).unwrap().sparsity;
    assert!(s.share_2_4 < 0.05, "{s:?}");
    assert_eq!(s.pattern, "dense");
}

#[test]
fn the_variants_pipeline_outputs_are_recognised() {
    let pattern = |name: &str| {
        let model = Model::load(&model(name), &BareModelOptions::default()).unwrap();
        let r = inspect::inspect(&model).unwrap();
        (r.precision.name(), r.sparsity.pattern)
    };
    assert_eq!(pattern("digits_mlp_2of4.toml"), ("fp32", "2:4"));
    assert_eq!(pattern("digits_mlp_pruned90.toml"), ("fp32", "unstructured"));
    assert_eq!(pattern("digits_mlp_int8_qdq.toml"), ("int8-qdq", "dense"));
}
