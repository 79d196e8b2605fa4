//! Preprocessing, all read from the manifest: colour conversion, resize (stretch, letterbox,
//! centre-crop), scale, mean/std, channel order, layout and element type. One path for everything:
//! a camera frame, a recording's frame or a decoded image (as an RGB24 or GREY frame) goes through
//! `plan::FramePlan`: the one-pass `fused` conversion, after an antialiased downscale where the
//! recipe shrinks the frame. `reference` is the slow, obviously correct version for tests.

mod colour;
pub mod fused;
#[cfg(feature = "cuda")]
pub mod gpu;
pub(crate) mod plan;
#[cfg(test)]
pub(crate) mod reference;

use image::DynamicImage;

use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{Layout, PreprocessSpec};
use crate::model::Model;
use crate::tensor::InputElement;
use crate::{Error, Result};
use plan::FramePlan;

/// Why a frame or image cannot become the model's input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreprocessError {
    #[error("frame is {}x{}, the model wants {}x{} and resize is 'none'", frame.0, frame.1, model.0, model.1)]
    ResizeNone { frame: (usize, usize), model: (usize, usize) },
    #[error("frame is {} {}x{}, the plan is for {} {}x{}", frame.0.name(), frame.1, frame.2, planned.0.name(), planned.1, planned.2)]
    NotPlanned { frame: (PixelFormat, usize, usize), planned: (PixelFormat, usize, usize) },
    #[error("frame is {}x{}, the pass was planned for {}x{}", frame.0, frame.1, planned.0, planned.1)]
    NotPlannedSize { frame: (usize, usize), planned: (usize, usize) },
    #[error("output has {given} values, the input needs {needed}")]
    OutputLength { given: usize, needed: usize },
    #[error("downscaling the frame failed: {0}")]
    Downscale(String),
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
}

/// Where the model's input pixels came from: `input = source * scale + offset`, per axis.
/// Postprocessing uses it to map boxes back onto the source image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    pub source_width: u32,
    pub source_height: u32,
    pub scale_x: f32,
    pub scale_y: f32,
    pub offset_x: f32,
    pub offset_y: f32,
}

impl Geometry {
    /// An input taken as it is: a `width`×`height` source with no resize.
    pub fn identity(width: usize, height: usize) -> Geometry {
        let (w, h) = (width as u32, height as u32);
        Geometry {
            source_width: w,
            source_height: h,
            scale_x: 1.0,
            scale_y: 1.0,
            offset_x: 0.0,
            offset_y: 0.0,
        }
    }

    /// Maps a point in model-input pixels back to source-image pixels.
    pub fn to_source(&self, x: f32, y: f32) -> (f32, f32) {
        ((x - self.offset_x) / self.scale_x, (y - self.offset_y) / self.scale_y)
    }
}

/// A model's image input: what every frame or image is preprocessed into.
#[derive(Debug, Clone)]
pub struct Preprocessor {
    spec: PreprocessSpec,
    width: usize,
    height: usize,
    layout: Layout,
}

impl Preprocessor {
    /// A preprocessor for image inputs; fails when the input is not an image tensor.
    pub fn for_model(model: &Model) -> Result<Preprocessor> {
        let manifest = &model.manifest;
        let (height, width, channels) = manifest.image_geometry().ok_or_else(|| {
            Error::manifest(
                model.source_path(),
                format!("input shape {:?} is not an image (needs 4 dimensions)", manifest.input.shape),
            )
        })?;
        if channels != manifest.preprocess.channels.channels() {
            return Err(Error::manifest(
                model.source_path(),
                format!(
                    "input has {channels} channels but preprocess.channels is {:?}",
                    manifest.preprocess.channels
                ),
            ));
        }
        Ok(Preprocessor::new(manifest.preprocess.clone(), width, height, manifest.input.layout))
    }

    pub fn new(spec: PreprocessSpec, width: usize, height: usize, layout: Layout) -> Preprocessor {
        Preprocessor { spec, width, height, layout }
    }

    /// Values in one batch item.
    pub fn item_len(&self) -> usize {
        self.width * self.height * self.spec.channels.channels()
    }

    /// The plan for frames of one format and size.
    pub fn plan(
        &self,
        format: PixelFormat,
        width: usize,
        height: usize,
    ) -> Result<FramePlan, PreprocessError> {
        FramePlan::new(&self.spec, (self.width, self.height), self.layout, format, (width, height))
    }

    /// Writes one batch item for a decoded image into `out` (`item_len` values): the image as an
    /// RGB24 frame (GREY when it has one channel), through the same plan a camera frame takes.
    pub fn run_image<T: InputElement>(
        &self,
        image: &DynamicImage,
        out: &mut [T],
    ) -> Result<Geometry, PreprocessError> {
        let (format, pixels) = image_pixels(image);
        let (width, height) = (image.width() as usize, image.height() as usize);
        let frame = Frame::new(format, width, height, format.min_stride(width), &pixels)?;
        self.plan(format, width, height)?.run(&frame, out)
    }
}

/// A decoded image's pixels as a frame's bytes: 8-bit grey stays grey, anything else becomes RGB24
/// (alpha dropped, 16-bit and float samples scaled to 8 bits).
fn image_pixels(image: &DynamicImage) -> (PixelFormat, std::borrow::Cow<'_, [u8]>) {
    match image {
        DynamicImage::ImageLuma8(grey) => (PixelFormat::Grey, grey.as_raw().into()),
        DynamicImage::ImageRgb8(rgb) => (PixelFormat::Rgb24, rgb.as_raw().into()),
        other => (PixelFormat::Rgb24, other.to_rgb8().into_raw().into()),
    }
}

#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod tests;
