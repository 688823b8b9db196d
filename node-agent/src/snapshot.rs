//! What the background collectors saw at one instant. /metrics, /v1/status and the
//! dashboard only read the latest snapshot; no request ever touches NVML, sysfs or the
//! replica.

use crate::assessment::NodeAssessment;
use crate::selftest_child::CryptoStatus;
use serde::Serialize;

/// One collection cycle's view of the node: what /metrics, /v1/status and the dashboard
/// serve until the next cycle.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Unix time of the collection cycle, seconds.
    pub taken_at_unix_seconds: f64,
    /// How many collection cycles have completed (0: none yet).
    pub cycle: u64,
    /// The agent's version (its crate version).
    pub agent_version: String,
    /// The node's probe, profile and readiness, as assessed at start.
    pub node: NodeAssessment,
    /// Each running collector's last pass, in collection order.
    pub collectors: Vec<CollectorStatus>,
    /// Collectors not running on this node, with the reason (e.g. no NVML on a CPU node).
    pub disabled_collectors: Vec<DisabledCollector>,
    /// One sample per GPU; empty when the GPU collector is off or failed.
    pub gpus: Vec<GpuSample>,
    /// The crypto path and selftest result, with the crypto counters.
    pub crypto: CryptoStatus,
    /// The pinning loop's last pass.
    pub pinning: PinningStatus,
    /// The replica's metrics endpoint and the health read from it.
    pub replica: ReplicaStatus,
    /// CPU package energy; `None` without RAPL or when it could not be read.
    pub cpu_energy: Option<CpuEnergy>,
    /// The running cost estimate.
    pub cost: CostStatus,
}

/// A collector not running on this node, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DisabledCollector {
    /// The collector's name, as in its `collector` label.
    pub name: String,
    /// Why it does not run, in words.
    pub reason: String,
}

/// One collector's last run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CollectorStatus {
    /// The collector's name: its `collector` label.
    pub name: String,
    /// The last run read its source without error.
    pub up: bool,
    /// How long the last run took, seconds.
    pub duration_seconds: f64,
    /// Unix time of the last successful run, seconds; `None` when none has succeeded.
    pub last_success_unix_seconds: Option<f64>,
    /// Why the last run failed (or what it could not read), if it did.
    pub error: Option<String>,
}

/// One GPU as NVML reports it. Each reading is optional: NVML answers "not supported"
/// for some of them on some boards, and the sample says so in `unsupported`.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GpuSample {
    /// NVML's index of the GPU.
    pub index: u32,
    /// The product name ("NVIDIA H200").
    pub name: String,
    /// The GPU's UUID (`GPU-...`).
    pub uuid: String,
    /// NVML's PCI bus id (`00000000:3B:00.0`); absent in samples recorded before it was.
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    /// The NVIDIA driver's version.
    pub driver_version: String,
    /// Power draw, watts.
    pub power_watts: Option<f64>,
    /// NVML's energy counter (since the driver loaded), joules.
    pub energy_joules: Option<f64>,
    /// GPU temperature, degrees Celsius.
    pub temperature_celsius: Option<f64>,
    /// Fraction of the last sample period a kernel ran on the GPU (0 to 1).
    pub utilization_gpu_ratio: Option<f64>,
    /// Fraction of the last sample period device memory was read or written (0 to 1).
    pub utilization_memory_ratio: Option<f64>,
    /// Device memory in use, bytes.
    pub memory_used_bytes: Option<u64>,
    /// Device memory in total, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Graphics clock, hertz.
    pub clock_graphics_hertz: Option<f64>,
    /// SM clock, hertz.
    pub clock_sm_hertz: Option<f64>,
    /// Memory clock, hertz.
    pub clock_memory_hertz: Option<f64>,
    /// Throttle reasons NVML reports as active (snake_case names).
    pub throttle_reasons_active: Vec<String>,
    /// Corrected ECC errors since the driver loaded (NVML volatile counter).
    pub ecc_corrected_errors_total: Option<u64>,
    /// Uncorrected ECC errors since the driver loaded (NVML volatile counter).
    pub ecc_uncorrected_errors_total: Option<u64>,
    /// Confidential-computing mode of the system's GPUs (NVML conf-compute settings).
    pub cc_enabled: Option<bool>,
    /// Xid errors of this GPU in the kernel log since the agent started: (xid, count).
    pub xid_errors: Vec<(u64, u64)>,
    /// Readings NVML could not give, with its reason.
    pub unsupported: Vec<String>,
}

