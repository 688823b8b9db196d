//! Counts of what ran where, and of every CPU recomputation after a GPU failure, as an
//! engine reports them. The node agent exports these as Prometheus metrics.

use crate::operation::Operation;
use serde::{Deserialize, Serialize};

/// Where one call actually ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executed {
    Cpu,
    Gpu,
}

impl Executed {
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationCount {
    pub operation: Operation,
    pub executed: Executed,
    pub calls: u64,
    pub items: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    pub operation: Operation,
    pub reason: String,
    pub count: u64,
}

/// A consistent-enough copy of the counters (each counter is read atomically).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    pub operations: Vec<OperationCount>,
    /// CPU recomputations after a GPU failure, by reason kind.
    pub fallbacks: Vec<ReasonCount>,
    /// GPU failures, by reason kind (whether or not the CPU recomputed).
    pub gpu_errors: Vec<ReasonCount>,
}
