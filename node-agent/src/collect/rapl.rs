//! CPU package energy from the powercap (RAPL) sysfs counters. AMD Zen exposes its
//! package energy through the same `intel-rapl` powercap driver.

use super::{Collector, Reading};
use crate::clock::Clock;
use crate::metric_family::{FamilyWriter, one, opt, watts};
use crate::snapshot::CpuEnergy;
use prometheus_client::registry::Unit;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Accumulates package energy across reads, handling counter wrap-around.
pub struct RaplReader {
    dir: PathBuf,
    /// zone directory -> (last energy_uj, max_energy_range_uj)
    last: BTreeMap<PathBuf, (u64, u64)>,
    joules_total: f64,
    last_time: Option<f64>,
}

fn read_u64(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))
}

impl RaplReader {
    /// `root`: the root of the /sys tree ("/" on a node).
    pub fn new(root: &Path) -> RaplReader {
        RaplReader {
            dir: root.join("sys/class/powercap"),
            last: BTreeMap::new(),
            joules_total: 0.0,
            last_time: None,
        }
    }

    /// Package zones (`intel-rapl:N` whose name starts with "package").
    fn zones(&self) -> Result<Vec<PathBuf>, String> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let mut zones: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                // Top-level zones only: "intel-rapl:0", not "intel-rapl:0:0".
                name.starts_with("intel-rapl:") && name.matches(':').count() == 1
            })
            .filter(|p| {
                std::fs::read_to_string(p.join("name"))
                    .map(|n| n.trim().starts_with("package"))
                    .unwrap_or(false)
            })
            .collect();
        zones.sort();
        if zones.is_empty() {
            return Err(format!("no RAPL package zone under {}", self.dir.display()));
        }
        Ok(zones)
    }

    /// Reads all package zones at time `now` (seconds, any epoch).
    pub fn read(&mut self, now: f64) -> Result<CpuEnergy, String> {
        let zones = self.zones()?;
        let mut delta_uj: u64 = 0;
        for z in &zones {
            let energy = read_u64(&z.join("energy_uj"))?;
            let max = read_u64(&z.join("max_energy_range_uj")).unwrap_or(u64::MAX);
            if let Some((prev, _)) = self.last.get(z) {
                delta_uj += if energy >= *prev {
                    energy - prev
                } else {
                    // Wrapped around max_energy_range_uj.
                    max.saturating_sub(*prev) + energy
                };
            }
            self.last.insert(z.clone(), (energy, max));
        }
        let joules = delta_uj as f64 / 1e6;
        let power_watts = match self.last_time {
            Some(t) if now > t => Some(joules / (now - t)),
            _ => None,
        };
        self.joules_total += joules;
        self.last_time = Some(now);
        Ok(CpuEnergy {
            joules_total: self.joules_total,
            power_watts,
            zones: zones.len() as u32,
        })
    }
}

/// The CPU energy collector (`cpu_energy`): the package zones read at the clock's
/// monotonic time, for the power since the previous pass.
impl Collector for RaplReader {
    fn name(&self) -> &'static str {
        "cpu_energy"
    }

    fn collect(&mut self, clock: &dyn Clock) -> Result<Reading, String> {
        self.read(clock.monotonic_seconds()).map(Reading::CpuEnergy)
    }
}

/// The CPU energy collector's metric families.
pub fn encode_metrics(energy: &CpuEnergy, families: &mut FamilyWriter) -> fmt::Result {
    families.counter(
        "sovereign_cpu_package_energy",
        "CPU package energy (RAPL) since the agent started.",
        Some(Unit::Joules),
        &one(vec![], energy.joules_total),
    )?;
    families.gauge(
        "sovereign_cpu_package_power",
        "CPU package power over the last collection interval (RAPL).",
        Some(watts()),
        &opt(vec![], energy.power_watts),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(root: &Path, n: u32, name: &str, energy: u64, max: u64) {
        let d = root.join(format!("sys/class/powercap/intel-rapl:{n}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    #[test]
    fn accumulates_across_wrap() {
        let t = tempfile::tempdir().unwrap();
        zone(t.path(), 0, "package-0", 900_000_000, 1_000_000_000);
        zone(t.path(), 1, "psys", 5, 10);
        let mut r = RaplReader::new(t.path());
        let first = r.read(100.0).unwrap();
        assert_eq!(first.zones, 1);
        assert_eq!(first.joules_total, 0.0);
        assert_eq!(first.power_watts, None);
        // +50 J, then wrap: 950 J -> 20 J is +70 J.
        zone(t.path(), 0, "package-0", 950_000_000, 1_000_000_000);
        let second = r.read(110.0).unwrap();
        assert!((second.joules_total - 50.0).abs() < 1e-9);
        assert!((second.power_watts.unwrap() - 5.0).abs() < 1e-9);
        zone(t.path(), 0, "package-0", 20_000_000, 1_000_000_000);
        let third = r.read(120.0).unwrap();
        assert!((third.joules_total - 120.0).abs() < 1e-9);
    }

    #[test]
    fn missing_powercap_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        assert!(RaplReader::new(t.path()).read(0.0).is_err());
    }
}
