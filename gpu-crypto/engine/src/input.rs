//! Batch inputs that hold curve types (the byte-only ones are in `gpu_crypto_api`).

use ic_bls12_381::{G1Affine, Scalar};

/// One independent MSM of a batch: `sum(scalars[i] * points[i])`.
#[derive(Debug, Clone, Copy)]
pub struct MsmInput<'a> {
    pub points: &'a [G1Affine],
    pub scalars: &'a [Scalar],
}