/// What the pinning loop did in its last pass.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PinningStatus {
    /// Pinning is on for this node.
    pub enabled: bool,
    /// Why pinning is not active, when it is not.
    pub inactive_reason: Option<String>,
    /// The replica process pinned; `None` when it is not running or was not found.
    pub replica_pid: Option<u32>,
    /// The slice's effective CPU set (`cpuset.cpus` of its cgroup), as a list; `None`
    /// while it is not set or where systemd does not manage the node.
    pub slice_allowed_cpus: Option<String>,
    /// Each pool's CPU set and threads, in the pinning plan's order.
    pub pools: Vec<PoolPinning>,
    /// Times the pins were (re)applied because a new replica process appeared.
    pub reapplied_total: u64,
    /// Pinning errors since the agent started.
    pub errors_total: u64,
    /// The latest pinning error; `None` when there has been none.
    pub last_error: Option<String>,
}

/// One thread pool's pinning: its CPU set and its threads.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PoolPinning {
    /// The pool's name (a profile pool kind: "consensus", "execution", ...).
    pub pool: String,
    /// The profile's CPU set, as a list ("0-3,8").
    pub cpus: String,
    /// The replica's threads of this pool, by name.
    pub threads: u64,
    /// Threads allowed on, or last run on, a CPU outside the pool's set.
    pub drifted_threads: u64,
}

/// The replica as the agent sees it through its metrics endpoint.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReplicaStatus {
    /// The replica's metrics URL (empty when none is configured).
    pub url: String,
    /// The last scrape read the replica's page.
    pub up: bool,
    /// The health figures of the last good scrape; `None` when the scrape failed.
    pub health: Option<ReplicaHealth>,
}

/// Read from the replica's own /metrics (names as the IC replica exports them).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReplicaHealth {
    /// artifact_pool_consensus_height_stat{pool_type="validated",stat="max",type="finalization"}
    pub finalized_height: Option<f64>,
    /// state_manager_latest_certified_height
    pub certified_height: Option<f64>,
    /// consensus_batch_height
    pub batch_height: Option<f64>,
    /// state_manager_checkpoint_op_duration_seconds{op=...}: (op, sum seconds, count)
    pub checkpoint_ops: Vec<HistogramTotals>,
    /// crypto_duration_seconds{domain="ni_dkg",scope="full",method_name=...}
    pub ni_dkg_ops: Vec<HistogramTotals>,
}

impl ReplicaHealth {
    /// Finalized height minus certified height: how far state certification trails.
    pub fn certification_lag_blocks(&self) -> Option<f64> {
        Some(self.finalized_height? - self.certified_height?)
    }
}

/// A histogram's totals for one label value: the `_sum` and `_count` samples.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HistogramTotals {
    /// The value of the label the totals are kept per (the operation or method).
    pub label: String,
    /// Sum of the observed durations, seconds.
    pub sum_seconds: f64,
    /// Number of observations.
    pub count: f64,
}

/// CPU package energy from RAPL.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CpuEnergy {
    /// Package energy accumulated by the agent since it started (RAPL, wraps handled).
    pub joules_total: f64,
    /// Package power since the previous read, watts; `None` on the first read.
    pub power_watts: Option<f64>,
    /// RAPL package zones read.
    pub zones: u32,
}

/// The running cost estimate of one collection cycle.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CostStatus {
    /// The purchase price's share, EUR per hour.
    pub capex_eur_per_hour: f64,
    /// Energy at the current power and the configured price, EUR per hour.
    pub energy_eur_per_hour: f64,
    /// Capex plus energy, EUR per hour.
    pub eur_per_hour: f64,
    /// Measured power (GPU + CPU package) plus the configured unmeasured power.
    pub power_watts: f64,
    /// Energy the agent accounted since it started (measured + unmeasured), joules.
    pub energy_joules_total: f64,
    /// Energy per certified block since the agent first saw the replica, joules; `None`
    /// until the certified height has grown.
    pub joules_per_certified_block: Option<f64>,
    /// Capex share plus energy per certified block since the agent first saw the replica,
    /// EUR; `None` until the certified height has grown.
    pub eur_per_certified_block: Option<f64>,
    /// Which sources the power figure is made of ("gpu0", "cpu_package", "unmeasured").
    pub power_sources: Vec<String>,
}
