//! Test patterns for what needs input but no files (`bench --synthetic`, checks, tests):
//! deterministic, so runs compare. The `synthetic:` frame source is `source/synthetic.rs`.

use image::{DynamicImage, Rgb, RgbImage};

/// A 640×480 colour test pattern (gradients and a grid), like a camera frame of moderate size.
pub fn frame() -> DynamicImage {
    let (w, h) = (640u32, 480u32);
    DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
        let grid = if (x / 40 + y / 40) % 2 == 0 { 40 } else { 0 };
        Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, ((x + y) % 256) as u8 / 2 + grid])
    }))
}

/// Deterministic values in 0..1 for models whose input is not an image.
pub fn tensor(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect()
}

/// `len` pseudo-random bytes from `seed` (xorshift): raw frames of any pixel format whose every
/// byte differs, for tests and benchmarks that compare two implementations on the same frame.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}
