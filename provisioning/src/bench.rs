//! The benchmark document of `gpu-crypto bench --json` (schema
//! `sovereign-node/gpu-crypto-bench/v1`), and how the planner picks an entry from it.
//!
//! A document (or an entry) whose `source` is not `measured` carries figures someone wrote
//! down rather than this bench measured (`research`, `transcribed`); the plan says so next
//! to every figure computed from them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const BENCH_SCHEMA: &str = "sovereign-node/gpu-crypto-bench/v1";

#[derive(Debug, Error)]
pub enum BenchError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchFile {
    pub schema: String,
    /// `measured` (by `gpu-crypto bench`), `research` or `transcribed`.
    pub source: String,
    pub date_utc: String,
    #[serde(default)]
    pub git_describe: Option<String>,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub quick: bool,
    pub machine: BenchMachine,
    pub results: Vec<BenchEntry>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchMachine {
    #[serde(default)]
    pub cpu_model: Option<String>,
    pub logical_cpus: usize,
    pub cpu_threads: usize,
    #[serde(default)]
    pub gpu_name: Option<String>,
    #[serde(default)]
    pub kernel: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchEntry {
    pub op: String,
    pub backend: String,
    pub executed_on: String,
    pub batch: usize,
    #[serde(default)]
    pub msms: Option<usize>,
    #[serde(default)]
    pub points_per_msm: Option<usize>,
    #[serde(default)]
    pub subnet_size: Option<usize>,
    #[serde(default)]
    pub repetitions: usize,
    pub seconds_per_call: f64,
    pub seconds_per_item: f64,
    pub items_per_second: f64,
    pub threads: usize,
    pub source: String,
    /// Where a non-measured figure comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// The operations the planner needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchOp {
    Decompress,
    MsmBatch,
    Sha256Chunk,
    BlsVerifySameMessage,
}

impl BenchOp {
    pub fn name(self) -> &'static str {
        match self {
            BenchOp::Decompress => "decompress",
            BenchOp::MsmBatch => "msm_batch",
            BenchOp::Sha256Chunk => "sha256_1mib",
            BenchOp::BlsVerifySameMessage => "bls_verify_same_message",
        }
    }
}

impl BenchFile {
    pub fn load(path: &Path) -> Result<BenchFile, BenchError> {
        let bytes = std::fs::read(path).map_err(|source| BenchError::Io {
            path: path.to_owned(),
            source,
        })?;
        let bad = |reason: String| BenchError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let doc: BenchFile = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("not a gpu-crypto bench document: {e}")))?;
        if doc.schema != BENCH_SCHEMA {
            return Err(bad(format!(
                "schema {:?}, expected {BENCH_SCHEMA:?}",
                doc.schema
            )));
        }
        for (i, e) in doc.results.iter().enumerate() {
            let finite = [e.seconds_per_call, e.seconds_per_item, e.items_per_second];
            if e.batch == 0 || e.threads == 0 || finite.iter().any(|x| !x.is_finite() || *x <= 0.0)
            {
                return Err(bad(format!(
                    "results[{i}] ({} {}): batch, threads and times must be positive",
                    e.op, e.backend
                )));
            }
            if !matches!(e.backend.as_str(), "cpu" | "gpu") {
                return Err(bad(format!(
                    "results[{i}]: backend {:?} is not cpu or gpu",
                    e.backend
                )));
            }
        }
        Ok(doc)
    }

    /// Whether the file has a usable GPU figure for `op`.
    pub fn has(&self, op: BenchOp, backend: &str) -> bool {
        self.candidates(op, backend).next().is_some()
    }

    fn candidates<'a>(
        &'a self,
        op: BenchOp,
        backend: &'a str,
    ) -> impl Iterator<Item = &'a BenchEntry> + 'a {
        // An entry whose calls did not all run where it says (a GPU entry recomputed on the
        // CPU) is not a figure for that backend.
        self.results
            .iter()
            .filter(move |e| e.op == op.name() && e.backend == backend && e.executed_on == backend)
    }

    /// The entry of `op` on `backend` whose size is nearest to `size` by ratio (for
    /// `msm_batch` the points per MSM, otherwise the batch); ties go to the larger.
    pub fn pick<'a>(&'a self, op: BenchOp, backend: &'a str, size: u64) -> Option<&'a BenchEntry> {
        let key = |e: &BenchEntry| -> f64 {
            let s = match op {
                BenchOp::MsmBatch => e.points_per_msm.unwrap_or(e.batch),
                _ => e.batch,
            } as f64;
            (s / size.max(1) as f64).ln().abs()
        };
        self.candidates(op, backend).min_by(|a, b| {
            key(a)
                .total_cmp(&key(b))
                .then_with(|| b.batch.cmp(&a.batch))
        })
    }

    /// How the file describes where it was measured.
    pub fn describe(&self) -> String {
        let gpu = self.machine.gpu_name.as_deref().unwrap_or("no GPU");
        format!(
            "{} on {} ({} CPU threads) + {gpu}, {}{}",
            self.source,
            self.machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.machine.cpu_threads,
            self.date_utc,
            if self.quick { ", --quick" } else { "" }
        )
    }
}
