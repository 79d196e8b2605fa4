//! Video in and out through GStreamer (feature `gstreamer`): video files the tests make with
//! `gst-launch-1.0` and `videotestsrc`, `gst:` pipelines, an RTSP server on loopback (feature
//! `rtsp-server`: this test binary serving from a child process of itself), and the ways each
//! fails. Without the feature or GStreamer's tools they print SKIPPED; `EDGERT_REQUIRE_GSTREAMER=1`
//! (CI) makes that a failure.

mod common;

#[cfg(feature = "gstreamer")]
#[path = "video/files.rs"]
mod files;
#[cfg(feature = "gstreamer")]
#[path = "video/out.rs"]
mod out;
#[cfg(feature = "rtsp-server")]
#[path = "video/rtsp.rs"]
mod rtsp;

/// The default build refuses GStreamer sources, saying how to get them.
#[cfg(not(feature = "gstreamer"))]
#[test]
fn gstreamer_sources_need_the_feature() {
    let digits = common::model("digits_mlp_nchw.toml").display().to_string();
    for uri in ["csi://0", "rtsp://127.0.0.1:8554/cam", "file:clip.mp4", "gst:videotestsrc"] {
        common::fails(&["run", "-m", &digits, "--source", uri], 2, &[uri, "--features gstreamer"]);
    }
    for (output, feature) in [
        ("file:clip.mp4", "gstreamer"),
        ("rtp://127.0.0.1:5000", "gstreamer"),
        ("rtsp://0.0.0.0:8554/out", "rtsp-server"),
    ] {
        let args = ["run", "-m", &digits, "--source", "synthetic:32x32", "--frames", "1", "--output", output];
        common::fails(&args, 2, &[output, &format!("--features {feature}")]);
    }
    let why = "edgert is built without the gstreamer feature (cargo test --features rtsp-server)";
    common::or_skipped(None::<()>, "EDGERT_REQUIRE_GSTREAMER", "video", why);
}

#[cfg(all(feature = "gstreamer", not(feature = "rtsp-server")))]
#[test]
fn rtsp_tests_need_the_rtsp_server_feature() {
    let why = "the RTSP tests need --features rtsp-server (gst-rtsp-server)";
    common::or_skipped(None::<()>, "EDGERT_REQUIRE_GSTREAMER", "rtsp", why);
}
