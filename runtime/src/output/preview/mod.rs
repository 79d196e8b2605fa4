//! `--preview ADDR`: a small web server on the board with one page showing the annotated stream
//! (MJPEG over HTTP) and live charts of its rate, latency, drops, power and temperature. Loopback
//! unless `--preview-public`; every request needs the token printed at start, so nobody on the
//! network watches the camera uninvited. Each browser has a thread of its own: a slow or stalled
//! one gets fewer frames, and never holds up the pipeline, which only swaps the latest frame in.

mod hub;
mod pace;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hub::Hub;
use pace::Pace;

use super::{OutputError, Shown, Sink, Wants};
use crate::Error;

/// Browsers served at once; more are told to come back later.
pub const MAX_CLIENTS: usize = 8;

/// Pictures go to the browsers at most 30 times a second: a screen shows no more, and each one
/// costs the board a drawing and a JPEG on cores inference may need. Faster pipelines send
/// their figures with every frame and a picture when one is due.
const PICTURE_EVERY: Duration = Duration::from_nanos(1_000_000_000 / 30);

pub struct Preview {
    hub: Arc<Hub>,
    server: Option<JoinHandle<()>>,
    /// Where it listens, and the page's address with the token.
    pub address: SocketAddr,
    pub url: String,
    pace: Pace,
}

impl Preview {
    /// Binds `address` (port 0 picks a free one) and serves on a thread of its own. `public`
    /// allows addresses other than loopback; `sysfs` is where temperatures are read.
    pub fn start(address: &str, public: bool, sysfs: &std::path::Path) -> Result<Preview, Error> {
        let instead = (!public).then_some("add --preview-public to show the camera to the network");
        let (http, bound) = crate::serve::listen("--preview", address, "127.0.0.1:8090", instead)?;
        let token = hub::token().map_err(|e| Error::Serve { address: address.into(), reason: e })?;
        let hub = Arc::new(Hub::new(token, sysfs));
        let server = server::spawn(http, hub.clone());
        let url = format!("http://{bound}/?token={}", hub.token);
        Ok(Preview { hub, server: Some(server), address: bound, url, pace: Pace::every(PICTURE_EVERY) })
    }
}

impl Sink for Preview {
    fn name(&self) -> String {
        format!("preview:http://{}/", self.address)
    }

    fn wants(&self) -> Wants {
        if self.hub.watched() && self.pace.due(Instant::now()) {
            Wants::Jpeg
        } else {
            Wants::Figures
        }
    }

    fn write(&mut self, frame: &Shown) -> Result<(), OutputError> {
        if frame.jpeg.is_some() {
            self.pace.sent(Instant::now());
        }
        self.hub.publish(frame);
        Ok(())
    }

    fn most_clients(&self) -> Option<u64> {
        Some(self.hub.most_clients())
    }
}

impl Drop for Preview {
    fn drop(&mut self) {
        self.hub.close();
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

#[cfg(test)]
mod tests;
