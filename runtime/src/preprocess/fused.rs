//! One pass from a raw frame to the model's input tensor: each output value samples its four source
//! pixels, converts their colour, interpolates (bilinear, OpenCV INTER_LINEAR's pixel-centre
//! convention), scales and normalizes, and lands in the model's channel order, layout and element
//! type (f32, f16 or u8, converted as each value is stored: no second pass). The
//! sampling taps of every output row and column are computed once per frame size, not per frame.

use super::colour::{luma, yuv_values_to_rgb};
use super::{Geometry, PreprocessError};
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec, ResizeMode};
use crate::tensor::InputElement;

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

impl Placement {
    /// Where the model's input pixels came from in a `source_w`×`source_h` source.
    pub(super) fn geometry(&self, source_w: usize, source_h: usize) -> Geometry {
        Geometry {
            source_width: source_w as u32,
            source_height: source_h as u32,
            scale_x: self.resized_w as f32 / source_w as f32,
            scale_y: self.resized_h as f32 / source_h as f32,
            offset_x: -self.origin_x as f32,
            offset_y: -self.origin_y as f32,
        }
    }
}

fn scaled(size: usize, scale: f64) -> usize {
    ((size as f64 * scale).round() as usize).max(1)
}

/// The placement for a mode: how large the source becomes, and where the input's origin falls.
pub(super) fn placement(
    spec: &PreprocessSpec,
    sw: usize,
    sh: usize,
    w: usize,
    h: usize,
) -> Result<Placement, PreprocessError> {
    let at =
        |resized_w, resized_h, origin_x, origin_y| Placement { resized_w, resized_h, origin_x, origin_y };
    Ok(match spec.resize {
        ResizeMode::None if (sw, sh) != (w, h) => {
            return Err(PreprocessError::ResizeNone { frame: (sw, sh), model: (w, h) })
        }
        ResizeMode::None | ResizeMode::Stretch => at(w, h, 0, 0),
        ResizeMode::Letterbox | ResizeMode::LetterboxTopLeft => {
            let s = (w as f64 / sw as f64).min(h as f64 / sh as f64);
            let (nw, nh) = (scaled(sw, s).min(w), scaled(sh, s).min(h));
            if spec.resize == ResizeMode::Letterbox {
                at(nw, nh, -(((w - nw) / 2) as i64), -(((h - nh) / 2) as i64))
            } else {
                at(nw, nh, 0, 0)
            }
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
    column_runs: Vec<ColumnRun>,
    /// Whether some columns lie in a letterbox border (left and right).
    padded_columns: bool,
    /// Whether every tap lands on one pixel with no weight on its neighbour (a frame already at
    /// its size in the input, as after `plan`'s downscale): one pixel read per output pixel.
    pub(super) direct: bool,
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
    ) -> Result<FusedPreprocess, PreprocessError> {
        let place = placement(spec, source_w, source_h, width, height)?;
        let geometry = place.geometry(source_w, source_h);
        Ok(FusedPreprocess::placed(spec, width, height, layout, (source_w, source_h), place, geometry))
    }

    /// Plans the pass for a placement decided elsewhere (`plan::FramePlan`, after its antialiased
    /// downscale); `geometry` maps back to the original source.
    pub(super) fn placed(
        spec: &PreprocessSpec,
        width: usize,
        height: usize,
        layout: Layout,
        (source_w, source_h): (usize, usize),
        place: Placement,
        geometry: Geometry,
    ) -> FusedPreprocess {
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
        FusedPreprocess {
            width,
            height,
            channels: spec.channels,
            layout,
            gain,
            bias,
            pad: spec.pad_value as f32,
            source: (source_w, source_h),
            padded_columns: columns.iter().any(|tap| !tap.inside),
            direct: columns.iter().chain(&rows).all(|tap| tap.w1 == 0.0),
            column_runs: column_runs(&columns),
            columns,
            rows,
            geometry,
        }
    }

    /// Values in the output (one batch item).
    pub fn item_len(&self) -> usize {
        self.width * self.height * self.channels.channels()
    }

    /// Whether `frame` has the planned size and the output `out_len` values.
    pub(super) fn check(&self, frame: &Frame, out_len: usize) -> Result<(), PreprocessError> {
        if (frame.width, frame.height) != self.source {
            return Err(PreprocessError::NotPlannedSize {
                frame: (frame.width, frame.height),
                planned: self.source,
            });
        }
        if out_len != self.item_len() {
            return Err(PreprocessError::OutputLength { given: out_len, needed: self.item_len() });
        }
        Ok(())
    }

    /// The geometry every frame of the planned size gets.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Fills `out` (`item_len` values) from `frame`, which must have the planned size: f32, or
    /// the f16 or u8 a model's input takes, each value converted as it is stored.
    pub fn run<T: InputElement>(&self, frame: &Frame, out: &mut [T]) -> Result<Geometry, PreprocessError> {
        self.check(frame, out.len())?;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { self.fill_frame_avx2(frame, out) };
            return Ok(self.geometry);
        }
        self.fill_frame(frame, out);
        Ok(self.geometry)
    }

    /// The same pass compiled for AVX2: twice the vector width of x86_64's baseline (SSE2), for the
    /// same operations in the same order, so the same values bit for bit.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn fill_frame_avx2<T: InputElement>(&self, frame: &Frame, out: &mut [T]) {
        self.fill_frame(frame, out)
    }

    /// Per format: a source row's pixel as one little-endian word of its bytes (`Word`), and how a
    /// word becomes RGB. Rows are split into whole pixels (or YUYV pairs) so that a pixel costs one
    /// bounds check.
    #[inline(always)]
    pub(super) fn fill_frame<T: InputElement>(&self, frame: &Frame, out: &mut [T]) {
        let (w, s, d) = (frame.width, frame.stride, frame.data);
        match frame.format {
            PixelFormat::Rgb24 | PixelFormat::Bgr24 => {
                let pixels = |y: usize| {
                    let row = &d[y * s..][..3 * w];
                    // Four bytes in one load, the fourth ignored; three at the row's end.
                    move |x: usize| match row.get(3 * x..3 * x + 4) {
                        Some(bytes) => Word(u32::from_le_bytes(bytes.try_into().expect("four bytes"))),
                        None => Word(u32::from_le_bytes([row[3 * x], row[3 * x + 1], row[3 * x + 2], 0])),
                    }
                };
                if frame.format == PixelFormat::Rgb24 {
                    self.fill(out, |word: Word, _odd| [0, 1, 2].map(|k| word.byte(k)), pixels)
                } else {
                    self.fill(out, |word: Word, _odd| [2, 1, 0].map(|k| word.byte(k)), pixels)
                }
            }
            PixelFormat::Grey => self.fill(
                out,
                |word: Word, _odd| [word.byte(0); 3],
                |y| {
                    let row = &d[y * s..][..w];
                    move |x: usize| Word(row[x].into())
                },
            ),
            PixelFormat::Yuyv => self.fill(
                out,
                // Y0 U Y1 V: both pixels of a pair share U and V; an odd pixel's Y is the third byte.
                |word: Word, odd: u32| {
                    let y = if odd != 0 { word.byte(2) } else { word.byte(0) };
                    yuv_values_to_rgb(y, word.byte(1), word.byte(3))
                },
                |y| {
                    let pairs = d[y * s..][..2 * w].as_chunks::<4>().0;
                    move |x: usize| Word(u32::from_le_bytes(pairs[x / 2]))
                },
            ),
            PixelFormat::Nv12 => {
                let chroma_plane = s * frame.height;
                self.fill(
                    out,
                    |word: Word, _odd| yuv_values_to_rgb(word.byte(0), word.byte(1), word.byte(2)),
                    |y| {
                        let luma = &d[y * s..][..w];
                        let chroma = d[chroma_plane + (y / 2) * s..][..w].as_chunks::<2>().0;
                        move |x: usize| {
                            Word(u32::from(luma[x]) | u32::from(u16::from_le_bytes(chroma[x / 2])) << 8)
                        }
                    },
                )
            }
        }
    }

    /// The loop, specialized per pixel format by `row` (source row `y` → its pixel `x` as a word)
    /// and `unpack` (a word, and whether its pixel is odd → RGB). A row is done in runs of `RUN`
    /// output pixels: gather the four neighbours' words, then unpack, interpolate, normalize and
    /// store, each step a loop over arrays of one component, which the compiler vectorizes.
    #[inline(always)]
    fn fill<T: InputElement, P: Fn(usize) -> Word>(
        &self,
        out: &mut [T],
        unpack: impl Fn(Word, u32) -> [f32; 3],
        row: impl Fn(usize) -> P,
    ) {
        let channels = self.channels.channels();
        let plane = self.width * self.height;
        let mut run = Run::default();
        for (oy, ty) in self.rows.iter().enumerate() {
            let (top, bottom) = (row(ty.i0), row(ty.i1));
            for (first, runs) in (0..self.width).step_by(RUN).zip(&self.column_runs) {
                let n = (self.width - first).min(RUN);
                let columns = &self.columns[first..first + n];
                if ty.inside && self.direct {
                    for (i, tx) in columns.iter().enumerate() {
                        run.words[0][i] = top(tx.i0);
                    }
                    run.unpack(&unpack, runs);
                } else if ty.inside {
                    for (i, tx) in columns.iter().enumerate() {
                        run.words[0][i] = top(tx.i0);
                        run.words[1][i] = top(tx.i1);
                        run.words[2][i] = bottom(tx.i0);
                        run.words[3][i] = bottom(tx.i1);
                    }
                    run.interpolate(&unpack, runs, ty.w1);
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
                    for (scaled, v) in run.scaled.iter_mut().zip(colour) {
                        *scaled = v * gain + bias;
                    }
                    let scaled = &run.scaled[..n];
                    match self.layout {
                        // Converted a run at a time: f16 has instructions for several values.
                        Layout::Nchw => T::from_f32_slice(scaled, &mut out[c * plane + at..][..n]),
                        Layout::Nhwc => {
                            for (i, &v) in scaled.iter().enumerate() {
                                out[(at + i) * channels + c] = T::from_f32(v);
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

/// A source pixel's bytes in one word, little-endian: R G B, Y U V, or a YUYV pair's Y0 U Y1 V.
#[derive(Debug, Clone, Copy, Default)]
struct Word(u32);

impl Word {
    #[inline(always)]
    fn byte(self, k: u32) -> f32 {
        ((self.0 >> (8 * k)) & 0xFF) as f32
    }
}

/// What a run of output columns needs besides the pixels, made once per plan.
#[derive(Debug, Clone)]
struct ColumnRun {
    /// Each column's weight of its right-hand neighbours.
    weight: [f32; RUN],
    /// Whether each column's left and right neighbours are odd pixels (all ones) or even (zero).
    odd: [[u32; RUN]; 2],
}

fn column_runs(columns: &[Tap]) -> Vec<ColumnRun> {
    let odd = |i: usize| if i % 2 == 1 { u32::MAX } else { 0 };
    columns
        .chunks(RUN)
        .map(|taps| {
            let mut run = ColumnRun { weight: [0.0; RUN], odd: [[0; RUN]; 2] };
            for (i, tap) in taps.iter().enumerate() {
                run.weight[i] = tap.w1;
                run.odd[0][i] = odd(tap.i0);
                run.odd[1][i] = odd(tap.i1);
            }
            run
        })
        .collect()
}

/// One run's working arrays, made once per frame, the neighbours top-left, top-right, bottom-left,
/// bottom-right: [neighbour][pixel of the run], then [neighbour][component][pixel of the run].
struct Run {
    words: [[Word; RUN]; 4],
    colour: [[[f32; RUN]; 3]; 4],
    top: [f32; RUN],
    bottom: [f32; RUN],
    rgb: [[f32; RUN]; 3],
    gray: [f32; RUN],
    /// One channel scaled and normalized, before it is stored.
    scaled: [f32; RUN],
}

impl Default for Run {
    fn default() -> Run {
        Run {
            words: [[Word::default(); RUN]; 4],
            colour: [[[0.0; RUN]; 3]; 4],
            top: [0.0; RUN],
            bottom: [0.0; RUN],
            rgb: [[0.0; RUN]; 3],
            gray: [0.0; RUN],
            scaled: [0.0; RUN],
        }
    }
}

impl Run {
    /// `rgb` from the top-left neighbours' words alone, where every weight is zero: the same
    /// values `interpolate` gives, since `a + (b - a) * 0.0` is `a`.
    #[inline(always)]
    fn unpack(&mut self, unpack: impl Fn(Word, u32) -> [f32; 3], columns: &ColumnRun) {
        let [r, g, b] = &mut self.rgb;
        for i in 0..RUN {
            [r[i], g[i], b[i]] = unpack(self.words[0][i], columns.odd[0][i]);
        }
    }

    /// `rgb` from the neighbours' words: unpacked to RGB, interpolated across with the columns'
    /// weights, then down with `down`. Whole runs, stale entries past the row's end included: fixed
    /// trip counts vectorize.
    #[inline(always)]
    fn interpolate(&mut self, unpack: impl Fn(Word, u32) -> [f32; 3], columns: &ColumnRun, down: f32) {
        for (neighbour, (words, colour)) in self.words.iter().zip(&mut self.colour).enumerate() {
            // Neighbours 0 and 2 are on the left, 1 and 3 on the right.
            let odd = &columns.odd[neighbour % 2];
            let [r, g, b] = colour;
            for i in 0..RUN {
                [r[i], g[i], b[i]] = unpack(words[i], odd[i]);
            }
        }
        let [top_left, top_right, bottom_left, bottom_right] = &self.colour;
        let w = &columns.weight;
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
