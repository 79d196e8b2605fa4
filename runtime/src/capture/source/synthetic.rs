//! `synthetic:WxH[@fps][,format]`: generated frames in any pixel format, without a camera. Bars
//! that move one step a frame, so consecutive frames differ; one buffer, reused.

use std::time::Duration;

use super::{Capture, Captured, FrameClock, FrameSource, Pacer, SourceInfo};
use crate::frame::{Frame, PixelFormat};
use crate::{Error, Result};

pub struct Synthetic {
    info: SourceInfo,
    buffer: Vec<u8>,
    sequence: u64,
    pacer: Pacer,
}

impl Synthetic {
    pub fn new(
        uri: &str,
        format: PixelFormat,
        width: usize,
        height: usize,
        fps: Option<f64>,
    ) -> Result<Synthetic> {
        // The same checks a camera frame gets (even sides for YUYV and NV12).
        let stride = format.min_stride(width);
        Frame::check_layout(format, width, height, stride)
            .map_err(|e| Error::input(std::path::Path::new(uri), e))?;
        let buffer = vec![0u8; format.frame_bytes(stride, height)];
        let info = SourceInfo {
            uri: uri.to_string(),
            format,
            width,
            height,
            stride,
            fps,
            detail: None,
            clock: FrameClock::Delivery,
        };
        Ok(Synthetic { info, buffer, sequence: 0, pacer: Pacer::new(fps) })
    }

    fn draw(&mut self) {
        let SourceInfo { format, width, height, stride, .. } = self.info;
        let shift = self.sequence as usize * 4;
        // A level 16..235 per column (video range), moving right; chroma varies down the frame.
        let level = |x: usize| (16 + (x + shift) % 220) as u8;
        let chroma = |y: usize| (64 + (y * 128) / height.max(1)) as u8;
        for y in 0..height {
            let row = &mut self.buffer[y * stride..y * stride + format.min_stride(width)];
            match format {
                PixelFormat::Yuyv => {
                    for (x, px) in row.chunks_exact_mut(4).enumerate() {
                        px.copy_from_slice(&[level(2 * x), chroma(y), level(2 * x + 1), 255 - chroma(y)]);
                    }
                }
                PixelFormat::Nv12 | PixelFormat::Grey => {
                    for (x, px) in row.iter_mut().enumerate() {
                        *px = level(x);
                    }
                }
                PixelFormat::Rgb24 | PixelFormat::Bgr24 => {
                    for (x, px) in row.chunks_exact_mut(3).enumerate() {
                        px.copy_from_slice(&[level(x), chroma(y), 255 - level(x)]);
                    }
                }
            }
        }
        if format == PixelFormat::Nv12 {
            let chroma_plane = &mut self.buffer[stride * height..];
            for (y, row) in chroma_plane.chunks_exact_mut(stride).enumerate() {
                for pair in row[..width].chunks_exact_mut(2) {
                    pair.copy_from_slice(&[chroma(2 * y), 255 - chroma(2 * y)]);
                }
            }
        }
    }
}

impl FrameSource for Synthetic {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        if !self.pacer.wait(self.sequence, timeout) {
            return Ok(Capture::Timeout);
        }
        self.draw();
        let timestamp = self.pacer.elapsed();
        let sequence = self.sequence;
        self.sequence += 1;
        let SourceInfo { format, width, height, stride, .. } = self.info;
        let frame = Frame::new(format, width, height, stride, &self.buffer).expect("checked when opened");
        Ok(Capture::Frame(Captured { frame, sequence, timestamp, at: None, encoded: None }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_gives_valid_frames_that_change_from_one_to_the_next() {
        for format in PixelFormat::ALL {
            let mut source = Synthetic::new("synthetic:", format, 64, 48, None).unwrap();
            let first = match source.capture(Duration::from_secs(1)).unwrap() {
                Capture::Frame(c) => c.frame.data.to_vec(),
                other => panic!("{other:?}"),
            };
            let Capture::Frame(second) = source.capture(Duration::from_secs(1)).unwrap() else { panic!() };
            assert_eq!(second.sequence, 1);
            assert_eq!(second.frame.data.len(), format.frame_bytes(format.min_stride(64), 48));
            assert_ne!(first, second.frame.data, "{format:?}");
        }
    }

    #[test]
    fn odd_sizes_are_refused_where_the_format_needs_even_ones() {
        let err = Synthetic::new("synthetic:63x48", PixelFormat::Yuyv, 63, 48, None).err().unwrap();
        assert!(err.to_string().contains("synthetic:63x48: Yuyv needs even sides"), "{err}");
        assert!(Synthetic::new("synthetic:63x47,grey", PixelFormat::Grey, 63, 47, None).is_ok());
    }

    #[test]
    fn a_frame_not_due_within_the_timeout_is_a_timeout() {
        let mut source = Synthetic::new("s", PixelFormat::Grey, 8, 8, Some(0.5)).unwrap();
        assert!(matches!(source.capture(Duration::from_millis(10)).unwrap(), Capture::Frame(_)));
        assert!(matches!(source.capture(Duration::from_millis(10)).unwrap(), Capture::Timeout));
    }
}
