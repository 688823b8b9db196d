//! The batches a dealing verification gathers, as one trait a backend implements, and
//! the CPU implementation (one thread or all rayon threads).
//!
//! Every input of these operations is public (points and scalars of a dealing that is
//! being verified), so implementations may use variable-time algorithms. Dealing
//! creation never calls them: its secret scalars stay in `ic_bls12_381`'s constant-time
//! arithmetic on the CPU.

use crate::error::BackendError;
use crate::msm::{
    SharedBaseTable, msm_shared_bases_u8, msm_vartime, msm_vartime_parallel, msm_with_table,
};
use ic_bls12_381::{
    G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, Scalar, multi_miller_loop,
};
use rayon::prelude::*;

/// Products of pairings `prod_i e(P_i, Q_{idx_i})` over a shared table of G2 points
/// (so that a backend prepares each G2 point once).
#[derive(Clone, Debug, Default)]
pub struct PairingBatch {
    /// The G2 points the products refer to.
    pub g2: Vec<G2Affine>,
    /// Each product: pairs of a G1 point and an index into `g2`.
    pub products: Vec<Vec<(G1Affine, usize)>>,
}

/// The verifier's batch operations. Results are per item and in input order; an `Err` is
/// the backend's failure, never a verdict on the inputs.
pub trait BatchOps: Sync {
    /// Backend name for reports (`cpu-1t`, `cpu-rayon`, ...).
    fn name(&self) -> String;

