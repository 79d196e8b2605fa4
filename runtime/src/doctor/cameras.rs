//! Cameras: each `/dev/video*` opened, its formats listed, frames captured from the first format
//! edgert reads and their interval measured. CSI sensors through the ISP need the GStreamer
//! sources, which edgert does not have yet.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Area, Check, Options, Outcome};
use crate::capture::source::camera_format::CameraFormat;
use crate::capture::source::{self, v4l2, Capture, SourceOptions};
use crate::metrics::sysfs::entries;

/// Frames captured per camera (the quick run takes fewer).
const FRAMES: usize = 10;
const QUICK_FRAMES: usize = 4;

pub fn checks(root: &Path, quick: bool) -> Vec<Check> {
    let devices = video_devices(root);
    if devices.is_empty() {
        let why = format!("no camera: nothing at {}", root.join("dev/video*").display());
        return vec![Check::new(Area::Cameras, "cameras", 10, move |_, _| Outcome::skip(why))];
    }
    devices
        .into_iter()
        .map(|device| {
            let name = format!("/dev/{}", device.file_name().unwrap_or_default().to_string_lossy());
            // Opening and the first frame take most of it (exposure, USB).
            let budget = if quick { 1_500 } else { 3_000 };
            Check::new(Area::Cameras, name, budget, move |o, _| camera(&device, o))
        })
        .collect()
}

fn video_devices(root: &Path) -> Vec<PathBuf> {
    entries(&root.join("dev"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("video")))
        .collect()
}

fn camera(device: &Path, options: &Options) -> Outcome {
    let fix = "check it with v4l2-ctl --all; see the error for what to change";
    let offered = match v4l2::formats(device) {
        Ok(o) => o,
        Err(e) => return Outcome::fail("a V4L2 capture device", e.to_string(), fix),
    };
    let names: Vec<String> =
        offered.iter().map(|o| String::from_utf8_lossy(&o.fourcc).into_owned()).collect();
    let Some(format) = offered.iter().find_map(|o| CameraFormat::from_fourcc(o.fourcc)) else {
        return Outcome::skip(format!(
            "offers {}, none of which edgert reads (a CSI sensor's raw Bayer needs the ISP: GStreamer's \
             nvarguscamerasrc, which edgert does not have yet)",
            if names.is_empty() { "no formats".to_string() } else { names.join(", ") }
        ));
    };
    let frames = if options.quick { QUICK_FRAMES } else { FRAMES };
    let opened = SourceOptions { format: Some(format), ..SourceOptions::default() };
    let mut camera = match source::open(&format!("v4l2://{}", device.display()), &opened) {
        Ok(c) => c,
        Err(e) => return Outcome::fail(format!("{} to stream", format.name()), e.to_string(), fix),
    };
    let detail = camera.info().detail.clone().unwrap_or_default();
    let started = Instant::now();
    let mut times = Vec::with_capacity(frames);
    while times.len() < frames {
        match camera.capture(Duration::from_secs(2)) {
            Ok(Capture::Frame(_)) => times.push(started.elapsed()),
            Ok(Capture::Timeout) => {
                return Outcome::fail(
                    format!("{frames} frames"),
                    format!("{} frames, then none for 2 s", times.len()),
                    "the camera stalls: check its cable, USB bandwidth and lighting (long exposures)",
                )
            }
            Ok(Capture::EndOfStream) => {
                return Outcome::fail(format!("{frames} frames"), "the stream ended", fix);
            }
            Err(e) => return Outcome::fail(format!("{frames} frames"), e.to_string(), fix),
        }
    }
    let interval_ms = match (times.first(), times.last()) {
        (Some(first), Some(last)) if times.len() > 1 => {
            (*last - *first).as_secs_f64() * 1e3 / (times.len() - 1) as f64
        }
        _ => 0.0,
    };
    let asked = camera.info().fps.map_or(String::new(), |f| format!(" (its rate says {:.1} ms)", 1e3 / f));
    Outcome::pass(format!(
        "offers {}; {detail}; {frames} frames, one per {interval_ms:.1} ms{asked}",
        names.join(", ")
    ))
}
