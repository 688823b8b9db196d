//! Multi-scalar multiplication: blst's multi-threaded tiled Pippenger (the fastest
//! maintained CPU MSM) in G1, its single-threaded one in G2, with inputs and outputs as
//! `ic_bls12_381` types. Results equal the naive `ic_bls12_381` sums as group elements
//! (the tests hold them to that).
//!
//! A batch runs its MSMs one after another, each on all cores. Measured on the 2-core
//! CI-like box (interleaved A/B, 16 MSMs each of 8 to 4096 points), this beat rayon over
//! the MSMs with one single-threaded Pippenger each by 20-70% at every size, NI-DKG's
//! 32 x n*16 points included.

use super::blst_convert::{
    g1_from_blst, g1_to_blst, g2_from_blst, g2_to_blst, p1_msm_threaded, p2_msm_one_thread,
};
use crate::input::MsmInput;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rayon::prelude::*;

/// Scalars of the group order r are below 2^255.
const SCALAR_BITS: usize = 255;

/// Converting points is cheap (~0.3 us each); parallel only for long inputs.
const PARALLEL_CONVERT_MIN_POINTS: usize = 4096;

/// `sum(scalars[i] * points[i])` with `ic_bls12_381` alone: the test oracle, and the
/// path taken should the blst bridge ever refuse a point. Lengths must match (the
/// engine checks); a longer slice's extra elements are ignored.
pub fn g1_msm_naive(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    points
        .iter()
        .zip(scalars)
        .fold(G1Projective::identity(), |acc, (p, s)| acc + p * s)
}

/// Many independent MSMs; one result per input, the identity for an empty MSM. Each
/// MSM's points and scalars must have equal lengths (the engine checks before calling).
pub fn g1_msm_batch(msms: &[MsmInput<'_>]) -> Vec<G1Projective> {
    msms.iter().map(msm).collect()
}

/// `sum(scalars[i] * points[i])` in G2 with `ic_bls12_381` alone: the test oracle, and the
/// path taken should the blst bridge ever refuse a point.
pub fn g2_msm_naive(points: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    points
        .iter()
        .zip(scalars)
        .fold(G2Projective::identity(), |acc, (p, s)| acc + p * s)
}

/// Many independent G2 MSMs, one per rayon task (the NI-DKG verifier's are tens of points
/// each, too few for blst's tiled pool); one result per input, the identity for an empty
/// MSM. Lengths must match (the engine checks).
pub fn g2_msm_batch(msms: &[MsmInput<'_, G2Affine>]) -> Vec<G2Projective> {
    msms.par_iter().map(g2_msm).collect()
}

fn g2_msm(input: &MsmInput<'_, G2Affine>) -> G2Projective {
    let n = input.points.len().min(input.scalars.len());
    let (points, scalars) = (&input.points[..n], &input.scalars[..n]);
    let converted: Option<Vec<_>> = points.iter().map(g2_to_blst).collect();
    let mut scalar_bytes = Vec::with_capacity(32 * n);
    for s in scalars {
        scalar_bytes.extend_from_slice(&s.to_bytes());
    }
    let sum = converted.and_then(|p| p2_msm_one_thread(&p, &scalar_bytes, SCALAR_BITS));
    match sum.as_ref().and_then(g2_from_blst) {
        Some(result) => result,
        None => {
            tracing::error!(
                points = n,
                "blst refused a G2 MSM; computing with ic_bls12_381"
            );
            g2_msm_naive(points, scalars)
        }
    }
}

/// `sum_j 2^(16 (15 - j)) * row[j]` for each row (Horner, `nidkg::batch::recombine_chunks`),
/// one row per rayon task.
pub fn g1_recombine_chunks(rows: &[&[G1Affine]]) -> Vec<G1Projective> {
    rows.par_iter()
        .map(|row| nidkg::batch::recombine_chunks(row))
        .collect()
}

/// `rows` MSMs over one set of bases with 8-bit scalars: result `k` is
/// `sum_p scalars[k * bases.len() + p] * bases[p]` (`nidkg::msm::msm_shared_bases_u8` per
/// row, one row per rayon task). `scalars.len()` must be `rows * bases.len()` (the engine
/// checks); the identity for every row when there are no bases.
pub fn g1_msm_shared_u8(bases: &[G1Affine], scalars: &[u8], rows: usize) -> Vec<G1Projective> {
    if bases.is_empty() {
        return vec![G1Projective::identity(); rows];
    }
    scalars
        .par_chunks_exact(bases.len())
        .take(rows)
        .map(|row| nidkg::msm::msm_shared_bases_u8(bases, row))
        .collect()
}

fn msm(input: &MsmInput<'_>) -> G1Projective {
    let (points, scalars) = (input.points, input.scalars);
    let n = points.len().min(scalars.len());
    match n {
        0 => return G1Projective::identity(),
        1 => return points[0] * scalars[0],
        _ => {}
    }
    let (points, scalars) = (&points[..n], &scalars[..n]);
    let converted: Option<Vec<_>> = if n >= PARALLEL_CONVERT_MIN_POINTS {
        points
            .par_iter()
            .with_min_len(1024)
            .map(g1_to_blst)
            .collect()
    } else {
        points.iter().map(g1_to_blst).collect()
    };
    let Some(blst_points) = converted else {
        tracing::error!(
            points = n,
            "blst refused a valid G1 point; computing the MSM with ic_bls12_381"
        );
        return g1_msm_naive(points, scalars);
    };
    // Scalar::to_bytes is the canonical little-endian encoding blst takes.
    let mut scalar_bytes = Vec::with_capacity(32 * n);
    for s in scalars {
        scalar_bytes.extend_from_slice(&s.to_bytes());
    }
    let sum = p1_msm_threaded(&blst_points, &scalar_bytes, SCALAR_BITS);
    match sum.as_ref().and_then(g1_from_blst) {
        Some(result) => result,
        None => {
            tracing::error!(
                points = n,
                "blst MSM result did not decode; computing with ic_bls12_381"
            );
            g1_msm_naive(points, scalars)
        }
    }
}
