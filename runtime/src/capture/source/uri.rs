//! Source URIs: `synthetic:WxH[@fps][,format]`, `file:PATH`, and `v4l2:///dev/videoN` or a bare
//! `/dev/videoN`. Parsed into a checked value before anything is opened.

use std::path::PathBuf;

use super::error::SourceError;
use crate::frame::PixelFormat;

#[derive(Debug, Clone, PartialEq)]
pub enum SourceUri {
    Synthetic { width: usize, height: usize, fps: Option<f64>, format: PixelFormat },
    File(PathBuf),
    V4l2(PathBuf),
}

pub fn parse(uri: &str) -> Result<SourceUri, SourceError> {
    if let Some(spec) = uri.strip_prefix("synthetic:") {
        return synthetic(spec);
    }
    if let Some(path) = uri.strip_prefix("file://").or_else(|| uri.strip_prefix("file:")) {
        if path.is_empty() {
            return Err(SourceError::NoPath);
        }
        return Ok(SourceUri::File(PathBuf::from(path)));
    }
    if let Some(path) = uri.strip_prefix("v4l2://") {
        return Ok(SourceUri::V4l2(PathBuf::from(path)));
    }
    if uri.starts_with("/dev/video") {
        return Ok(SourceUri::V4l2(PathBuf::from(uri)));
    }
    Err(SourceError::UnknownScheme)
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
    fn bad_uris_say_what_is_wrong() {
        for (uri, message) in [
            ("synthetic:0x480", "not a frame size"),
            ("synthetic:640", "not a frame size"),
            ("synthetic:640x480@0", "not a frame rate"),
            ("synthetic:640x480@fast", "not a frame rate"),
            ("synthetic:640x480,rgba", "unknown pixel format 'rgba' (known: yuyv, nv12"),
            ("file:", "needs a path"),
            ("rtsp://camera", "unknown source: expected synthetic:"),
        ] {
            let err = parse(uri).unwrap_err().to_string();
            assert!(err.contains(message), "{uri}: {err}");
        }
    }
}
