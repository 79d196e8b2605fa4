//! One MJPEG frame from a camera, decoded as a stream of 320x240 frames decodes it.
#![no_main]
use edgert::capture::mjpeg::MjpegDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut decoder = MjpegDecoder::default();
    let _ = decoder.decode_sized(bytes, (320, 240));
    let _ = decoder.decode(bytes);
});
