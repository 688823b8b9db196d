//! The CPU engine's products of pairings (blst's multi-Miller loop) against `ic_bls12_381`'s
//! own pairing and against how each product was built, on fresh random inputs (the seed is
//! printed; `gpu_common::pairing_cases`).

mod gpu_common;

use gpu_common::{fresh_rng, pairing_cases};
use gpu_crypto::{Engine, G1Affine, G2Affine, PairingProducts};
use ic_bls12_381::{Gt, Scalar, pairing};

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

/// Products as long as a DKG round's combined integrity check (`2n + 2` pairs) and around
/// the length from which one product is spread over a pool's threads: `sum_i a_i b_i`
/// cancelled by one pair on the generator, or one off. Every product has the same verdict
/// in a pool of one thread and of four, and it is the construction's.
#[test]
fn long_products_have_one_verdict_on_one_thread_and_spread_over_four() {
    let mut rng = fresh_rng("PAIRING_SEED", "long pairing products");
    let b: Vec<Scalar> = (0..4).map(|_| nidkg::random_scalar(&mut rng)).collect();
    let mut g2 = vec![G2Affine::generator()];
    g2.extend(b.iter().map(|b| G2Affine::from(G2Affine::generator() * b)));
    let mut products = Vec::new();
    let mut expected = Vec::new();
    for (k, pairs) in [7, 8, 15, 16, 17, 31, 58, 82].into_iter().enumerate() {
        for off in [false, true] {
            let mut total = if off { Scalar::one() } else { Scalar::zero() };
            let mut product = Vec::with_capacity(pairs);
            for i in 0..pairs - 1 {
                let j = 1 + (i + k) % b.len();
                let a = nidkg::random_scalar(&mut rng);
                total += a * b[j - 1];
                product.push((G1Affine::from(G1Affine::generator() * a), j));
            }
            // The cancelling pair sits where the product's last task begins or in its middle.
            let at = (k * 5) % pairs;
            product.insert(at, (G1Affine::from(G1Affine::generator() * -total), 0));
            products.push(product);
            expected.push(!off);
        }
    }
    let input = PairingProducts {
        g2: &g2,
        products: &products,
    };
    for threads in [1, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        let got = pool
            .install(|| Engine::cpu_only().pairing_products_are_identity(input))
            .expect("CPU call");
        assert_eq!(got, expected, "{threads} thread(s)");
    }
}
