//! What an engine reports about itself: whether its GPU is usable, which backend serves
//! each operation and why, and how its GPU programs were obtained.

use crate::operation::Operation;
use crate::policy::{BackendChoice, Fallback};
use serde::{Deserialize, Serialize};

/// Whether the GPU is usable, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GpuStatus {
    /// The policy runs everything on the CPU; the GPU was not opened.
    NotRequested,
    /// The policy wanted the GPU but it could not be opened.
    Unusable {
        /// Why it could not be opened.
        reason: String,
    },
    /// Opened, kernels compiled and loaded.
    Ready {
        /// The device's name.
        device: String,
    },
}

/// How one operation is served under the current policy and GPU state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationPath {
    /// The operation described.
    pub operation: Operation,
    /// The policy's backend for it.
    pub backend: BackendChoice,
    /// The policy's crossover (items per batch) under `Auto`.
    pub gpu_min_batch: usize,
    /// Plain words: which backend serves which batches, and why.
    pub explanation: String,
}

/// What the engine does and why: reported by the CLI's selftest and the node agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineReport {
    /// Whether the GPU is usable.
    pub gpu: GpuStatus,
    /// What a failed GPU call does.
    pub fallback: Fallback,
    /// How each operation is served, in [`Operation::ALL`] order.
    pub operations: Vec<OperationPath>,
}

/// One counter of how this process obtained its GPU programs: `outcome` (precompiled,
/// cache, compiled, skipped or refused) with the reason kind. The node agent exports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLoadCount {
    /// `precompiled`, `cache`, `compiled`, `skipped` or `refused`.
    pub outcome: String,
    /// The reason kind (a short, bounded label).
    pub reason: String,
    /// Kernel loads with this outcome and reason.
    pub count: u64,
}
