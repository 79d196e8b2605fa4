//! `v4l2:///dev/videoN` (or a bare `/dev/videoN`): a V4L2 camera, mmap streaming. The format,
//! size and rate are negotiated and what the driver chose is reported; each frame keeps the
//! driver's sequence number and timestamp, so glass to glass starts when the driver took it.
//!
//! Through `moq-v4l`, a fork of the `v4l` crate with the kernel's V4L2 bindings checked in: it
//! needs no libclang, which `v4l` needs through bindgen, so the default build still needs only the
//! Rust toolchain. `linuxvideo`, also pure Rust, fixes the buffer count at 2 and hides buffer
//! timestamps. The fork is young; its API is `v4l`'s, so going back is a small change.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use moq_v4l::buffer::{Flags as BufferFlags, Type};
use moq_v4l::capability::Flags as Capabilities;
use moq_v4l::device::Handle;
use moq_v4l::io::traits::CaptureStream;
use moq_v4l::prelude::{Device, MmapStream};
use moq_v4l::video::capture::Parameters;
use moq_v4l::video::Capture as _;
use moq_v4l::{Format, FourCC};

use super::camera_format::{choose, instant_of, CameraFormat, Offered};
use super::{Capture, Captured, FrameClock, FrameSource, SourceInfo, SourceOptions};
use crate::capture::mjpeg::MjpegDecoder;
use crate::frame::{Frame, PixelFormat};
use crate::{Error, Result};

/// The first frame may take a camera a while (exposure, USB bandwidth); later ones are waited for
/// in the caller's slices.
const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(5);

pub struct V4l2 {
    info: SourceInfo,
    path: PathBuf,
    stream: MmapStream<'static>,
    handle: Arc<Handle>,
    raw: Option<PixelFormat>,
    mjpeg: MjpegDecoder,
    /// The JPEG the last MJPEG frame was decoded from, where the caller keeps it.
    jpeg: Option<Vec<u8>>,
    started: bool,
    first_timestamp: Option<Duration>,
    // Keeps the device open for the stream's lifetime.
    _device: Device,
}

/// A device error as one line that says what to do about it.
fn device_error(path: &Path, doing: &str, e: io::Error) -> Error {
    let reason = match e.raw_os_error() {
        Some(libc::ENOENT) => "no such device: is the camera plugged in? (ls /dev/video*)".to_string(),
        Some(libc::EACCES | libc::EPERM) => {
            "permission denied: add the user to the video group (sudo usermod -aG video $USER) and log in again".into()
        }
        Some(libc::EBUSY) => "busy: another program is streaming from this camera".into(),
        Some(libc::ENODEV) => "the device went away (unplugged?)".into(),
        Some(libc::ENOTTY) if doing == "query capabilities" => "not a V4L2 device".into(),
        Some(libc::ENOSYS) => "V4L2 requests are not supported here (qemu-user does not pass them on)".into(),
        _ => format!("cannot {doing}: {e}"),
    };
    Error::input(path, reason)
}

