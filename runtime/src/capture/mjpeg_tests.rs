use image::codecs::jpeg::JpegEncoder;
use image::RgbImage;

use super::*;

/// A real photo, JPEG-encoded by the `image` crate (baseline, the standard Huffman tables).
fn photo_jpeg() -> (Vec<u8>, RgbImage) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/images/chelsea.png");
    let photo = image::open(path).unwrap().to_rgb8();
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&photo).unwrap();
    (jpeg, photo)
}

/// The frame with every DHT segment cut out, as many UVC cameras send it.
fn without_tables(jpeg: &[u8]) -> Vec<u8> {
    let mut out = jpeg[..2].to_vec();
    let mut at = 2;
    while jpeg[at + 1] != SOS {
        let length = u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
        if jpeg[at + 1] != DHT {
            out.extend_from_slice(&jpeg[at..at + 2 + length]);
        }
        at += 2 + length;
    }
    out.extend_from_slice(&jpeg[at..]);
    out
}

#[test]
fn a_frame_without_huffman_tables_decodes_like_the_full_one() {
    let (jpeg, photo) = photo_jpeg();
    let stripped = without_tables(&jpeg);
    assert!(stripped.len() < jpeg.len() && missing_tables_at(&stripped).is_some());
    let mut decoder = MjpegDecoder::default();
    let full = decoder.decode(&jpeg).unwrap().data.to_vec();
    let frame = decoder.decode(&stripped).unwrap();
    assert_eq!((frame.width, frame.height, frame.format), (451, 300, PixelFormat::Rgb24));
    assert_eq!(frame.data, &full[..], "the standard tables are the ones the encoder used");
    // And both are the photo, within JPEG's loss.
    let mean_error = full.iter().zip(photo.as_raw()).map(|(a, b)| (*a as f64 - *b as f64).abs()).sum::<f64>()
        / full.len() as f64;
    assert!(mean_error < 4.0, "mean error {mean_error}");
    assert_eq!(decoder.stats, MjpegStats { decoded: 2, standard_tables: 1, truncated: 0, corrupt: 0 });
}

#[test]
fn truncated_and_corrupt_frames_are_skipped_and_counted() {
    let (jpeg, _) = photo_jpeg();
    let mut decoder = MjpegDecoder::default();
    assert_eq!(decoder.decode(&jpeg[..jpeg.len() / 2]).err(), Some(Skipped::Truncated));
    assert!(matches!(decoder.decode(b"not a jpeg at all"), Err(Skipped::Corrupt(_))));
    let mut garbled = jpeg.clone();
    // The frame header's size fields set to zero: no picture to decode.
    let sof = garbled.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    garbled[sof + 5..sof + 9].fill(0);
    assert!(matches!(decoder.decode(&garbled), Err(Skipped::Corrupt(_))));
    // Padding after the end marker is not truncation.
    let mut padded = jpeg.clone();
    padded.extend_from_slice(&[0; 64]);
    assert!(decoder.decode(&padded).is_ok());
    assert_eq!(decoder.stats, MjpegStats { decoded: 1, standard_tables: 0, truncated: 1, corrupt: 2 });
}

#[test]
fn random_bytes_after_a_valid_header_never_panic() {
    let (jpeg, _) = photo_jpeg();
    let sos = jpeg.windows(2).position(|w| w == [0xFF, SOS]).unwrap();
    let mut decoder = MjpegDecoder::default();
    let mut state = 0x2545_f491_u32;
    for _ in 0..20 {
        let mut frame = jpeg[..sos + 14].to_vec();
        frame.extend((0..4000).map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        }));
        frame.extend_from_slice(&EOI);
        let _ = decoder.decode(&frame);
    }
    assert_eq!(decoder.stats.decoded + decoder.stats.corrupt, 20);
}
