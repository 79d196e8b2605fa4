//! An RGB image to draw on, and the few shapes annotation needs: filled and outlined rectangles,
//! translucent panels, thick lines, discs, and text in an 8x8 bitmap font drawn at an integer
//! scale.

use font8x8::legacy::BASIC_LEGACY;

pub type Rgb = [u8; 3];

/// Pixels as RGB, three bytes each, rows back to back.
#[derive(Debug, Clone, Default)]
pub struct Canvas {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// Glyphs are 8x8 cells; text rows are a cell and a gap tall.
pub const GLYPH: usize = 8;

impl Canvas {
    pub fn new(width: usize, height: usize) -> Canvas {
        Canvas { width, height, pixels: vec![0; width * height * 3] }
    }

    pub fn pixel(&self, x: usize, y: usize) -> Rgb {
        let at = (y * self.width + x) * 3;
        [self.pixels[at], self.pixels[at + 1], self.pixels[at + 2]]
    }

    /// The part of `[x0, x1) × [y0, y1)` inside the canvas, or None where nothing is.
    fn clip(&self, x0: i64, y0: i64, x1: i64, y1: i64) -> Option<(usize, usize, usize, usize)> {
        let (w, h) = (self.width as i64, self.height as i64);
        let (x0, y0, x1, y1) = (x0.clamp(0, w), y0.clamp(0, h), x1.clamp(0, w), y1.clamp(0, h));
        (x0 < x1 && y0 < y1).then_some((x0 as usize, y0 as usize, x1 as usize, y1 as usize))
    }

    pub fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, colour: Rgb) {
        let Some((x0, y0, x1, y1)) = self.clip(x0, y0, x1, y1) else { return };
        for y in y0..y1 {
            let row = &mut self.pixels[(y * self.width + x0) * 3..(y * self.width + x1) * 3];
            for px in row.chunks_exact_mut(3) {
                px.copy_from_slice(&colour);
            }
        }
    }

    /// Darkens (or tints) a region: each pixel moves `alpha`/256 of the way to `colour`.
    pub fn blend(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, colour: Rgb, alpha: u16) {
        let Some((x0, y0, x1, y1)) = self.clip(x0, y0, x1, y1) else { return };
        for y in y0..y1 {
            let row = &mut self.pixels[(y * self.width + x0) * 3..(y * self.width + x1) * 3];
            for px in row.chunks_exact_mut(3) {
                tint(px, colour, alpha);
            }
        }
    }

    /// A rectangle's edges, `thickness` pixels wide, drawn inside `[x0, x1) × [y0, y1)`.
    pub fn outline(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, thickness: i64, colour: Rgb) {
        let t = thickness.max(1);
        self.fill(x0, y0, x1, y0 + t, colour);
        self.fill(x0, y1 - t, x1, y1, colour);
        self.fill(x0, y0, x0 + t, y1, colour);
        self.fill(x1 - t, y0, x1, y1, colour);
    }

    /// A line from (x0, y0) to (x1, y1), `thickness` pixels across: a run that wide across the
    /// line at each pixel along its longer axis.
    pub fn line(&mut self, (x0, y0): (f32, f32), (x1, y1): (f32, f32), thickness: i64, colour: Rgb) {
        if ![x0, y0, x1, y1].iter().all(|v| v.is_finite()) {
            return;
        }
        let t = thickness.max(1);
        let (before, after) = (t / 2, t - t / 2);
        let (dx, dy) = (x1 - x0, y1 - y0);
        // At most one step per pixel of the canvas along the longer axis.
        let limit = self.width.max(self.height) as f32 * 2.0;
        let steps = dx.abs().max(dy.abs()).ceil().min(limit) as i64;
        for i in 0..=steps {
            let f = if steps == 0 { 0.0 } else { i as f32 / steps as f32 };
            let (x, y) = ((x0 + dx * f).round() as i64, (y0 + dy * f).round() as i64);
            if dx.abs() >= dy.abs() {
                self.fill(x, y - before, x + 1, y + after, colour);
            } else {
                self.fill(x - before, y, x + after, y + 1, colour);
            }
        }
    }

    /// A filled disc of `radius` pixels centred on (x, y).
    pub fn disc(&mut self, (x, y): (f32, f32), radius: i64, colour: Rgb) {
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        let (cx, cy, r) = (x.round() as i64, y.round() as i64, radius.max(1));
        for dy in -r..=r {
            let half = ((r * r - dy * dy) as f64).sqrt().round() as i64;
            self.fill(cx - half, cy + dy, cx + half + 1, cy + dy + 1, colour);
        }
    }

