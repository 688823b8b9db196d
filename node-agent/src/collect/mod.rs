//! The background collectors. One thread runs them on the configured interval and
//! publishes a [`Snapshot`]; HTTP handlers only read the latest one. Pinning is not a
//! collector: it reconciles in its own loop ([`crate::pinning_loop`]), and the snapshot
//! carries its last pass.

pub mod gpu;
pub mod rapl;
pub mod replica;
pub mod xid;

use crate::assessment::NodeAssessment;
use crate::clock::Clock;
use crate::cost::{CostTracker, offloaded_cpu_seconds};
use crate::metric_family::{FamilyWriter, flag};
use crate::pinning_loop::PinningBoard;
use crate::selftest_child::{CryptoOutcome, CryptoStatus};
use crate::snapshot::{
    CollectorStatus, DisabledCollector, PinningStatus, ReplicaHealth, ReplicaStatus, Snapshot,
};
use prometheus_client::registry::Unit;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Where the replica's metrics come from.
pub enum ReplicaSource {
    Http(Box<replica::ReplicaScraper>),
    /// Pages recorded from a replica, replayed in order (the last one repeats).
    Recorded {
        pages: Vec<String>,
        next: usize,
    },
}

/// Everything the collection thread owns.
pub struct Collectors {
    pub clock: Arc<dyn Clock>,
    pub node: NodeAssessment,
    /// The crypto path and selftest, established at start (in a child process under `run`).
    pub crypto: CryptoOutcome,
    pub gpu: Option<Box<dyn gpu::GpuSource>>,
    pub rapl: Option<rapl::RaplReader>,
    pub replica: Option<ReplicaSource>,
    pub replica_url: String,
    /// Where the pinning loop ([`crate::pinning_loop`]) publishes its last pass.
    pub pinning: Option<PinningBoard>,
    pub pinning_disabled_reason: Option<String>,
    pub disabled: Vec<DisabledCollector>,
    pub cost: CostTracker,
    pub cpu_seconds_per_item: BTreeMap<String, f64>,
    /// Runs the async replica scrape from this (non-async) thread.
    runtime: tokio::runtime::Runtime,
    last_success: BTreeMap<&'static str, f64>,
    cycle: u64,
}

