//! One pass from a raw frame to the model's input tensor: each output value samples its four source
//! pixels, converts their colour, interpolates (bilinear, OpenCV INTER_LINEAR's pixel-centre
//! convention), scales and normalizes, and lands in the model's channel order and layout. The
//! sampling taps of every output row and column are computed once per frame size, not per frame.

use super::frame::{luma, yuv_to_rgb, Frame, PixelFormat};
use super::Geometry;
use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec, ResizeMode};

/// Where an output column (or row) samples the source: two neighbours and the second's weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tap {
    pub i0: usize,
    pub i1: usize,
    pub w1: f32,
    /// False in a letterbox border: the pad value, no sampling.
    pub inside: bool,
}

/// How the model's input rectangle maps onto the resized source: the resized size, and where the
/// output's origin falls in it (negative inside a letterbox border, positive for a crop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Placement {
    pub resized_w: usize,
    pub resized_h: usize,
    pub origin_x: i64,
    pub origin_y: i64,
}

fn scaled(size: usize, scale: f64) -> usize {
    ((size as f64 * scale).round() as usize).max(1)
}

/// The placement for a mode, as `Preprocessor` (the image path) does it.
pub(super) fn placement(
    spec: &PreprocessSpec,
    sw: usize,
    sh: usize,
    w: usize,
    h: usize,
) -> Result<Placement, String> {
    let at =
        |resized_w, resized_h, origin_x, origin_y| Placement { resized_w, resized_h, origin_x, origin_y };
    Ok(match spec.resize {
        ResizeMode::None if (sw, sh) != (w, h) => {
            return Err(format!("frame is {sw}x{sh}, the model wants {w}x{h} and resize is 'none'"))
        }
        ResizeMode::None | ResizeMode::Stretch => at(w, h, 0, 0),
        ResizeMode::Letterbox => {
            let s = (w as f64 / sw as f64).min(h as f64 / sh as f64);
            let (nw, nh) = (scaled(sw, s).min(w), scaled(sh, s).min(h));
            at(nw, nh, -(((w - nw) / 2) as i64), -(((h - nh) / 2) as i64))
        }
        ResizeMode::CenterCrop => {
            let short = spec.resize_short_side.unwrap_or(w.max(h) as u32) as f64;
            let s = (short / sw.min(sh) as f64).max(w as f64 / sw as f64).max(h as f64 / sh as f64);
            let (nw, nh) = (scaled(sw, s).max(w), scaled(sh, s).max(h));
            at(nw, nh, ((nw - w) / 2) as i64, ((nh - h) / 2) as i64)
        }
    })
}

/// OpenCV INTER_LINEAR: the source coordinate of a resized pixel's centre, clamped at the edges.
pub(super) fn linear_tap(resized_index: i64, resized: usize, source: usize) -> Tap {
    if resized_index < 0 || resized_index >= resized as i64 {
        return Tap { i0: 0, i1: 0, w1: 0.0, inside: false };
    }
    let f = (resized_index as f64 + 0.5) * (source as f64 / resized as f64) - 0.5;
    let mut i0 = f.floor() as i64;
    let mut w1 = f - i0 as f64;
    if i0 < 0 {
        (i0, w1) = (0, 0.0);
    }
    if i0 >= source as i64 - 1 {
        (i0, w1) = (source as i64 - 1, 0.0);
    }
    let i0 = i0 as usize;
    Tap { i0, i1: (i0 + 1).min(source - 1), w1: w1 as f32, inside: true }
}

/// The precomputed pass for one frame size and one model input.
#[derive(Debug, Clone)]
pub struct FusedPreprocess {
    width: usize,
    height: usize,
    channels: ChannelOrder,
    layout: Layout,
    /// `value = pixel * gain[c] + bias[c]`: scale, mean and std folded together, in model order.
    gain: [f32; 3],
    bias: [f32; 3],
    /// The letterbox border, 0..255.
    pad: f32,
    source: (usize, usize),
    columns: Vec<Tap>,
    rows: Vec<Tap>,
    geometry: Geometry,
}

