//! Models that take an f16 or a u8 input (`models/variants.py input-type`: the digits MLP with a
//! Cast in front, and for u8 the scale moved inside) give the f32 model's answers, on every usable
//! CPU backend: images and tensors are preprocessed in f32 and the backend converts once, at its
//! boundary; camera frames are preprocessed straight into the model's type.

mod common;

use common::*;
use edgert::backend::{self, PrepareOptions};
use edgert::capture;
use edgert::model::Model;
use edgert::pipeline::Sample;
use edgert::tensor::{Batch, BatchView, HostTensor};
use edgert::validate::compare::cosine;
use half::f16;

/// Raw outputs of a backend on each input, or `None` where the backend is not usable here.
fn outputs(backend: &str, manifest: &str, inputs: &[Sample]) -> Option<Vec<Vec<f32>>> {
    match backend::select(backend) {
        Ok(selected) => Some(raw_outputs(selected, manifest, inputs)),
        Err(e) => {
            eprintln!("SKIPPED {backend} on {manifest}: {e}");
            None
        }
    }
}

fn assert_agree(what: &str, reference: &[Vec<f32>], got: &[Vec<f32>], least_cosine: f64) {
    for (i, (r, g)) in reference.iter().zip(got).enumerate() {
        let c = cosine(r, g);
        assert!(c >= least_cosine, "{what}, input {i}: cosine {c} < {least_cosine}");
        assert_eq!(top1(r), top1(g), "{what}, input {i}: top-1 differs");
    }
}

#[test]
fn f16_and_u8_inputs_give_the_f32_models_answers() {
    let photos: Vec<_> = ["astronaut.png", "chelsea.png", "page.png", "zidane.jpg"]
        .iter()
        .map(|p| capture::load_image(&image(p)).unwrap())
        .collect();
    let images: Vec<Sample> = photos.iter().map(Sample::Image).collect();
    // Tensors as they are: digits in 0..1 for f32 and f16; for u8, the same digits as pixels
    // (× 255, not whole numbers: the conversion rounds them).
    let digits = capture::npz::load(&model("digits_test.npz"), &[1, 8, 8]).unwrap();
    let x: Vec<&[f32]> = (0..40).map(|i| digits.item(i)).collect();
    let pixels: Vec<Vec<f32>> = x.iter().map(|v| v.iter().map(|p| p * 255.0).collect()).collect();
    let tensors: Vec<Sample> = x.iter().map(|v| Sample::Tensor(v)).collect();
    let tensors_u8: Vec<Sample> = pixels.iter().map(|v| Sample::Tensor(v)).collect();

    let reference_images = outputs("cpu", "digits_mlp_nchw.toml", &images).unwrap();
    let reference_tensors = outputs("cpu", "digits_mlp_nchw.toml", &tensors).unwrap();
    let mut ran = 0;
    for backend in ["cpu", "ort"] {
        for (manifest, tensor_inputs) in
            [("digits_mlp_f16_input.toml", &tensors), ("digits_mlp_u8_input.toml", &tensors_u8)]
        {
            let Some(got) = outputs(backend, manifest, &images) else { continue };
            assert_agree(&format!("{backend} {manifest} photos"), &reference_images, &got, 0.9999);
            let got = outputs(backend, manifest, tensor_inputs).unwrap();
            assert_agree(&format!("{backend} {manifest} digits"), &reference_tensors, &got, 0.999);
            ran += 1;
        }
    }
    assert!(ran >= 2, "the cpu backend always runs");
    if ran < 4 && std::env::var("EDGERT_REQUIRE_ORT").as_deref() == Ok("1") {
        panic!("ort was required but did not run");
    }
}

/// What the camera pipeline hands a backend for an f16 or u8 model: the batch in the model's own
/// type, which must run as the same values given in f32 do.
#[test]
fn batches_in_the_models_own_type_run_as_the_same_values_in_f32() {
    let digits = capture::npz::load(&model("digits_test.npz"), &[1, 8, 8]).unwrap();
    let shape = [1, 1, 8, 8];
    let mut ran = 0;
    for backend in ["cpu", "ort"] {
        for (manifest, dtype) in [("digits_mlp_f16_input.toml", "f16"), ("digits_mlp_u8_input.toml", "u8")] {
            let selected = match backend::select(backend) {
                Ok(selected) => selected,
                Err(e) => {
                    eprintln!("SKIPPED {backend} on {manifest}: {e}");
                    continue;
                }
            };
            let loaded = Model::load(&model(manifest), &Default::default()).unwrap();
            let prepared = selected.backend.prepare(&loaded, &PrepareOptions::default()).unwrap();
            let mut session = prepared.spawn().unwrap();
            for i in 0..10 {
                let x = digits.item(i);
                let halves: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
                let pixels: Vec<u8> = x.iter().map(|&v| (v * 255.0).round() as u8).collect();
                let (values, as_f32): (BatchView, Vec<f32>) = match dtype {
                    "f16" => (BatchView::F16(&halves), halves.iter().map(|h| h.to_f32()).collect()),
                    _ => (BatchView::U8(&pixels), pixels.iter().map(|&p| p.into()).collect()),
                };
                let typed = session.run_batch(Batch { shape: &shape, values }).unwrap();
                let from_f32 = session.run(&HostTensor::new(shape.to_vec(), as_f32)).unwrap();
                assert_eq!(typed, from_f32, "{backend} {manifest}, digit {i}");
            }
            ran += 1;
        }
    }
    assert!(ran >= 2, "the cpu backend always runs");
    if ran < 4 && std::env::var("EDGERT_REQUIRE_ORT").as_deref() == Ok("1") {
        panic!("ort was required but did not run");
    }
}

/// Top-1 class and its score for each frame of `run --source URI --json`.
fn streamed_classes(manifest: &str, uri: &str) -> Vec<(u64, f64)> {
    let model = model(manifest).display().to_string();
    let out = edgert(&["run", "-m", &model, "--source", uri, "--drop", "none", "--json"]);
    assert!(out.status.success(), "{manifest}: {}", stderr(&out));
    let lines: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["ending"]["reason"], "end_of_stream", "{manifest}: {summary}");
    lines[..lines.len() - 1]
        .iter()
        .map(|l| {
            let best = &l["prediction"]["classes"][0];
            (best["class_id"].as_u64().unwrap(), best["score"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn camera_frames_preprocessed_into_f16_and_u8_get_the_f32_models_classes() {
    for format in ["yuyv", "nv12"] {
        let recording = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/recordings/{format}-320x240"));
        let uri = format!("file:{}", recording.display());
        let reference = streamed_classes("digits_mlp_nchw.toml", &uri);
        assert!(!reference.is_empty());
        for manifest in ["digits_mlp_f16_input.toml", "digits_mlp_u8_input.toml"] {
            let got = streamed_classes(manifest, &uri);
            assert_eq!(got.len(), reference.len(), "{manifest} {format}");
            for ((want_class, want_score), (class, score)) in reference.iter().zip(&got) {
                assert_eq!(class, want_class, "{manifest} {format}");
                assert!(
                    (score - want_score).abs() < 0.01,
                    "{manifest} {format}: {score} against {want_score}"
                );
            }
        }
    }
}
