//! The load cache against the analysis it replaces, on the shipped models; its key; and what it
//! does with entries it cannot read or write.

use tract_onnx::prelude::*;

use super::*;
use crate::backend::tract_model::analysed;
use crate::backend::tract_ops;
use crate::model::Model;

fn shipped(name: &str) -> Model {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    Model::load(format!("{root}/{name}.toml").as_ref(), &Default::default()).unwrap()
}

fn analysed_at_batch(model: &Model, batch: usize) -> TypedModel {
    let shape = model.input_shape(batch);
    analysed(model, model.onnx("a test").unwrap(), &shape, model.manifest.input.dtype, "cpu").unwrap()
}

/// `model` as the `cpu` backend runs it: edgert's operators swapped in, then optimized.
fn optimized(model: &TypedModel) -> TypedModel {
    let mut model = model.clone();
    tract_ops::rewrite(&mut model, tract_ops::has_dot_product()).unwrap();
    model.into_optimized().unwrap()
}

/// The operators of `model`, sorted; constants left out, as the two plans may hold them in more or
/// fewer nodes (under qemu, MobileNetV2 FP32 from the cache has 35 constant nodes, from ONNX 65).
fn sorted_op_names(model: &TypedModel) -> Vec<String> {
    let mut names: Vec<String> =
        model.nodes().iter().map(|n| n.op.name().to_string()).filter(|n| n != "Const").collect();
    names.sort();
    names
}

/// Outputs as bit patterns, so that equal means the same bits.
fn output_bits(model: TypedModel, input: &Tensor) -> Vec<Vec<u32>> {
    let plan = model.into_runnable().unwrap();
    let outputs = plan.run(tvec!(input.clone().into_tvalue())).unwrap();
    outputs
        .iter()
        .map(|o| {
            o.cast_to::<f32>()
                .unwrap()
                .to_plain_array_view::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        })
        .collect()
}

fn input_for(model: &TypedModel) -> Tensor {
    let fact = model.input_fact(0).unwrap();
    let shape = fact.shape.as_concrete().unwrap().to_vec();
    let values = crate::backend::tract_ops::tests::values(shape.iter().product(), 11);
    // Values a u8 input can take too.
    let values: Vec<f32> = values.iter().map(|v| (v + 2.0) * 60.0).collect();
    Tensor::from_shape(&shape, &values).unwrap().cast_to_dt(fact.datum_type).unwrap().into_owned()
}

#[test]
fn a_cached_model_runs_the_same_plan_with_the_same_outputs_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    for (name, batch) in [
        ("mobilenetv2_fp32", 1),
        ("mobilenetv2_int8_qdq", 1),
        ("yolov3_tiny_coco_int8_qdq", 1),
        ("digits_mlp_int8_qdq", 4),
        ("digits_mlp_2of4", 1),
        ("digits_mlp_u8_input", 1),
        ("digits_mlp_f16_input", 1),
    ] {
        let model = shipped(name);
        let fresh = analysed_at_batch(&model, batch);
        let path = dir.path().join(format!("{name}.nnef.tar"));
        store(&path, &fresh).unwrap();
        let cached = read(&path).unwrap().expect("the entry just stored");
        let (fresh, cached) = (optimized(&fresh), optimized(&cached));
        assert_eq!(sorted_op_names(&cached), sorted_op_names(&fresh), "{name}");
        let input = input_for(&fresh);
        assert_eq!(output_bits(cached, &input), output_bits(fresh, &input), "{name}");
    }
}

fn key() -> CacheKey {
    CacheKey {
        model_sha256: "ab".repeat(32),
        input: "input".into(),
        dtype: "f32".into(),
        shape: vec![1, 3, 224, 224],
    }
}

#[test]
fn every_field_of_the_key_names_another_entry() {
    let cache = LoadCache { dir: "/cache".into() };
    let base = cache.path(&key());
    assert_eq!(cache.path(&key()), base);
    assert!(base.to_str().unwrap().starts_with("/cache/abababababab-"), "{}", base.display());
    for other in [
        CacheKey { model_sha256: "cd".repeat(32), ..key() },
        CacheKey { input: "images".into(), ..key() },
        CacheKey { dtype: "u8".into(), ..key() },
        CacheKey { shape: vec![4, 3, 224, 224], ..key() },
    ] {
        assert_ne!(cache.path(&other), base, "{other:?}");
    }
}

#[test]
fn a_model_with_external_weights_is_not_cached() {
    let model = shipped("mobilenetv2_int8_qdq");
    let proto = model.onnx("a test").unwrap();
    assert!(self_contained(proto));
    let mut external = proto.clone();
    external.graph.as_mut().unwrap().initializer[0].data_location = Some(DataLocation::External as i32);
    assert!(!self_contained(&external));
}

fn small_model() -> TypedModel {
    analysed_at_batch(&shipped("digits_mlp_int8_qdq"), 1)
}

#[test]
fn a_miss_analyses_and_stores_and_a_hit_reads_without_analysing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = LoadCache { dir: dir.path().join("tract") };
    let fresh = cache.decluttered(&key(), || Ok(small_model())).unwrap();
    assert!(cache.path(&key()).is_file());
    let cached = cache.decluttered(&key(), || panic!("analysed on a hit")).unwrap();
    assert_eq!(sorted_op_names(&cached), sorted_op_names(&fresh));
    // No partial files left beside the entry.
    assert_eq!(std::fs::read_dir(&cache.dir).unwrap().count(), 1);
}

#[test]
fn a_damaged_entry_is_analysed_again_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cache = LoadCache { dir: dir.path().to_owned() };
    let path = cache.path(&key());
    std::fs::write(&path, b"not a tar of NNEF").unwrap();
    assert!(read(&path).is_err());
    let mut analysed = false;
    cache
        .decluttered(&key(), || {
            analysed = true;
            Ok(small_model())
        })
        .unwrap();
    assert!(analysed);
    assert!(read(&path).unwrap().is_some(), "the damaged entry is replaced");
}

#[test]
fn an_unwritable_cache_still_loads_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let cache = LoadCache { dir: file.join("tract") };
    let model = cache.decluttered(&key(), || Ok(small_model())).unwrap();
    assert!(!model.nodes().is_empty());
    let reason = store(&cache.path(&key()), &model).unwrap_err();
    assert!(matches!(&reason, CacheError::Folder { dir, .. } if dir.ends_with("file/tract")), "{reason:?}");
}

#[test]
fn an_analysis_that_fails_fails_the_load_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = LoadCache { dir: dir.path().to_owned() };
    let failure = crate::Error::input("m.onnx".as_ref(), "broken");
    let message = cache.decluttered(&key(), || Err(failure)).unwrap_err().to_string();
    assert!(message.contains("m.onnx") && message.contains("broken"), "{message}");
    assert!(!cache.path(&key()).exists());
}
