//! Finding INA3221 channels in sysfs. Channels labelled `NC` (not connected) and the shunt-sum
//! channel (7, or a label starting with "sum") are skipped.

use std::path::Path;

use super::{Rail, Reading};
use crate::metrics::sysfs::{entries, read_trimmed};

fn skipped(label: &str, channel: u32) -> bool {
    label.is_empty()
        || label.eq_ignore_ascii_case("NC")
        || label.to_lowercase().starts_with("sum")
        || channel >= 7
}

/// The sensor's averaging interval is the floor of power sampling; the INA3221's longest real
/// one is well under this, and a larger value (a damaged or hostile tree) would stall a run.
const MAX_UPDATE_INTERVAL_MS: u64 = 1000;

/// JetPack 5/6: every `hwmon*` named `ina3221` (AGX Orin has two), rails from `inN_label`.
pub fn hwmon(root: &Path) -> Option<(Vec<Rail>, Option<u64>)> {
    let mut rails = Vec::new();
    let mut interval = None;
    for dir in entries(&root.join("sys/class/hwmon")) {
        if read_trimmed(&dir.join("name")).as_deref() != Some("ina3221") {
            continue;
        }
        interval = interval.or_else(|| {
            let ms: u64 = read_trimmed(&dir.join("update_interval"))?.parse().ok()?;
            Some(ms.min(MAX_UPDATE_INTERVAL_MS))
        });
        for channel in 1..=8 {
            let Some(label) = read_trimmed(&dir.join(format!("in{channel}_label"))) else { continue };
            if skipped(&label, channel) {
                continue;
            }
            let millivolts = dir.join(format!("in{channel}_input"));
            let milliamps = dir.join(format!("curr{channel}_input"));
            if millivolts.exists() && milliamps.exists() {
                rails.push(Rail { name: label, reading: Reading::VoltsAmps { millivolts, milliamps } });
            }
        }
    }
    (!rails.is_empty()).then_some((rails, interval))
}

/// JetPack 4: IIO devices named `ina3221x`, rails from `rail_name_N`, power in `in_powerN_input`.
pub fn iio(root: &Path) -> Option<Vec<Rail>> {
    let mut rails = Vec::new();
    for dir in entries(&root.join("sys/bus/iio/devices")) {
        if !read_trimmed(&dir.join("name")).is_some_and(|n| n.starts_with("ina3221")) {
            continue;
        }
        for channel in 0..8 {
            let Some(label) = read_trimmed(&dir.join(format!("rail_name_{channel}"))) else { continue };
            if skipped(&label, channel) {
                continue;
            }
            let power = dir.join(format!("in_power{channel}_input"));
            if power.exists() {
                rails.push(Rail { name: label, reading: Reading::Milliwatts(power) });
            }
        }
    }
    (!rails.is_empty()).then_some(rails)
}
