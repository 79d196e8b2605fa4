use image::{DynamicImage, GrayImage, Luma, Rgb, RgbImage};

use super::*;
use crate::model::manifest::{ChannelOrder, ResizeMode};

fn spec(resize: ResizeMode) -> PreprocessSpec {
    PreprocessSpec { resize, ..PreprocessSpec::default() }
}

fn preprocessor(spec: PreprocessSpec, width: usize, height: usize, layout: Layout) -> Preprocessor {
    Preprocessor::new(spec, width, height, layout)
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
    p.run_image(&flat([255, 0, 51], 2, 2), &mut out).unwrap();
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
    p.run_image(&flat([1, 2, 3], 1, 2), &mut out).unwrap();
    assert_eq!(out, vec![3.0, 2.0, 1.0, 3.0, 2.0, 1.0]);
}

#[test]
fn letterbox_pads_and_maps_back() {
    let s = PreprocessSpec { scale: 1.0, pad_value: 7, ..spec(ResizeMode::Letterbox) };
    let p = preprocessor(s, 8, 8, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    // A 16×8 source fits as 8×4, centred with 2 rows of padding above and below.
    let g = p.run_image(&flat([200, 200, 200], 16, 8), &mut out).unwrap();
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
    let g = p.run_image(&DynamicImage::ImageRgb8(img), &mut out).unwrap();
    assert_eq!((g.offset_x, g.offset_y), (-4.0, 0.0));
    assert_eq!(&out[..4], &[0.0, 0.0, 255.0, 255.0]);
}

#[test]
fn resize_none_refuses_other_sizes() {
    let p = preprocessor(spec(ResizeMode::None), 4, 4, Layout::Nchw);
    let mut out = vec![0.0; p.item_len()];
    let err = p.run_image(&flat([0, 0, 0], 5, 4), &mut out).unwrap_err();
    assert!(err.to_string().contains("5x4"), "{err}");
}

/// A one-pixel checkerboard: bilinear sampling of it shrunk 4× hits single pixels (0 or 255); a
/// filter as wide as the shrink averages them to mid grey, as PIL's resize does, at 4× and at 2×.
#[test]
fn shrinking_is_antialiased() {
    let board = |size| GrayImage::from_fn(size, size, |x, y| Luma([if (x + y) % 2 == 0 { 0 } else { 255 }]));
    let s = PreprocessSpec { scale: 1.0, channels: ChannelOrder::Gray, ..spec(ResizeMode::Stretch) };
    let p = preprocessor(s, 16, 16, Layout::Nchw);
    for size in [64, 32] {
        assert!(p.plan(PixelFormat::Grey, size as usize, size as usize).unwrap().downscales());
        let mut out = vec![0.0f32; p.item_len()];
        p.run_image(&DynamicImage::ImageLuma8(board(size)), &mut out).unwrap();
        // Within 3 levels: at the corners the filter is cut short by the edge, as in PIL.
        for v in &out {
            assert!((v - 127.5).abs() <= 3.0, "{size}x{size}: {v} is not mid grey: {out:?}");
        }
    }
    // Frames at the input's size or smaller are sampled bilinearly, as OpenCV's INTER_LINEAR.
    assert!(!p.plan(PixelFormat::Grey, 16, 16).unwrap().downscales());
    assert!(!p.plan(PixelFormat::Grey, 8, 12).unwrap().downscales());
    assert!(!p.plan(PixelFormat::Yuyv, 64, 64).unwrap().downscales(), "YUV frames are not downscaled first");
}

/// With the downscale first, the geometry still maps back to the original image, and a letterbox's
/// border and a crop's window are where the single pass puts them.
#[test]
fn a_downscaled_frame_keeps_its_geometry_border_and_crop() {
    let crop = PreprocessSpec { resize_short_side: Some(8), ..spec(ResizeMode::CenterCrop) };
    let letterbox = PreprocessSpec { pad_value: 7, scale: 1.0, ..spec(ResizeMode::Letterbox) };
    for (s, (w, h)) in [(crop, (60, 40)), (letterbox, (64, 24))] {
        let p = preprocessor(s.clone(), 8, 8, Layout::Nchw);
        let plan = p.plan(PixelFormat::Rgb24, w, h).unwrap();
        assert!(plan.downscales());
        let single = fused::FusedPreprocess::new(&s, 8, 8, Layout::Nchw, w, h).unwrap();
        assert_eq!(plan.geometry(), single.geometry());
        // What the GPU kernel gets is the single pass over frames as they come, not the pass
        // over the downscaled pixels.
        let pixels = vec![0u8; w * h * 3];
        let mut out = vec![0.0f32; p.item_len()];
        let frame = Frame::new(PixelFormat::Rgb24, w, h, w * 3, &pixels).unwrap();
        assert_eq!(plan.fused().run(&frame, &mut out).unwrap(), single.geometry());
    }
    // A 64×24 frame letterboxed into 8×8 is 8×3 (8 / 64 = 0.375 of 24, rounded), rows 2..5.
    let p = preprocessor(
        PreprocessSpec { pad_value: 7, scale: 1.0, ..spec(ResizeMode::Letterbox) },
        8,
        8,
        Layout::Nchw,
    );
    let mut out = vec![0.0f32; p.item_len()];
    let g = p.run_image(&flat([200, 100, 50], 64, 24), &mut out).unwrap();
    assert_eq!((g.offset_x, g.offset_y), (0.0, 2.0));
    let red: Vec<f32> = out[..64].to_vec();
    for (y, row) in red.chunks(8).enumerate() {
        let want = if (2..5).contains(&y) { 200.0 } else { 7.0 };
        assert!(row.iter().all(|&v| v == want), "row {y}: {row:?}");
    }
}

/// Rows padded by the driver give the same input as packed rows, downscaled or not.
#[test]
fn padded_rows_give_the_packed_frames_input() {
    let p = preprocessor(spec(ResizeMode::Stretch), 5, 4, Layout::Nhwc);
    for (w, h) in [(40, 30), (8, 6)] {
        let packed: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
        let stride = w * 3 + 5;
        let mut padded = vec![0xEE; stride * h];
        for y in 0..h {
            padded[y * stride..][..w * 3].copy_from_slice(&packed[y * w * 3..][..w * 3]);
        }
        let mut plan = p.plan(PixelFormat::Rgb24, w, h).unwrap();
        let (mut a, mut b) = (vec![0.0f32; p.item_len()], vec![0.0f32; p.item_len()]);
        plan.run(&Frame::new(PixelFormat::Rgb24, w, h, w * 3, &packed).unwrap(), &mut a).unwrap();
        plan.run(&Frame::new(PixelFormat::Rgb24, w, h, stride, &padded).unwrap(), &mut b).unwrap();
        assert_eq!(a, b, "{w}x{h}");
    }
}

#[test]
fn a_plan_refuses_frames_of_another_size_or_format() {
    let p = preprocessor(spec(ResizeMode::Stretch), 4, 4, Layout::Nchw);
    let mut plan = p.plan(PixelFormat::Rgb24, 40, 40).unwrap();
    let mut out = vec![0.0f32; p.item_len()];
    let grey = vec![0u8; 40 * 40];
    let err = plan.run(&Frame::new(PixelFormat::Grey, 40, 40, 40, &grey).unwrap(), &mut out).unwrap_err();
    let err = err.to_string();
    assert!(err.contains("grey 40x40") && err.contains("rgb24 40x40"), "{err}");
}

/// A top-left letterbox puts the image at the origin and all the border after it, and its
/// geometry maps back with no offset.
#[test]
fn a_top_left_letterbox_pads_right_and_bottom_only() {
    let s = PreprocessSpec { pad_value: 7, scale: 1.0, ..spec(ResizeMode::LetterboxTopLeft) };
    let p = preprocessor(s, 8, 8, Layout::Nchw);
    let mut out = vec![0.0f32; p.item_len()];
    // 16×6 into 8×8: scale 0.5, the image 8×3 on rows 0..3.
    let g = p.run_image(&flat([200, 100, 50], 16, 6), &mut out).unwrap();
    assert_eq!((g.offset_x, g.offset_y, g.scale_x, g.scale_y), (0.0, 0.0, 0.5, 0.5));
    for (y, row) in out[..64].chunks(8).enumerate() {
        let want = if y < 3 { 200.0 } else { 7.0 };
        assert!(row.iter().all(|&v| v == want), "row {y}: {row:?}");
    }
    assert_eq!(g.to_source(8.0, 3.0), (16.0, 6.0));
}
