//! Batch inputs that hold curve types (the byte-only ones are in `gpu_crypto_api`).

use gpu_crypto_api::{EngineError, Operation};
use ic_bls12_381::{G1Affine, G2Affine, Scalar};

/// One independent MSM of a batch: `sum(scalars[i] * points[i])`, in G1 (the default) or
/// G2 (`MsmInput<'_, G2Affine>`).
#[derive(Debug, Clone, Copy)]
pub struct MsmInput<'a, A = G1Affine> {
    /// The bases.
    pub points: &'a [A],
    /// One scalar per base, in the same order.
    pub scalars: &'a [Scalar],
}

/// Products of pairings over a table of G2 points, so that a backend prepares each G2
/// point once however many products use it: product `k` is
/// `prod e(p, g2[i])` over the pairs `(p, i)` of `products[k]`.
#[derive(Debug, Clone, Copy)]
pub struct PairingProducts<'a> {
    /// The table of G2 points the pairs index.
    pub g2: &'a [G2Affine],
    /// Each product's pairs: a G1 point and an index into `g2`.
    pub products: &'a [Vec<(G1Affine, usize)>],
}

impl PairingProducts<'_> {
    /// Every pair names a point of the table; else the first that does not.
    pub fn check_indices(&self) -> Result<(), EngineError> {
        for (product, pairs) in self.products.iter().enumerate() {
            if let Some((_, index)) = pairs.iter().find(|(_, i)| *i >= self.g2.len()) {
                return Err(EngineError::PairingIndex {
                    product,
                    index: *index,
                    g2_points: self.g2.len(),
                });
            }
        }
        Ok(())
    }
}

/// The shape of a shared-base 8-bit MSM batch: one scalar per row and base.
pub fn check_shared_u8_shape(bases: usize, scalars: usize, rows: usize) -> Result<(), EngineError> {
    if rows.checked_mul(bases) == Some(scalars) {
        Ok(())
    } else {
        Err(EngineError::ScalarCountMismatch {
            op: Operation::MsmSharedU8,
            rows,
            bases,
            scalars,
        })
    }
}
