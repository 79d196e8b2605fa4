//! MJPEG frames from USB cameras, decoded to RGB24 for the fused pass. UVC cameras often leave the
//! Huffman tables out of each frame (Motion-JPEG's convention); such frames get the standard tables
//! of ITU-T T.81 Annex K.3. Truncated or corrupt frames, common when a USB transfer drops, are
//! skipped and counted, never a panic.

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::frame::{Frame, PixelFormat};

const SOI: [u8; 2] = [0xFF, 0xD8];
const EOI: [u8; 2] = [0xFF, 0xD9];
const DHT: u8 = 0xC4;
const SOS: u8 = 0xDA;

/// Why a frame was not decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// No end-of-image marker: the transfer stopped early.
    Truncated,
    /// Not JPEG, or the decoder refused it.
    Corrupt(String),
}

/// Counts of what a stream's frames came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MjpegStats {
    pub decoded: u64,
    /// Of the decoded ones, frames that needed the standard Huffman tables.
    pub standard_tables: u64,
    pub truncated: u64,
    pub corrupt: u64,
}

/// Decodes frames into one reused RGB24 buffer.
#[derive(Default)]
pub struct MjpegDecoder {
    rgb: Vec<u8>,
    with_tables: Vec<u8>,
    pub stats: MjpegStats,
    /// Frames that decoded to another size than the stream's.
    wrong_size: u64,
    /// Frames skipped since the last one that decoded.
    in_a_row: u64,
}

/// Frames skipped in a row after which a stream counts as undecodable, not as having a bad
/// moment: a second of a 30 fps camera. Without it a source of nothing but damaged frames would be
/// read forever, deaf to time limits and signals.
pub const SKIP_BUDGET: u64 = 30;

/// `SKIP_BUDGET` frames in a row of a stream did not decode: the stream is not MJPEG of its size.
#[derive(Debug, thiserror::Error)]
#[error("{SKIP_BUDGET} MJPEG frames in a row did not decode (the last: {last})")]
pub struct Undecodable {
    /// Why the last one did not: truncated, the decoder's message, or its size.
    pub last: String,
}

impl MjpegDecoder {
    /// Decodes a frame of a stream of `size` frames (a camera's, a recording's); false when it is
    /// skipped: truncated, corrupt, or of another size. An error once `SKIP_BUDGET` frames in a
    /// row were skipped.
    pub fn decode_sized(&mut self, jpeg: &[u8], size: (usize, usize)) -> Result<bool, Undecodable> {
        let why = match self.decode(jpeg).map(|f| (f.width, f.height)) {
            Ok(decoded) if decoded == size => {
                self.in_a_row = 0;
                return Ok(true);
            }
            Ok((w, h)) => {
                self.wrong_size += 1;
                format!("{w}x{h}, not {}x{}", size.0, size.1)
            }
            Err(Skipped::Truncated) => "truncated".into(),
            Err(Skipped::Corrupt(reason)) => reason,
        };
        self.in_a_row += 1;
        if self.in_a_row >= SKIP_BUDGET {
            return Err(Undecodable { last: why });
        }
        Ok(false)
    }

    /// Frames `decode_sized` skipped.
    pub fn skipped(&self) -> u64 {
        self.stats.truncated + self.stats.corrupt + self.wrong_size
    }

