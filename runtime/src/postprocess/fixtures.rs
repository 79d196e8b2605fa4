//! The fixtures of `models/detect/` as tests read them: raw outputs from an .npz, and the
//! geometry edgert's own preprocessing gives a fixture's source in its input.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::frame::PixelFormat;
use crate::model::manifest::{Layout, PreprocessSpec, ResizeMode};
use crate::preprocess::{Geometry, Preprocessor};
use crate::tensor::HostTensor;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/detect")
}

/// Every array of an .npz, as f32 (integer arrays converted as a backend converts outputs).
pub fn arrays(path: &Path) -> Vec<(String, HostTensor)> {
    let file = std::fs::File::open(path).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let name = entry.name().unwrap().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let values: Vec<f32> = match npy.dtype() {
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Int => {
                npy.into_vec::<i32>().unwrap().into_iter().map(|v| v as f32).collect()
            }
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Uint => {
                npy.into_vec::<u8>().unwrap().into_iter().map(f32::from).collect()
            }
            _ => npy.into_vec::<f32>().unwrap(),
        };
        out.push((name, HostTensor::new(shape, values)));
    }
    out
}

/// The geometry edgert's own preprocessing gives the fixture's source image in its input.
pub fn geometry(json: &serde_json::Value) -> Geometry {
    let size = |key: &str| (json[key][0].as_u64().unwrap() as usize, json[key][1].as_u64().unwrap() as usize);
    let ((sw, sh), (h, w)) = (size("source"), size("input"));
    let resize = match json["resize"].as_str().unwrap() {
        "letterbox" => ResizeMode::Letterbox,
        _ => ResizeMode::Stretch,
    };
    let spec = PreprocessSpec { resize, ..PreprocessSpec::default() };
    Preprocessor::new(spec, w, h, Layout::Nchw).plan(PixelFormat::Rgb24, sw, sh).unwrap().geometry()
}
