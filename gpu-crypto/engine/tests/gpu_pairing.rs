//! GPU products of pairings (`Engine::pairing_products_are_identity` with the GPU pinned
//! and no CPU fallback) against the CPU engine and against how each product was built, on
//! fresh random inputs (the seed is printed): products built to be the identity and
//! products one step off it (`gpu_common::pairing_cases`). Ignored unless asked for: they need a GPU.

mod gpu_common;

use gpu_common::{fresh_rng, gpu, pairing_cases};
use gpu_crypto::{BackendChoice, Engine, Fallback, PairingProducts, Policy};

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

    let cases = pairing_cases(&mut rng, 96);
    let input = PairingProducts {
        g2: &cases.g2,
        products: &cases.products,
    };
    let got = engine
        .pairing_products_are_identity(input)
        .expect("GPU call");
    let want = reference
        .pairing_products_are_identity(input)
        .expect("CPU call");
    assert_eq!(
        want, cases.expected,
        "the CPU reference against the construction"
    );
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
