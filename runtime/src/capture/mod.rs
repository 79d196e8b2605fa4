//! Where inputs come from: image files and folders, labelled tensor sets (`.npz`), and
//! generated test patterns; raw frame sources opened from a URI (`source`).

pub mod mjpeg;
pub mod npz;
pub mod pattern;
pub mod source;

use std::path::{Path, PathBuf};

use image::DynamicImage;

use crate::{Error, Result};

/// File extensions taken from a folder of images.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "bmp", "ppm", "pgm", "webp", "tif", "tiff"];

/// The image files at `path`: the file itself, or a folder's images in name order.
pub fn list_images(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::read(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::read(path, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_lowercase().as_str()))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::input(path, "folder holds no image files"));
    }
    Ok(files)
}

/// Decodes an image file; anything undecodable is reported as "not an image".
pub fn load_image(path: &Path) -> Result<DynamicImage> {
    let bytes = crate::infile::read(path, crate::infile::IMAGE)?;
    if mjpeg::is_jpeg(&bytes) && mjpeg::end_of_image(&bytes).is_none() {
        return Err(Error::input(
            path,
            "a JPEG cut short (no end-of-image marker): truncated or still being written",
        ));
    }
    image::load_from_memory(&bytes).map_err(|e| Error::input(path, format!("not an image ({e})")))
}

/// Whether a path names a labelled tensor set rather than images.
pub fn is_npz(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "npz")
}
