//! Backend policy: which backend runs each operation, the batch size from which the
//! GPU is used, and whether a failed GPU call may be recomputed on the CPU.
//! Hardware profiles translate into this type; it is also TOML/JSON-serialisable.

use crate::operation::{BlsItem, Operation};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which backend an operation runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BackendChoice {
    /// Always the CPU reference path.
    Cpu,
    /// Always the GPU; an unusable GPU is an error, never a quiet CPU answer.
    Gpu,
    /// The GPU for batches of at least `gpu_min_batch` items when a GPU is usable, else the CPU.
    #[default]
    Auto,
}

impl BackendChoice {
    /// The policy's spelling: `cpu`, `gpu` or `auto`.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Cpu => "cpu",
            BackendChoice::Gpu => "gpu",
            BackendChoice::Auto => "auto",
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens when a GPU call fails mid-operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Return the GPU error to the caller.
    Never,
    /// Recompute on the CPU; always counted and logged with the reason.
    #[default]
    RecomputeOnCpu,
}

/// Policy of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationPolicy {
    /// Where the operation runs.
    pub backend: BackendChoice,
    /// Under `Auto`, batches with fewer items than this run on the CPU (the GPU only
    /// wins with batches). Items: points (decompress, decompress_g2; msm, msm_g2: all points of
    /// the batch), scalars (msm_shared_u8: rows times bases), products (pairing_products),
    /// distinct messages (bls_verify, see [`bls_distinct_messages`]), chunks (sha256).
    pub gpu_min_batch: usize,
}

/// The whole backend policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// G1 point decompression.
    pub decompress: OperationPolicy,
    /// G2 point decompression.
    pub decompress_g2: OperationPolicy,
    /// G1 MSMs with full scalars.
    pub msm: OperationPolicy,
    /// Shared-base G1 MSMs with 8-bit scalars.
    pub msm_shared_u8: OperationPolicy,
    /// G2 MSMs with full scalars.
    pub msm_g2: OperationPolicy,
    /// Products of pairings checked against the identity.
    pub pairing_products: OperationPolicy,
    /// BLS signature verification.
    pub bls_verify: OperationPolicy,
    /// SHA-256 of domain-separated chunks (checkpoint hashing).
    pub sha256: OperationPolicy,
    /// What a failed GPU call does, for every operation.
    pub fallback: Fallback,
    /// Which CUDA device to open when any operation may use the GPU.
    #[serde(default)]
    pub gpu_device: usize,
}

impl Policy {
    /// Every operation on the CPU; the GPU is never opened.
    pub fn cpu_only() -> Policy {
        Policy::with_backend(BackendChoice::Cpu)
    }

    /// The GPU where it is usable and the batch is large enough, else the CPU.
    pub fn auto() -> Policy {
        Policy::with_backend(BackendChoice::Auto)
    }

    /// The same backend for every operation, default crossovers, CPU recomputation allowed
    /// (but for `Gpu`, where a failure must surface).
    pub fn with_backend(backend: BackendChoice) -> Policy {
        let op = |gpu_min_batch| OperationPolicy {
            backend,
            gpu_min_batch,
        };
        Policy {
            decompress: op(defaults::DECOMPRESS_GPU_MIN_BATCH),
            decompress_g2: op(defaults::DECOMPRESS_G2_GPU_MIN_BATCH),
            msm: op(defaults::MSM_GPU_MIN_BATCH),
            msm_shared_u8: op(defaults::MSM_SHARED_U8_GPU_MIN_BATCH),
            msm_g2: op(defaults::MSM_G2_GPU_MIN_BATCH),
            pairing_products: op(defaults::PAIRING_PRODUCTS_GPU_MIN_BATCH),
            bls_verify: op(defaults::BLS_VERIFY_GPU_MIN_BATCH),
            sha256: op(defaults::SHA256_GPU_MIN_BATCH),
            fallback: if backend == BackendChoice::Gpu {
                Fallback::Never
            } else {
                Fallback::RecomputeOnCpu
            },
            gpu_device: 0,
        }
    }

    /// The policy of `op`.
    pub fn operation(&self, op: Operation) -> &OperationPolicy {
        match op {
            Operation::Decompress => &self.decompress,
            Operation::DecompressG2 => &self.decompress_g2,
            Operation::Msm => &self.msm,
            Operation::MsmSharedU8 => &self.msm_shared_u8,
            Operation::MsmG2 => &self.msm_g2,
            Operation::PairingProducts => &self.pairing_products,
            Operation::BlsVerify => &self.bls_verify,
            Operation::Sha256 => &self.sha256,
        }
    }

