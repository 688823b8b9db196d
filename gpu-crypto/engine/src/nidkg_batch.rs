//! The NI-DKG verifier's batches (`nidkg::BatchOps`) served by an [`Engine`]: each batch
//! goes where the engine's policy sends its operation, and is counted like any other call.
//!
//! The chunk recombinations go where the policy sends `msm` (on the GPU, one warp per row
//! by Horner), the G2 MSMs where it sends `msm_g2`. Every input here is public
//! (a dealing under verification); dealing creation never comes here.

use crate::engine::Engine;
use crate::input::{MsmInput, PairingProducts};
use gpu_crypto_api::{EngineError, Operation};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use nidkg::batch::shared_rows;
use nidkg::{BackendError, BatchOps, PairingBatch};

/// The engine operations a dealing verification calls: a policy for `nidkg verify` must
/// say where each runs.
pub const NIDKG_OPERATIONS: [Operation; 6] = [
    Operation::Decompress,
    Operation::DecompressG2,
    Operation::Msm,
    Operation::MsmSharedU8,
    Operation::MsmG2,
    Operation::PairingProducts,
];

/// `nidkg::BatchOps` on an engine.
#[derive(Clone, Copy)]
pub struct NidkgBatchOps<'a> {
    engine: &'a Engine,
    overlap: Option<&'a rayon::ThreadPool>,
}

impl<'a> NidkgBatchOps<'a> {
    /// The batch operations of `engine`, one batch at a time.
    pub fn new(engine: &'a Engine) -> Self {
        NidkgBatchOps {
            engine,
            overlap: None,
        }
    }

    /// The batch operations of `engine`, the verifier running the second of two
    /// independent batches on `pool` while the calling thread runs the first
    /// (`BatchOps::overlap_pool`; three threads run every pair of the combined checks at
    /// once), each call on a GPU stream of its own: for an engine whose policy sends the
    /// dealing's batches to the GPU with blocking waits, where a waiting thread costs no
    /// host CPU. The host work of those batches runs on `pool`'s threads; under a policy
    /// that keeps batches on the CPU, they compute there.
    pub fn overlapping(engine: &'a Engine, pool: &'a rayon::ThreadPool) -> Self {
        NidkgBatchOps {
            engine,
            overlap: Some(pool),
        }
    }
}

fn backend(operation: &'static str) -> impl Fn(EngineError) -> BackendError {
    move |e| BackendError {
        operation,
        reason: e.to_string(),
    }
}

impl BatchOps for NidkgBatchOps<'_> {
    fn name(&self) -> String {
        "engine".to_string()
    }

    fn overlap_pool(&self) -> Option<&rayon::ThreadPool> {
        self.overlap
    }

    fn g1_decompress(&self, points: &[[u8; 48]]) -> Result<Vec<Option<G1Affine>>, BackendError> {
        let decoded = self
            .engine
            .g1_decompress(points)
            .map_err(backend("g1_decompress"))?;
        Ok(decoded.into_iter().map(Result::ok).collect())
    }

    fn g2_decompress(&self, points: &[[u8; 96]]) -> Result<Vec<Option<G2Affine>>, BackendError> {
        let decoded = self
            .engine
            .g2_decompress(points)
            .map_err(backend("g2_decompress"))?;
        Ok(decoded.into_iter().map(Result::ok).collect())
    }

    fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.engine
            .g1_msm_shared_u8(bases, scalars, rows)
            .map_err(backend("g1_msm_shared_u8"))
    }

    fn g1_msm_shared(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        let inputs: Vec<MsmInput<'_>> = shared_rows("g1_msm_shared", bases.len(), scalars, rows)?
            .into_iter()
            .map(|row| MsmInput {
                points: bases,
                scalars: row,
            })
            .collect();
        self.engine
            .g1_msm_batch(&inputs)
            .map_err(backend("g1_msm_shared"))
    }

    fn g1_msm(
        &self,
        msms: &[(Vec<G1Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G1Projective>, BackendError> {
        let inputs: Vec<MsmInput<'_>> = msms
            .iter()
            .map(|(points, scalars)| MsmInput { points, scalars })
            .collect();
        self.engine.g1_msm_batch(&inputs).map_err(backend("g1_msm"))
    }

    fn g2_msm(
        &self,
        msms: &[(Vec<G2Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G2Projective>, BackendError> {
        let inputs: Vec<MsmInput<'_, G2Affine>> = msms
            .iter()
            .map(|(points, scalars)| MsmInput { points, scalars })
            .collect();
        self.engine.g2_msm_batch(&inputs).map_err(backend("g2_msm"))
    }

    fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, BackendError> {
        self.engine
            .g1_recombine_chunks(rows)
            .map_err(backend("g1_recombine_chunks"))
    }

    fn pairing_products_are_identity(
        &self,
        batch: &PairingBatch,
    ) -> Result<Vec<bool>, BackendError> {
        self.engine
            .pairing_products_are_identity(PairingProducts {
                g2: &batch.g2,
                products: &batch.products,
            })
            .map_err(backend("pairing_products"))
    }
}
