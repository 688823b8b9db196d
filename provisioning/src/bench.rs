//! The benchmark document of `gpu-crypto bench --json` (schema
//! `sovereign-node/gpu-crypto-bench/v1`), and how the planner picks an entry from it.
//!
//! A document (or an entry) whose `source` is not `measured` carries figures someone wrote
//! down rather than this bench measured (`research`, `transcribed`); the plan says so next
//! to every figure computed from them.

use std::path::{Path, PathBuf};

pub use gpu_crypto_api::bench::{BENCH_SCHEMA, BenchDocument, BenchEntry, BenchMachine};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a benchmark file did not load.
#[derive(Debug, Error)]
pub enum BenchError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The benchmark file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Not a bench document of [`BENCH_SCHEMA`], or an entry with non-positive figures or an
    /// unknown backend.
    #[error("{path}: {reason}")]
    Invalid {
        /// The benchmark file.
        path: PathBuf,
        /// What is wrong, naming the entry.
        reason: String,
    },
}

/// A benchmark document as the planner reads it (the document itself is
/// [`BenchDocument`], shared with the `gpu-crypto bench` command that writes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BenchFile(pub BenchDocument);

impl std::ops::Deref for BenchFile {
    type Target = BenchDocument;

    fn deref(&self) -> &BenchDocument {
        &self.0
    }
}

/// The operations the planner needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchOp {
    /// One NI-DKG dealing verification (`nidkg_verify`).
    NidkgVerify,
    /// SHA-256 of one 1 MiB state chunk (`sha256_1mib`).
    Sha256Chunk,
    /// BLS signature verification of many signatures on one message
    /// (`bls_verify_same_message`).
    BlsVerifySameMessage,
}

impl BenchOp {
    /// The `op` name of the operation's entries in the bench document.
    pub fn name(self) -> &'static str {
        match self {
            BenchOp::NidkgVerify => "nidkg_verify",
            BenchOp::Sha256Chunk => "sha256_1mib",
            BenchOp::BlsVerifySameMessage => "bls_verify_same_message",
        }
    }
}

impl BenchFile {
    /// Reads and checks a bench document: its schema, positive batch, threads and times in
    /// every entry, backends `cpu` or `gpu`.
    pub fn load(path: &Path) -> Result<BenchFile, BenchError> {
        let bytes = std::fs::read(path).map_err(|source| BenchError::Io {
            path: path.to_owned(),
            source,
        })?;
        let bad = |reason: String| BenchError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let doc: BenchDocument = serde_json::from_slice(&bytes)
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
        Ok(BenchFile(doc))
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
        self.results.iter().filter(move |e| {
            e.op == op.name()
                && e.backend == backend
                && match op {
                    // GPU-assisted: some of a dealing's batches run on the CPU by design
                    // (`mixed`); one that ran wholly on the CPU is no GPU figure.
                    // The default policy's figure: not a variant (`offload`) measured beside it.
                    BenchOp::NidkgVerify => {
                        e.threads == 1
                            && e.algorithm.is_none()
                            && e.subnet_size.is_some()
                            && (e.executed_on == backend
                                || (backend == "gpu" && e.executed_on == "mixed"))
                    }
                    // An entry whose calls did not all run where it says (a GPU entry
                    // recomputed on the CPU) is not a figure for that backend.
                    _ => e.executed_on == backend,
                }
        })
    }

    /// The entry of `op` on `backend` whose size is nearest to `size` by ratio (for
    /// `nidkg_verify` the subnet size among the one-thread entries, otherwise the batch);
    /// ties go to the larger.
    pub fn pick<'a>(&'a self, op: BenchOp, backend: &'a str, size: u64) -> Option<&'a BenchEntry> {
        let key = |e: &BenchEntry| -> f64 {
            let s = match op {
                BenchOp::NidkgVerify => e.subnet_size.unwrap_or(e.batch),
                _ => e.batch,
            } as f64;
            (s / size.max(1) as f64).ln().abs()
        };
        self.candidates(op, backend).min_by(|a, b| {
            key(a)
                .total_cmp(&key(b))
                .then_with(|| b.subnet_size.cmp(&a.subnet_size))
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
