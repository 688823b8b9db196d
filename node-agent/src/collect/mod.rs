//! The background collectors. One thread runs them on the configured interval and
//! publishes a [`Snapshot`]; HTTP handlers only read the latest one.
//!
//! Each collector implements [`Collector`], as node_exporter's collectors share one
//! interface: a name (its `collector` label and its /v1/status entry) and one collection
//! pass that yields its part of the snapshot or says why its source could not be read.
//! [`Collectors::collect`] runs them in a fixed order, timing each. Pinning is not a
//! collector: it reconciles in its own loop ([`crate::pinning_loop`]), and the snapshot
//! carries its last pass. The Xid watcher ([`xid`]) is not one either: it follows the
//! kernel log on its own thread and the GPU collector attributes its counts.

pub mod gpu;
pub mod rapl;
pub mod replica;
pub mod xid;

pub use replica::ReplicaSource;

use crate::assessment::NodeAssessment;
use crate::clock::Clock;
use crate::cost::{CostTracker, offloaded_cpu_seconds};
use crate::metric_family::{FamilyWriter, flag};
use crate::pinning_loop::PinningBoard;
use crate::selftest_child::{CryptoOutcome, CryptoStatus};
use crate::snapshot::{
    CollectorStatus, CpuEnergy, DisabledCollector, GpuSample, PinningStatus, ReplicaHealth,
    ReplicaStatus, Snapshot,
};
use gpu_crypto_api::stats::StatsSnapshot;
use prometheus_client::registry::Unit;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One source the collection thread reads once per cycle.
pub trait Collector {
    /// The collector's name: its `collector` label and its entry in /v1/status.
    fn name(&self) -> &'static str;
    /// One collection pass: this collector's part of the snapshot, or why its source could
    /// not be read. `clock` is the agent's clock, for collectors that compute rates.
    fn collect(&mut self, clock: &dyn Clock) -> Result<Reading, String>;
}

/// What one collection pass produced: a collector's part of the snapshot.
pub enum Reading {
    /// One sample per GPU ([`gpu`]).
    Gpus(Vec<GpuSample>),
    /// CPU package energy ([`rapl`]).
    CpuEnergy(CpuEnergy),
    /// The replica's health figures ([`replica`]).
    Replica(ReplicaHealth),
    /// The crypto counters of the selftest run at start ([`SelftestCrypto`]).
    Crypto(StatsSnapshot),
}

/// The parts of a snapshot the collectors read in one cycle; a failed collector leaves
/// its part empty.
#[derive(Default)]
struct Readings {
    gpus: Vec<GpuSample>,
    cpu_energy: Option<CpuEnergy>,
    replica: Option<ReplicaHealth>,
    crypto: Option<StatsSnapshot>,
}

impl Readings {
    fn put(&mut self, reading: Reading) {
        match reading {
            Reading::Gpus(gpus) => self.gpus = gpus,
            Reading::CpuEnergy(energy) => self.cpu_energy = Some(energy),
            Reading::Replica(health) => self.replica = Some(health),
            Reading::Crypto(stats) => self.crypto = Some(stats),
        }
    }
}

/// The "crypto" collector: the selftest's result from start, since the agent runs no
/// crypto of its own afterwards. It always reads.
struct SelftestCrypto<'a>(&'a CryptoOutcome);

impl Collector for SelftestCrypto<'_> {
    fn name(&self) -> &'static str {
        "crypto"
    }

    fn collect(&mut self, _clock: &dyn Clock) -> Result<Reading, String> {
        Ok(Reading::Crypto(self.0.stats.clone()))
    }
}

/// Runs collectors one pass each, timing them, and records each outcome as a
/// [`CollectorStatus`] with the time of the collector's last success.
struct Runner<'a> {
    clock: &'a dyn Clock,
    last_success: &'a mut BTreeMap<&'static str, f64>,
    statuses: Vec<CollectorStatus>,
    readings: Readings,
}

impl Runner<'_> {
    fn run(&mut self, collector: &mut dyn Collector) {
        let name = collector.name();
        let start = self.clock.monotonic_seconds();
        let result = collector.collect(self.clock);
        let duration_seconds = (self.clock.monotonic_seconds() - start).max(0.0);
        let (up, error) = match result {
            Ok(reading) => {
                self.last_success.insert(name, self.clock.unix_seconds());
                self.readings.put(reading);
                (true, None)
            }
            Err(e) => {
                tracing::debug!(collector = name, error = %e, "collector failed");
                (false, Some(e))
            }
        };
        self.statuses.push(CollectorStatus {
            name: name.to_string(),
            up,
            duration_seconds,
            last_success_unix_seconds: self.last_success.get(name).copied(),
            error,
        });
    }
}

