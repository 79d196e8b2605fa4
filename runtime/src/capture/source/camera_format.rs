//! What a V4L2 camera is asked for and what it gave: the pixel formats edgert reads by their
//! FourCC, the choice among those a camera offers, and driver timestamps on our clock. Pure
//! functions, so they are tested without a camera.

use std::time::{Duration, Instant};

use super::error::SourceError;
use crate::frame::PixelFormat;

/// A format a camera gives: raw pixels, or MJPEG decoded to RGB24 as frames arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CameraFormat {
    Raw(PixelFormat),
    Mjpeg,
}

/// In the order edgert prefers when the camera's current format is not one it reads: raw
/// formats cost no decoding.
pub const PREFERENCE: [CameraFormat; 6] = [
    CameraFormat::Raw(PixelFormat::Yuyv),
    CameraFormat::Raw(PixelFormat::Nv12),
    CameraFormat::Raw(PixelFormat::Grey),
    CameraFormat::Raw(PixelFormat::Rgb24),
    CameraFormat::Raw(PixelFormat::Bgr24),
    CameraFormat::Mjpeg,
];

impl CameraFormat {
    pub fn fourcc(self) -> [u8; 4] {
        match self {
            CameraFormat::Raw(PixelFormat::Yuyv) => *b"YUYV",
            CameraFormat::Raw(PixelFormat::Nv12) => *b"NV12",
            CameraFormat::Raw(PixelFormat::Grey) => *b"GREY",
            CameraFormat::Raw(PixelFormat::Rgb24) => *b"RGB3",
            CameraFormat::Raw(PixelFormat::Bgr24) => *b"BGR3",
            CameraFormat::Mjpeg => *b"MJPG",
        }
    }

    pub fn from_fourcc(code: [u8; 4]) -> Option<CameraFormat> {
        PREFERENCE.into_iter().find(|f| f.fourcc() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            CameraFormat::Raw(format) => format.name(),
            CameraFormat::Mjpeg => "mjpeg",
        }
    }

    pub fn from_name(name: &str) -> Option<CameraFormat> {
        match name.to_ascii_lowercase().as_str() {
            "mjpeg" | "mjpg" => Some(CameraFormat::Mjpeg),
            other => PixelFormat::from_name(other).map(CameraFormat::Raw),
        }
    }
}

/// A format a camera lists: its FourCC and the driver's description.
#[derive(Debug, Clone)]
pub struct Offered {
    pub fourcc: [u8; 4],
    pub description: String,
}

fn list(offered: &[Offered]) -> String {
    let names: Vec<String> = offered
        .iter()
        .map(|o| format!("{} ({})", String::from_utf8_lossy(&o.fourcc), o.description))
        .collect();
    if names.is_empty() {
        "no capture formats".into()
    } else {
        names.join(", ")
    }
}

/// The format to ask for: the requested one if the camera offers it, else the camera's current
/// one if edgert reads it, else the first edgert prefers. The error lists what the camera offers.
pub fn choose(
    offered: &[Offered],
    current: [u8; 4],
    requested: Option<CameraFormat>,
) -> Result<CameraFormat, SourceError> {
    let offers = |f: CameraFormat| offered.iter().any(|o| o.fourcc == f.fourcc());
    if let Some(wanted) = requested {
        return if offers(wanted) {
            Ok(wanted)
        } else {
            Err(SourceError::NotOffered { wanted: wanted.name(), offered: list(offered) })
        };
    }
    CameraFormat::from_fourcc(current)
        .filter(|&f| offers(f))
        .or_else(|| PREFERENCE.into_iter().find(|&f| offers(f)))
        .ok_or_else(|| {
            let known: Vec<&str> = PREFERENCE.iter().map(|f| f.name()).collect();
            SourceError::NoReadableFormat { readable: known.join(", "), offered: list(offered) }
        })
}

/// The instant a timestamp stands for, given its clock (CLOCK_MONOTONIC for V4L2, GStreamer's
/// pipeline clock) read as `clock_now` at `now`. A timestamp from the future (a driver bug) is
/// taken as now.
pub fn instant_of(timestamp: Duration, clock_now: Duration, now: Instant) -> Instant {
    now.checked_sub(clock_now.saturating_sub(timestamp)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(codes: &[&[u8; 4]]) -> Vec<Offered> {
        codes.iter().map(|&&fourcc| Offered { fourcc, description: "d".into() }).collect()
    }

    #[test]
    fn every_format_has_its_fourcc_and_name_both_ways() {
        for format in PREFERENCE {
            assert_eq!(CameraFormat::from_fourcc(format.fourcc()), Some(format));
            assert_eq!(CameraFormat::from_name(format.name()), Some(format));
        }
        assert_eq!(CameraFormat::from_name("MJPG"), Some(CameraFormat::Mjpeg));
        assert_eq!(CameraFormat::from_fourcc(*b"H264"), None);
    }

    #[test]
    fn a_requested_format_the_camera_lacks_is_refused_with_what_it_offers() {
        let camera = offered(&[b"YUYV", b"MJPG"]);
        assert_eq!(choose(&camera, *b"YUYV", Some(CameraFormat::Mjpeg)), Ok(CameraFormat::Mjpeg));
        let err = choose(&camera, *b"YUYV", Some(CameraFormat::Raw(PixelFormat::Nv12))).unwrap_err();
        assert_eq!(err, SourceError::NotOffered { wanted: "nv12", offered: "YUYV (d), MJPG (d)".into() });
        assert_eq!(err.to_string(), "the camera does not offer nv12; it offers YUYV (d), MJPG (d)");
    }

    #[test]
    fn without_a_request_the_current_format_then_edgerts_preference() {
        let camera = offered(&[b"MJPG", b"YUYV", b"H264"]);
        assert_eq!(choose(&camera, *b"MJPG", None), Ok(CameraFormat::Mjpeg));
        assert_eq!(choose(&camera, *b"H264", None), Ok(CameraFormat::Raw(PixelFormat::Yuyv)));
        let err = choose(&offered(&[b"H264"]), *b"H264", None).unwrap_err().to_string();
        assert!(err.starts_with("the camera offers none of the formats edgert reads (yuyv, nv12,"), "{err}");
        assert!(err.ends_with("it offers H264 (d)"), "{err}");
    }

    #[test]
    fn driver_timestamps_map_onto_instants() {
        let now = Instant::now();
        let clock_now = Duration::from_secs(1000);
        let taken = instant_of(clock_now - Duration::from_millis(5), clock_now, now);
        assert_eq!(now - taken, Duration::from_millis(5));
        assert_eq!(instant_of(clock_now + Duration::from_secs(1), clock_now, now), now);
    }
}
