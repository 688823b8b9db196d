//! Batch inputs that hold curve types (the byte-only ones are in `gpu_crypto_api`).

use ic_bls12_381::{G1Affine, G2Affine, Scalar};

/// One independent MSM of a batch: `sum(scalars[i] * points[i])`.
#[derive(Debug, Clone, Copy)]
pub struct MsmInput<'a> {
    pub points: &'a [G1Affine],
    pub scalars: &'a [Scalar],
}

/// Products of pairings over a table of G2 points, so that a backend prepares each G2
/// point once however many products use it: product `k` is
/// `prod e(p, g2[i])` over the pairs `(p, i)` of `products[k]`.
#[derive(Debug, Clone, Copy)]
pub struct PairingProducts<'a> {
    pub g2: &'a [G2Affine],
    pub products: &'a [Vec<(G1Affine, usize)>],
}
