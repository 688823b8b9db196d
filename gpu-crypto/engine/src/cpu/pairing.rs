//! Products of pairings, each checked against the identity of GT: blst's multi-Miller
//! loop and final exponentiation, one product per rayon task, the G2 table converted to
//! blst once. A product's verdict does not depend on the library that computes it, and
//! blst's pairing is the faster one (docs/benchmarks.md, "Pairing products"); the points
//! were decoded and subgroup-checked by `ic_bls12_381` before they reach here.

use super::blst_convert::{g1_to_blst, g2_to_blst, pairing_product_is_one};
use crate::input::PairingProducts;
use blst::{blst_p1_affine, blst_p2_affine};
use ic_bls12_381::{G1Affine, G2Affine, G2Prepared, Gt, multi_miller_loop};
use rayon::prelude::*;

/// Whether each product is the identity of GT. Pairs with an identity point contribute 1.
/// Indices must be inside the table (the engine checks).
pub fn pairing_products_are_identity(input: PairingProducts<'_>) -> Vec<bool> {
    // `None` for the identity (skipped) and, never in practice, for a point blst rejects.
    let table: Vec<Option<blst_p2_affine>> = input
        .g2
        .par_iter()
        .map(|q| {
            if q.is_identity().into() {
                None
            } else {
                g2_to_blst(q)
            }
        })
        .collect();
    input
        .products
        .par_iter()
        .map(|pairs| {
            blst_product_is_identity(pairs, input.g2, &table).unwrap_or_else(|| {
                tracing::warn!("blst rejected a valid point; this product on ic_bls12_381");
                reference_product_is_identity(pairs, input.g2)
            })
        })
        .collect()
}

/// `None` if the blst bridge rejected one of the product's points (a bug in one of the
/// libraries); the caller then computes that product with `ic_bls12_381`.
fn blst_product_is_identity(
    pairs: &[(G1Affine, usize)],
    g2: &[G2Affine],
    table: &[Option<blst_p2_affine>],
) -> Option<bool> {
    let mut qs: Vec<blst_p2_affine> = Vec::with_capacity(pairs.len());
    let mut ps: Vec<blst_p1_affine> = Vec::with_capacity(pairs.len());
    for (p, i) in pairs {
        if bool::from(p.is_identity()) || bool::from(g2[*i].is_identity()) {
            continue;
        }
        qs.push(table[*i]?);
        ps.push(g1_to_blst(p)?);
    }
    pairing_product_is_one(&qs, &ps)
}

/// The same verdict with `ic_bls12_381` alone (its multi-Miller loop skips identity
/// points itself).
fn reference_product_is_identity(pairs: &[(G1Affine, usize)], g2: &[G2Affine]) -> bool {
    let prepared: Vec<G2Prepared> = pairs
        .iter()
        .map(|(_, i)| G2Prepared::from(g2[*i]))
        .collect();
    let terms: Vec<(&G1Affine, &G2Prepared)> = pairs
        .iter()
        .zip(&prepared)
        .map(|((p, _), q)| (p, q))
        .collect();
    multi_miller_loop(&terms).final_exponentiation() == Gt::identity()
}
