//! The benchmark document `gpu-crypto bench --json` writes and the subnet planner
//! (`provision plan --bench`) reads: what each operation costs on one machine.
//!
//! `source` says where figures come from: `measured` (by `gpu-crypto bench`), or figures
//! someone wrote down (`research`, `transcribed`), which the planner marks as such.

use crate::report::GpuStatus;
use serde::{Deserialize, Serialize};

/// `schema` of the document; bumped on any incompatible change.
pub const BENCH_SCHEMA: &str = "sovereign-node/gpu-crypto-bench/v1";

/// One benchmark document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchDocument {
    /// [`BENCH_SCHEMA`] for a document of this version.
    pub schema: String,
    /// `measured`, `research` or `transcribed`.
    pub source: String,
    /// When the figures were taken or written down, in UTC (`YYYY-MM-DDTHH:MM:SSZ` when
    /// measured).
    pub date_utc: String,
    /// The same moment in seconds since the Unix epoch, for measured documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_time: Option<u64>,
    /// `git describe` of the tree the bench was built from.
    #[serde(default)]
    pub git_describe: Option<String>,
    /// The command line that produced the document.
    #[serde(default)]
    pub command: String,
    /// Whether the bench ran its quick plan (`--quick`).
    #[serde(default)]
    pub quick: bool,
    /// The `--backend` the bench ran with (`cpu`, `gpu`, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_requested: Option<String>,
    /// The machine measured.
    pub machine: BenchMachine,
    /// The GPU as the engine found it (`not_requested`, `unusable` with the reason, `ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuStatus>,
    /// One entry per operation, shape and backend.
    pub results: Vec<BenchEntry>,
    /// What was not measured, and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The machine a document was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchMachine {
    /// `model name` of /proc/cpuinfo (the first CPU).
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// CPUs the bench process could run on.
    pub logical_cpus: usize,
    /// Threads of the CPU path's pool (rayon); blst's MSM uses as many.
    pub cpu_threads: usize,
    /// The device of a [`GpuStatus::Ready`] GPU; `None` when no GPU was usable.
    #[serde(default)]
    pub gpu_name: Option<String>,
    /// The Linux kernel release (`/proc/sys/kernel/osrelease`).
    #[serde(default)]
    pub kernel: Option<String>,
}

/// One shape of one operation on one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchEntry {
    /// `decompress` (G1), `decompress_g2`, `pairing_products`, `msm`, `msm_batch`,
    /// `msm_shared_u8`, `bls_verify_distinct`, `bls_verify_same_message`, `sha256_1mib`;
    /// `nidkg_verify` (one dealing verified, batch 1) and `nidkg_dkg_round` (the 2n
    /// dealings of a round verified one after another, batch 2n).
    pub op: String,
    /// The backend the entry was measured for: `cpu` or `gpu`.
    pub backend: String,
    /// Where the timed calls ran by the engine's counters: `cpu`, `gpu` or `mixed`.
    pub executed_on: String,
    /// Items per call (points, signatures, chunks; for `msm_batch` all points of the call).
    pub batch: usize,
    /// `msm_batch`: independent MSMs per call and points in each (msms * points = batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msms: Option<usize>,
    /// `msm_batch`: points in each MSM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points_per_msm: Option<usize>,
    /// The subnet size this shape stands for (n*16 points), where it stands for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_size: Option<usize>,
    /// Timed calls the median is taken over.
    #[serde(default)]
    pub repetitions: usize,
    /// The median call.
    pub seconds_per_call: f64,
    /// The fastest timed call, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_call_min: Option<f64>,
    /// The slowest timed call, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_call_max: Option<f64>,
    /// `seconds_per_call / batch`.
    pub seconds_per_item: f64,
    /// `batch / seconds_per_call`.
    pub items_per_second: f64,
    /// The algorithm, where one op is measured with several (`msm_shared_u8`: the engine's
    /// path on either backend and the CPU peers measured in the same run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// Host threads busy during a call: the CPU pool for `cpu`, one driving thread for `gpu`.
    pub threads: usize,
    /// Where this entry's figure comes from, as the document's `source`.
    pub source: String,
    /// Where a figure that was not measured comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// `nidkg_verify`: the median seconds of each phase of one dealing verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<DealingPhases>,
    /// `nidkg_verify`, `nidkg_dkg_round`: the median call's host CPU time, the process's
    /// user plus system seconds over all its threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu_seconds_per_call: Option<f64>,
}

/// Seconds of the phases of one NI-DKG dealing verification (`nidkg::PhaseTimes`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DealingPhases {
    /// Decoding every point (subgroup checks) and scalar.
    pub deserialize: f64,
    /// Ciphertext integrity: 16 products of three pairings.
    pub integrity: f64,
    /// The chunking proof.
    pub chunking: f64,
    /// The sharing proof.
    pub sharing: f64,
}
