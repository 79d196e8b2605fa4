//! The GStreamer pipeline each GStreamer URI opens, as `gst-launch-1.0` text. Built without
//! GStreamer, so every form (CSI included) is tested on any machine; `gst.rs` runs it.

// Without GStreamer only the tests build these pipelines (and the CLI names `RtspTransport`).
#![cfg_attr(not(feature = "gstreamer"), allow(dead_code))]

use std::path::Path;

use crate::choice::Choice;

/// The appsink edgert pulls frames from: every pipeline ends in one of this name.
pub const SINK: &str = "edgert";

/// The formats edgert reads from an appsink, in GStreamer's names.
pub const SINK_FORMATS: &str = "{ NV12, RGB, BGR, GRAY8, YUY2 }";

/// How `rtspsrc` carries the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RtspTransport {
    #[default]
    Auto,
    Tcp,
    Udp,
}

impl Choice for RtspTransport {
    const ALL: &'static [Self] = &[RtspTransport::Auto, RtspTransport::Tcp, RtspTransport::Udp];

    fn name(self) -> &'static str {
        match self {
            RtspTransport::Auto => "auto",
            RtspTransport::Tcp => "tcp",
            RtspTransport::Udp => "udp",
        }
    }

    fn help(self) -> Option<&'static str> {
        match self {
            RtspTransport::Auto => Some("UDP first, TCP where UDP gets nothing (rtspsrc's own default)"),
            _ => None,
        }
    }
}

impl RtspTransport {
    /// The value of rtspsrc's `protocols` property.
    fn protocols(self) -> Option<&'static str> {
        match self {
            RtspTransport::Auto => None,
            RtspTransport::Tcp => Some("tcp"),
            RtspTransport::Udp => Some("udp"),
        }
    }
}

/// What turns decoded frames into NV12 in system memory: `nvvidconv` on a Jetson (it also copies
/// the hardware decoder's NVMM buffers out), `videoconvert` elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Converter {
    Nvvidconv,
    Videoconvert,
}

impl Converter {
    fn element(self) -> &'static str {
        match self {
            Converter::Nvvidconv => "nvvidconv",
            Converter::Videoconvert => "videoconvert",
        }
    }
}

/// Everything the pipeline text depends on besides the URI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchOptions {
    pub width: Option<usize>,
    pub height: Option<usize>,
    /// Asked of a CSI camera; `None` or 0 leaves it to the camera.
    pub fps: Option<f64>,
    /// rtspsrc's jitter buffer, in milliseconds.
    pub latency_ms: u32,
    pub transport: RtspTransport,
    pub converter: Converter,
    /// The appsink holds each frame to its timestamp: a file played at its own rate.
    pub sync: bool,
}

/// `nvarguscamerasrc sensor-id=N`, NV12 in NVMM at the size and rate asked, copied to system
/// memory by `nvvidconv` (the only element that reads NVMM).
pub fn csi(sensor: u32, o: &LaunchOptions) -> String {
    let mut caps = String::from("video/x-raw(memory:NVMM),format=NV12");
    if let Some(w) = o.width {
        caps += &format!(",width={w}");
    }
    if let Some(h) = o.height {
        caps += &format!(",height={h}");
    }
    if let Some(fps) = o.fps.filter(|f| *f > 0.0) {
        let (n, d) = fraction(fps);
        caps += &format!(",framerate={n}/{d}");
    }
    format!("nvarguscamerasrc sensor-id={sensor} ! {caps} ! nvvidconv ! {}", sink(o, "NV12"))
}

/// `rtspsrc` into `decodebin`, which plugs the depayloader and the decoder (`nvv4l2decoder` on a
/// Jetson, by its rank; a software one elsewhere).
pub fn rtsp(uri: &str, o: &LaunchOptions) -> String {
    let protocols = o.transport.protocols().map_or(String::new(), |p| format!(" protocols={p}"));
    format!(
        "rtspsrc location={} latency={}{protocols} ! decodebin ! {} ! {}",
        quote(uri),
        o.latency_ms,
        o.converter.element(),
        sink(o, "NV12")
    )
}

/// A video file through `decodebin`.
pub fn video(path: &Path, o: &LaunchOptions) -> String {
    format!(
        "filesrc location={} ! decodebin ! {} ! {}",
        quote(&path.to_string_lossy()),
        o.converter.element(),
        sink(o, "NV12")
    )
}

