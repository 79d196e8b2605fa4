//! Source URIs: `synthetic:WxH[@fps][,format]`, `file:PATH`, `v4l2:///dev/videoN` or a bare
//! `/dev/videoN`, and through GStreamer `csi://N`, `rtsp://…`, `rtsps://…`, `gst:PIPELINE` and
//! `file:` of a video. Parsed into a checked value before anything is opened.

use std::path::PathBuf;

use super::error::SourceError;
use crate::frame::PixelFormat;

#[derive(Debug, Clone, PartialEq)]
pub enum SourceUri {
    Synthetic {
        width: usize,
        height: usize,
        fps: Option<f64>,
        format: PixelFormat,
    },
    File(PathBuf),
    V4l2(PathBuf),
    /// A MIPI CSI camera through the Jetson ISP (Argus), by sensor id.
    Csi(u32),
    /// An `rtsp://` or `rtsps://` stream, the URI as given.
    Rtsp(String),
    /// A video file (by its extension), decoded by GStreamer.
    Video(PathBuf),
    /// A GStreamer pipeline as `gst-launch-1.0` takes it.
    Gst(String),
}

/// File extensions read as video (GStreamer), not as images or recordings.
pub const VIDEO_EXTENSIONS: [&str; 8] = ["mp4", "mkv", "avi", "mov", "h264", "h265", "webm", "ts"];

/// The largest CSI sensor id (Argus numbers up to 16 cameras on AGX boards).
const MAX_SENSOR: u32 = 15;

pub fn parse(uri: &str) -> Result<SourceUri, SourceError> {
    if let Some(spec) = uri.strip_prefix("synthetic:") {
        return synthetic(spec);
    }
    if let Some(path) = uri.strip_prefix("file://").or_else(|| uri.strip_prefix("file:")) {
        if path.is_empty() {
            return Err(SourceError::NoPath);
        }
        let path = PathBuf::from(path);
        let video = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if video.is_some_and(|e| VIDEO_EXTENSIONS.contains(&e.as_str())) {
            return Ok(SourceUri::Video(path));
        }
        return Ok(SourceUri::File(path));
    }
    if let Some(sensor) = uri.strip_prefix("csi://") {
        return match sensor.parse::<u32>() {
            Ok(n) if n <= MAX_SENSOR => Ok(SourceUri::Csi(n)),
            _ => Err(SourceError::Sensor(sensor.into())),
        };
    }
    if uri.starts_with("rtsp://") || uri.starts_with("rtsps://") {
        let host = uri.split_once("://").map_or("", |(_, rest)| rest);
        if host.is_empty() || host.starts_with('/') {
            return Err(SourceError::NoHost);
        }
        return Ok(SourceUri::Rtsp(uri.to_string()));
    }
    if let Some(pipeline) = uri.strip_prefix("gst:") {
        if pipeline.trim().is_empty() {
            return Err(SourceError::NoPipeline);
        }
        return Ok(SourceUri::Gst(pipeline.to_string()));
    }
    if let Some(path) = uri.strip_prefix("v4l2://") {
        return Ok(SourceUri::V4l2(PathBuf::from(path)));
    }
    if uri.starts_with("/dev/video") {
        return Ok(SourceUri::V4l2(PathBuf::from(uri)));
    }
    Err(SourceError::UnknownScheme)
}

/// The URI as it may be shown: an RTSP password replaced by `***`, so it stays out of errors and
/// reports.
pub fn redacted(uri: &str) -> std::borrow::Cow<'_, str> {
    let Some((scheme, rest)) = uri.split_once("://") else { return uri.into() };
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority.rsplit_once('@').and_then(|(user, _)| user.split_once(':')) {
        Some((name, password)) if !password.is_empty() => {
            let at = scheme.len() + 3 + name.len() + 1;
            format!("{}***{}", &uri[..at], &uri[at + password.len()..]).into()
        }
        _ => uri.into(),
    }
}

