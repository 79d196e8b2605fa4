//! The slow, obviously correct version of the fused pass, for tests: convert the whole frame to an
//! RGB image, resize it (bilinear, OpenCV's pixel-centre convention), place it (letterbox or crop),
//! then normalize and lay out, one step at a time.

use super::colour::{luma, yuv_to_rgb};
use super::fused::placement;
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec};

/// Every pixel of the frame as RGB, row by row.
pub fn frame_to_rgb(frame: &Frame) -> Vec<[f32; 3]> {
    let (w, h, s, d) = (frame.width, frame.height, frame.stride, frame.data);
    let mut image = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            image.push(match frame.format {
                PixelFormat::Rgb24 => {
                    [d[y * s + 3 * x] as f32, d[y * s + 3 * x + 1] as f32, d[y * s + 3 * x + 2] as f32]
                }
                PixelFormat::Bgr24 => {
                    [d[y * s + 3 * x + 2] as f32, d[y * s + 3 * x + 1] as f32, d[y * s + 3 * x] as f32]
                }
                PixelFormat::Grey => [d[y * s + x] as f32; 3],
                PixelFormat::Yuyv => {
                    // Y0 U Y1 V: both pixels of a pair share U and V.
                    let pair = &d[y * s + (x / 2) * 4..][..4];
                    let luma = if x % 2 == 0 { pair[0] } else { pair[2] };
                    yuv_to_rgb(luma, pair[1], pair[3])
                }
                PixelFormat::Nv12 => {
                    let uv = &d[h * s + (y / 2) * s + (x / 2) * 2..][..2];
                    yuv_to_rgb(d[y * s + x], uv[0], uv[1])
                }
            });
        }
    }
    image
}

/// The model input for `frame`, step by step.
pub fn preprocess(
    frame: &Frame,
    spec: &PreprocessSpec,
    width: usize,
    height: usize,
    layout: Layout,
) -> Result<Vec<f32>, super::PreprocessError> {
    let (sw, sh) = (frame.width, frame.height);
    let source = frame_to_rgb(frame);
    let place = placement(spec, sw, sh, width, height)?;
    // 1. Resize the whole image to the placement's size. OpenCV INTER_LINEAR: a resized pixel's
    //    centre maps to source coordinate (i + 0.5) * source / resized - 0.5; below 0 or past the
    //    last pixel it sticks to the edge.
    let (rw, rh) = (place.resized_w, place.resized_h);
    let source_coordinate = |i: usize, resized: usize, size: usize| -> (usize, usize, f32) {
        let f = (i as f64 + 0.5) * size as f64 / resized as f64 - 0.5;
        if f <= 0.0 {
            (0, 0, 0.0)
        } else if f >= (size - 1) as f64 {
            (size - 1, size - 1, 0.0)
        } else {
            (f.floor() as usize, f.floor() as usize + 1, (f - f.floor()) as f32)
        }
    };
    let mut resized = vec![[0.0f32; 3]; rw * rh];
    for y in 0..rh {
        let (y0, y1, wy) = source_coordinate(y, rh, sh);
        for x in 0..rw {
            let (x0, x1, wx) = source_coordinate(x, rw, sw);
            for c in 0..3 {
                let at = |xx: usize, yy: usize| source[yy * sw + xx][c];
                let top = at(x0, y0) * (1.0 - wx) + at(x1, y0) * wx;
                let bottom = at(x0, y1) * (1.0 - wx) + at(x1, y1) * wx;
                resized[y * rw + x][c] = top * (1.0 - wy) + bottom * wy;
            }
        }
    }
    // 2. Place it on the model's canvas: pad outside it (letterbox), or cut it (crop).
    let mut canvas = vec![[spec.pad_value as f32; 3]; width * height];
    for y in 0..height {
        for x in 0..width {
            let (rx, ry) = (x as i64 + place.origin_x, y as i64 + place.origin_y);
            if rx >= 0 && ry >= 0 && (rx as usize) < rw && (ry as usize) < rh {
                canvas[y * width + x] = resized[ry as usize * rw + rx as usize];
            }
        }
    }
    // 3. Channel order, scale, mean, std, layout.
    let channels = spec.channels.channels();
    let per_channel = |values: &[f32], c: usize| if values.len() == 1 { values[0] } else { values[c] };
    let mut out = vec![0.0; width * height * channels];
    for (i, rgb) in canvas.iter().enumerate() {
        let ordered = match spec.channels {
            ChannelOrder::Rgb => *rgb,
            ChannelOrder::Bgr => [rgb[2], rgb[1], rgb[0]],
            ChannelOrder::Gray => [luma(*rgb), 0.0, 0.0],
        };
        for (c, pixel) in ordered.iter().enumerate().take(channels) {
            let value = (pixel * spec.scale - per_channel(&spec.mean, c)) / per_channel(&spec.std, c);
            let at = match layout {
                Layout::Nchw => c * width * height + i,
                Layout::Nhwc => i * channels + c,
            };
            out[at] = value;
        }
    }
    Ok(out)
}
