//! The fused pass against the step-by-step reference, on random frames, sizes and recipes.

use half::f16;
use proptest::prelude::*;

use super::colour::yuv_to_rgb;
use super::fused::FusedPreprocess;
use super::reference;
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec, ResizeMode};
use crate::tensor::BatchView;

const FORMATS: [PixelFormat; 5] =
    [PixelFormat::Yuyv, PixelFormat::Nv12, PixelFormat::Grey, PixelFormat::Rgb24, PixelFormat::Bgr24];

fn recipe() -> impl Strategy<Value = (PreprocessSpec, Layout)> {
    (
        prop_oneof![
            Just(ResizeMode::Stretch),
            Just(ResizeMode::Letterbox),
            Just(ResizeMode::LetterboxTopLeft),
            Just(ResizeMode::CenterCrop)
        ],
        prop_oneof![Just(ChannelOrder::Rgb), Just(ChannelOrder::Bgr), Just(ChannelOrder::Gray)],
        prop_oneof![Just(Layout::Nchw), Just(Layout::Nhwc)],
        prop::option::of(1u32..80),
        (
            0.001f32..0.01,
            prop::collection::vec(-1.0f32..1.0, 3),
            prop::collection::vec(0.2f32..2.0, 3),
            any::<u8>(),
        ),
    )
        .prop_map(|(resize, channels, layout, short, (scale, mean, std, pad_value))| {
            let spec =
                PreprocessSpec { resize, resize_short_side: short, scale, mean, std, channels, pad_value };
            (spec, layout)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fused_matches_the_reference(
        format in 0usize..5,
        half_w in 1usize..40,
        half_h in 1usize..40,
        padding in 0usize..8,
        // Wider than the pass's runs of 64 pixels, so that rows take several, the last one partial.
        (out_w, out_h) in (1usize..160, 1usize..48),
        (spec, layout) in recipe(),
        seed in any::<u64>(),
    ) {
        let format = FORMATS[format];
        let (w, h) = (half_w * 2, half_h * 2);
        let stride = format.min_stride(w) + padding;
        let data = crate::capture::pattern::noise(format.frame_bytes(stride, h), seed);
        let frame = Frame::new(format, w, h, stride, &data).unwrap();
        let fused = FusedPreprocess::new(&spec, out_w, out_h, layout, w, h).unwrap();
        let mut got = vec![f32::NAN; fused.item_len()];
        fused.run(&frame, &mut got).unwrap();
        // `run` takes the AVX2 build of the pass where the CPU has it: the same values, bit for bit.
        let mut portable = vec![f32::NAN; fused.item_len()];
        fused.fill_frame(&frame, &mut portable);
        prop_assert!(got.iter().zip(&portable).all(|(a, b)| a.to_bits() == b.to_bits()));
        // For an f16 or u8 model the pass converts each value as it stores it: the f32 values,
        // rounded as a backend would round them.
        let mut halves = vec![f16::NAN; fused.item_len()];
        fused.run(&frame, &mut halves).unwrap();
        prop_assert!(halves.iter().zip(&got).all(|(h, v)| h.to_bits() == f16::from_f32(*v).to_bits()));
        let mut bytes = vec![0u8; fused.item_len()];
        fused.run(&frame, &mut bytes).unwrap();
        prop_assert_eq!(&bytes[..], &*BatchView::F32(&got).to::<u8>());
        let want = reference::preprocess(&frame, &spec, out_w, out_h, layout).unwrap();
        prop_assert_eq!(got.len(), want.len());
        let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        prop_assert!(worst <= 1e-4, "max |fused - reference| = {worst} ({format:?} {w}x{h} -> {out_w}x{out_h})");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// A frame already at the input's size (as after `plan`'s downscale) reads one pixel per
    /// output pixel: the same values as interpolating with zero weights, bit for bit.
    #[test]
    fn one_pixel_per_output_pixel_is_interpolation_with_zero_weights(
        format in 0usize..5,
        half_w in 1usize..80,
        half_h in 1usize..20,
        (spec, layout) in recipe(),
        seed in any::<u64>(),
    ) {
        let format = FORMATS[format];
        let (w, h) = (half_w * 2, half_h * 2);
        let spec = PreprocessSpec { resize: ResizeMode::Stretch, ..spec };
        let data = crate::capture::pattern::noise(format.frame_bytes(format.min_stride(w), h), seed);
        let frame = Frame::new(format, w, h, format.min_stride(w), &data).unwrap();
        let direct = FusedPreprocess::new(&spec, w, h, layout, w, h).unwrap();
        prop_assert!(direct.direct);
        let mut interpolating = direct.clone();
        interpolating.direct = false;
        let (mut got, mut want) = (vec![f32::NAN; direct.item_len()], vec![f32::NAN; direct.item_len()]);
        direct.run(&frame, &mut got).unwrap();
        interpolating.run(&frame, &mut want).unwrap();
        prop_assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn bt601_limited_range_black_white_and_red() {
    assert_eq!(yuv_to_rgb(16, 128, 128), [0.0, 0.0, 0.0]);
    let white = yuv_to_rgb(235, 128, 128);
    assert!(white.iter().all(|v| (v - 255.0).abs() < 0.3), "{white:?}");
    // BT.601 red (R'G'B' 255, 0, 0) is Y 81, U 90, V 240.
    let red = yuv_to_rgb(81, 90, 240);
    assert!((red[0] - 255.0).abs() < 1.5 && red[1] < 1.5 && red[2] < 1.5, "{red:?}");
}

#[test]
fn a_yuyv_pair_shares_its_chroma_and_nv12_a_2x2_block() {
    // Two pixels: Y 81 and Y 145, U 90, V 240 / U 54, V 34: red then green-ish.
    let yuyv = [81, 90, 145, 240];
    let frame = Frame::new(PixelFormat::Yuyv, 2, 1, 4, &yuyv).unwrap();
    let rgb = reference::frame_to_rgb(&frame);
    assert_eq!(rgb, [yuv_to_rgb(81, 90, 240), yuv_to_rgb(145, 90, 240)]);
    let nv12 = [10, 20, 30, 40, 100, 200];
    let frame = Frame::new(PixelFormat::Nv12, 2, 2, 2, &nv12).unwrap();
    let rgb = reference::frame_to_rgb(&frame);
    assert_eq!(rgb, [10, 20, 30, 40].map(|y| yuv_to_rgb(y, 100, 200)));
}

#[test]
fn identity_size_is_the_pixels_themselves() {
    let spec = PreprocessSpec { resize: ResizeMode::Stretch, scale: 1.0, ..PreprocessSpec::default() };
    let data: Vec<u8> = (0..4 * 3 * 3).map(|i| i as u8).collect();
    let frame = Frame::new(PixelFormat::Rgb24, 4, 3, 12, &data).unwrap();
    let fused = FusedPreprocess::new(&spec, 4, 3, Layout::Nhwc, 4, 3).unwrap();
    let mut out = vec![0.0; fused.item_len()];
    fused.run(&frame, &mut out).unwrap();
    assert_eq!(out, data.iter().map(|&v| v as f32).collect::<Vec<_>>());
    // A u8 model with scale 1 gets the bytes themselves.
    let mut bytes = vec![0u8; fused.item_len()];
    fused.run(&frame, &mut bytes).unwrap();
    assert_eq!(bytes, data);
}

#[test]
fn frames_of_the_wrong_shape_are_errors() {
    let data = [0u8; 12];
    assert!(Frame::new(PixelFormat::Yuyv, 3, 2, 6, &data).unwrap_err().to_string().contains("even"));
    assert!(Frame::new(PixelFormat::Nv12, 4, 4, 4, &data)
        .unwrap_err()
        .to_string()
        .contains("needs 24 bytes"));
    assert!(Frame::new(PixelFormat::Rgb24, 4, 1, 8, &data).unwrap_err().to_string().contains("stride 8"));
    let spec = PreprocessSpec::default();
    let fused = FusedPreprocess::new(&spec, 2, 2, Layout::Nchw, 4, 2).unwrap();
    let other = Frame::new(PixelFormat::Grey, 2, 2, 2, &data).unwrap();
    assert!(fused.run(&other, &mut [0.0; 12]).unwrap_err().to_string().contains("planned for 4x2"));
}

#[test]
fn letterbox_and_crop_place_the_frame_as_the_image_path_does() {
    use super::fused::{placement, Placement};
    let letterbox = PreprocessSpec { resize: ResizeMode::Letterbox, ..PreprocessSpec::default() };
    let at =
        |resized_w, resized_h, origin_x, origin_y| Placement { resized_w, resized_h, origin_x, origin_y };
    assert_eq!(placement(&letterbox, 640, 480, 224, 224), Ok(at(224, 168, 0, -28)));
    let crop = PreprocessSpec {
        resize: ResizeMode::CenterCrop,
        resize_short_side: Some(256),
        ..PreprocessSpec::default()
    };
    assert_eq!(placement(&crop, 640, 480, 224, 224), Ok(at(341, 256, 58, 16)));
    let none = PreprocessSpec { resize: ResizeMode::None, ..PreprocessSpec::default() };
    assert!(placement(&none, 640, 480, 224, 224).unwrap_err().to_string().contains("resize is 'none'"));
}
