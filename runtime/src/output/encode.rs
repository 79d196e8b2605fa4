//! Annotated frames as JPEG or PNG bytes.

use libjpeg_turbo_rs::{compress, PixelFormat, Subsampling};

use super::OutputError;
use crate::annotate::canvas::Canvas;

/// Encodes `canvas` into `out`: 4:2:0, what browsers and players expect.
pub fn jpeg(canvas: &Canvas, quality: u8, out: &mut Vec<u8>) -> Result<(), OutputError> {
    side(canvas.width)?;
    side(canvas.height)?;
    *out = compress(
        &canvas.pixels,
        canvas.width,
        canvas.height,
        PixelFormat::Rgb,
        quality.clamp(1, 100),
        Subsampling::S420,
    )
    .map_err(|e| OutputError::Encode { format: "JPEG", message: e.to_string() })?;
    Ok(())
}

pub fn png(canvas: &Canvas, out: &mut Vec<u8>) -> Result<(), OutputError> {
    use image::ImageEncoder;
    out.clear();
    let encoder = image::codecs::png::PngEncoder::new_with_quality(
        &mut *out,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Sub,
    );
    encoder
        .write_image(
            &canvas.pixels,
            canvas.width as u32,
            canvas.height as u32,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| OutputError::Encode { format: "PNG", message: e.to_string() })
}

/// JPEG sides are 16-bit.
fn side(n: usize) -> Result<u16, OutputError> {
    u16::try_from(n).map_err(|_| OutputError::TooLarge(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_decode_back_to_the_canvas() {
        let mut canvas = Canvas::new(64, 48);
        canvas.fill(0, 0, 32, 48, [200, 30, 30]);
        let mut bytes = Vec::new();
        png(&canvas, &mut bytes).unwrap();
        let decoded = image::load_from_memory(&bytes).unwrap().to_rgb8();
        assert_eq!(decoded.as_raw(), &canvas.pixels);
        jpeg(&canvas, 90, &mut bytes).unwrap();
        let decoded = image::load_from_memory(&bytes).unwrap().to_rgb8();
        assert_eq!(decoded.dimensions(), (64, 48));
        let error: u32 =
            decoded.as_raw().iter().zip(&canvas.pixels).map(|(&a, &b)| a.abs_diff(b) as u32).max().unwrap();
        assert!(error < 40, "{error}");
        assert_eq!(decoded.get_pixel(8, 24).0.map(|v| v / 10), [20, 3, 3]);
    }
}
