//! How a frame of one size and pixel format becomes the model's input: the fused pass alone, or,
//! where the recipe shrinks the frame on a side, an antialiased downscale first
//! (`fast_image_resize`'s bilinear convolution, which widens its filter with the scale as PIL and
//! torchvision do), then the fused pass over the downscaled pixels at one source pixel per output
//! pixel. Bilinear sampling alone reads 4 source pixels per output pixel and skips the rest: it
//! aliases past 2×, and between 1× and 2× it still differs enough from PIL's filter to turn
//! classifiers' answers (benches/RESULTS.md, image preprocessing: top-1 agreement).

use fast_image_resize::images::{TypedImage, TypedImageRef};
use fast_image_resize::pixels::{U8x3, U8};
use fast_image_resize::{FilterType, PixelTrait, PixelType, ResizeAlg, ResizeOptions, Resizer};

use super::fused::{placement, FusedPreprocess, Placement};
use super::{Geometry, PreprocessError};
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{Layout, PreprocessSpec};
use crate::tensor::InputElement;

/// The planned way for frames of one size and format; `run` keeps its scratch between frames.
pub struct FramePlan {
    /// The fused pass over frames as they come: what runs where there is no downscale, and what
    /// the GPU kernel runs.
    single: FusedPreprocess,
    /// Where the frame shrinks: the downscale, and the fused pass over its output.
    downscaled: Option<(Downscale, FusedPreprocess)>,
    format: PixelFormat,
    source: (usize, usize),
}

impl FramePlan {
    /// Plans `source_w`×`source_h` frames of `format` into a `width`×`height` input.
    pub fn new(
        spec: &PreprocessSpec,
        (width, height): (usize, usize),
        layout: Layout,
        format: PixelFormat,
        (source_w, source_h): (usize, usize),
    ) -> Result<FramePlan, PreprocessError> {
        let place = placement(spec, source_w, source_h, width, height)?;
        let shrinks = source_w > place.resized_w || source_h > place.resized_h;
        let single = FusedPreprocess::new(spec, width, height, layout, source_w, source_h)?;
        // YUYV and NV12 share chroma between pixels: no resize crate takes them, and converting a
        // whole camera frame to RGB first would cost more than the pass. Sampled bilinearly.
        let downscaled = match Downscale::pixel_type(format) {
            Some(pixel_type) if shrinks => {
                let downscale = Downscale::new(pixel_type, &place, (width, height), (source_w, source_h));
                let geometry = place.geometry(source_w, source_h);
                let (dw, dh) = downscale.size;
                // One downscaled pixel per output pixel: every tap lands on a pixel, with no weight
                // on its neighbour; outside the visible region, the letterbox border.
                let at = Placement {
                    resized_w: dw,
                    resized_h: dh,
                    origin_x: place.origin_x - downscale.visible_x.0 as i64,
                    origin_y: place.origin_y - downscale.visible_y.0 as i64,
                };
                let fused = FusedPreprocess::placed(spec, width, height, layout, (dw, dh), at, geometry);
                Some((downscale, fused))
            }
            _ => None,
        };
        Ok(FramePlan { single, downscaled, format, source: (source_w, source_h) })
    }

    /// Values in the output (one batch item).
    pub fn item_len(&self) -> usize {
        self.single.item_len()
    }

    /// The geometry every frame of the planned size gets.
    pub fn geometry(&self) -> Geometry {
        self.single.geometry()
    }

    /// The fused pass alone over frames as they come, without the downscale: what the GPU kernel
    /// runs (bilinear at any shrink).
    pub fn fused(&self) -> &FusedPreprocess {
        &self.single
    }

    /// Whether frames are downscaled with a filter before the fused pass.
    pub fn downscales(&self) -> bool {
        self.downscaled.is_some()
    }

    /// Fills `out` (`item_len` values) from `frame`, which must have the planned size and format.
    pub fn run<T: InputElement>(
        &mut self,
        frame: &Frame,
        out: &mut [T],
    ) -> Result<Geometry, PreprocessError> {
        if frame.format != self.format || (frame.width, frame.height) != self.source {
            return Err(PreprocessError::NotPlanned {
                frame: (frame.format, frame.width, frame.height),
                planned: (self.format, self.source.0, self.source.1),
            });
        }
        match &mut self.downscaled {
            None => self.single.run(frame, out),
            Some((downscale, fused)) => {
                let small = downscale.run(frame)?;
                fused.run(&small, out)
            }
        }
    }
}

/// The antialiased downscale of the part of a frame the input shows (a centre crop's middle, a
/// letterbox's whole frame), straight to its size in the input.
struct Downscale {
    pixel_type: PixelType,
    /// The visible region in resized-frame pixels, `[start, end)` per axis.
    visible_x: (usize, usize),
    visible_y: (usize, usize),
    /// That region in source pixels (fractional, as the resize maps it).
    crop: [f64; 4],
    size: (usize, usize),
    resizer: Resizer,
    /// The frame's rows without their padding, when the stride has some.
    packed: Vec<u8>,
    out: Vec<u8>,
}

impl Downscale {
    /// The resize crate's pixel type for a frame format it takes as it is.
    fn pixel_type(format: PixelFormat) -> Option<PixelType> {
        match format {
            PixelFormat::Rgb24 | PixelFormat::Bgr24 => Some(PixelType::U8x3),
            PixelFormat::Grey => Some(PixelType::U8),
            PixelFormat::Yuyv | PixelFormat::Nv12 => None,
        }
    }