pub fn open(uri: &str, path: &Path, options: &SourceOptions) -> Result<Box<dyn FrameSource>> {
    let fail = |doing: &'static str| move |e: io::Error| device_error(path, doing, e);
    let device = Device::with_path(path).map_err(fail("open"))?;
    let caps = device.query_caps().map_err(fail("query capabilities"))?;
    if !caps.capabilities.contains(Capabilities::VIDEO_CAPTURE | Capabilities::STREAMING) {
        return Err(Error::input(
            path,
            format!("{} ({}) cannot stream video capture", caps.card, caps.driver),
        ));
    }
    let offered: Vec<Offered> = device
        .enum_formats()
        .map_err(fail("list formats"))?
        .into_iter()
        .map(|d| Offered { fourcc: d.fourcc.repr, description: d.description })
        .collect();
    let current = device.format().map_err(fail("read the format"))?;
    let wanted = choose(&offered, current.fourcc.repr, options.format).map_err(|e| Error::input(path, e))?;
    let (width, height) =
        (options.width.unwrap_or(current.width as usize), options.height.unwrap_or(current.height as usize));
    let asked = Format::new(width as u32, height as u32, FourCC::new(&wanted.fourcc()));
    let got = device.set_format(&asked).map_err(fail("set the format"))?;
    if got.fourcc != asked.fourcc {
        return Err(Error::input(
            path,
            format!("asked for {}, the driver gave {}", wanted.name(), got.fourcc),
        ));
    }
    // A driver without frame-rate control leaves the rate unknown, not the camera unusable.
    let fps = match options.fps {
        Some(fps) => device.set_params(&Parameters::with_fps(fps.round().max(1.0) as u32)),
        None => device.params(),
    }
    .ok()
    .map(|p| p.interval)
    .filter(|i| i.numerator > 0)
    .map(|i| i.denominator as f64 / i.numerator as f64);
    let buffers = options.buffers.max(2);
    let mut stream =
        MmapStream::with_buffers(&device, Type::VideoCapture, buffers).map_err(fail("map buffers"))?;
    stream.set_timeout(FIRST_FRAME_TIMEOUT);
    let (w, h) = (got.width as usize, got.height as usize);
    let raw = match wanted {
        CameraFormat::Raw(format) => Some(format),
        CameraFormat::Mjpeg => None,
    };
    let (format, stride) = match raw {
        Some(format) => (format, got.stride as usize),
        None => (PixelFormat::Rgb24, w * 3),
    };
    Frame::check_layout(format, w, h, stride)
        .map_err(|e| Error::input(path, format!("the driver's format: {e}")))?;
    let detail = format!(
        "{} ({}): {} {w}x{h}{}, {buffers} buffers",
        caps.card,
        caps.driver,
        wanted.name(),
        fps.map_or(String::new(), |f| format!(" at {f:.1} fps")),
    );
    Ok(Box::new(V4l2 {
        info: SourceInfo {
            uri: uri.to_string(),
            format,
            width: w,
            height: h,
            stride,
            fps,
            detail: Some(detail),
            clock: FrameClock::Driver,
        },
        path: path.to_owned(),
        handle: stream.handle(),
        stream,
        raw,
        mjpeg: MjpegDecoder::default(),
        jpeg: options.keep_encoded.then(Vec::new),
        started: false,
        first_timestamp: None,
        _device: device,
    }))
}

/// The formats a device offers, in its own order (`edgert doctor` lists them).
pub fn formats(path: &Path) -> Result<Vec<Offered>> {
    let fail = |doing: &'static str| move |e: io::Error| device_error(path, doing, e);
    let device = Device::with_path(path).map_err(fail("open"))?;
    device.query_caps().map_err(fail("query capabilities"))?;
    Ok(device
        .enum_formats()
        .map_err(fail("list formats"))?
        .into_iter()
        .map(|d| Offered { fourcc: d.fourcc.repr, description: d.description })
        .collect())
}

/// CLOCK_MONOTONIC now, the clock V4L2 drivers stamp buffers with.
fn monotonic_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl V4l2 {
    /// Waits for a filled buffer until `deadline`; false on timeout. The first frame is waited
    /// for inside the stream, which starts on it.
    fn wait(&self, deadline: Instant) -> Result<bool> {
        if !self.started {
            return Ok(true);
        }
        let ms = deadline.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32;
        let ready = self
            .handle
            .poll(libc::POLLIN, ms)
            .map_err(|e| device_error(&self.path, "wait for a frame", e))?;
        Ok(ready > 0)
    }
}

