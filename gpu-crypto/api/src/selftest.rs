//! The verdict of the crypto selftest (run by `gpu_crypto::selftest::run`): the engine's
//! report, one check per operation and the engine's counters afterwards. It serialises to
//! JSON and back, so that a caller can run the selftest in a short-lived child process (the
//! node agent does: a CUDA context then never lives in the long-running daemon) and read
//! the verdict from its output.

use crate::operation::Operation;
use crate::report::EngineReport;
use crate::stats::{Executed, StatsSnapshot};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// At most this many problems are shown per operation in [`OperationCheck::line`] (all are
/// kept in the report).
const MAX_SHOWN: usize = 5;

/// The verdict on one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationCheck {
    /// The operation checked.
    pub operation: Operation,
    /// Items compared (points, MSM points, signatures, chunks).
    pub items: usize,
    /// Empty when the operation passed.
    pub problems: Vec<String>,
}

impl OperationCheck {
    /// A passing check of `operation` with nothing compared yet.
    pub fn new(operation: Operation) -> OperationCheck {
        OperationCheck {
            operation,
            items: 0,
            problems: Vec::new(),
        }
    }

    /// Whether no problem was found.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// `PASS op: ...` or `FAIL op: ...` with the first problems indented below.
    pub fn line(&self) -> String {
        let mut line = if self.problems.is_empty() {
            format!(
                "PASS {}: {} items identical to the CPU reference and as expected",
                self.operation, self.items
            )
        } else {
            format!(
                "FAIL {}: {} problem(s) in {} items",
                self.operation,
                self.problems.len(),
                self.items
            )
        };
        for p in self.problems.iter().take(MAX_SHOWN) {
            let _ = write!(line, "\n    {p}");
        }
        if self.problems.len() > MAX_SHOWN {
            let _ = write!(
                line,
                "\n    ... and {} more",
                self.problems.len() - MAX_SHOWN
            );
        }
        line
    }
}

/// Everything a selftest found: the engine's report (paths, GPU state), the verdict per
/// operation, and the engine's counters afterwards (where each operation really ran, and
/// any CPU recomputation after a GPU failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelftestReport {
    /// Seed of the random inputs, to reproduce a run.
    pub seed: u64,
    /// The engine's report at the start of the run.
    pub engine: EngineReport,
    /// One verdict per operation.
    pub operations: Vec<OperationCheck>,
    /// The engine's counters after the run.
    pub stats: StatsSnapshot,
    /// Whether every operation passed.
    pub passed: bool,
}

impl SelftestReport {
    /// `ran op: cpu N call(s) M item(s), gpu ...` per operation, from the engine's counters,
    /// then one line per kind of CPU recomputation after a GPU failure.
    pub fn execution_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for op in Operation::ALL {
            let count = |on: Executed| {
                self.stats
                    .operations
                    .iter()
                    .find(|c| c.operation == op && c.executed == on)
                    .map_or((0, 0), |c| (c.calls, c.items))
            };
            let (cpu_calls, cpu_items) = count(Executed::Cpu);
            let (gpu_calls, gpu_items) = count(Executed::Gpu);
            lines.push(format!(
                "ran {op}: cpu {cpu_calls} call(s) {cpu_items} item(s), gpu {gpu_calls} call(s) {gpu_items} item(s)"
            ));
        }
        for fallback in &self.stats.fallbacks {
            lines.push(format!(
                "recomputed on the CPU after a GPU failure: {} ({}) x{}",
                fallback.operation, fallback.reason, fallback.count
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Fallback;
    use crate::report::GpuStatus;

    #[test]
    fn report_round_trips_through_json() {
        let report = SelftestReport {
            seed: 7,
            engine: EngineReport {
                gpu: GpuStatus::Unusable {
                    reason: "no driver".into(),
                },
                fallback: Fallback::RecomputeOnCpu,
                operations: Vec::new(),
            },
            operations: vec![OperationCheck {
                operation: Operation::Msm,
                items: 3,
                problems: vec!["item 1 differs".into()],
            }],
            stats: StatsSnapshot {
                operations: Vec::new(),
                fallbacks: Vec::new(),
                gpu_errors: Vec::new(),
            },
            passed: false,
        };
        let json = serde_json::to_string(&report).unwrap();
        assert_eq!(
            serde_json::from_str::<SelftestReport>(&json).unwrap(),
            report
        );
        assert!(
            report.operations[0]
                .line()
                .starts_with("FAIL msm: 1 problem(s) in 3 items")
        );
    }
}
