//! The engine's thread-safe counters of what ran where, and of every CPU recomputation
//! after a GPU failure; read as a [`StatsSnapshot`].

use gpu_crypto_api::operation::Operation;
use gpu_crypto_api::stats::{Executed, OperationCount, ReasonCount, StatsSnapshot};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
struct OpCounters {
    calls: [AtomicU64; 2],
    items: [AtomicU64; 2],
}

/// Thread-safe counters shared by all callers of one engine.
#[derive(Default)]
pub(crate) struct Counters {
    ops: [OpCounters; Operation::ALL.len()],
    /// (operation, reason kind) -> count. A short, bounded set of reason kinds.
    fallbacks: Mutex<BTreeMap<(Operation, String), u64>>,
    gpu_errors: Mutex<BTreeMap<(Operation, String), u64>>,
}

fn op_index(op: Operation) -> usize {
    match op {
        Operation::Decompress => 0,
        Operation::DecompressG2 => 1,
        Operation::Msm => 2,
        Operation::MsmSharedU8 => 3,
        Operation::MsmG2 => 4,
        Operation::PairingProducts => 5,
        Operation::BlsVerify => 6,
        Operation::Sha256 => 7,
    }
}

fn exec_index(e: Executed) -> usize {
    match e {
        Executed::Cpu => 0,
        Executed::Gpu => 1,
    }
}

impl Counters {
    pub(crate) fn record(&self, op: Operation, on: Executed, items: usize) {
        let c = &self.ops[op_index(op)];
        c.calls[exec_index(on)].fetch_add(1, Ordering::Relaxed);
        c.items[exec_index(on)].fetch_add(items as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_gpu_error(&self, op: Operation, kind: &str) {
        let mut m = self.gpu_errors.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((op, kind.to_string())).or_default() += 1;
    }

    pub(crate) fn record_fallback(&self, op: Operation, kind: &str) {
        let mut m = self.fallbacks.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((op, kind.to_string())).or_default() += 1;
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let mut operations = Vec::new();
        for op in Operation::ALL {
            for on in [Executed::Cpu, Executed::Gpu] {
                let c = &self.ops[op_index(op)];
                operations.push(OperationCount {
                    operation: op,
                    executed: on,
                    calls: c.calls[exec_index(on)].load(Ordering::Relaxed),
                    items: c.items[exec_index(on)].load(Ordering::Relaxed),
                });
            }
        }
        let collect = |m: &Mutex<BTreeMap<(Operation, String), u64>>| {
            m.lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|((op, reason), count)| ReasonCount {
                    operation: *op,
                    reason: reason.clone(),
                    count: *count,
                })
                .collect()
        };
        StatsSnapshot {
            operations,
            fallbacks: collect(&self.fallbacks),
            gpu_errors: collect(&self.gpu_errors),
        }
    }
}