/// A user's pipeline: as given where it names an element `edgert`, else with `videoconvert` and an
/// appsink of that name appended that takes any format edgert reads (a pipeline may end in caps).
pub fn custom(pipeline: &str, names_sink: bool, o: &LaunchOptions) -> String {
    if names_sink {
        pipeline.to_string()
    } else {
        let caps = quote(&format!("video/x-raw,format={SINK_FORMATS}"));
        format!(
            "{} ! videoconvert ! appsink name={SINK} caps={caps} sync={} max-buffers=2",
            pipeline.trim(),
            o.sync
        )
    }
}

fn sink(o: &LaunchOptions, format: &str) -> String {
    format!("video/x-raw,format={format} ! appsink name={SINK} sync={} max-buffers=2", o.sync)
}

/// A string as one value in pipeline text: double-quoted, with `\` and `"` escaped (GStreamer's
/// parser takes the character after a backslash as it is).
pub fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A frame rate as a GStreamer fraction: whole rates exactly, others to a thousandth.
pub fn fraction(fps: f64) -> (u64, u64) {
    if fps.fract() == 0.0 {
        (fps as u64, 1)
    } else {
        ((fps * 1000.0).round() as u64, 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> LaunchOptions {
        LaunchOptions {
            width: None,
            height: None,
            fps: None,
            latency_ms: 20,
            transport: RtspTransport::Auto,
            converter: Converter::Videoconvert,
            sync: false,
        }
    }

    #[test]
    fn csi_asks_argus_for_nv12_at_the_size_and_rate_given() {
        let o = LaunchOptions { width: Some(1920), height: Some(1080), fps: Some(30.0), ..options() };
        assert_eq!(
            csi(1, &o),
            "nvarguscamerasrc sensor-id=1 ! video/x-raw(memory:NVMM),format=NV12,width=1920,height=1080,\
             framerate=30/1 ! nvvidconv ! video/x-raw,format=NV12 ! appsink name=edgert sync=false max-buffers=2"
        );
        let o = LaunchOptions { fps: Some(29.97), ..options() };
        assert!(csi(0, &o).contains("format=NV12,framerate=29970/1000 ! nvvidconv"), "{}", csi(0, &o));
        assert!(csi(0, &options())
            .starts_with("nvarguscamerasrc sensor-id=0 ! video/x-raw(memory:NVMM),format=NV12 ! "));
    }

    #[test]
    fn rtsp_sets_latency_and_transport_and_decodes_with_decodebin() {
        let o = LaunchOptions { transport: RtspTransport::Tcp, latency_ms: 0, ..options() };
        assert_eq!(
            rtsp("rtsp://10.0.0.2:8554/cam", &o),
            "rtspsrc location=\"rtsp://10.0.0.2:8554/cam\" latency=0 protocols=tcp ! decodebin ! videoconvert ! \
             video/x-raw,format=NV12 ! appsink name=edgert sync=false max-buffers=2"
        );
        let o = LaunchOptions { converter: Converter::Nvvidconv, ..options() };
        assert_eq!(
            rtsp("rtsps://cam/s", &o),
            "rtspsrc location=\"rtsps://cam/s\" latency=20 ! decodebin ! nvvidconv ! video/x-raw,format=NV12 ! \
             appsink name=edgert sync=false max-buffers=2"
        );
    }

    #[test]
    fn video_files_are_quoted_and_paced_by_the_sink() {
        let o = LaunchOptions { sync: true, ..options() };
        assert_eq!(
            video(Path::new("/data/my \"clip\" \\ 1.mp4"), &o),
            "filesrc location=\"/data/my \\\"clip\\\" \\\\ 1.mp4\" ! decodebin ! videoconvert ! \
             video/x-raw,format=NV12 ! appsink name=edgert sync=true max-buffers=2"
        );
    }

    #[test]
    fn a_custom_pipeline_gets_an_appsink_unless_it_names_one() {
        let mine = "videotestsrc ! videoconvert ! appsink name=edgert";
        assert_eq!(custom(mine, true, &options()), mine);
        assert_eq!(
            custom(" videotestsrc num-buffers=5 ", false, &options()),
            "videotestsrc num-buffers=5 ! videoconvert ! appsink name=edgert \
             caps=\"video/x-raw,format={ NV12, RGB, BGR, GRAY8, YUY2 }\" sync=false max-buffers=2"
        );
    }
}
