//! Calibrator-based INT8 against the mock builder: what the calibrator feeds, the calibration
//! cache, the engine cache's key, and each refusal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::tests::{backend, digits_variant, engines_in, model, orin_trt10, orin_trt8};
use super::{cache, mock, BuildPrecision, Calibration, Loaded, TensorrtBackend};
use crate::backend::{Backend, PrepareOptions};
use crate::capture;
use crate::model::Model;
use crate::preprocess::Preprocessor;
use crate::validate::calibration_set::CalibrationData;
use crate::Error;

fn trt11() -> Loaded {
    Ok((mock::symbols(mock::tensorrt_11_1, mock::orin, mock::malloc), None))
}

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// A backend calibrating on `set`, read for `model` as `build-engine --calib` reads it.
fn calibrating(
    load: super::Loader,
    dir: &Path,
    model: &Model,
    set: PathBuf,
    cache: Option<PathBuf>,
) -> TensorrtBackend {
    let mut trt = backend(load, dir);
    let set = Arc::new(CalibrationData::open(model, &set).unwrap());
    trt.options.calibration = Some(Calibration { set, cache });
    trt
}

#[test]
fn images_are_preprocessed_into_whole_batches_and_the_calibration_cache_replaces_them_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let images = models_dir().join("images");
    let cache_file = dir.path().join("mobilenet.calib");
    let mobilenet = model("mobilenetv2_fp32.toml");
    let trt = calibrating(orin_trt8, dir.path(), &mobilenet, images.clone(), Some(cache_file.clone()));
    let (plan, info) = trt.build(&mobilenet, 2).unwrap();
    assert_eq!(info.precision, "int8", "calibrating implies INT8");
    assert!(info.calibration_sha256.is_some());
    // Seven photos in batches of two: three whole batches; the seventh photo is left out.
    let calibrated = mock::stamp(&plan).calibrated.expect("the builder was given a calibrator");
    assert_eq!((calibrated.batches, calibrated.from_cache), (3, false));
    let preprocessor = Preprocessor::for_model(&mobilenet).unwrap();
    let mut values = vec![0f32; preprocessor.item_len()];
    let mut sum = 0f64;
    for path in &capture::list_images(&images).unwrap()[..6] {
        preprocessor.run_image(&capture::load_image(path).unwrap(), &mut values).unwrap();
        sum += values.iter().map(|&v| v as f64).sum::<f64>();
    }
    let expected = sum / (6 * values.len()) as f64;
    assert!((calibrated.mean - expected).abs() < 1e-6, "fed mean {} != {expected}", calibrated.mean);
    assert_eq!(std::fs::read(&cache_file).unwrap(), b"mock calibration cache: 3 batches");

    let (plan, _) = trt.build(&mobilenet, 2).unwrap();
    let calibrated = mock::stamp(&plan).calibrated.unwrap();
    assert_eq!((calibrated.batches, calibrated.from_cache), (0, true));
}

#[test]
fn an_npz_calibrates_and_the_engine_cache_keeps_calibrated_and_plain_engines_apart() {
    let dir = tempfile::tempdir().unwrap();
    let set = models_dir().join("digits_calib.npz");
    let samples = capture::npz::load(&set, &[1, 8, 8]).unwrap().len();
    let digits = model("digits_mlp_nchw.toml");
    let options = PrepareOptions::default();
    // The plain engine: FP16 (INT8 without Q/DQ nodes or a calibration set is refused).
    let mut trt = backend(orin_trt10, dir.path());
    trt.options.precision = Some(BuildPrecision::Fp16);
    trt.prepare(&digits, &options).unwrap();
    let trt = calibrating(orin_trt10, dir.path(), &digits, set, None);
    let prepared = trt.prepare(&digits, &options).unwrap();
    prepared.spawn().unwrap().run(&super::tests::digits(1)).unwrap();
    let engines = engines_in(dir.path());
    assert_eq!(engines.len(), 2, "{engines:?}");
    let calibrated: Vec<_> = engines
        .iter()
        .filter(|e| cache::read_info(e).unwrap().unwrap().calibration_sha256.is_some())
        .collect();
    assert_eq!(calibrated.len(), 1);
    let stamp = mock::stamp(&std::fs::read(calibrated[0]).unwrap());
    assert_eq!(stamp.calibrated.unwrap().batches, samples);
}

#[test]
fn calibration_is_refused_where_it_cannot_work() {
    let dir = tempfile::tempdir().unwrap();
    let images = models_dir().join("images");
    let digits = model("digits_mlp_nchw.toml");

    let mut fp16 = calibrating(orin_trt10, dir.path(), &digits, images.clone(), None);
    fp16.options.precision = Some(BuildPrecision::Fp16);
    let error = fp16.build(&digits, 1).unwrap_err();
    assert!(error.to_string().contains("needs precision int8 or best, not fp16"), "{error}");

    let trt = calibrating(orin_trt10, dir.path(), &digits, images.clone(), None);
    let error = trt.build(&model("digits_mlp_int8_qdq.toml"), 1).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("digits_mlp_int8_qdq.toml: is already quantized (Q/DQ nodes)"), "{message}");

    let error = calibrating(trt11, dir.path(), &digits, images.clone(), None).build(&digits, 1).unwrap_err();
    assert!(error.to_string().contains("TensorRT 11.1.0 has no INT8 calibrator"), "{error}");

    let error = trt.build(&digits, 8).unwrap_err();
    assert!(
        error.to_string().contains("holds 7 samples; calibration needs at least one batch of 8"),
        "{error}"
    );

    // The set is read where the command line makes it, before any build.
    let missing = dir.path().join("no-such-set");
    let error = CalibrationData::open(&digits, &missing).unwrap_err();
    assert!(matches!(&error, Error::Read { path, .. } if path.ends_with("no-such-set")), "{error}");

    for error in [fp16.build(&digits, 1).unwrap_err(), trt.build(&digits, 8).unwrap_err()] {
        assert_eq!(error.exit_code(), 2, "{error}");
    }
}

#[test]
fn an_image_that_does_not_decode_stops_calibration_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    std::fs::copy(models_dir().join("images/bus.jpg"), set.join("a.jpg")).unwrap();
    std::fs::write(set.join("b.png"), b"not a png").unwrap();
    let digits = model("digits_mlp_nchw.toml");
    let trt = calibrating(orin_trt10, dir.path(), &digits, set, None);
    let error = trt.build(&digits, 1).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("b.png: not an image"), "{message}");
    assert_eq!(error.exit_code(), 2);
    assert!(engines_in(dir.path()).is_empty());
}

#[test]
fn a_model_with_two_inputs_is_not_calibrated() {
    let dir = tempfile::tempdir().unwrap();
    let two = digits_variant(dir.path(), "two_inputs", |graph| {
        let mut extra = graph.input[0].clone();
        extra.name = "extra".into();
        graph.input.push(extra);
    });
    let trt = calibrating(orin_trt10, dir.path(), &two, models_dir().join("digits_calib.npz"), None);
    let error = trt.build(&two, 1).unwrap_err();
    assert!(
        error.to_string().contains("two_inputs.toml: has 2 inputs; calibration feeds models with one"),
        "{error}"
    );
}
