//! Why a source URI or a camera's formats cannot be used; the caller names the source.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    #[error("unknown source: expected synthetic:WxH[@fps][,format], file:PATH, v4l2:///dev/videoN, csi://N, rtsp://HOST/PATH or gst:PIPELINE")]
    UnknownScheme,
    #[error("file: needs a path")]
    NoPath,
    #[error("'{0}' is not a CSI sensor id (0 to 15)")]
    Sensor(String),
    #[error("rtsp:// needs a host: rtsp://HOST[:PORT]/PATH")]
    NoHost,
    #[error("gst: needs a pipeline: gst:ELEMENT ! ELEMENT ! appsink name=edgert")]
    NoPipeline,
    #[error("unknown pixel format '{name}' (known: {known})")]
    UnknownPixelFormat { name: String, known: String },
    #[error("'{0}' is not a frame rate in {range}", range = crate::limits::FPS)]
    FrameRate(String),
    #[error("'{0}' is not a frame size WxH between 1x1 and 16384x16384")]
    FrameSize(String),
    /// The requested camera format, and what the camera offers instead.
    #[error("the camera does not offer {wanted}; it offers {offered}")]
    NotOffered { wanted: &'static str, offered: String },
    #[error("the camera offers none of the formats edgert reads ({readable}); it offers {offered}")]
    NoReadableFormat { readable: String, offered: String },
}
