//! Counts of what ran where, and of every CPU recomputation after a GPU failure, as an
//! engine reports them. The node agent exports these as Prometheus metrics.

use crate::operation::Operation;
use serde::{Deserialize, Serialize};

/// Where one call actually ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executed {
    /// The CPU path (by policy, a small batch, or a recomputation).
    Cpu,
    /// The GPU.
    Gpu,
}

impl Executed {
    /// `cpu` or `gpu`, as in metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Executed::Cpu => "cpu",
            Executed::Gpu => "gpu",
        }
    }
}

impl std::fmt::Display for Executed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Calls of one operation that ran on one backend, and their items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationCount {
    /// The operation counted.
    pub operation: Operation,
    /// The backend the calls ran on.
    pub executed: Executed,
    /// Calls since the engine started.
    pub calls: u64,
    /// Items of those calls (the unit of the operation's `gpu_min_batch`).
    pub items: u64,
}

/// How often one operation met one kind of event (a GPU error, a CPU recomputation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// The operation counted.
    pub operation: Operation,
    /// The reason kind: a short, bounded label (a metric label value), not the full text.
    pub reason: String,
    /// Occurrences since the engine started.
    pub count: u64,
}

/// A consistent-enough copy of the counters (each counter is read atomically).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Calls and items per operation and backend.
    pub operations: Vec<OperationCount>,
    /// CPU recomputations after a GPU failure, by reason kind.
    pub fallbacks: Vec<ReasonCount>,
    /// GPU failures, by reason kind (whether or not the CPU recomputed).
    pub gpu_errors: Vec<ReasonCount>,
}
