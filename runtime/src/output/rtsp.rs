//! `--output rtsp://HOST:PORT/NAME` (feature `rtsp-server`): edgert serves the annotated stream
//! with gst-rtsp-server, H.264 from the encoder `h264` picks. One encoding is shared by every
//! viewer; frames go to it only while someone watches. The server's GLib loop runs on a thread
//! of its own.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use gstreamer as gst;
use gstreamer::glib;
use gstreamer::prelude::*;
use gstreamer_app::AppSrc;
use gstreamer_rtsp_server::prelude::*;
use gstreamer_rtsp_server::{RTSPMediaFactory, RTSPServer};

use super::{OutputError, Shown, Sink};
use crate::Error;

/// RTSP's registered port, where the URI names none.
const DEFAULT_PORT: u16 = 8554;

#[derive(Default)]
struct Viewers {
    /// The appsrc of each prepared media (one, as the media is shared).
    sources: Vec<AppSrc>,
    size: Option<(usize, usize)>,
}

pub struct RtspOut {
    name: String,
    viewers: Arc<Mutex<Viewers>>,
    main_loop: glib::MainLoop,
    thread: Option<JoinHandle<()>>,
    _server: RTSPServer,
}

/// `rtsp://HOST[:PORT]/NAME` as the address, port and mount point.
fn parse(uri: &str) -> Result<(String, u16, String), String> {
    let rest = uri.strip_prefix("rtsp://").ok_or("not an rtsp:// address")?;
    let (authority, path) = rest.split_once('/').ok_or("names no stream: rtsp://HOST:PORT/NAME")?;
    if path.is_empty() || path.contains(['?', '#', ' ']) {
        return Err("names no stream, or one with ?, # or a space: rtsp://HOST:PORT/NAME".into());
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().map_err(|_| format!("'{port}' is not a port"))?),
        None => (authority, DEFAULT_PORT),
    };
    if host.parse::<std::net::IpAddr>().is_err() {
        return Err(format!("'{host}' is not an IP address to listen on (0.0.0.0: every interface)"));
    }
    Ok((host.into(), port, format!("/{path}")))
}

impl RtspOut {
    pub fn open(uri: &str) -> Result<RtspOut, Error> {
        let usage = |reason: String| Error::Usage(format!("--output {uri}: {reason}"));
        let (host, port, mount) = parse(uri).map_err(usage)?;
        let encoder = super::h264::encoder().map_err(|e| usage(e.to_string()))?;
        let server = RTSPServer::new();
        server.set_address(&host);
        server.set_service(&port.to_string());
        let factory = RTSPMediaFactory::new();
        factory.set_launch(&format!(
            "( appsrc name=frames is-live=true do-timestamp=true format=time ! {} ! rtph264pay name=pay0 pt=96 config-interval=1 )",
            encoder.pipeline
        ));
        factory.set_shared(true);
        let viewers = Arc::new(Mutex::new(Viewers::default()));
        let configured = viewers.clone();
        factory.connect_media_configure(move |_, media| {
            let source =
                media.element().downcast::<gst::Bin>().ok().and_then(|bin| bin.by_name_recurse_up("frames"));
            if let Some(source) = source.and_then(|s| s.downcast::<AppSrc>().ok()) {
                let mut viewers = configured.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((width, height)) = viewers.size {
                    source.set_caps(Some(&caps(width, height)));
                }
                viewers.sources.push(source);
            }
        });
        server
            .mount_points()
            .ok_or_else(|| usage("the server has no mount points".into()))?
            .add_factory(&mount, factory);
        let context = glib::MainContext::new();
        let serve_error = |reason: String| Error::Serve { address: format!("{host}:{port}"), reason };
        server.attach(Some(&context)).map_err(|e| serve_error(format!("cannot listen: {e}")))?;
        let main_loop = glib::MainLoop::new(Some(&context), false);
        let running = main_loop.clone();
        let thread = std::thread::spawn(move || {
            let _ = context.with_thread_default(|| running.run());
        });
        Ok(RtspOut { name: uri.into(), viewers, main_loop, thread: Some(thread), _server: server })
    }
}

fn caps(width: usize, height: usize) -> gst::Caps {
    gst::Caps::builder("video/x-raw")
        .field("format", "RGB")
        .field("width", width as i32)
        .field("height", height as i32)
        .field("framerate", gst::Fraction::new(0, 1))
        .build()
}

impl Sink for RtspOut {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn write(&mut self, frame: &Shown) -> Result<(), OutputError> {
        let canvas = frame.picture()?;
        let (width, height) = (canvas.width, canvas.height);
        let mut viewers = self.viewers.lock().unwrap_or_else(|p| p.into_inner());
        match viewers.size {
            Some(size) if size != (width, height) => {
                return Err(OutputError::Resized { was: size, now: (width, height) })
            }
            Some(_) => {}
            None => viewers.size = Some((width, height)),
        }
        // A media whose viewers all left stops taking buffers: it is let go.
        viewers.sources.retain(|source| {
            if source.caps().is_none() {
                source.set_caps(Some(&caps(width, height)));
            }
            let buffer = gst::Buffer::from_mut_slice(canvas.pixels.clone());
            source.push_buffer(buffer).is_ok()
        });
        Ok(())
    }
}

impl Drop for RtspOut {
    fn drop(&mut self) {
        for source in &self.viewers.lock().unwrap_or_else(|p| p.into_inner()).sources {
            let _ = source.end_of_stream();
        }
        self.main_loop.quit();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn addresses_parse_and_bad_ones_say_why() {
        assert_eq!(parse("rtsp://0.0.0.0:8555/live"), Ok(("0.0.0.0".into(), 8555, "/live".into())));
        assert_eq!(parse("rtsp://127.0.0.1/a/b"), Ok(("127.0.0.1".into(), 8554, "/a/b".into())));
        for (uri, says) in [
            ("rtsp://0.0.0.0:8554", "names no stream"),
            ("rtsp://0.0.0.0:8554/", "names no stream"),
            ("rtsp://0.0.0.0:99999/x", "not a port"),
            ("rtsp://camera.local:8554/x", "not an IP address"),
        ] {
            let error = parse(uri).unwrap_err();
            assert!(error.contains(says), "{uri}: {error}");
        }
    }
}