/// Everything the collection thread owns.
pub struct Collectors {
    /// The agent's clock: snapshot times, collector durations, energy rates.
    pub clock: Arc<dyn Clock>,
    /// The node's probe, profile and readiness, as assessed at start.
    pub node: NodeAssessment,
    /// The crypto path and selftest, established at start (in a child process under `run`).
    pub crypto: CryptoOutcome,
    /// The GPU collector's source; `None` when the collector is not on this node.
    pub gpu: Option<Box<dyn gpu::GpuSource>>,
    /// The CPU energy collector (`cpu_energy`); `None` without RAPL.
    pub rapl: Option<rapl::RaplReader>,
    /// The replica collector's source; `None` without a configured metrics URL.
    pub replica: Option<ReplicaSource>,
    /// The replica metrics URL that /v1/status names (empty when none is configured).
    pub replica_url: String,
    /// Where the pinning loop ([`crate::pinning_loop`]) publishes its last pass.
    pub pinning: Option<PinningBoard>,
    /// Why pinning is off, when it is (reported in the snapshot's pinning status).
    pub pinning_disabled_reason: Option<String>,
    /// Collectors not running on this node, with the reason.
    pub disabled: Vec<DisabledCollector>,
    /// The running cost estimate, updated from each cycle's readings.
    pub cost: CostTracker,
    /// CPU-seconds one item of each crypto operation costs on the CPU, by operation.
    pub cpu_seconds_per_item: BTreeMap<String, f64>,
    /// Runs the async replica scrape from this (non-async) thread.
    runtime: tokio::runtime::Runtime,
    last_success: BTreeMap<&'static str, f64>,
    cycle: u64,
}

impl Collectors {
    /// Collectors with no source set: the caller sets `gpu`, `rapl`, `replica` and
    /// `pinning` for the node. Err when the replica scrape's runtime cannot start.
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

    /// Records that the collector `name` does not run on this node, and why.
    pub fn disable(&mut self, name: &str, reason: impl Into<String>) {
        let reason = reason.into();
        tracing::info!(collector = name, %reason, "collector disabled");
        self.disabled.push(DisabledCollector {
            name: name.to_string(),
            reason,
        });
    }

    /// One collection cycle: the sources' collectors, the pinning loop's last pass, the
    /// crypto collector, then the cost over what they read.
    pub fn collect(&mut self) -> Snapshot {
        let now = self.clock.unix_seconds();
        let mut runner = Runner {
            clock: self.clock.as_ref(),
            last_success: &mut self.last_success,
            statuses: Vec::new(),
            readings: Readings::default(),
        };
        if let Some(gpu) = self.gpu.as_mut() {
            runner.run(gpu);
        }
        if let Some(rapl) = self.rapl.as_mut() {
            runner.run(rapl);
        }
        if let Some(source) = self.replica.as_mut() {
            runner.run(&mut replica::ReplicaCollector {
                source,
                url: &self.replica_url,
                runtime: &self.runtime,
            });
        }
        // Pinning runs in its own loop; its last pass appears here as the "pinning"
        // collector, in the same place of the list.
        let pinning = pinning_status(
            self.pinning.as_ref(),
            &self.pinning_disabled_reason,
            &mut runner.statuses,
        );
        runner.run(&mut SelftestCrypto(&self.crypto));
        let Runner {
            statuses, readings, ..
        } = runner;
        self.snapshot(now, statuses, readings, pinning)
    }

    /// The snapshot of one cycle, from what its collectors read.
    fn snapshot(
        &mut self,
        now: f64,
        statuses: Vec<CollectorStatus>,
        readings: Readings,
        pinning: PinningStatus,
    ) -> Snapshot {
        let replica = ReplicaStatus {
            url: self.replica_url.clone(),
            up: readings.replica.is_some(),
            health: readings.replica,
        };
        let stats = readings.crypto.unwrap_or_else(|| self.crypto.stats.clone());
        let crypto = CryptoStatus {
            report: self.crypto.report.clone(),
            selftest: self.crypto.selftest.clone(),
            offloaded_cpu_seconds: offloaded_cpu_seconds(&stats, &self.cpu_seconds_per_item),
            stats,
            kernel_loads: self.crypto.kernel_loads.clone(),
        };
        let cost = self.cost.update(
            now,
            &readings.gpus,
            readings.cpu_energy.as_ref(),
            replica.health.as_ref(),
        );
        self.cycle += 1;
        Snapshot {
            taken_at_unix_seconds: now,
            cycle: self.cycle,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            node: self.node.clone(),
            collectors: statuses,
            disabled_collectors: self.disabled.clone(),
            gpus: readings.gpus,
            crypto,
            pinning,
            replica,
            cpu_energy: readings.cpu_energy,
            cost,
        }
    }
}

/// The pinning loop's last pass (its run joins `statuses`), or pinning off with its reason.
fn pinning_status(
    board: Option<&PinningBoard>,
    disabled_reason: &Option<String>,
    statuses: &mut Vec<CollectorStatus>,
) -> PinningStatus {
    match board {
        Some(board) => {
            let report = board.latest();
            statuses.extend(report.run);
            report.status
        }
        None => PinningStatus {
            enabled: false,
            inactive_reason: disabled_reason.clone(),
            ..PinningStatus::default()
        },
    }
}

/// The collectors' metric families: each collector's last run.
pub fn encode_metrics(collectors: &[CollectorStatus], families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_collector_up",
        "Whether the collector's last run read its source without error.",
        None,
        &collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], flag(c.up)))
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_collector_scrape_duration",
        "How long the collector's last run took.",
        Some(Unit::Seconds),
        &collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], c.duration_seconds))
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
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