    /// Where the verifier may run the second of two independent batches while the calling
    /// thread runs the first: worth it where batches run on a device whose waits cost no
    /// host CPU (a GPU, each call on a stream of its own), not where each batch computes
    /// on the host. The combined checks nest such pairs (the integrity check beside the
    /// proofs, and within each its G1 MSM beside its G2 MSM), so a pool of three threads
    /// runs every pair at once; a pair finding no thread free runs one after the other.
    /// `None` (the default): one batch after another.
    fn overlap_pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }

    /// Decompresses G1 points with the subgroup check; `None` for an encoding that is not
    /// a canonical point of the prime-order subgroup.
    fn g1_decompress(&self, points: &[[u8; 48]]) -> Result<Vec<Option<G1Affine>>, BackendError>;

    /// Decompresses G2 points with the subgroup check.
    fn g2_decompress(&self, points: &[[u8; 96]]) -> Result<Vec<Option<G2Affine>>, BackendError>;

    /// `rows` MSMs over one set of bases with 8-bit scalars: result `k` is
    /// `sum_p scalars[k * bases.len() + p] * bases[p]` (the chunking proof's 32 MSMs of
    /// `16n` points).
    fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// `rows` MSMs over one set of bases with full scalars, laid out as in
    /// [`BatchOps::g1_msm_shared_u8`] (the chunking proof's `n` MSMs over the randomizers).
    fn g1_msm_shared(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// Independent G1 MSMs with full scalars.
    fn g1_msm(
        &self,
        msms: &[(Vec<G1Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G1Projective>, BackendError>;

    /// Independent G2 MSMs with full scalars over decoded points (each in G2: a backend
    /// may rely on it).
    fn g2_msm(
        &self,
        msms: &[(Vec<G2Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G2Projective>, BackendError>;

    /// `sum_j 2^(16 (15 - j)) * points[j]` for each row of 16 points: recombining
    /// big-endian chunks (the sharing proof's combined ciphertexts and randomizer).
    fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, BackendError>;

    /// Whether each pairing product is the identity of GT.
    fn pairing_products_are_identity(
        &self,
        batch: &PairingBatch,
    ) -> Result<Vec<bool>, BackendError>;
}

/// `(a(), b())`: at once where `ops` has an overlap pool (`b` on one of its threads, `a` on
/// the calling thread), one after the other on the calling thread otherwise.
pub(crate) fn join<B, RA, RB>(
    ops: &B,
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB + Send,
) -> (RA, RB)
where
    B: BatchOps + ?Sized,
    RA: Send,
    RB: Send,
{
    let Some(pool) = ops.overlap_pool() else {
        return (a(), b());
    };
    let mut second = None;
    let first = pool.in_place_scope(|s| {
        s.spawn(|_| second = Some(b()));
        a()
    });
    // The scope returns only after its task ran (a panic there resumes here).
    let second = second.expect("the overlapped batch ran");
    (first, second)
}

/// The CPU backend on `ic_bls12_381`: one thread, or rayon's pool.
#[derive(Clone, Copy, Debug)]
pub struct CpuBatchOps {
    parallel: bool,
}

impl CpuBatchOps {
    /// Runs every batch on the calling thread.
    pub fn single_thread() -> Self {
        CpuBatchOps { parallel: false }
    }

    /// Spreads batches over the current rayon pool (all cores unless the caller installs a
    /// smaller pool).
    pub fn rayon() -> Self {
        CpuBatchOps { parallel: true }
    }

    fn map<T: Sync, U: Send>(&self, items: &[T], f: impl Fn(&T) -> U + Sync + Send) -> Vec<U> {
        if self.parallel {
            items.par_iter().map(f).collect()
        } else {
            items.iter().map(f).collect()
        }
    }
}

impl BatchOps for CpuBatchOps {
    fn name(&self) -> String {
        if self.parallel {
            format!("cpu-rayon-{}t", rayon::current_num_threads())
        } else {
            "cpu-1t".to_string()
        }
    }

    fn g1_decompress(&self, points: &[[u8; 48]]) -> Result<Vec<Option<G1Affine>>, BackendError> {
        // from_compressed checks canonicity, the curve equation and the subgroup.
        Ok(self.map(points, |b| Option::from(G1Affine::from_compressed(b))))
    }

    fn g2_decompress(&self, points: &[[u8; 96]]) -> Result<Vec<Option<G2Affine>>, BackendError> {
        Ok(self.map(points, |b| Option::from(G2Affine::from_compressed(b))))
    }

    fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        let row_slices = shared_rows("g1_msm_shared_u8", bases.len(), scalars, rows)?;
        Ok(self.map(&row_slices, |row| msm_shared_bases_u8(bases, row)))
    }

    fn g1_msm_shared(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        let row_slices = shared_rows("g1_msm_shared", bases.len(), scalars, rows)?;
        // The bases are shared by every row: one table of multiples serves them all.
        let table = SharedBaseTable::new(bases);
        Ok(self.map(&row_slices, |row| msm_with_table(&table, row)))
    }

    fn g1_msm(
        &self,
        msms: &[(Vec<G1Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G1Projective>, BackendError> {
        Ok(self.map(msms, |(points, scalars)| {
            msm_vartime::<G1Projective>(points, scalars)
        }))
    }

    fn g2_msm(
        &self,
        msms: &[(Vec<G2Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G2Projective>, BackendError> {
        // A few expensive points each: one MSM's windows are spread over the pool.
        Ok(msms
            .iter()
            .map(|(bases, scalars)| {
                if self.parallel {
                    msm_vartime_parallel::<G2Projective>(bases, scalars)
                } else {
                    msm_vartime::<G2Projective>(bases, scalars)
                }
            })
            .collect())
    }

    fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, BackendError> {
        Ok(self.map(rows, |row| recombine_chunks(row)))
    }

    fn pairing_products_are_identity(
        &self,
        batch: &PairingBatch,
    ) -> Result<Vec<bool>, BackendError> {
        let prepared: Vec<G2Prepared> = self.map(&batch.g2, |q| G2Prepared::from(*q));
        Ok(self.map(&batch.products, |product| {
            let terms: Vec<(&G1Affine, &G2Prepared)> =
                product.iter().map(|(p, i)| (p, &prepared[*i])).collect();
            multi_miller_loop(&terms).final_exponentiation() == Gt::identity()
        }))
    }
}

/// The `rows` rows of a shared-base batch whose `scalars` hold `rows * bases` entries, row
/// after row (with no bases, `rows` empty rows); any other count is the backend's error.
pub fn shared_rows<'a, T>(
    operation: &'static str,
    bases: usize,
    scalars: &'a [T],
    rows: usize,
) -> Result<Vec<&'a [T]>, BackendError> {
    if rows.checked_mul(bases) != Some(scalars.len()) {
        return Err(BackendError {
            operation,
            reason: format!("{} scalars for {rows} rows of {bases} bases", scalars.len()),
        });
    }
    Ok(if bases == 0 {
        vec![&scalars[..0]; rows]
    } else {
        scalars.chunks_exact(bases).collect()
    })
}

/// `sum_j 2^(16 (15 - j)) * row[j]`: Horner over the big-endian chunks.
pub fn recombine_chunks(row: &[G1Affine]) -> G1Projective {
    let mut acc = G1Projective::identity();
    for p in row {
        for _ in 0..crate::params::CHUNK_BITS {
            acc = acc.double();
        }
        acc = acc.add_mixed(p);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_rows_split_row_by_row_and_refuse_other_counts() {
        let scalars: Vec<u8> = (0..6).collect();
        let rows = shared_rows("g1_msm_shared_u8", 3, &scalars, 2).unwrap();
        assert_eq!(rows, [&[0u8, 1, 2][..], &[3, 4, 5][..]]);
        assert_eq!(shared_rows("op", 0, &scalars[..0], 3).unwrap().len(), 3);
        let e = shared_rows("g1_msm_shared", 4, &scalars, 2).unwrap_err();
        assert_eq!(e.operation, "g1_msm_shared");
        assert_eq!(e.reason, "6 scalars for 2 rows of 4 bases");
        assert!(shared_rows("op", usize::MAX, &scalars, 2).is_err());
        // The CPU backend answers a bad shape with that error, not a panic.
        let bases = [G1Affine::generator(); 4];
        let e = CpuBatchOps::single_thread()
            .g1_msm_shared_u8(&bases, &scalars, 2)
            .unwrap_err();
        assert_eq!(e.operation, "g1_msm_shared_u8");
    }
}