/// Where in the stream (from the first frame) and when on our clock the driver says a buffer was
/// taken; the instant only where the driver stamps with the monotonic clock.
fn when(
    first: &mut Option<Duration>,
    stamp: moq_v4l::Timestamp,
    flags: BufferFlags,
) -> (Duration, Option<Instant>) {
    let stamp =
        Duration::from_secs(stamp.sec.max(0) as u64) + Duration::from_micros(stamp.usec.max(0) as u64);
    let first = *first.get_or_insert(stamp);
    let monotonic = flags & BufferFlags::TIMESTAMP_MASK == BufferFlags::TIMESTAMP_MONOTONIC;
    let at = monotonic.then(|| instant_of(stamp, monotonic_now(), Instant::now()));
    (stamp.saturating_sub(first), at)
}

impl FrameSource for V4l2 {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn capture(&mut self, timeout: Duration) -> Result<Capture<'_>> {
        let deadline = Instant::now() + timeout;
        let path = self.path.clone();
        let failed = |e: io::Error| match e.kind() {
            io::ErrorKind::TimedOut => {
                Error::input(&path, format!("no first frame within {} s", FIRST_FRAME_TIMEOUT.as_secs()))
            }
            _ => device_error(&path, "dequeue a frame", e),
        };
        let SourceInfo { width, height, stride, .. } = self.info;
        if let Some(format) = self.raw {
            if !self.wait(deadline)? {
                return Ok(Capture::Timeout);
            }
            let (data, meta) = self.stream.next().map_err(failed)?;
            self.started = true;
            let used = (meta.bytesused as usize).min(data.len());
            let bytes = if used == 0 { data } else { &data[..used] };
            let frame =
                Frame::new(format, width, height, stride, bytes).map_err(|e| Error::input(&self.path, e))?;
            let (timestamp, at) = when(&mut self.first_timestamp, meta.timestamp, meta.flags);
            let sequence = meta.sequence as u64;
            return Ok(Capture::Frame(Captured { frame, sequence, timestamp, at, encoded: None }));
        }
        // MJPEG: truncated, corrupt or wrongly sized frames are skipped, and counted, until one
        // decodes.
        let (sequence, timestamp, at) = loop {
            if !self.wait(deadline)? {
                return Ok(Capture::Timeout);
            }
            let (data, meta) = self.stream.next().map_err(failed)?;
            self.started = true;
            let used = (meta.bytesused as usize).min(data.len());
            if self
                .mjpeg
                .decode_sized(&data[..used], (width, height))
                .map_err(|e| Error::input(&self.path, e))?
            {
                let (timestamp, at) = when(&mut self.first_timestamp, meta.timestamp, meta.flags);
                // Kept past the next dequeue, for a recording to store as it came.
                if let Some(jpeg) = &mut self.jpeg {
                    jpeg.clear();
                    jpeg.extend_from_slice(&data[..used]);
                }
                break (meta.sequence as u64, timestamp, at);
            }
        };
        let frame = Frame::new(PixelFormat::Rgb24, width, height, stride, self.mjpeg.rgb())
            .expect("decoded at this size");
        Ok(Capture::Frame(Captured { frame, sequence, timestamp, at, encoded: self.jpeg.as_deref() }))
    }

    fn skipped(&self) -> u64 {
        self.mjpeg.skipped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel answers for a busy, forbidden or unplugged camera, as the user reads it.
    /// (`tests/stream.rs` produces the permission error for real; busy and unplugged need a camera.)
    #[test]
    fn device_errors_name_the_device_and_what_to_do() {
        let path = Path::new("/dev/video3");
        let says = |errno, doing| device_error(path, doing, io::Error::from_raw_os_error(errno)).to_string();
        assert_eq!(
            says(libc::EBUSY, "map buffers"),
            "/dev/video3: busy: another program is streaming from this camera"
        );
        assert!(says(libc::EACCES, "open").contains("permission denied: add the user to the video group"));
        assert!(says(libc::EPERM, "open").contains("permission denied"));
        assert_eq!(says(libc::ENODEV, "capture"), "/dev/video3: the device went away (unplugged?)");
        assert!(says(libc::EINVAL, "set the format").starts_with("/dev/video3: cannot set the format: "));
    }
}
