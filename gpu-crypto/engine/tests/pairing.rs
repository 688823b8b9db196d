//! The CPU engine's products of pairings (blst's multi-Miller loop) against `ic_bls12_381`'s
//! own pairing and against how each product was built, on fresh random inputs (the seed is
//! printed; `gpu_common::pairing_cases`).

mod gpu_common;

use gpu_common::{fresh_rng, pairing_cases};
use gpu_crypto::{Engine, G1Affine, G2Affine, PairingProducts};
use ic_bls12_381::{Gt, pairing};

/// `ic_bls12_381` alone, one full pairing per pair summed in GT: independent of the engine's
/// multi-Miller loops (blst's, or `ic_bls12_381`'s where the blst bridge fails).
fn ic_product_is_identity(pairs: &[(G1Affine, usize)], g2: &[G2Affine]) -> bool {
    let sum = pairs
        .iter()
        .map(|(p, i)| pairing(p, &g2[*i]))
        .fold(Gt::identity(), |acc, e| acc + e);
    sum == Gt::identity()
}

#[test]
fn cpu_products_match_ic_bls12_381_and_how_they_were_built() {
    let mut rng = fresh_rng("PAIRING_SEED", "pairing products");
    let cases = pairing_cases(&mut rng, 60);
    let got = Engine::cpu_only()
        .pairing_products_are_identity(PairingProducts {
            g2: &cases.g2,
            products: &cases.products,
        })
        .expect("CPU call");
    let ic: Vec<bool> = cases
        .products
        .iter()
        .map(|pairs| ic_product_is_identity(pairs, &cases.g2))
        .collect();
    assert_eq!(ic, cases.expected, "ic_bls12_381 against the construction");
    assert_eq!(got, ic, "the engine against ic_bls12_381");
    assert!(got.contains(&true) && got.contains(&false));
}