    /// Text with its top-left corner at (x, y), each font pixel `scale` pixels square. Characters
    /// outside ASCII are drawn as `?`.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: usize, colour: Rgb) {
        let s = scale.max(1) as i64;
        for (i, c) in text.chars().enumerate() {
            let glyph = BASIC_LEGACY[if c.is_ascii() { c as usize } else { '?' as usize }];
            let left = x + i as i64 * GLYPH as i64 * s;
            for (row, bits) in glyph.iter().enumerate() {
                let top = y + row as i64 * s;
                // Runs of set bits as one fill each; bit 0 is the leftmost pixel.
                let mut col = 0;
                while col < GLYPH {
                    if bits >> col & 1 == 0 {
                        col += 1;
                        continue;
                    }
                    let start = col;
                    while col < GLYPH && bits >> col & 1 == 1 {
                        col += 1;
                    }
                    self.fill(left + start as i64 * s, top, left + col as i64 * s, top + s, colour);
                }
            }
        }
    }
}

/// One pixel moved `alpha`/256 of the way to `colour`.
pub fn tint(px: &mut [u8], colour: Rgb, alpha: u16) {
    let (alpha, keep) = (alpha.min(256), 256 - alpha.min(256));
    for (c, target) in px.iter_mut().zip(colour) {
        *c = ((*c as u16 * keep + target as u16 * alpha) >> 8) as u8;
    }
}

/// The width of `text` drawn at `scale`.
pub fn text_width(text: &str, scale: usize) -> i64 {
    (text.chars().count() * GLYPH * scale.max(1)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: Rgb = [255, 0, 0];

    #[test]
    fn shapes_are_clipped_to_the_canvas() {
        let mut c = Canvas::new(10, 8);
        c.fill(-5, -5, 3, 2, RED);
        assert_eq!(c.pixel(0, 0), RED);
        assert_eq!(c.pixel(2, 1), RED);
        assert_eq!(c.pixel(3, 1), [0, 0, 0]);
        assert_eq!(c.pixel(2, 2), [0, 0, 0]);
        c.fill(8, 6, 1000, 1000, RED);
        assert_eq!(c.pixel(9, 7), RED);
        // Wholly outside, or empty: nothing drawn, no panic.
        c.fill(20, 20, 30, 30, [1, 1, 1]);
        c.fill(5, 5, 5, 9, [1, 1, 1]);
        c.outline(i64::MIN / 2, 0, i64::MAX / 2, 4, 1, [1, 1, 1]);
        assert_eq!(c.pixels.iter().filter(|&&v| v == 1).count() % 3, 0);
    }

    #[test]
    fn an_outline_leaves_the_inside_alone() {
        let mut c = Canvas::new(10, 10);
        c.outline(2, 2, 8, 8, 2, RED);
        assert_eq!(c.pixel(2, 2), RED);
        assert_eq!(c.pixel(3, 5), RED);
        assert_eq!(c.pixel(7, 7), RED);
        assert_eq!(c.pixel(4, 4), [0, 0, 0]);
        assert_eq!(c.pixel(5, 5), [0, 0, 0]);
        assert_eq!(c.pixel(1, 1), [0, 0, 0]);
        assert_eq!(c.pixel(8, 8), [0, 0, 0]);
    }

    #[test]
    fn blending_moves_pixels_towards_the_colour() {
        let mut c = Canvas::new(2, 1);
        c.fill(0, 0, 2, 1, [200, 100, 0]);
        c.blend(0, 0, 1, 1, [0, 0, 0], 128);
        assert_eq!(c.pixel(0, 0), [100, 50, 0]);
        assert_eq!(c.pixel(1, 0), [200, 100, 0]);
    }

    #[test]
    fn text_sets_the_glyphs_pixels_and_no_others() {
        let mut c = Canvas::new(40, 20);
        c.text(1, 2, "I", 2, RED);
        let set: Vec<(usize, usize)> = (0..20)
            .flat_map(|y| (0..40).map(move |x| (x, y)))
            .filter(|&(x, y)| c.pixel(x, y) == RED)
            .collect();
        // The font's I is a vertical stroke with serifs: within one 16x16 cell, taller than wide.
        assert!(!set.is_empty());
        assert!(set.iter().all(|&(x, y)| (1..17).contains(&x) && (2..18).contains(&y)));
        let (xs, ys): (Vec<_>, Vec<_>) = set.iter().copied().unzip();
        let span = |v: &[usize]| v.iter().max().unwrap() - v.iter().min().unwrap();
        assert!(span(&ys) > span(&xs), "{set:?}");
        assert_eq!(text_width("I", 2), 16);
        // Non-ASCII falls back to '?', which has pixels too.
        let mut d = Canvas::new(16, 16);
        d.text(0, 0, "é", 1, RED);
        assert!(d.pixels.chunks(3).any(|p| p == RED));
    }
}