fn synthetic(spec: &str) -> Result<SourceUri, SourceError> {
    let (size_rate, format) = match spec.split_once(',') {
        Some((size_rate, name)) => (
            size_rate,
            PixelFormat::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = PixelFormat::ALL.iter().map(|f| f.name()).collect();
                SourceError::UnknownPixelFormat { name: name.into(), known: known.join(", ") }
            })?,
        ),
        None => (spec, PixelFormat::Yuyv),
    };
    let (size, fps) = match size_rate.split_once('@') {
        Some((size, rate)) => match crate::limits::FPS.parse("", rate) {
            Ok(fps) => (size, Some(fps)),
            Err(_) => return Err(SourceError::FrameRate(rate.into())),
        },
        None => (size_rate, None),
    };
    let dims =
        size.split_once('x').and_then(|(w, h)| Some((w.parse::<usize>().ok()?, h.parse::<usize>().ok()?)));
    match dims {
        Some((width, height)) if width > 0 && height > 0 && width <= 16384 && height <= 16384 => {
            Ok(SourceUri::Synthetic { width, height, fps, format })
        }
        _ => Err(SourceError::FrameSize(size.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_sizes_rates_and_formats() {
        assert_eq!(
            parse("synthetic:640x480").unwrap(),
            SourceUri::Synthetic { width: 640, height: 480, fps: None, format: PixelFormat::Yuyv }
        );
        assert_eq!(
            parse("synthetic:1280x720@30,nv12").unwrap(),
            SourceUri::Synthetic { width: 1280, height: 720, fps: Some(30.0), format: PixelFormat::Nv12 }
        );
        assert_eq!(
            parse("synthetic:8x8,gray").unwrap(),
            SourceUri::Synthetic { width: 8, height: 8, fps: None, format: PixelFormat::Grey }
        );
    }

    #[test]
    fn files_and_cameras() {
        assert_eq!(parse("file:frames").unwrap(), SourceUri::File("frames".into()));
        assert_eq!(parse("file:///data/rec").unwrap(), SourceUri::File("/data/rec".into()));
        assert_eq!(parse("v4l2:///dev/video0").unwrap(), SourceUri::V4l2("/dev/video0".into()));
        assert_eq!(parse("/dev/video2").unwrap(), SourceUri::V4l2("/dev/video2".into()));
    }

    #[test]
    fn gstreamer_sources() {
        assert_eq!(parse("csi://0").unwrap(), SourceUri::Csi(0));
        assert_eq!(parse("csi://15").unwrap(), SourceUri::Csi(15));
        assert_eq!(parse("file:clip.MP4").unwrap(), SourceUri::Video("clip.MP4".into()));
        assert_eq!(parse("file:///v/a.mkv").unwrap(), SourceUri::Video("/v/a.mkv".into()));
        assert_eq!(parse("file:photo.jpg").unwrap(), SourceUri::File("photo.jpg".into()));
        let cam = "rtsp://user:pw@10.0.0.2:554/stream1";
        assert_eq!(parse(cam).unwrap(), SourceUri::Rtsp(cam.into()));
        assert_eq!(parse("rtsps://cam/s").unwrap(), SourceUri::Rtsp("rtsps://cam/s".into()));
        assert_eq!(parse("gst:videotestsrc").unwrap(), SourceUri::Gst("videotestsrc".into()));
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redacted("rtsp://admin:s3cr:t@10.0.0.2:554/live"), "rtsp://admin:***@10.0.0.2:554/live");
        assert_eq!(redacted("rtsp://admin@cam/live"), "rtsp://admin@cam/live");
        assert_eq!(redacted("rtsp://cam/a@b:c"), "rtsp://cam/a@b:c");
        assert_eq!(
            redacted("rtspsrc location=\"rtsp://u:p@h/x\" ! x"),
            "rtspsrc location=\"rtsp://u:***@h/x\" ! x"
        );
        assert_eq!(redacted("file:x.mp4"), "file:x.mp4");
    }

    #[test]
    fn bad_uris_say_what_is_wrong() {
        for (uri, message) in [
            ("synthetic:0x480", "not a frame size"),
            ("synthetic:640", "not a frame size"),
            ("synthetic:640x480@0", "not a frame rate"),
            ("synthetic:640x480@fast", "not a frame rate"),
            ("synthetic:640x480,rgba", "unknown pixel format 'rgba' (known: yuyv, nv12"),
            ("file:", "needs a path"),
            ("csi://", "not a CSI sensor id"),
            ("csi://16", "not a CSI sensor id"),
            ("csi://-1", "not a CSI sensor id"),
            ("rtsp://", "needs a host"),
            ("rtsp:///path", "needs a host"),
            ("gst:  ", "needs a pipeline"),
            ("http://camera", "unknown source: expected synthetic:"),
        ] {
            let err = parse(uri).unwrap_err().to_string();
            assert!(err.contains(message), "{uri}: {err}");
        }
    }
}
