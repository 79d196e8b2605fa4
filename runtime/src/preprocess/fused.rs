//! One pass from a raw frame to the model's input tensor: each output value samples its four source
//! pixels, converts their colour, interpolates (bilinear, OpenCV INTER_LINEAR's pixel-centre
//! convention), scales and normalizes, and lands in the model's channel order and layout. The
//! sampling taps of every output row and column are computed once per frame size, not per frame.

use super::frame::{luma, yuv_values_to_rgb, Frame, PixelFormat};
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
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) channels: ChannelOrder,
    pub(super) layout: Layout,
    /// `value = pixel * gain[c] + bias[c]`: scale, mean and std folded together, in model order.
    pub(super) gain: [f32; 3],
    pub(super) bias: [f32; 3],
    /// The letterbox border, 0..255.
    pub(super) pad: f32,
    source: (usize, usize),
    pub(super) columns: Vec<Tap>,
    pub(super) rows: Vec<Tap>,
    /// Whether some columns lie in a letterbox border (left and right).
    padded_columns: bool,
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
        let columns: Vec<Tap> =
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
            padded_columns: columns.iter().any(|tap| !tap.inside),
            columns,
            rows,
            geometry,
        })
    }

    /// Values in the output (one batch item).
    pub fn item_len(&self) -> usize {
        self.width * self.height * self.channels.channels()
    }

    /// Whether `frame` has the planned size and the output `out_len` values.
    pub(super) fn check(&self, frame: &Frame, out_len: usize) -> Result<(), String> {
        if (frame.width, frame.height) != self.source {
            return Err(format!(
                "frame is {}x{}, the pass was planned for {}x{}",
                frame.width, frame.height, self.source.0, self.source.1
            ));
        }
        if out_len != self.item_len() {
            return Err(format!("output has {out_len} values, the input needs {}", self.item_len()));
        }
        Ok(())
    }

    /// The geometry every frame of the planned size gets.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Fills `out` (`item_len` values) from `frame`, which must have the planned size.
    pub fn run(&self, frame: &Frame, out: &mut [f32]) -> Result<Geometry, String> {
        self.check(frame, out.len())?;
        let (w, s, d) = (frame.width, frame.stride, frame.data);
        // Per format: a source row's pixels, as three bytes each (RGB, or Y U V). Rows are split
        // into whole pixels (or YUYV pairs) so that a pixel costs one bounds check.
        match frame.format {
            PixelFormat::Rgb24 => self.fill::<false, _>(out, |y| {
                let pixels = d[y * s..][..3 * w].as_chunks::<3>().0;
                move |x: usize| pixels[x]
            }),
            PixelFormat::Bgr24 => self.fill::<false, _>(out, |y| {
                let pixels = d[y * s..][..3 * w].as_chunks::<3>().0;
                move |x: usize| {
                    let [b, g, r] = pixels[x];
                    [r, g, b]
                }
            }),
            PixelFormat::Grey => self.fill::<false, _>(out, |y| {
                let row = &d[y * s..][..w];
                move |x: usize| [row[x]; 3]
            }),
            PixelFormat::Yuyv => self.fill::<true, _>(out, |y| {
                let pairs = d[y * s..][..2 * w].as_chunks::<4>().0;
                move |x: usize| {
                    // Y0 U Y1 V: both pixels of a pair share U and V.
                    let pair = pairs[x / 2];
                    [pair[(x & 1) * 2], pair[1], pair[3]]
                }
            }),
            PixelFormat::Nv12 => {
                let chroma_plane = s * frame.height;
                self.fill::<true, _>(out, |y| {
                    let luma = &d[y * s..][..w];
                    let chroma = d[chroma_plane + (y / 2) * s..][..w].as_chunks::<2>().0;
                    move |x: usize| {
                        let [u, v] = chroma[x / 2];
                        [luma[x], u, v]
                    }
                })
            }
        }
        Ok(self.geometry)
    }

    /// The loop, specialized per pixel format by `row` (source row `y` → its pixel `x` as three
    /// bytes: RGB, or Y U V when `YUV`). A row is done in runs of `RUN` output pixels: gather the
    /// four neighbours' bytes, then convert, interpolate, normalize and store, each step a loop over
    /// arrays of one component, which the compiler vectorizes.
    #[inline(always)]
    fn fill<const YUV: bool, P: Fn(usize) -> [u8; 3]>(&self, out: &mut [f32], row: impl Fn(usize) -> P) {
        let channels = self.channels.channels();
        let plane = self.width * self.height;
        let mut run = Run::default();
        for (oy, ty) in self.rows.iter().enumerate() {
            let (top, bottom) = (row(ty.i0), row(ty.i1));
            for first in (0..self.width).step_by(RUN) {
                let n = (self.width - first).min(RUN);
                let columns = &self.columns[first..first + n];
                if ty.inside {
                    for (i, tx) in columns.iter().enumerate() {
                        let corners = [top(tx.i0), top(tx.i1), bottom(tx.i0), bottom(tx.i1)];
                        for (neighbour, bytes) in corners.into_iter().enumerate() {
                            for (k, byte) in bytes.into_iter().enumerate() {
                                run.bytes[neighbour][k][i] = byte;
                            }
                        }
                        run.weight[i] = tx.w1;
                    }
                    run.interpolate::<YUV>(ty.w1);
                }
                if !ty.inside || self.padded_columns {
                    for (i, tx) in columns.iter().enumerate() {
                        if !(tx.inside && ty.inside) {
                            for c in 0..3 {
                                run.rgb[c][i] = self.pad;
                            }
                        }
                    }
                }
                let at = oy * self.width + first;
                for c in 0..channels {
                    let colour = match self.channels {
                        ChannelOrder::Rgb => &run.rgb[c],
                        ChannelOrder::Bgr => &run.rgb[2 - c],
                        ChannelOrder::Gray => {
                            let [r, g, b] = &run.rgb;
                            for i in 0..RUN {
                                run.gray[i] = luma([r[i], g[i], b[i]]);
                            }
                            &run.gray
                        }
                    };
                    let (gain, bias) = (self.gain[c], self.bias[c]);
                    match self.layout {
                        Layout::Nchw => {
                            for (o, v) in out[c * plane + at..][..n].iter_mut().zip(colour) {
                                *o = v * gain + bias;
                            }
                        }
                        Layout::Nhwc => {
                            for (i, v) in colour[..n].iter().enumerate() {
                                out[(at + i) * channels + c] = v * gain + bias;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Output pixels done together: small enough to stay in L1, long enough to vectorize.
const RUN: usize = 64;

/// One run's working arrays, made once per frame: [neighbour][component][pixel of the run], the
/// neighbours top-left, top-right, bottom-left, bottom-right.
struct Run {
    bytes: [[[u8; RUN]; 3]; 4],
    /// Each pixel's weight of its right-hand neighbours.
    weight: [f32; RUN],
    colour: [[[f32; RUN]; 3]; 4],
    top: [f32; RUN],
    bottom: [f32; RUN],
    rgb: [[f32; RUN]; 3],
    gray: [f32; RUN],
}

impl Default for Run {
    fn default() -> Run {
        Run {
            bytes: [[[0; RUN]; 3]; 4],
            weight: [0.0; RUN],
            colour: [[[0.0; RUN]; 3]; 4],
            top: [0.0; RUN],
            bottom: [0.0; RUN],
            rgb: [[0.0; RUN]; 3],
            gray: [0.0; RUN],
        }
    }
}

impl Run {
    /// `rgb` from the neighbours' bytes: converted to RGB (from YUV when `YUV`), interpolated
    /// across with `weight`, then down with `down`. Whole runs, stale entries past the row's end
    /// included: fixed trip counts vectorize.
    #[inline(always)]
    fn interpolate<const YUV: bool>(&mut self, down: f32) {
        for (values, bytes) in self.colour.iter_mut().flatten().zip(self.bytes.iter().flatten()) {
            for (v, b) in values.iter_mut().zip(bytes) {
                *v = *b as f32;
            }
        }
        if YUV {
            for [y, u, v] in &mut self.colour {
                for i in 0..RUN {
                    [y[i], u[i], v[i]] = yuv_values_to_rgb(y[i], u[i], v[i]);
                }
            }
        }
        let [top_left, top_right, bottom_left, bottom_right] = &self.colour;
        let w = &self.weight;
        for c in 0..3 {
            for i in 0..RUN {
                self.top[i] = top_left[c][i] + (top_right[c][i] - top_left[c][i]) * w[i];
                self.bottom[i] = bottom_left[c][i] + (bottom_right[c][i] - bottom_left[c][i]) * w[i];
            }
            for i in 0..RUN {
                self.rgb[c][i] = self.top[i] + (self.bottom[i] - self.top[i]) * down;
            }
        }
    }
}
