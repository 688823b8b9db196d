//! G1 multi-scalar multiplication: blst's Pippenger (the fastest maintained CPU MSM),
//! with inputs and outputs as `ic_bls12_381` types. Results equal the naive
//! `ic_bls12_381` sum as group elements (the tests hold it to that).
//!
//! One large MSM runs on blst's multi-threaded tiled Pippenger; a batch of smaller MSMs
//! (NI-DKG: 32 MSMs of n*16 points) runs one single-threaded Pippenger per MSM, spread
//! over the cores by rayon, which avoids splitting small MSMs into tiles.

use super::blst_convert::{g1_from_blst, g1_to_blst, p1_msm_one_thread, p1_msm_threaded};
use crate::engine::MsmInput;
use ic_bls12_381::{G1Affine, G1Projective, Scalar};
use rayon::prelude::*;

/// Scalars of the group order r are below 2^255.
const SCALAR_BITS: usize = 255;

/// From this many points one MSM is worth all cores; a batch holding such an MSM
/// computes its MSMs one after another, each on blst's thread pool.
const THREADED_MIN_POINTS: usize = 1 << 14;

/// Converting points is cheap (~0.3 us each); parallel only for long inputs.
const PARALLEL_CONVERT_MIN_POINTS: usize = 4096;

enum Threading {
    /// On the calling thread (inside rayon's parallel loop over the MSMs).
    One,
    /// On blst's thread pool.
    All,
}

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
    let largest = msms.iter().map(|m| m.points.len()).max().unwrap_or(0);
    if msms.len() > 1 && largest < THREADED_MIN_POINTS {
        msms.par_iter().map(|m| msm(m, Threading::One)).collect()
    } else {
        msms.iter().map(|m| msm(m, Threading::All)).collect()
    }
}

fn msm(input: &MsmInput<'_>, threading: Threading) -> G1Projective {
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
    let sum = match threading {
        Threading::One => p1_msm_one_thread(&blst_points, &scalar_bytes, SCALAR_BITS),
        Threading::All => p1_msm_threaded(&blst_points, &scalar_bytes, SCALAR_BITS),
    };
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