    /// The policy of `op`, to change it.
    pub fn operation_mut(&mut self, op: Operation) -> &mut OperationPolicy {
        match op {
            Operation::Decompress => &mut self.decompress,
            Operation::DecompressG2 => &mut self.decompress_g2,
            Operation::Msm => &mut self.msm,
            Operation::MsmSharedU8 => &mut self.msm_shared_u8,
            Operation::MsmG2 => &mut self.msm_g2,
            Operation::PairingProducts => &mut self.pairing_products,
            Operation::BlsVerify => &mut self.bls_verify,
            Operation::Sha256 => &mut self.sha256,
        }
    }

    /// Whether any operation may run on the GPU, i.e. whether the engine opens it.
    pub fn wants_gpu(&self) -> bool {
        Operation::ALL
            .iter()
            .any(|op| self.operation(*op).backend != BackendChoice::Cpu)
    }
}

/// The size BLS verification's crossover is compared with: the number of distinct
/// (scheme, message) pairs of the batch. The CPU path combines items that share a message
/// into one pairing (a same-message batch of n shares costs two pairings and two MSMs),
/// while the GPU pays a Miller loop per item, so the GPU only wins with many messages.
pub fn bls_distinct_messages(items: &[BlsItem<'_>]) -> usize {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items
        .iter()
        .filter(|i| seen.insert((i.scheme, i.message)))
        .count()
}

/// Default crossovers (items per batch from which the GPU is used under `Auto`), measured
/// on an H200 machine against the CPU path on its 16 cores (docs/benchmarks.md).
/// Hardware profiles carry their own measured values; these serve unprofiled machines.
pub mod defaults {
    /// With the one-thread-per-point kernel: GPU faster from 256 points, CPU faster at 128
    /// (docs/results/crossover-decompress-sha256-h200). The small-batch kernel moves the
    /// H200's crossover to a few points; its profile says 16.
    pub const DECOMPRESS_GPU_MIN_BATCH: usize = 256;
    /// G2 points: with the small-batch kernel (one point per warp in RNS) the GPU is faster
    /// at the smallest size measured, 8 points (0.54 vs 0.72 ms on the CPU path's 16
    /// threads; 32 points 0.55 vs 1.30 ms; docs/results/nidkg-g2-decompress-h200), so a
    /// dealing's `t + 17` points go to the GPU.
    pub const DECOMPRESS_G2_GPU_MIN_BATCH: usize = 8;
    /// Scalars (rows times shared bases) of one shared-base 8-bit MSM batch: GPU faster at
    /// the smallest NI-DKG shape, 32 x 208 = 6,656 scalars (0.33 vs 1.68 ms on the CPU
    /// path's 16 threads, docs/results/nidkg-dealing-h200); 4,096 keeps a margin.
    pub const MSM_SHARED_U8_GPU_MIN_BATCH: usize = 4096;
    /// Points of one G2 MSM batch (all MSMs of the call): the GPU's RNS kernel is faster
    /// from one MSM of 16 points (1.33 vs 2.56 ms on the CPU path), and for 64, 256 and a
    /// DKG round's 56 x 16 (docs/results/nidkg-overlap-h200), so 16: a dealing's combined
    /// integrity check (16 points) goes to the GPU, a sharing proof's `t + 2` below 16 stays
    /// on the CPU.
    pub const MSM_G2_GPU_MIN_BATCH: usize = 16;
    /// Products of three pairings per batch: CPU (blst, 16 threads) faster at 256 (31.9 vs
    /// 38.6 ms), GPU faster at 1,024 (39.7 vs 121.0 ms) (docs/results/nidkg-dealing-h200);
    /// the CPU's 0.12 ms per product crosses the GPU's flat 39 ms near 330 products, so
    /// 512. The GPU runs one product per thread (a whole Miller loop and final
    /// exponentiation each), so only many products fill it; a dealing's 16 stay on the CPU.
    pub const PAIRING_PRODUCTS_GPU_MIN_BATCH: usize = 512;
    /// One MSM: GPU faster from 128 points, CPU faster at 64 (docs/results/msm-h200); 256
    /// keeps a margin over the GPU's floor of about 0.6 ms.
    pub const MSM_GPU_MIN_BATCH: usize = 256;
    /// Distinct messages per batch (see [`super::bls_distinct_messages`]) from which BLS
    /// verification runs on the GPU: GPU faster at 512 distinct messages (49.4 vs 62.2 ms),
    /// CPU faster at 256 (34.7 vs 47.8 ms) before messages were hashed on the GPU
    /// (docs/results/crossover-bls-verify-h200; docs/bls.md). The H200's profile says 256.
    pub const BLS_VERIFY_GPU_MIN_BATCH: usize = 512;
    /// GPU faster from 1,024 chunks of 1 MiB, CPU faster at 512
    /// (docs/results/crossover-decompress-sha256-h200).
    pub const SHA256_GPU_MIN_BATCH: usize = 1024;
}
