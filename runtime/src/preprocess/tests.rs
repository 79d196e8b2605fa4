use image::{DynamicImage, Rgb, RgbImage};

use super::*;

fn spec(resize: ResizeMode) -> PreprocessSpec {
    PreprocessSpec { resize, ..PreprocessSpec::default() }
}

fn preprocessor(spec: PreprocessSpec, width: u32, height: u32, layout: Layout) -> Preprocessor {
    Preprocessor { spec, width, height, layout }
}

fn flat(colour: [u8; 3], w: u32, h: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_pixel(w, h, Rgb(colour)))
}

#[test]
fn normalizes_with_scale_mean_std_in_nchw() {
    let s =
        PreprocessSpec { mean: vec![0.5, 0.0, 0.25], std: vec![0.5, 1.0, 0.25], ..spec(ResizeMode::None) };
    let p = preprocessor(s, 2, 2, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    p.run(&flat([255, 0, 51], 2, 2), &mut out).unwrap();
    // R: (1 - 0.5) / 0.5 = 1; G: 0; B: (0.2 - 0.25) / 0.25 = -0.2, each plane of 4.
    let expected = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, -0.2, -0.2, -0.2, -0.2];
    for (got, want) in out.iter().zip(expected) {
        assert!((got - want).abs() < 1e-6, "{out:?}");
    }
}

#[test]
fn bgr_and_nhwc_reorder_channels() {
    let s = PreprocessSpec { channels: ChannelOrder::Bgr, scale: 1.0, ..spec(ResizeMode::None) };
    let p = preprocessor(s, 1, 2, Layout::Nhwc);
    let mut out = vec![0.0; p.item_len()];
    p.run(&flat([1, 2, 3], 1, 2), &mut out).unwrap();
    assert_eq!(out, vec![3.0, 2.0, 1.0, 3.0, 2.0, 1.0]);
}

#[test]
fn letterbox_pads_and_maps_back() {
    let s = PreprocessSpec { scale: 1.0, pad_value: 7, ..spec(ResizeMode::Letterbox) };
    let p = preprocessor(s, 8, 8, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    // A 16×8 source fits as 8×4, centred with 2 rows of padding above and below.
    let g = p.run(&flat([200, 200, 200], 16, 8), &mut out).unwrap();
    assert_eq!((g.scale_x, g.scale_y, g.offset_x, g.offset_y), (0.5, 0.5, 0.0, 2.0));
    assert_eq!(out[0], 7.0, "top row is padding");
    assert_eq!(out[2 * 8], 200.0, "third row is image");
    assert_eq!(out[6 * 8], 7.0, "seventh row is padding");
    assert_eq!(g.to_source(4.0, 4.0), (8.0, 4.0));
}

#[test]
fn center_crop_keeps_the_middle() {
    // Left half black, right half white; 4 wide from a 12×4 source keeps the middle third.
    let mut img = RgbImage::new(12, 4);
    for (x, _, px) in img.enumerate_pixels_mut() {
        *px = if x < 6 { Rgb([0, 0, 0]) } else { Rgb([255, 255, 255]) };
    }
    let s = PreprocessSpec {
        scale: 1.0,
        resize_short_side: Some(4),
        channels: ChannelOrder::Rgb,
        ..spec(ResizeMode::CenterCrop)
    };
    let p = preprocessor(s, 4, 4, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    let g = p.run(&DynamicImage::ImageRgb8(img), &mut out).unwrap();
    assert_eq!((g.offset_x, g.offset_y), (-4.0, 0.0));
    assert_eq!(&out[..4], &[0.0, 0.0, 255.0, 255.0]);
}

#[test]
fn resize_none_refuses_other_sizes() {
    let p = preprocessor(spec(ResizeMode::None), 4, 4, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    let err = p.run(&flat([0, 0, 0], 5, 4), &mut out).unwrap_err();
    assert!(err.contains("5x4"), "{err}");
}
