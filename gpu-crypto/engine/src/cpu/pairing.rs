//! Products of pairings on `ic_bls12_381`: each G2 point prepared once, then one
//! multi-Miller loop and one final exponentiation per product, spread over rayon's pool.

use crate::input::PairingProducts;
use ic_bls12_381::{G1Affine, G2Prepared, Gt, multi_miller_loop};
use rayon::prelude::*;

/// Whether each product is the identity of GT (pairs with an identity point contribute 1,
/// as `multi_miller_loop` skips them). Indices must be inside the table (the engine
/// checks).
pub fn pairing_products_are_identity(input: PairingProducts<'_>) -> Vec<bool> {
    let prepared: Vec<G2Prepared> = input.g2.par_iter().map(|q| G2Prepared::from(*q)).collect();
    input
        .products
        .par_iter()
        .map(|pairs| {
            let terms: Vec<(&G1Affine, &G2Prepared)> =
                pairs.iter().map(|(p, i)| (p, &prepared[*i])).collect();
            multi_miller_loop(&terms).final_exponentiation() == Gt::identity()
        })
        .collect()
}
