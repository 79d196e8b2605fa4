//! `file:PATH`: an image, a folder of images (name order), or a recording folder made by
//! `edgert capture`, optionally looped and paced. Images become RGB24 frames and must all be the
//! size of the first.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::recording::{self, Reader};
use super::{Capture, Captured, FrameClock, FrameSource, Pacer, SourceInfo, SourceOptions};
use crate::capture::mjpeg::MjpegDecoder;
use crate::capture::{list_images, load_image};
use crate::frame::{Frame, PixelFormat};
use crate::{Error, Result};

pub fn open(uri: &str, path: &Path, options: &SourceOptions) -> Result<Box<dyn FrameSource>> {
    if recording::is_recording(path) {
        let reader = Reader::open(path)?;
        let i = &reader.index;
        let info = SourceInfo {
            uri: uri.to_string(),
            format: reader.format,
            width: i.width,
            height: i.height,
            stride: i.stride,
            fps: options.fps,
            detail: None,
            clock: FrameClock::Delivery,
        };
        return Ok(Box::new(Replay {
            info,
            loop_length_ns: reader.loop_length_ns(),
            mjpeg: reader.encoded.then(MjpegDecoder::default),
            reader,
            buffer: Vec::new(),
            next: 0,
            loops: 0,
            looped: options.looped,
            pacer: Pacer::new(options.fps),
        }));
    }
    let files = list_images(path)?;
    let first = load_image(&files[0])?.to_rgb8();
    let (width, height) = (first.width() as usize, first.height() as usize);
    let info = SourceInfo {
        uri: uri.to_string(),
        format: PixelFormat::Rgb24,
        width,
        height,
        stride: width * 3,
        fps: options.fps,
        detail: None,
        clock: FrameClock::Delivery,
    };
    Ok(Box::new(Images {
        info,
        files,
        buffer: first.into_raw(),
        loaded: Some(0),
        next: 0,
        looped: options.looped,
        pacer: Pacer::new(options.fps),
    }))
}

/// A recording replayed; timestamps are the recorded ones, shifted by the recording's length on
/// each loop so they keep increasing. MJPEG frames are decoded as they are read, as from a camera:
/// damaged ones are skipped and counted.
struct Replay {
    info: SourceInfo,
    loop_length_ns: u64,
    reader: Reader,
    /// For a recording of JPEGs.
    mjpeg: Option<MjpegDecoder>,
    buffer: Vec<u8>,
    next: usize,
    loops: u64,
    looped: bool,
    pacer: Pacer,
}

impl FrameSource for Replay {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        let count = self.reader.index.frames.len();
        let SourceInfo { format, width, height, stride, .. } = self.info;
        // Until a frame decodes, where frames are JPEGs.
        let (sequence, timestamp) = loop {
            if self.next == count {
                let decoded = self.mjpeg.as_ref().is_none_or(|m| m.stats.decoded > 0);
                if !decoded {
                    let reason = format!("none of the recording's {count} MJPEG frames decodes");
                    return Err(Error::input(&self.reader.raw_path, reason));
                }
                if !self.looped {
                    return Ok(Capture::EndOfStream);
                }
                self.next = 0;
                self.loops += 1;
            }
            let n = self.loops * count as u64 + self.next as u64;
            if !self.pacer.wait(n, timeout) {
                return Ok(Capture::Timeout);
            }
            self.reader.read(self.next, &mut self.buffer)?;
            let timestamp_ns =
                self.reader.index.frames[self.next].timestamp_ns + self.loops * self.loop_length_ns;
            self.next += 1;
            let decoded = match self.mjpeg.as_mut() {
                Some(mjpeg) => mjpeg
                    .decode_sized(&self.buffer, (width, height))
                    .map_err(|reason| Error::input(&self.reader.raw_path, reason))?,
                None => true,
            };
            if decoded {
                break (n, Duration::from_nanos(timestamp_ns));
            }
        };
        let (pixels, encoded) = match &self.mjpeg {
            Some(mjpeg) => (mjpeg.rgb(), Some(&self.buffer[..])),
            None => (&self.buffer[..], None),
        };
        // Checked when opened or decoded; an error, not a panic, should a check miss a case.
        let frame = Frame::new(format, width, height, stride, pixels).map_err(|e| {
            Error::input(&self.reader.raw_path, format!("a frame does not fit the index: {e}"))
        })?;
        Ok(Capture::Frame(Captured { frame, sequence, timestamp, at: None, encoded }))
    }

    fn skipped(&self) -> u64 {
        self.mjpeg.as_ref().map_or(0, MjpegDecoder::skipped)
    }
}

struct Images {
    info: SourceInfo,
    files: Vec<PathBuf>,
    buffer: Vec<u8>,
    /// Which file the buffer holds, so a single looped image is decoded once.
    loaded: Option<usize>,
    next: u64,
    looped: bool,
    pacer: Pacer,
}

impl FrameSource for Images {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        let count = self.files.len() as u64;
        if self.next >= count && !self.looped {
            return Ok(Capture::EndOfStream);
        }
        if !self.pacer.wait(self.next, timeout) {
            return Ok(Capture::Timeout);
        }
        let index = (self.next % count) as usize;
        if self.loaded != Some(index) {
            let file = &self.files[index];
            let image = load_image(file)?.to_rgb8();
            if (image.width() as usize, image.height() as usize) != (self.info.width, self.info.height) {
                return Err(Error::input(
                    file,
                    format!(
                        "{}x{} differs from the first image's {}x{}: a stream has one frame size",
                        image.width(),
                        image.height(),
                        self.info.width,
                        self.info.height
                    ),
                ));
            }
            self.buffer = image.into_raw();
            self.loaded = Some(index);
        }
        let timestamp = self.pacer.elapsed();
        let sequence = self.next;
        self.next += 1;
        let SourceInfo { format, width, height, stride, .. } = self.info;
        let frame =
            Frame::new(format, width, height, stride, &self.buffer).expect("an RGB image fills its frame");
        Ok(Capture::Frame(Captured { frame, sequence, timestamp, at: None, encoded: None }))
    }
}
