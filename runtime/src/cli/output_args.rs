//! Flags of the commands that show what a frame source's run predicts (`run`, `bench`): annotated
//! frames to outputs, and a live preview in a browser.

use std::path::Path;

use clap::Args;

use crate::metrics::power::PowerSensors;
use crate::output::preview::Preview;
use crate::output::{OutputUri, Outputs};
use crate::Error;

#[derive(Args, Clone, Default)]
pub struct OutputArgs {
    /// Annotated frames (boxes, labels, rate and latency) to: dir:PATH[?format=png] or a folder
    /// (an image per frame), file:VIDEO.mp4|mkv, rtsp://HOST:PORT/NAME, rtp://HOST:PORT. Several
    /// allowed.
    #[arg(long = "output", value_name = "URI")]
    outputs: Vec<String>,
    /// Serve a live view in a browser on this address (e.g. 127.0.0.1:8090; port 0 picks one):
    /// the annotated frames and charts of rate, latency, drops, power and temperature. Its address,
    /// with the token every request needs, is printed at start.
    #[arg(long, value_name = "ADDR")]
    preview: Option<String>,
    /// Let --preview listen on an address other than loopback (0.0.0.0: every interface), so a
    /// workstation on the network can watch; only with the printed token.
    #[arg(long)]
    preview_public: bool,
}

impl OutputArgs {
    pub fn given(&self) -> [(&'static str, bool); 3] {
        [
            ("--output", !self.outputs.is_empty()),
            ("--preview", self.preview.is_some()),
            ("--preview-public", self.preview_public),
        ]
    }

    /// The outputs, opened and checked; the preview's address printed. Power for the overlay is
    /// read under `sysfs` where the board has sensors.
    pub fn open(&self, sysfs: &Path) -> Result<Outputs, Error> {
        if self.preview_public && self.preview.is_none() {
            return Err(Error::Usage("--preview-public needs --preview ADDR".into()));
        }
        let uris = self.outputs.iter().map(|text| OutputUri::parse(text)).collect::<Result<Vec<_>, _>>();
        let mut outputs = Outputs::open(&uris.map_err(Error::Usage)?)?;
        if let Some(address) = &self.preview {
            let preview = Preview::start(address, self.preview_public, sysfs)?;
            eprintln!("edgert: preview at {}", preview.url);
            outputs.sinks.push(Box::new(preview));
        }
        if !outputs.is_empty() {
            outputs.power = PowerSensors::discover(sysfs).and_then(|s| s.open()).ok();
        }
        Ok(outputs)
    }
}