impl FusedPreprocess {
    /// Plans the pass from `source_w`×`source_h` frames to a `width`×`height` input.
    pub fn new(
        spec: &PreprocessSpec,
        width: usize,
        height: usize,
        layout: Layout,
        source_w: usize,
        source_h: usize,
    ) -> Result<FusedPreprocess, String> {
        let place = placement(spec, source_w, source_h, width, height)?;
        let columns =
            (0..width).map(|x| linear_tap(x as i64 + place.origin_x, place.resized_w, source_w)).collect();
        let rows =
            (0..height).map(|y| linear_tap(y as i64 + place.origin_y, place.resized_h, source_h)).collect();
        let per_channel = |values: &[f32], c: usize| if values.len() == 1 { values[0] } else { values[c] };
        let (mut gain, mut bias) = ([0.0; 3], [0.0; 3]);
        for c in 0..spec.channels.channels() {
            let inv_std = 1.0 / per_channel(&spec.std, c);
            gain[c] = spec.scale * inv_std;
            bias[c] = -per_channel(&spec.mean, c) * inv_std;
        }
        let geometry = Geometry {
            source_width: source_w as u32,
            source_height: source_h as u32,
            scale_x: place.resized_w as f32 / source_w as f32,
            scale_y: place.resized_h as f32 / source_h as f32,
            offset_x: -place.origin_x as f32,
            offset_y: -place.origin_y as f32,
        };
        Ok(FusedPreprocess {
            width,
            height,
            channels: spec.channels,
            layout,
            gain,
            bias,
            pad: spec.pad_value as f32,
            source: (source_w, source_h),
            columns,
            rows,
            geometry,
        })
    }

    /// Values in the output (one batch item).
    pub fn item_len(&self) -> usize {
        self.width * self.height * self.channels.channels()
    }

    /// Fills `out` (`item_len` values) from `frame`, which must have the planned size.
    pub fn run(&self, frame: &Frame, out: &mut [f32]) -> Result<Geometry, String> {
        if (frame.width, frame.height) != self.source {
            return Err(format!(
                "frame is {}x{}, the pass was planned for {}x{}",
                frame.width, frame.height, self.source.0, self.source.1
            ));
        }
        if out.len() != self.item_len() {
            return Err(format!("output has {} values, the input needs {}", out.len(), self.item_len()));
        }
        let (s, d) = (frame.stride, frame.data);
        match frame.format {
            PixelFormat::Rgb24 => self.fill(out, |x, y| {
                let i = y * s + 3 * x;
                [d[i] as f32, d[i + 1] as f32, d[i + 2] as f32]
            }),
            PixelFormat::Bgr24 => self.fill(out, |x, y| {
                let i = y * s + 3 * x;
                [d[i + 2] as f32, d[i + 1] as f32, d[i] as f32]
            }),
            PixelFormat::Grey => self.fill(out, |x, y| {
                let g = d[y * s + x] as f32;
                [g, g, g]
            }),
            PixelFormat::Yuyv => self.fill(out, |x, y| {
                let pair = y * s + (x & !1) * 2;
                yuv_to_rgb(d[pair + (x & 1) * 2], d[pair + 1], d[pair + 3])
            }),
            PixelFormat::Nv12 => {
                let chroma = s * frame.height;
                self.fill(out, |x, y| {
                    let uv = chroma + (y / 2) * s + (x & !1);
                    yuv_to_rgb(d[y * s + x], d[uv], d[uv + 1])
                })
            }
        }
        Ok(self.geometry)
    }

    /// The loop, specialized per pixel format by `rgb` (the source colour at a pixel).
    #[inline(always)]
    fn fill(&self, out: &mut [f32], rgb: impl Fn(usize, usize) -> [f32; 3]) {
        let channels = self.channels.channels();
        let plane = self.width * self.height;
        let border = [self.pad; 3];
        for (oy, ty) in self.rows.iter().enumerate() {
            for (ox, tx) in self.columns.iter().enumerate() {
                let colour = if tx.inside && ty.inside {
                    let lerp = |a: [f32; 3], b: [f32; 3], w: f32| {
                        [a[0] + (b[0] - a[0]) * w, a[1] + (b[1] - a[1]) * w, a[2] + (b[2] - a[2]) * w]
                    };
                    let top = lerp(rgb(tx.i0, ty.i0), rgb(tx.i1, ty.i0), tx.w1);
                    let bottom = lerp(rgb(tx.i0, ty.i1), rgb(tx.i1, ty.i1), tx.w1);
                    lerp(top, bottom, ty.w1)
                } else {
                    border
                };
                let pixel = oy * self.width + ox;
                let ordered = match self.channels {
                    ChannelOrder::Rgb => colour,
                    ChannelOrder::Bgr => [colour[2], colour[1], colour[0]],
                    ChannelOrder::Gray => [luma(colour), 0.0, 0.0],
                };
                for (c, value) in ordered.iter().enumerate().take(channels) {
                    let at = match self.layout {
                        Layout::Nchw => c * plane + pixel,
                        Layout::Nhwc => pixel * channels + c,
                    };
                    out[at] = value * self.gain[c] + self.bias[c];
                }
            }
        }
    }
}
