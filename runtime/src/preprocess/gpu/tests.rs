//! The GPU pass against the step-by-step CPU reference, on random frames, sizes and recipes: the
//! tests need an NVIDIA GPU (`cargo test --features cuda-12060 -- --ignored`).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::GpuPreprocess;
use crate::frame::{Frame, PixelFormat};
use crate::model::manifest::{ChannelOrder, Layout, PreprocessSpec, ResizeMode};
use crate::preprocess::fused::FusedPreprocess;
use crate::preprocess::reference;

fn recipe() -> impl Strategy<Value = (PreprocessSpec, Layout)> {
    (
        prop_oneof![Just(ResizeMode::Stretch), Just(ResizeMode::Letterbox), Just(ResizeMode::CenterCrop)],
        prop_oneof![Just(ChannelOrder::Rgb), Just(ChannelOrder::Bgr), Just(ChannelOrder::Gray)],
        prop_oneof![Just(Layout::Nchw), Just(Layout::Nhwc)],
        (
            0.001f32..0.01,
            prop::collection::vec(-1.0f32..1.0, 3),
            prop::collection::vec(0.2f32..2.0, 3),
            any::<u8>(),
        ),
    )
        .prop_map(|(resize, channels, layout, (scale, mean, std, pad_value))| {
            (
                PreprocessSpec { resize, resize_short_side: None, scale, mean, std, channels, pad_value },
                layout,
            )
        })
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_gpu_pass_matches_the_reference_in_f32_and_f16() {
    let context = crate::cuda::device::open(0, crate::gpu_sync::GpuSync::default())
        .expect("this test needs an NVIDIA GPU");
    let mut runner = TestRunner::new(Config { cases: 200, ..Config::default() });
    let case =
        (0usize..5, 1usize..200, 1usize..120, 0usize..8, (1usize..300, 1usize..300), recipe(), any::<u64>());
    runner
        .run(&case, |(format, half_w, half_h, padding, (out_w, out_h), (spec, layout), seed)| {
            let format = PixelFormat::ALL[format];
            let (w, h) = (half_w * 2, half_h * 2);
            let stride = format.min_stride(w) + padding;
            let data = crate::capture::pattern::noise(format.frame_bytes(stride, h), seed);
            let frame = Frame::new(format, w, h, stride, &data).unwrap();
            let want = reference::preprocess(&frame, &spec, out_w, out_h, layout).unwrap();
            let plan = FusedPreprocess::new(&spec, out_w, out_h, layout, w, h).unwrap();
            let mut gpu = GpuPreprocess::new(&context, plan).unwrap();
            let stream = gpu.stream().clone();
            let mut out32 = stream.alloc_zeros::<f32>(gpu.item_len()).unwrap();
            let mut out16 = stream.alloc_zeros::<u16>(gpu.item_len()).unwrap();
            gpu.run(&frame, &mut out32.as_view_mut()).unwrap();
            gpu.run(&frame, &mut out16.as_view_mut()).unwrap();
            let got32 = stream.clone_dtoh(&out32).unwrap();
            let got16: Vec<f32> = stream
                .clone_dtoh(&out16)
                .unwrap()
                .into_iter()
                .map(|b| half::f16::from_bits(b).to_f32())
                .collect();
            let worst32 = got32.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            prop_assert!(
                worst32 <= 1e-3,
                "f32: max |gpu - reference| = {worst32} ({format:?} {w}x{h} -> {out_w}x{out_h})"
            );
            // f16 keeps 11 significant bits: half a unit in the last place of each value.
            let worst16 =
                got16.iter().zip(&want).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0.0f32, f32::max);
            prop_assert!(worst16 <= 1e-3, "f16: max relative difference {worst16} ({format:?})");
            Ok(())
        })
        .unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_frame_of_another_size_is_refused() {
    let context = crate::cuda::device::open(0, crate::gpu_sync::GpuSync::default())
        .expect("this test needs an NVIDIA GPU");
    let spec = PreprocessSpec {
        resize: ResizeMode::Stretch,
        resize_short_side: None,
        scale: 1.0 / 255.0,
        mean: vec![0.0],
        std: vec![1.0],
        channels: ChannelOrder::Rgb,
        pad_value: 114,
    };
    let plan = FusedPreprocess::new(&spec, 8, 8, Layout::Nchw, 64, 48).unwrap();
    let mut gpu = GpuPreprocess::new(&context, plan).unwrap();
    let mut out = gpu.stream().alloc_zeros::<f32>(gpu.item_len()).unwrap();
    let data = vec![0u8; 32 * 24 * 3];
    let frame = Frame::new(PixelFormat::Rgb24, 32, 24, 96, &data).unwrap();
    let message = gpu.run(&frame, &mut out.as_view_mut()).unwrap_err().to_string();
    assert!(message.contains("frame is 32x24, the pass was planned for 64x48"), "{message}");
}
