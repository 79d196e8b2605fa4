//! Models that take an f16 or a u8 input (`models/variants.py input-type`: the digits MLP with a
//! Cast in front, and for u8 the scale moved inside) give the f32 model's answers, on every usable
//! CPU backend: preprocessing works in f32 and the backend converts once, at its boundary.

mod common;

use common::*;
use edgert::backend;
use edgert::capture;
use edgert::pipeline::Sample;
use edgert::validate::compare::cosine;

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
