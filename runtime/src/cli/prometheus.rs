//! `monitor --prometheus ADDR`: the board's state as Prometheus gauges, served on a loopback address
//! (the text format, version 0.0.4). Loopback only: the board's telemetry is not for the network
//! unless the user puts a proxy in front of it.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::board_view::PowerNow;
use crate::metrics::telemetry::Snapshot;
use crate::Error;

type Labels = Vec<(&'static str, String)>;
type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;

/// Every gauge, registered once and set on each update.
#[derive(Default, Clone)]
struct Metrics {
    power_watts: Gauges,
    memory_bytes: Gauges,
    cpu_mhz: Gauges,
    gpu_mhz: Gauges,
    gpu_load: Gauges,
    emc_mhz: Gauges,
    temperature: Gauges,
    clocks_locked: Gauges,
}

pub struct Exporter {
    metrics: Metrics,
    registry: Arc<Mutex<Registry>>,
    pub address: SocketAddr,
}

impl Exporter {
    /// Binds `address` (loopback only; port 0 picks a free one) and serves `/metrics` on a thread.
    pub fn start(address: &str) -> Result<Exporter, Error> {
        let instead = "serve on 127.0.0.1 or ::1 and put a proxy in front";
        let (server, bound) = crate::serve::listen("--prometheus", address, "127.0.0.1:9101", Some(instead))?;
        let metrics = Metrics::default();
        let mut registry = Registry::with_prefix("edgert");
        let m = &metrics;
        registry.register("power_watts", "Power per rail and in total", m.power_watts.clone());
        registry.register("memory_bytes", "System and process memory", m.memory_bytes.clone());
        registry.register("cpu_frequency_mhz", "CPU clock per online core", m.cpu_mhz.clone());
        registry.register("gpu_frequency_mhz", "GPU clock", m.gpu_mhz.clone());
        registry.register("gpu_load_percent", "GPU busy percentage", m.gpu_load.clone());
        registry.register("emc_frequency_mhz", "Memory controller clock", m.emc_mhz.clone());
        registry.register("temperature_celsius", "Thermal zone temperature", m.temperature.clone());
        registry.register(
            "clocks_locked",
            "1 when every governor's min equals its max",
            m.clocks_locked.clone(),
        );
        let registry = Arc::new(Mutex::new(registry));
        let shared = registry.clone();
        std::thread::Builder::new()
            .name("edgert-prometheus".into())
            .spawn(move || server.serve(|| false, move |request| answer(request, &shared)))
            .map_err(|e| Error::Serve { address: address.into(), reason: e.to_string() })?;
        Ok(Exporter { metrics, registry, address: bound })
    }

    pub fn update(&self, power: &PowerNow, snapshot: &Snapshot) {
        let _held = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let m = &self.metrics;
        let set = |family: &Gauges, labels: Labels, value: Option<f64>| match value {
            Some(v) => {
                family.get_or_create(&labels).set(v);
            }
            None => {
                family.remove(&labels);
            }
        };
        if let Some(total) = &power.total {
            set(&m.power_watts, vec![("rail", "total".into()), ("source", total.clone())], power.total_w);
        }
        for rail in &power.rails {
            set(&m.power_watts, vec![("rail", rail.name.clone()), ("source", "rail".into())], rail.watts);
        }
        let memory = snapshot.memory.as_ref();
        let bytes = |f: fn(&crate::metrics::system_memory::SystemMemory) -> Option<u64>| {
            memory.and_then(f).map(|b| b as f64)
        };
        for (kind, value) in [
            ("used", bytes(|m| Some(m.used_bytes))),
            ("available", bytes(|m| Some(m.available_bytes))),
            ("total", bytes(|m| Some(m.total_bytes))),
            ("swap_used", bytes(|m| Some(m.swap_used_bytes))),
            ("nvmap_used", bytes(|m| m.nvmap_used_bytes)),
            ("edgert_rss", snapshot.rss_bytes.map(|b| b as f64)),
        ] {
            set(&m.memory_bytes, vec![("kind", kind.into())], value);
        }
        let clocks = &snapshot.clocks;
        for core in &clocks.cpus {
            set(&m.cpu_mhz, vec![("core", core.core.to_string())], core.clock.as_ref().map(|c| c.cur_mhz));
        }
        if let Some(gpu) = &clocks.gpu {
            set(&m.gpu_mhz, vec![("device", gpu.device.clone())], gpu.clock.as_ref().map(|c| c.cur_mhz));
            set(&m.gpu_load, vec![("device", gpu.device.clone())], gpu.load_pct);
        }
        set(&m.emc_mhz, vec![], clocks.emc_mhz);
        set(&m.clocks_locked, vec![], clocks.locked().map(|l| if l { 1.0 } else { 0.0 }));
        for zone in &snapshot.zones {
            set(&m.temperature, vec![("zone", zone.name.clone())], Some(zone.celsius));
        }
    }
}

/// `/metrics` in Prometheus' text format; anything else is not found.
fn answer(request: crate::serve::Request, registry: &Mutex<Registry>) {
    if request.path != "/metrics" {
        return request.respond(404, "text/plain", b"edgert: metrics are at /metrics\n");
    }
    let mut body = String::new();
    match prometheus_text::encode(&mut body, &registry.lock().unwrap_or_else(|e| e.into_inner())) {
        Ok(()) => request.respond(200, prometheus_text::CONTENT_TYPE, body.as_bytes()),
        Err(_) => request.respond(500, "text/plain", b"encoding failed\n"),
    }
}
