//! Image preprocessing, all read from the manifest: resize (stretch, letterbox, centre-crop),
//! scale, mean/std, channel order and layout, into one f32 batch item. `fused` does the same in one
//! pass from raw camera frames (`frame`), into f32 or the f16 or u8 a model takes, checked against
//! `reference`.

pub mod frame;
pub mod fused;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod mjpeg;
pub mod reference;

use image::imageops::{self, FilterType};
use image::{DynamicImage, ImageBuffer, Pixel};

use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec, ResizeMode};
use crate::model::Model;
use crate::{Error, Result};

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
    /// Maps a point in model-input pixels back to source-image pixels.
    pub fn to_source(&self, x: f32, y: f32) -> (f32, f32) {
        ((x - self.offset_x) / self.scale_x, (y - self.offset_y) / self.scale_y)
    }
}

#[derive(Debug, Clone)]
pub struct Preprocessor {
    spec: PreprocessSpec,
    width: u32,
    height: u32,
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
        Ok(Preprocessor {
            spec: manifest.preprocess.clone(),
            width: width as u32,
            height: height as u32,
            layout: manifest.input.layout,
        })
    }

    /// Values in one batch item.
    pub fn item_len(&self) -> usize {
        (self.width * self.height) as usize * self.spec.channels.channels()
    }

    /// Writes one batch item into `out` (`item_len` values).
    pub fn run(&self, image: &DynamicImage, out: &mut [f32]) -> Result<Geometry, String> {
        match self.spec.channels {
            ChannelOrder::Gray => self.run_typed(&image.to_luma8(), out),
            ChannelOrder::Rgb | ChannelOrder::Bgr => self.run_typed(&image.to_rgb8(), out),
        }
    }

    fn run_typed<P>(&self, image: &ImageBuffer<P, Vec<u8>>, out: &mut [f32]) -> Result<Geometry, String>
    where
        P: Pixel<Subpixel = u8> + 'static,
    {
        let (canvas, geometry) = self.fit(image)?;
        self.normalize(canvas.as_raw(), out);
        Ok(geometry)
    }

    /// Resizes the image onto a canvas of exactly the input size.
    fn fit<P>(&self, image: &ImageBuffer<P, Vec<u8>>) -> Result<(ImageBuffer<P, Vec<u8>>, Geometry), String>
    where
        P: Pixel<Subpixel = u8> + 'static,
    {
        let (sw, sh) = image.dimensions();
        let (w, h) = (self.width, self.height);
        let geometry = |scale_x: f32, scale_y: f32, offset_x: f32, offset_y: f32| Geometry {
            source_width: sw,
            source_height: sh,
            scale_x,
            scale_y,
            offset_x,
            offset_y,
        };
        Ok(match self.spec.resize {
            ResizeMode::None => {
                if (sw, sh) != (w, h) {
                    return Err(format!("image is {sw}x{sh}, the model wants {w}x{h} and resize is 'none'"));
                }
                (image.clone(), geometry(1.0, 1.0, 0.0, 0.0))
            }
            ResizeMode::Stretch => {
                let resized = imageops::resize(image, w, h, FilterType::Triangle);
                (resized, geometry(w as f32 / sw as f32, h as f32 / sh as f32, 0.0, 0.0))
            }
            ResizeMode::Letterbox => {
                let s = (w as f32 / sw as f32).min(h as f32 / sh as f32);
                let (nw, nh) = (scaled(sw, s).min(w), scaled(sh, s).min(h));
                let resized = imageops::resize(image, nw, nh, FilterType::Triangle);
                let pad = P::from_slice(&[self.spec.pad_value; 4][..P::CHANNEL_COUNT as usize]).to_owned();
                let mut canvas = ImageBuffer::from_pixel(w, h, pad);
                let (x, y) = ((w - nw) / 2, (h - nh) / 2);
                imageops::replace(&mut canvas, &resized, x as i64, y as i64);
                (canvas, geometry(nw as f32 / sw as f32, nh as f32 / sh as f32, x as f32, y as f32))
            }
            ResizeMode::CenterCrop => {
                let short = self.spec.resize_short_side.unwrap_or(w.max(h)) as f32;
                // Never smaller than the crop, whatever the manifest says.
                let s = (short / sw.min(sh) as f32).max(w as f32 / sw as f32).max(h as f32 / sh as f32);
                let (nw, nh) = (scaled(sw, s).max(w), scaled(sh, s).max(h));
                let resized = imageops::resize(image, nw, nh, FilterType::Triangle);
                let (x, y) = ((nw - w) / 2, (nh - h) / 2);
                let crop = imageops::crop_imm(&resized, x, y, w, h).to_image();
                (crop, geometry(nw as f32 / sw as f32, nh as f32 / sh as f32, -(x as f32), -(y as f32)))
            }
        })
    }

    /// Interleaved 0..255 pixels → scaled, normalized values in the model's order and layout.
    fn normalize(&self, pixels: &[u8], out: &mut [f32]) {
        let channels = self.spec.channels.channels();
        let plane = (self.width * self.height) as usize;
        let per_channel = |values: &[f32], c: usize| if values.len() == 1 { values[0] } else { values[c] };
        for c in 0..channels {
            let source_c = if self.spec.channels == ChannelOrder::Bgr { 2 - c } else { c };
            let mean = per_channel(&self.spec.mean, c);
            let inv_std = 1.0 / per_channel(&self.spec.std, c);
            for i in 0..plane {
                let v = (pixels[i * channels + source_c] as f32 * self.spec.scale - mean) * inv_std;
                let at = match self.layout {
                    Layout::Nchw => c * plane + i,
                    Layout::Nhwc => i * channels + c,
                };
                out[at] = v;
            }
        }
    }
}

fn scaled(size: u32, scale: f32) -> u32 {
    ((size as f32 * scale).round() as u32).max(1)
}

#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod tests;
