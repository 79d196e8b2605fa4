//! A frame of any pixel format as RGB, for drawing on. Integer BT.601 limited range, the same
//! conversion as preprocessing's (`preprocess::colour`) to within one level.

use super::canvas::Canvas;
use crate::frame::{Frame, PixelFormat};

/// Fills `canvas` (resized to the frame) with `frame`'s pixels.
pub fn frame_into(canvas: &mut Canvas, frame: &Frame) {
    let (w, h, s, d) = (frame.width, frame.height, frame.stride, frame.data);
    canvas.width = w;
    canvas.height = h;
    canvas.pixels.resize(w * h * 3, 0);
    for (y, out) in canvas.pixels.chunks_exact_mut(w * 3).enumerate() {
        let row = &d[y * s..];
        match frame.format {
            PixelFormat::Rgb24 => out.copy_from_slice(&row[..w * 3]),
            PixelFormat::Bgr24 => {
                for (o, i) in out.chunks_exact_mut(3).zip(row.chunks_exact(3)) {
                    o.copy_from_slice(&[i[2], i[1], i[0]]);
                }
            }
            PixelFormat::Grey => {
                for (o, &v) in out.chunks_exact_mut(3).zip(&row[..w]) {
                    o.copy_from_slice(&[v; 3]);
                }
            }
            PixelFormat::Yuyv => {
                // Y0 U Y1 V: both pixels of a pair share U and V.
                for (o, pair) in out.chunks_mut(6).zip(row.chunks_exact(4)) {
                    let (first, second) = o.split_at_mut(3.min(o.len()));
                    first.copy_from_slice(&yuv(pair[0], pair[1], pair[3]));
                    if !second.is_empty() {
                        second.copy_from_slice(&yuv(pair[2], pair[1], pair[3]));
                    }
                }
            }
            PixelFormat::Nv12 => {
                let uv = &d[h * s + (y / 2) * s..];
                for (x, o) in out.chunks_exact_mut(3).enumerate() {
                    o.copy_from_slice(&yuv(row[x], uv[x / 2 * 2], uv[x / 2 * 2 + 1]));
                }
            }
        }
    }
}

/// BT.601 limited range in 8.8 fixed point.
#[inline(always)]
fn yuv(y: u8, u: u8, v: u8) -> [u8; 3] {
    let (c, d, e) = (298 * (y as i32 - 16), u as i32 - 128, v as i32 - 128);
    let clamp = |x: i32| ((x + 128) >> 8).clamp(0, 255) as u8;
    [clamp(c + 409 * e), clamp(c - 100 * d - 208 * e), clamp(c + 516 * d)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preprocess::reference::frame_to_rgb;

    #[test]
    fn every_format_matches_the_reference_conversion_within_a_level() {
        let (w, h) = (6, 4);
        for format in PixelFormat::ALL {
            let stride = format.min_stride(w) + 2;
            let data: Vec<u8> = (0..format.frame_bytes(stride, h)).map(|i| (i * 37 % 251) as u8).collect();
            let frame = Frame::new(format, w, h, stride, &data).unwrap();
            let mut canvas = Canvas::default();
            frame_into(&mut canvas, &frame);
            let reference = frame_to_rgb(&frame);
            assert_eq!((canvas.width, canvas.height), (w, h));
            for (i, want) in reference.iter().enumerate() {
                let got = canvas.pixel(i % w, i / w);
                for c in 0..3 {
                    assert!(
                        (got[c] as f32 - want[c]).abs() <= 1.0,
                        "{format:?} pixel {i}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }
}
