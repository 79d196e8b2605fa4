//! A frame of any pixel format as RGB, for drawing on. YUV is BT.601 limited range, as
//! preprocessing reads it (`preprocess::colour`), to within three levels, with luma and chroma
//! clamped to that range first (as libyuv does): NV12 and YUYV through yuvutils-rs's SIMD kernels,
//! the others copied or swizzled here.

use yuvutils_rs::{
    yuv_nv12_to_rgb, yuyv422_to_rgb, YuvBiPlanarImage, YuvConversionMode, YuvPackedImage, YuvRange,
    YuvStandardMatrix,
};

use super::canvas::Canvas;
use crate::frame::{Frame, PixelFormat};

/// A frame the colour converter refused, with its message.
#[derive(Debug, thiserror::Error)]
#[error("the frame does not convert to RGB: {0}")]
pub struct ConvertError(String);

/// Fills `canvas` (resized to the frame) with `frame`'s pixels. `scratch` holds a YUV frame
/// whose rows are padded, repacked: yuvutils-rs 0.8 converts padded NV12 and YUYV wrongly or
/// refuses them.
pub fn frame_into(canvas: &mut Canvas, frame: &Frame, scratch: &mut Vec<u8>) -> Result<(), ConvertError> {
    let (w, h, s, d) = (frame.width, frame.height, frame.stride, frame.data);
    canvas.width = w;
    canvas.height = h;
    canvas.pixels.resize(w * h * 3, 0);
    let (range, matrix) = (YuvRange::Limited, YuvStandardMatrix::Bt601);
    let rgb_stride = (w * 3) as u32;
    let converted = match frame.format {
        PixelFormat::Nv12 => {
            let d = packed(d, s, w, h + h / 2, scratch);
            let image = YuvBiPlanarImage {
                y_plane: &d[..w * h],
                y_stride: w as u32,
                uv_plane: &d[w * h..w * h + w * h / 2],
                uv_stride: w as u32,
                width: w as u32,
                height: h as u32,
            };
            yuv_nv12_to_rgb(
                &image,
                &mut canvas.pixels,
                rgb_stride,
                range,
                matrix,
                YuvConversionMode::Balanced,
            )
        }
        PixelFormat::Yuyv => {
            let d = packed(d, s, 2 * w, h, scratch);
            let image = YuvPackedImage {
                yuy: &d[..2 * w * h],
                yuy_stride: 2 * w as u32,
                width: w as u32,
                height: h as u32,
            };
            yuyv422_to_rgb(&image, &mut canvas.pixels, rgb_stride, range, matrix)
        }
        PixelFormat::Rgb24 | PixelFormat::Bgr24 | PixelFormat::Grey => {
            for (y, out) in canvas.pixels.chunks_exact_mut(w * 3).enumerate() {
                let row = &d[y * s..];
                match frame.format {
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
                    _ => out.copy_from_slice(&row[..w * 3]),
                }
            }
            Ok(())
        }
    };
    converted.map_err(|e| ConvertError(e.to_string()))
}

/// `rows` rows of `row` bytes, `stride` apart in `data`: `data` itself where nothing pads them,
/// else copied back to back into `scratch`.
fn packed<'a>(data: &'a [u8], stride: usize, row: usize, rows: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if stride == row {
        return data;
    }
    scratch.clear();
    scratch.extend((0..rows).flat_map(|y| &data[y * stride..y * stride + row]));
    scratch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preprocess::reference::frame_to_rgb;

    #[test]
    fn every_format_matches_the_reference_conversion_within_three_levels() {
        // Narrow frames take the scalar tails, wide ones the SIMD kernels; rows padded and not.
        for ((w, h), format) in
            [(6, 4), (70, 6), (646, 4)].into_iter().flat_map(|size| PixelFormat::ALL.map(|f| (size, f)))
        {
            let stride = format.min_stride(w) + if w == 70 { 0 } else { 2 };
            // Within limited range's luma and chroma (16 to 235, 240), where both agree.
            let data: Vec<u8> =
                (0..format.frame_bytes(stride, h)).map(|i| 16 + (i * 37 % 220) as u8).collect();
            let frame = Frame::new(format, w, h, stride, &data).unwrap();
            let mut canvas = Canvas::default();
            frame_into(&mut canvas, &frame, &mut Vec::new()).unwrap();
            let reference = frame_to_rgb(&frame);
            assert_eq!((canvas.width, canvas.height), (w, h));
            for (i, want) in reference.iter().enumerate() {
                let got = canvas.pixel(i % w, i / w);
                for c in 0..3 {
                    assert!(
                        (got[c] as f32 - want[c]).abs() <= 3.0,
                        "{format:?} pixel {i}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }
}
