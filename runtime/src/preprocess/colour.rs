//! The colour of one pixel as RGB. YUV is ITU-R BT.601 limited range, the conversion OpenCV's
//! `cvtColor` uses for YUYV and NV12, kept in f32 (no rounding to 8 bits between steps).

/// BT.601 limited-range YUV → RGB on the 0..255 scale, saturated as `cvtColor` does.
#[cfg(test)]
pub fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [f32; 3] {
    yuv_values_to_rgb(y as f32, u as f32, v as f32)
}

/// `yuv_to_rgb` of samples already in f32, for loops the compiler vectorizes.
#[inline(always)]
pub fn yuv_values_to_rgb(y: f32, u: f32, v: f32) -> [f32; 3] {
    let (y, u, v) = (1.164 * (y - 16.0), u - 128.0, v - 128.0);
    [
        (y + 1.596 * v).clamp(0.0, 255.0),
        (y - 0.813 * v - 0.391 * u).clamp(0.0, 255.0),
        (y + 2.018 * u).clamp(0.0, 255.0),
    ]
}

/// Luma of an RGB colour (BT.601 weights, as `cvtColor(RGB2GRAY)`).
#[inline(always)]
pub fn luma(rgb: [f32; 3]) -> f32 {
    0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
}