impl Collectors {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: Arc<dyn Clock>,
        node: NodeAssessment,
        crypto: CryptoOutcome,
        cost: CostTracker,
        cpu_seconds_per_item: BTreeMap<String, f64>,
    ) -> std::io::Result<Collectors> {
        Ok(Collectors {
            clock,
            node,
            crypto,
            gpu: None,
            rapl: None,
            replica: None,
            replica_url: String::new(),
            pinning: None,
            pinning_disabled_reason: None,
            disabled: Vec::new(),
            cost,
            cpu_seconds_per_item,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            last_success: BTreeMap::new(),
            cycle: 0,
        })
    }

    pub fn disable(&mut self, name: &str, reason: impl Into<String>) {
        let reason = reason.into();
        tracing::info!(collector = name, %reason, "collector disabled");
        self.disabled.push(DisabledCollector {
            name: name.to_string(),
            reason,
        });
    }

    /// Runs `f`, timing it, and records the outcome under `name`.
    fn run<T>(
        &mut self,
        name: &'static str,
        statuses: &mut Vec<CollectorStatus>,
        f: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Option<T> {
        let start = self.clock.monotonic_seconds();
        let result = f(self);
        let duration_seconds = (self.clock.monotonic_seconds() - start).max(0.0);
        let (up, error, value) = match result {
            Ok(v) => {
                self.last_success.insert(name, self.clock.unix_seconds());
                (true, None, Some(v))
            }
            Err(e) => {
                tracing::debug!(collector = name, error = %e, "collector failed");
                (false, Some(e), None)
            }
        };
        statuses.push(CollectorStatus {
            name: name.to_string(),
            up,
            duration_seconds,
            last_success_unix_seconds: self.last_success.get(name).copied(),
            error,
        });
        value
    }

    /// One collection cycle.
    pub fn collect(&mut self) -> Snapshot {
        let now = self.clock.unix_seconds();
        let mut statuses = Vec::new();

        let gpus = if self.gpu.is_some() {
            self.run("gpu", &mut statuses, |c| match c.gpu.as_mut() {
                Some(g) => g.sample(),
                None => Err("no GPU source".into()),
            })
            .unwrap_or_default()
        } else {
            Vec::new()
        };

        let cpu_energy = if self.rapl.is_some() {
            let t = self.clock.monotonic_seconds();
            self.run("cpu_energy", &mut statuses, |c| match c.rapl.as_mut() {
                Some(r) => r.read(t),
                None => Err("no RAPL reader".into()),
            })
        } else {
            None
        };

        let mut replica = ReplicaStatus {
            url: self.replica_url.clone(),
            ..ReplicaStatus::default()
        };
        if self.replica.is_some() {
            let health: Option<ReplicaHealth> =
                self.run("replica", &mut statuses, |c| match c.replica.as_mut() {
                    Some(ReplicaSource::Http(s)) => {
                        c.runtime.block_on(s.scrape()).map_err(|e| e.to_string())
                    }
                    Some(ReplicaSource::Recorded { pages, next }) => {
                        let i = (*next).min(pages.len().saturating_sub(1));
                        *next += 1;
                        let page = pages.get(i).ok_or("no recorded replica page")?;
                        replica::scrape_page(&c.replica_url, page).map_err(|e| e.to_string())
                    }
                    None => Err("no replica source".into()),
                });
            replica.up = health.is_some();
            replica.health = health;
        }

        // Pinning runs in its own loop; its last pass appears here as the "pinning"
        // collector, in the same place of the list.
        let pinning = match &self.pinning {
            Some(board) => {
                let report = board.latest();
                statuses.extend(report.run);
                report.status
            }
            None => PinningStatus {
                enabled: false,
                inactive_reason: self.pinning_disabled_reason.clone(),
                ..PinningStatus::default()
            },
        };

        // The selftest's result from start: the agent runs no crypto of its own afterwards.
        let stats = self
            .run("crypto", &mut statuses, |c| Ok(c.crypto.stats.clone()))
            .unwrap_or_else(|| self.crypto.stats.clone());
        let crypto = CryptoStatus {
            report: self.crypto.report.clone(),
            selftest: self.crypto.selftest.clone(),
            offloaded_cpu_seconds: offloaded_cpu_seconds(&stats, &self.cpu_seconds_per_item),
            stats,
            kernel_loads: self.crypto.kernel_loads.clone(),
        };

        let cost = self
            .cost
            .update(now, &gpus, cpu_energy.as_ref(), replica.health.as_ref());
        self.cycle += 1;
        Snapshot {
            taken_at_unix_seconds: now,
            cycle: self.cycle,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            node: self.node.clone(),
            collectors: statuses,
            disabled_collectors: self.disabled.clone(),
            gpus,
            crypto,
            pinning,
            replica,
            cpu_energy,
            cost,
        }
    }
}

/// The collectors' metric families: each collector's last run.
pub fn encode_metrics(collectors: &[CollectorStatus], f: &mut FamilyWriter) -> fmt::Result {
    f.gauge(
        "sovereign_collector_up",
        "Whether the collector's last run read its source without error.",
        None,
        &collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], flag(c.up)))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_collector_scrape_duration",
        "How long the collector's last run took.",
        Some(Unit::Seconds),
        &collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], c.duration_seconds))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_collector_last_success_timestamp",
        "Unix time of the collector's last successful run.",
        Some(Unit::Seconds),
        &collectors
            .iter()
            .filter_map(|c| {
                c.last_success_unix_seconds
                    .map(|t| (vec![("collector", c.name.clone())], t))
            })
            .collect::<Vec<_>>(),
    )?;
    Ok(())
}
