//! Running cost of the node: capex amortised over the profile's months plus measured
//! energy at the configured price, and the energy and money per certified block.

use crate::metric_family::{FamilyWriter, one, opt, watts};
use crate::snapshot::{CostStatus, CpuEnergy, GpuSample, ReplicaHealth};
use hardware_profiles::CostInputs;
use prometheus_client::registry::Unit;
use std::collections::BTreeMap;
use std::fmt;

const HOURS_PER_MONTH: f64 = 365.25 * 24.0 / 12.0;

/// Cost inputs after the node's overrides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostParams {
    /// Purchase price of the node, EUR.
    pub capex_eur: f64,
    /// Months the purchase price is spread over (at least 1).
    pub amortisation_months: u32,
    /// Price of energy, EUR per kWh.
    pub energy_price_eur_per_kwh: f64,
    /// Power of what the agent cannot measure, added to the measured power, watts.
    pub unmeasured_power_watts: f64,
}

impl CostParams {
    /// The profile's cost inputs with the settings' overrides applied.
    pub fn new(profile: &CostInputs, settings: &crate::settings::CostSettings) -> CostParams {
        CostParams {
            capex_eur: settings.capex_eur.unwrap_or(profile.capex_eur),
            amortisation_months: settings
                .amortisation_months
                .unwrap_or(profile.amortisation_months)
                .max(1),
            energy_price_eur_per_kwh: settings
                .energy_price_eur_per_kwh
                .unwrap_or(profile.power_price_eur_per_kwh),
            unmeasured_power_watts: settings.unmeasured_power_watts,
        }
    }

    /// The purchase price spread evenly over the amortisation months, EUR per hour.
    pub fn capex_eur_per_hour(&self) -> f64 {
        self.capex_eur / (f64::from(self.amortisation_months) * HOURS_PER_MONTH)
    }

    /// The energy price, EUR per joule.
    pub fn eur_per_joule(&self) -> f64 {
        self.energy_price_eur_per_kwh / 3.6e6
    }
}

/// Integrates energy between collection cycles.
pub struct CostTracker {
    params: CostParams,
    /// Last NVML energy counter per GPU uuid (joules).
    last_gpu_energy: BTreeMap<String, f64>,
    last_time: Option<f64>,
    energy_joules_total: f64,
    /// (time, energy total, certified height) when the replica was first seen.
    first_block_sample: Option<(f64, f64, f64)>,
}

impl CostTracker {
    /// A tracker that has accounted no energy yet.
    pub fn new(params: CostParams) -> CostTracker {
        CostTracker {
            params,
            last_gpu_energy: BTreeMap::new(),
            last_time: None,
            energy_joules_total: 0.0,
            first_block_sample: None,
        }
    }

    /// The cost inputs the tracker computes with.
    pub fn params(&self) -> &CostParams {
        &self.params
    }

    /// Accounts one collection cycle at `now` (unix seconds).
    pub fn update(
        &mut self,
        now: f64,
        gpus: &[GpuSample],
        cpu: Option<&CpuEnergy>,
        replica: Option<&ReplicaHealth>,
    ) -> CostStatus {
        let dt = self.last_time.map(|t| (now - t).max(0.0)).unwrap_or(0.0);
        self.last_time = Some(now);
        let mut sources = Vec::new();
        let mut power = 0.0;
        let mut energy = 0.0;
        for g in gpus {
            if let Some(w) = g.power_watts {
                power += w;
                sources.push(format!("gpu{}", g.index));
            }
            if let Some(j) = g.energy_joules {
                if let Some(prev) = self.last_gpu_energy.insert(g.uuid.clone(), j) {
                    // The counter restarts with the driver: count nothing for that interval.
                    if j >= prev {
                        energy += j - prev;
                    }
                }
            } else if let Some(w) = g.power_watts {
                energy += w * dt;
            }
        }
        if let Some(w) = cpu.and_then(|c| c.power_watts) {
            power += w;
            sources.push("cpu_package".to_string());
            energy += w * dt;
        }
        if self.params.unmeasured_power_watts > 0.0 {
            power += self.params.unmeasured_power_watts;
            energy += self.params.unmeasured_power_watts * dt;
            sources.push("unmeasured".to_string());
        }
        self.energy_joules_total += energy;

        let capex_eur_per_hour = self.params.capex_eur_per_hour();
        let energy_eur_per_hour = power * 3600.0 * self.params.eur_per_joule();
        let mut status = CostStatus {
            capex_eur_per_hour,
            energy_eur_per_hour,
            eur_per_hour: capex_eur_per_hour + energy_eur_per_hour,
            power_watts: power,
            energy_joules_total: self.energy_joules_total,
            joules_per_certified_block: None,
            eur_per_certified_block: None,
            power_sources: sources,
        };
        if let Some(height) = replica.and_then(|r| r.certified_height) {
            match self.first_block_sample {
                None => self.first_block_sample = Some((now, self.energy_joules_total, height)),
                Some((t0, e0, h0)) if height > h0 => {
                    let blocks = height - h0;
                    let joules = (self.energy_joules_total - e0) / blocks;
                    let hours = (now - t0) / 3600.0;
                    status.joules_per_certified_block = Some(joules);
                    status.eur_per_certified_block = Some(
                        joules * self.params.eur_per_joule() + capex_eur_per_hour * hours / blocks,
                    );
                }
                Some((_, _, h0)) if height < h0 => {
                    // The replica restarted from older state: start the window again.
                    self.first_block_sample = Some((now, self.energy_joules_total, height));
                }
                Some(_) => {}
            }
        }
        status
    }
}

