//! GPU products of pairings (`Engine::pairing_products_are_identity` with the GPU pinned
//! and no CPU fallback) against the CPU engine and against how each product was built, on
//! fresh random inputs (the seed is printed): products built to be the identity and
//! products one step off it, of one to five pairs, with identity points, repeated G2
//! points and empty products. Ignored unless asked for: they need a GPU.

mod gpu_common;

use gpu_common::{fresh_rng, gpu};
use gpu_crypto::{
    BackendChoice, Engine, Fallback, G1Affine, G2Affine, PairingProducts, Policy, Scalar,
};
use rand::Rng;

fn random_scalar(rng: &mut impl Rng) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill(&mut wide[..]);
    Scalar::from_bytes_wide(&wide)
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn products_match_the_cpu_and_how_they_were_built() {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.pairing_products.backend = BackendChoice::Gpu;
    policy.fallback = Fallback::Never;
    let engine = Engine::new(policy).expect("GPU engine");
    let reference = Engine::cpu_only();
    let mut rng = fresh_rng("PAIRING_SEED", "pairing products");

    // A table of G2 points b_j * Q (index 0 is Q itself, index 1 repeats index 2).
    let b: Vec<Scalar> = (0..6).map(|_| random_scalar(&mut rng)).collect();
    let mut g2 = vec![G2Affine::generator()];
    g2.extend(b.iter().map(|b| G2Affine::from(G2Affine::generator() * b)));
    g2[1] = g2[2];
    let b_of = |i: usize| if i == 1 { b[1] } else { b[i - 1] };

    let mut products: Vec<Vec<(G1Affine, usize)>> = Vec::new();
    let mut expected = Vec::new();
    for k in 0..96 {
        // sum_i a_i b_{j_i} cancelled by one term on Q: the identity, unless nudged.
        let terms = 1 + k % 4;
        let mut pairs = Vec::with_capacity(terms + 2);
        let mut total = Scalar::zero();
        for _ in 0..terms {
            let j = rng.gen_range(1..g2.len());
            let a = random_scalar(&mut rng);
            total += a * b_of(j);
            pairs.push((G1Affine::from(G1Affine::generator() * a), j));
        }
        let off = k % 3 == 1;
        if off {
            total += Scalar::one();
        }
        pairs.push((G1Affine::from(G1Affine::generator() * -total), 0));
        if k % 5 == 0 {
            pairs.insert(0, (G1Affine::identity(), rng.gen_range(0..g2.len())));
        }
        products.push(pairs);
        expected.push(!off);
    }
    products.push(Vec::new());
    expected.push(true);
    products.push(vec![(G1Affine::identity(), 3)]);
    expected.push(true);

    let input = PairingProducts {
        g2: &g2,
        products: &products,
    };
    let got = engine
        .pairing_products_are_identity(input)
        .expect("GPU call");
    let want = reference
        .pairing_products_are_identity(input)
        .expect("CPU call");
    assert_eq!(want, expected, "the CPU reference against the construction");
    assert_eq!(got, want, "GPU against the CPU");
    let stats = engine.stats();
    assert!(
        stats
            .operations
            .iter()
            .any(|c| c.operation == gpu_crypto::Operation::PairingProducts
                && c.executed == gpu_crypto_api::stats::Executed::Gpu
                && c.calls == 1),
        "{stats:?}"
    );
}
