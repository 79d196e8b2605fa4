//! A colour per class, the same on every frame and run: class ids index a fixed list of colours
//! that stay apart from each other and from the overlay's dark panel.

use super::canvas::Rgb;

const COLOURS: [Rgb; 20] = [
    [230, 25, 75],
    [60, 180, 75],
    [255, 225, 25],
    [0, 130, 200],
    [245, 130, 48],
    [145, 30, 180],
    [70, 240, 240],
    [240, 50, 230],
    [210, 245, 60],
    [250, 190, 212],
    [0, 128, 128],
    [220, 190, 255],
    [170, 110, 40],
    [255, 250, 200],
    [128, 0, 0],
    [170, 255, 195],
    [128, 128, 0],
    [255, 215, 180],
    [0, 0, 128],
    [128, 128, 128],
];

pub fn class_colour(class_id: usize) -> Rgb {
    COLOURS[class_id % COLOURS.len()]
}

/// Black or white, whichever reads better on `background`.
pub fn ink_on(background: Rgb) -> Rgb {
    let [r, g, b] = background.map(u32::from);
    if 299 * r + 587 * g + 114 * b > 128_000 {
        [0, 0, 0]
    } else {
        [255, 255, 255]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_stable_and_neighbours_differ() {
        assert_eq!(class_colour(5), class_colour(5));
        assert_eq!(class_colour(3), class_colour(23));
        for id in 0..COLOURS.len() {
            assert_ne!(class_colour(id), class_colour(id + 1));
        }
        assert_eq!(ink_on([255, 255, 0]), [0, 0, 0]);
        assert_eq!(ink_on([0, 0, 128]), [255, 255, 255]);
    }
}