    pub fn decode(&mut self, jpeg: &[u8]) -> Result<Frame<'_>, Skipped> {
        let result = self.decode_counted(jpeg);
        match &result {
            Ok(_) => self.stats.decoded += 1,
            Err(Skipped::Truncated) => self.stats.truncated += 1,
            Err(Skipped::Corrupt(_)) => self.stats.corrupt += 1,
        }
        let (width, height) = result?;
        Ok(Frame::new(PixelFormat::Rgb24, width, height, width * 3, &self.rgb)
            .expect("the decoder filled it"))
    }

    /// The last decoded frame's pixels.
    pub fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    fn decode_counted(&mut self, jpeg: &[u8]) -> Result<(usize, usize), Skipped> {
        if !jpeg.starts_with(&SOI) {
            return Err(Skipped::Corrupt("no start-of-image marker".into()));
        }
        let Some(end) = end_of_image(jpeg) else { return Err(Skipped::Truncated) };
        let source = match missing_tables_at(&jpeg[..end]) {
            Some(sos) => {
                self.with_tables.clear();
                self.with_tables.extend_from_slice(&jpeg[..sos]);
                self.with_tables.extend_from_slice(&STANDARD_DHT);
                self.with_tables.extend_from_slice(&jpeg[sos..end]);
                self.stats.standard_tables += 1;
                &self.with_tables[..]
            }
            None => &jpeg[..end],
        };
        let options = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
        let mut decoder = JpegDecoder::new_with_options(ZCursor::new(source), options);
        decoder.decode_headers().map_err(|e| Skipped::Corrupt(e.to_string()))?;
        let info = decoder.info().ok_or_else(|| Skipped::Corrupt("no frame header".into()))?;
        let (width, height) = (usize::from(info.width), usize::from(info.height));
        let size = decoder.output_buffer_size().ok_or_else(|| Skipped::Corrupt("no frame header".into()))?;
        if size != width * height * 3 {
            return Err(Skipped::Corrupt(format!("{size} bytes of output for {width}x{height} RGB")));
        }
        self.rgb.resize(size, 0);
        decoder.decode_into(&mut self.rgb).map_err(|e| Skipped::Corrupt(e.to_string()))?;
        Ok((width, height))
    }
}

/// Where a JPEG ends: just past its end-of-image marker, which drivers may follow with zeros;
/// `None` when it has none, cut short. The decoder would fill the missing rows with grey.
pub fn end_of_image(jpeg: &[u8]) -> Option<usize> {
    let end = jpeg.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    jpeg[..end].ends_with(&EOI).then_some(end)
}

/// Whether bytes start as a JPEG does.
pub fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.starts_with(&SOI)
}

/// Where the scan starts (its SOS marker) when no DHT segment comes before it; `None` when the
/// frame has its tables, or its markers cannot be walked (the decoder then says why).
fn missing_tables_at(jpeg: &[u8]) -> Option<usize> {
    let mut at = 2;
    while at + 4 <= jpeg.len() {
        if jpeg[at] != 0xFF {
            return None;
        }
        let marker = jpeg[at + 1];
        if marker == 0xFF {
            at += 1; // fill byte
            continue;
        }
        match marker {
            DHT => return None,
            SOS => return Some(at),
            _ => at += 2 + u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize,
        }
    }
    None
}

/// Built once: frames of a camera that omits its tables all need it.
static STANDARD_DHT: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(standard_dht_segment);

/// One DHT segment holding the four tables of T.81 Annex K.3 (luminance and chrominance, DC and
/// AC): code counts per length 1..=16, then the symbols.
fn standard_dht_segment() -> Vec<u8> {
    const TABLES: [(u8, [u8; 16], &[u8]); 4] = [
        (0x00, [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        (0x01, [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        (0x10, [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d], &AC_LUMINANCE),
        (0x11, [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77], &AC_CHROMINANCE),
    ];
    let body: Vec<u8> = TABLES
        .iter()
        .flat_map(|(class_id, counts, symbols)| {
            std::iter::once(*class_id).chain(counts.iter().copied()).chain(symbols.iter().copied())
        })
        .collect();
    let length = (body.len() + 2) as u16;
    [&[0xFF, DHT][..], &length.to_be_bytes(), &body].concat()
}

#[rustfmt::skip]
const AC_LUMINANCE: [u8; 162] = [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
    0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

#[rustfmt::skip]
const AC_CHROMINANCE: [u8; 162] = [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
    0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
    0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
    0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
    0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
    0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

#[cfg(test)]
#[path = "mjpeg_tests.rs"]
mod tests;
