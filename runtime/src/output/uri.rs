//! `--output` values: where annotated frames go.

use std::path::{Path, PathBuf};

/// Per-frame image formats a folder takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
}

impl ImageFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Png => "png",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputUri {
    /// `dir:PATH[?format=jpg|png]`, or a folder path: an image per frame.
    Dir { path: PathBuf, format: ImageFormat },
    /// `file:PATH.mp4|mkv`: an H.264 video.
    Video(PathBuf),
    /// `rtsp://HOST:PORT/NAME`: served by edgert.
    Rtsp(String),
    /// `rtp://HOST:PORT`: H.264 over RTP/UDP.
    Rtp(String),
}

const VIDEO: [&str; 2] = ["mp4", "mkv"];
const FORMS: &str = "dir:PATH, a folder, file:VIDEO.mp4|mkv, rtsp://HOST:PORT/NAME or rtp://HOST:PORT";

impl OutputUri {
    pub fn parse(text: &str) -> Result<OutputUri, String> {
        let bad = |why: &str| Err(format!("--output {text}: {why}"));
        if let Some(rest) = text.strip_prefix("dir:") {
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            let format = match query {
                "" | "format=jpg" | "format=jpeg" => ImageFormat::Jpeg,
                "format=png" => ImageFormat::Png,
                _ => return bad("the only option is ?format=jpg or ?format=png"),
            };
            if path.is_empty() {
                return bad("names no folder");
            }
            return Ok(OutputUri::Dir { path: path.into(), format });
        }
        if let Some(path) = text.strip_prefix("file:") {
            return match extension(Path::new(path)) {
                Some(ext) if VIDEO.contains(&ext.as_str()) => Ok(OutputUri::Video(path.into())),
                _ => bad("a video output ends in .mp4 or .mkv"),
            };
        }
        if text.starts_with("rtsp://") {
            return Ok(OutputUri::Rtsp(text.into()));
        }
        if text.starts_with("rtp://") {
            return Ok(OutputUri::Rtp(text.into()));
        }
        if let Some((scheme, _)) = text.split_once("://").or_else(|| text.split_once(':')) {
            if scheme.len() > 1 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+') {
                return bad(&format!("unknown scheme '{scheme}'; use {FORMS}"));
            }
        }
        if text.is_empty() {
            return bad(&format!("empty; use {FORMS}"));
        }
        if extension(Path::new(text)).is_some_and(|e| VIDEO.contains(&e.as_str())) {
            return bad(&format!("a video needs the file: scheme (file:{text})"));
        }
        Ok(OutputUri::Dir { path: text.into(), format: ImageFormat::Jpeg })
    }
}

/// A path's extension, lower case.
pub fn extension(path: &Path) -> Option<String> {
    path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_parses() {
        let dir = |p: &str, format| OutputUri::Dir { path: p.into(), format };
        assert_eq!(OutputUri::parse("dir:out"), Ok(dir("out", ImageFormat::Jpeg)));
        assert_eq!(OutputUri::parse("dir:/tmp/a b?format=png"), Ok(dir("/tmp/a b", ImageFormat::Png)));
        assert_eq!(OutputUri::parse("frames/"), Ok(dir("frames/", ImageFormat::Jpeg)));
        assert_eq!(OutputUri::parse("file:run.MP4"), Ok(OutputUri::Video("run.MP4".into())));
        assert_eq!(
            OutputUri::parse("rtsp://0.0.0.0:8554/live"),
            Ok(OutputUri::Rtsp("rtsp://0.0.0.0:8554/live".into()))
        );
        assert_eq!(OutputUri::parse("rtp://10.0.0.2:5000"), Ok(OutputUri::Rtp("rtp://10.0.0.2:5000".into())));
    }

    #[test]
    fn bad_forms_say_what_is_wrong() {
        for (text, says) in [
            ("", "empty"),
            ("dir:", "names no folder"),
            ("dir:out?format=gif", "?format=jpg"),
            ("file:run.avi", ".mp4 or .mkv"),
            ("file:", ".mp4 or .mkv"),
            ("http://x/y", "unknown scheme 'http'"),
            ("udp:1234", "unknown scheme 'udp'"),
            ("run.mp4", "file:run.mp4"),
        ] {
            let error = OutputUri::parse(text).unwrap_err();
            assert!(
                error.starts_with(&format!("--output {text}:")) && error.contains(says),
                "{text}: {error}"
            );
            assert!(!error.contains('\n'));
        }
    }
}
