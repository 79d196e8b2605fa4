//! An image file, decoded and preprocessed into MobileNetV2's input as `run --input` does.
#![no_main]
use std::sync::OnceLock;

use edgert::model::{BareModelOptions, Model};
use edgert::preprocess::Preprocessor;
use libfuzzer_sys::fuzz_target;

fn preprocessor() -> &'static Preprocessor {
    static PRE: OnceLock<Preprocessor> = OnceLock::new();
    PRE.get_or_init(|| {
        let model =
            Model::load(&edgert_fuzz::model("mobilenetv2_int8_qdq.toml"), &BareModelOptions::default());
        Preprocessor::for_model(&model.expect("the shipped model")).expect("an image model")
    })
}

fuzz_target!(|bytes: &[u8]| {
    let (_dir, path) = edgert_fuzz::in_file(bytes, "image");
    let Ok(image) = edgert::capture::load_image(&path) else { return };
    let mut input = vec![0f32; 3 * 224 * 224];
    let _ = preprocessor().run_image(&image, &mut input);
});