/// CPU-seconds the GPU saved: items run on the GPU times the CPU cost of one item.
pub fn offloaded_cpu_seconds(
    stats: &gpu_crypto_api::stats::StatsSnapshot,
    cpu_seconds_per_item: &BTreeMap<String, f64>,
) -> f64 {
    stats
        .operations
        .iter()
        .filter(|o| o.executed == gpu_crypto_api::stats::Executed::Gpu)
        .map(|o| {
            o.items as f64
                * cpu_seconds_per_item
                    .get(o.operation.name())
                    .copied()
                    .unwrap_or(0.0)
        })
        .sum()
}

/// The cost's metric families.
pub fn encode_metrics(cost: &CostStatus, families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_cost_eur_per_hour",
        "Running cost of the node: amortised purchase plus energy at the configured price.",
        None,
        &[
            (vec![("part", "capex".to_string())], cost.capex_eur_per_hour),
            (
                vec![("part", "energy".to_string())],
                cost.energy_eur_per_hour,
            ),
            (vec![("part", "total".to_string())], cost.eur_per_hour),
        ],
    )?;
    families.gauge(
        "sovereign_node_power",
        "Node power the cost is computed from (measured sources plus configured unmeasured).",
        Some(watts()),
        &one(
            vec![("sources", cost.power_sources.join("+"))],
            cost.power_watts,
        ),
    )?;
    families.counter(
        "sovereign_node_energy",
        "Energy accounted since the agent started.",
        Some(Unit::Joules),
        &one(vec![], cost.energy_joules_total),
    )?;
    families.gauge(
        "sovereign_cost_joules_per_certified_block",
        "Energy per certified block since the agent first saw the replica.",
        None,
        &opt(vec![], cost.joules_per_certified_block),
    )?;
    families.gauge(
        "sovereign_cost_eur_per_certified_block",
        "Cost (capex share plus energy) per certified block since the agent first saw the replica.",
        None,
        &opt(vec![], cost.eur_per_certified_block),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> CostParams {
        CostParams {
            capex_eur: 36_525.0,
            amortisation_months: 60,
            energy_price_eur_per_kwh: 0.36,
            unmeasured_power_watts: 100.0,
        }
    }

    #[test]
    fn capex_and_energy_per_hour() {
        let p = params();
        // 60 months = 43 830 h; 36 525 EUR / 43 830 h.
        assert!((p.capex_eur_per_hour() - 36_525.0 / 43_830.0).abs() < 1e-9);
        let mut t = CostTracker::new(p);
        let gpu = |energy: f64| GpuSample {
            uuid: "GPU-x".into(),
            power_watts: Some(400.0),
            energy_joules: Some(energy),
            ..GpuSample::default()
        };
        let replica = |h: f64| ReplicaHealth {
            certified_height: Some(h),
            ..ReplicaHealth::default()
        };
        let s0 = t.update(1000.0, &[gpu(10_000.0)], None, Some(&replica(100.0)));
        // 500 W at 0.36 EUR/kWh = 0.18 EUR/h.
        assert!((s0.energy_eur_per_hour - 0.18).abs() < 1e-9);
        assert_eq!(s0.energy_joules_total, 0.0);
        assert_eq!(s0.joules_per_certified_block, None);
        // 10 s later: GPU counter +4000 J, unmeasured 100 W x 10 s = 1000 J; 5 blocks.
        let s1 = t.update(1010.0, &[gpu(14_000.0)], None, Some(&replica(105.0)));
        assert!((s1.energy_joules_total - 5000.0).abs() < 1e-9);
        assert!((s1.joules_per_certified_block.unwrap() - 1000.0).abs() < 1e-9);
        let eur = 1000.0 * 0.36 / 3.6e6 + p.capex_eur_per_hour() * (10.0 / 3600.0) / 5.0;
        assert!((s1.eur_per_certified_block.unwrap() - eur).abs() < 1e-12);
        assert_eq!(s1.power_sources, vec!["gpu0", "unmeasured"]);
    }
}