    fn new(
        pixel_type: PixelType,
        place: &Placement,
        (w, h): (usize, usize),
        (sw, sh): (usize, usize),
    ) -> Self {
        let visible = |origin: i64, size: usize, resized: usize| {
            let start = origin.max(0) as usize;
            (start, ((origin + size as i64).max(0) as usize).min(resized).max(start + 1))
        };
        let visible_x = visible(place.origin_x, w, place.resized_w);
        let visible_y = visible(place.origin_y, h, place.resized_h);
        // In source pixels; the far edge kept inside the frame, which `end · sw / resized` can
        // pass by a rounding error (224 · 451/224 > 451), and the resize refuses such a crop.
        let span = |(start, end): (usize, usize), source: usize, resized: usize| {
            let scale = source as f64 / resized as f64;
            let left = start as f64 * scale;
            (left, (end as f64 * scale).min(source as f64) - left)
        };
        let ((left, width), (top, height)) =
            (span(visible_x, sw, place.resized_w), span(visible_y, sh, place.resized_h));
        let crop = [left, top, width, height];
        let size = (visible_x.1 - visible_x.0, visible_y.1 - visible_y.0);
        Downscale {
            pixel_type,
            visible_x,
            visible_y,
            crop,
            size,
            resizer: Resizer::new(),
            packed: Vec::new(),
            out: vec![0; size.0 * size.1 * pixel_type.size()],
        }
    }

    /// The downscaled region as a frame of the same format.
    fn run(&mut self, frame: &Frame) -> Result<Frame<'_>, PreprocessError> {
        let row = frame.format.min_stride(frame.width);
        let pixels = if frame.stride == row {
            &frame.data[..row * frame.height]
        } else {
            self.packed.clear();
            for y in 0..frame.height {
                self.packed.extend_from_slice(&frame.data[y * frame.stride..][..row]);
            }
            &self.packed
        };
        let (dw, dh) = self.size;
        let [left, top, width, height] = self.crop;
        let options = ResizeOptions::new()
            .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
            .crop(left, top, width, height);
        let (source, out) = ((frame.width as u32, frame.height as u32, pixels), (dw as u32, dh as u32));
        // Typed, for the two pixel types frames have: `Resizer::resize` would build every type.
        match self.pixel_type {
            PixelType::U8x3 => resize_as::<U8x3>(&mut self.resizer, source, (out, &mut self.out), &options)?,
            _ => resize_as::<U8>(&mut self.resizer, source, (out, &mut self.out), &options)?,
        }
        Ok(Frame::new(frame.format, dw, dh, frame.format.min_stride(dw), &self.out)?)
    }
}

/// One typed resize of `source` (width, height, packed pixels) into `out`.
fn resize_as<P: PixelTrait>(
    resizer: &mut Resizer,
    (width, height, pixels): (u32, u32, &[u8]),
    ((out_width, out_height), out): ((u32, u32), &mut [u8]),
    options: &ResizeOptions,
) -> Result<(), PreprocessError> {
    let failed = |e: &dyn std::fmt::Display| PreprocessError::Downscale(e.to_string());
    let source = TypedImageRef::<P>::from_buffer(width, height, pixels).map_err(|e| failed(&e))?;
    let mut out = TypedImage::<P>::from_buffer(out_width, out_height, out).map_err(|e| failed(&e))?;
    resizer.resize_typed(&source, &mut out, options).map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::FramePlan;
    use crate::frame::{Frame, PixelFormat};
    use crate::model::manifest::{Layout, PreprocessSpec, ResizeMode};

    /// Every shrink of a frame into an input, letterboxed, stretched or cropped, runs: the
    /// downscale's crop never reaches past the frame, whatever the sizes' rounding.
    #[test]
    fn frames_of_any_size_downscale_into_any_input() {
        let data = vec![128u8; 1400 * 3 * 1000];
        let modes = [
            ResizeMode::Letterbox,
            ResizeMode::LetterboxTopLeft,
            ResizeMode::Stretch,
            ResizeMode::CenterCrop,
        ];
        // chelsea.png (451×300) into a 224×160 letterbox failed so, and sizes around it.
        let sources = [(451, 300), (450, 301), (1366, 768), (641, 479), (999, 997), (1281, 721), (333, 1000)];
        let inputs = [(224, 160), (160, 224), (224, 224), (320, 320), (640, 384), (97, 61)];
        for resize in modes {
            let spec = PreprocessSpec { resize, ..PreprocessSpec::imagenet() };
            for &(sw, sh) in &sources {
                for &(w, h) in &inputs {
                    let frame = Frame::new(PixelFormat::Rgb24, sw, sh, sw * 3, &data[..sw * 3 * sh]).unwrap();
                    let mut plan =
                        FramePlan::new(&spec, (w, h), Layout::Nchw, PixelFormat::Rgb24, (sw, sh)).unwrap();
                    let mut out = vec![0f32; plan.item_len()];
                    let ran = plan.run(&frame, &mut out);
                    assert!(ran.is_ok(), "{resize:?} {sw}x{sh} into {w}x{h}: {ran:?}");
                }
            }
        }
    }
}
