//! What the background collectors saw at one instant. /metrics, /v1/status and the
//! dashboard only read the latest snapshot; no request ever touches NVML, sysfs or the
//! replica.

use crate::assessment::NodeAssessment;
use crate::selftest_child::CryptoStatus;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Unix time of the collection cycle, seconds.
    pub taken_at_unix_seconds: f64,
    /// How many collection cycles have completed (0: none yet).
    pub cycle: u64,
    pub agent_version: String,
    pub node: NodeAssessment,
    pub collectors: Vec<CollectorStatus>,
    /// Collectors not running on this node, with the reason (e.g. no NVML on a CPU node).
    pub disabled_collectors: Vec<DisabledCollector>,
    pub gpus: Vec<GpuSample>,
    pub crypto: CryptoStatus,
    pub pinning: PinningStatus,
    pub replica: ReplicaStatus,
    pub cpu_energy: Option<CpuEnergy>,
    pub cost: CostStatus,
}

/// A collector not running on this node, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DisabledCollector {
    pub name: String,
    pub reason: String,
}

/// One collector's last run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CollectorStatus {
    pub name: String,
    /// The last run read its source without error.
    pub up: bool,
    pub duration_seconds: f64,
    pub last_success_unix_seconds: Option<f64>,
    /// Why the last run failed (or what it could not read), if it did.
    pub error: Option<String>,
}

/// One GPU as NVML reports it. Each reading is optional: NVML answers "not supported"
/// for some of them on some boards, and the sample says so in `unsupported`.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GpuSample {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    /// NVML's PCI bus id (`00000000:3B:00.0`); absent in samples recorded before it was.
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    pub driver_version: String,
    pub power_watts: Option<f64>,
    /// NVML's energy counter (since the driver loaded), joules.
    pub energy_joules: Option<f64>,
    pub temperature_celsius: Option<f64>,
    pub utilization_gpu_ratio: Option<f64>,
    pub utilization_memory_ratio: Option<f64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub clock_graphics_hertz: Option<f64>,
    pub clock_sm_hertz: Option<f64>,
    pub clock_memory_hertz: Option<f64>,
    /// Throttle reasons NVML reports as active (snake_case names).
    pub throttle_reasons_active: Vec<String>,
    pub ecc_corrected_errors_total: Option<u64>,
    pub ecc_uncorrected_errors_total: Option<u64>,
    /// Confidential-computing mode of the system's GPUs (NVML conf-compute settings).
    pub cc_enabled: Option<bool>,
    /// Xid errors of this GPU in the kernel log since the agent started: (xid, count).
    pub xid_errors: Vec<(u64, u64)>,
    /// Readings NVML could not give, with its reason.
    pub unsupported: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PinningStatus {
    pub enabled: bool,
    /// Why pinning is not active, when it is not.
    pub inactive_reason: Option<String>,
    pub replica_pid: Option<u32>,
    /// Whether the slice's AllowedCPUs= was set through systemd.
    pub slice_allowed_cpus: Option<String>,
    pub pools: Vec<PoolPinning>,
    /// Times the pins were (re)applied because a new replica process appeared.
    pub reapplied_total: u64,
    pub errors_total: u64,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PoolPinning {
    pub pool: String,
    /// The profile's CPU set, as a list ("0-3,8").
    pub cpus: String,
    pub threads: u64,
    /// Threads allowed on, or last run on, a CPU outside the pool's set.
    pub drifted_threads: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReplicaStatus {
    pub url: String,
    pub up: bool,
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

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HistogramTotals {
    pub label: String,
    pub sum_seconds: f64,
    pub count: f64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CpuEnergy {
    /// Package energy accumulated by the agent since it started (RAPL, wraps handled).
    pub joules_total: f64,
    pub power_watts: Option<f64>,
    pub zones: u32,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CostStatus {
    pub capex_eur_per_hour: f64,
    pub energy_eur_per_hour: f64,
    pub eur_per_hour: f64,
    /// Measured power (GPU + CPU package) plus the configured unmeasured power.
    pub power_watts: f64,
    /// Energy the agent accounted since it started (measured + unmeasured), joules.
    pub energy_joules_total: f64,
    pub joules_per_certified_block: Option<f64>,
    pub eur_per_certified_block: Option<f64>,
    /// Which sources the power figure is made of ("gpu0", "cpu_package", "unmeasured").
    pub power_sources: Vec<String>,
}
