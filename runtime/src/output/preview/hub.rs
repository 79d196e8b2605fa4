//! What the output stage and the browsers' threads share: the latest frame and figures, and who is
//! watching.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::annotate::Overlay;
use crate::metrics::telemetry::Telemetry;
use crate::output::Shown;

/// A snapshot request keeps frames encoded this long after it, for the next one.
const SNAPSHOT_INTEREST: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct Latest {
    pub generation: u64,
    pub jpeg: Option<Arc<Vec<u8>>>,
    pub figures: Figures,
}

/// `/stats.json`: the overlay's figures, drops, and the board's hottest zone.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    #[serde(flatten)]
    pub overlay: Overlay,
    pub dropped: u64,
    pub temperature_c: Option<f64>,
    pub clients: u64,
}

pub struct Hub {
    pub token: String,
    pub latest: Mutex<Latest>,
    pub fresh: Condvar,
    clients: AtomicU64,
    most_clients: AtomicU64,
    snapshot_at: Mutex<Option<Instant>>,
    closed: AtomicBool,
    telemetry: Mutex<Telemetry>,
}

impl Hub {
    pub fn new(token: String, sysfs: &Path) -> Hub {
        Hub {
            token,
            latest: Mutex::default(),
            fresh: Condvar::new(),
            clients: AtomicU64::new(0),
            most_clients: AtomicU64::new(0),
            snapshot_at: Mutex::new(None),
            closed: AtomicBool::new(false),
            telemetry: Mutex::new(Telemetry::open(sysfs)),
        }
    }

    /// Whether anyone would see an encoded frame.
    pub fn watched(&self) -> bool {
        self.clients.load(Ordering::Relaxed) > 0
            || lock(&self.snapshot_at).is_some_and(|at| at.elapsed() < SNAPSHOT_INTEREST)
    }

    /// The frame's figures, and its picture where it has one: browsers are woken for pictures.
    pub fn publish(&self, frame: &Shown) {
        let mut latest = lock(&self.latest);
        let picture = frame.jpeg.is_some();
        match frame.jpeg {
            // The previous frame's buffer is reused where no browser still holds it.
            Some(jpeg) => {
                latest.generation += 1;
                match latest.jpeg.as_mut().and_then(Arc::get_mut) {
                    Some(buffer) => {
                        buffer.clear();
                        buffer.extend_from_slice(jpeg);
                    }
                    None => latest.jpeg = Some(Arc::new(jpeg.to_vec())),
                }
            }
            // Not encoded because nobody watches: the next viewer gets no stale picture first.
            None if !self.watched() => latest.jpeg = None,
            // Between two pictures of a paced preview the last one stays.
            None => {}
        }
        latest.figures.overlay = frame.overlay.clone();
        latest.figures.dropped = frame.dropped;
        drop(latest);
        if picture {
            self.fresh.notify_all();
        }
    }

    /// The figures now, with the board's temperature read for them.
    pub fn figures(&self) -> Figures {
        let mut figures = lock(&self.latest).figures.clone();
        let zones = lock(&self.telemetry).snapshot().zones;
        figures.temperature_c = zones.iter().map(|z| z.celsius).reduce(f64::max);
        figures.clients = self.clients.load(Ordering::Relaxed);
        figures
    }

    /// The latest frame for one request, and a note to keep encoding for the next.
    pub fn snapshot(&self) -> Option<Arc<Vec<u8>>> {
        *lock(&self.snapshot_at) = Some(Instant::now());
        lock(&self.latest).jpeg.clone()
    }

    /// A place for one more browser, or None when all are taken.
    pub fn join(self: &Arc<Hub>) -> Option<Client> {
        let taken = self.clients.fetch_add(1, Ordering::Relaxed) + 1;
        if taken > super::MAX_CLIENTS as u64 {
            self.clients.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        self.most_clients.fetch_max(taken, Ordering::Relaxed);
        Some(Client { hub: self.clone(), seen: 0 })
    }

    pub fn most_clients(&self) -> u64 {
        self.most_clients.load(Ordering::Relaxed)
    }

    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.fresh.notify_all();
    }
}

/// One browser's place; given back when its thread ends.
pub struct Client {
    hub: Arc<Hub>,
    seen: u64,
}

impl Client {
    /// The next frame newer than the last one this client got; None once the preview closes.
    pub fn next(&mut self) -> Option<Arc<Vec<u8>>> {
        let mut latest = lock(&self.hub.latest);
        loop {
            if self.hub.closed() {
                return None;
            }
            if latest.generation != self.seen {
                if let Some(jpeg) = &latest.jpeg {
                    self.seen = latest.generation;
                    return Some(jpeg.clone());
                }
            }
            latest = self
                .hub
                .fresh
                .wait_timeout(latest, Duration::from_millis(500))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.hub.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// 128 random bits from the kernel, as hex.
pub fn token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes for the preview's token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares in time independent of where the strings differ.
pub fn same_token(given: &str, token: &str) -> bool {
    given.len() == token.len() && given.bytes().zip(token.bytes()).fold(0, |d, (a, b)| d | (a ^ b)) == 0
}
