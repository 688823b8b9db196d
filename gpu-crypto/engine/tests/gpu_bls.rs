//! BLS on the GPU against the CPU path and ic_bls12_381: pairing values (Gt, compared
//! byte for byte with `Gt::to_bytes`) of random and identity inputs and of products of
//! pairings, and batch verdicts equal to `cpu::bls_verify_batch` item by item for both GPU
//! strategies, with 0, 1 and many invalid items at random positions (bad signatures,
//! wrong keys or messages, undecodable encodings, identity points), same-message batches
//! and the engine with BLS pinned to the GPU. Ignored unless asked for (`--include-ignored`):
//! they need a GPU.

mod gpu_common;

use ff::Field;
use gpu_common::{Owned, gpu, items};
use gpu_crypto::gpu::BlsGpuStrategy;
use gpu_crypto::{
    BackendChoice, BlsScheme, Engine, G1Affine, G1Projective, G2Affine, Policy, Scalar,
    VerifyError, cpu,
};
use group::{Curve, Group};
use ic_bls12_381::{G2Prepared, G2Projective, Gt, multi_miller_loop, pairing};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn pairings_equal_ic_bls12_381() {
    let gpu = gpu();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut pairs: Vec<(G1Affine, G2Affine)> = (0..40)
        .map(|_| {
            (
                G1Projective::random(&mut rng).to_affine(),
                G2Projective::random(&mut rng).to_affine(),
            )
        })
        .collect();
    pairs.push((G1Affine::identity(), G2Affine::generator()));
    pairs.push((G1Affine::generator(), G2Affine::identity()));
    pairs.push((G1Affine::identity(), G2Affine::identity()));
    pairs.push((G1Affine::generator(), G2Affine::generator()));
    let groups: Vec<&[(G1Affine, G2Affine)]> = pairs.iter().map(std::slice::from_ref).collect();
    let got = gpu.pairing_products(&groups).expect("GPU pairings");
    for (i, ((p, q), gt)) in pairs.iter().zip(&got).enumerate() {
        assert_eq!(gt[..], pairing(p, q).to_bytes()[..], "pair {i}");
    }
    // Bilinearity through the GPU alone: e(aP, bQ) == e(abP, Q).
    let (a, b) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let (p, q) = (G1Affine::generator(), G2Affine::generator());
    let lhs = [((p * a).to_affine(), (q * b).to_affine())];
    let rhs = [((p * (a * b)).to_affine(), q)];
    let out = gpu.pairing_products(&[&lhs, &rhs]).expect("GPU pairings");
    assert_eq!(out[0], out[1]);
    assert_ne!(out[0], Gt::identity().to_bytes());
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn products_of_pairings_equal_multi_miller_loop() {
    let gpu = gpu();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut groups: Vec<Vec<(G1Affine, G2Affine)>> = Vec::new();
    for len in [0usize, 1, 2, 3, 4, 5, 8] {
        groups.push(
            (0..len)
                .map(|k| {
                    let p = if k == 2 {
                        G1Affine::identity()
                    } else {
                        G1Projective::random(&mut rng).to_affine()
                    };
                    (p, G2Projective::random(&mut rng).to_affine())
                })
                .collect(),
        );
    }
    // e(s, -g2) * e(H, pk) of a valid signature is one; of a wrong one it is not.
    let sk = Scalar::random(&mut rng);
    let h = cpu::hash_message_to_g1(BlsScheme::Threshold, b"gt check");
    let pk = (G2Affine::generator() * sk).to_affine();
    let sig = (h * sk).to_affine();
    groups.push(vec![(sig, -G2Affine::generator()), (h, pk)]);
    groups.push(vec![(h, -G2Affine::generator()), (sig, pk)]);
    let slices: Vec<&[(G1Affine, G2Affine)]> = groups.iter().map(|g| g.as_slice()).collect();
    let got = gpu.pairing_products(&slices).expect("GPU pairings");
    for (g, gt) in groups.iter().zip(&got) {
        let prepared: Vec<G2Prepared> = g.iter().map(|(_, q)| G2Prepared::from(*q)).collect();
        let terms: Vec<(&G1Affine, &G2Prepared)> =
            g.iter().map(|(p, _)| p).zip(prepared.iter()).collect();
        let want = multi_miller_loop(&terms).final_exponentiation();
        assert_eq!(gt[..], want.to_bytes()[..], "group of {}", g.len());
    }
    let n = got.len();
    assert_eq!(got[n - 2], Gt::identity().to_bytes());
    assert_ne!(got[n - 1], Gt::identity().to_bytes());
}

/// A valid item signed with ic_bls12_381 and the CPU path's hash.
fn signed(rng: &mut ChaCha20Rng, message: Vec<u8>, scheme: BlsScheme) -> (Owned, Scalar) {
    let sk = Scalar::random(&mut *rng);
    let h = cpu::hash_message_to_g1(scheme, &message);
    let item = Owned {
        signature: (h * sk).to_affine().to_compressed(),
        public_key: (G2Affine::generator() * sk).to_affine().to_compressed(),
        message,
        scheme,
    };
    (item, sk)
}

/// Spoils `item` in one of eleven ways (bad signatures, wrong key / message / scheme,
/// undecodable encodings, identity points); the CPU path decides what the verdict is.
fn spoil(item: &mut Owned, sk: &Scalar, how: usize, rng: &mut ChaCha20Rng) {
    match how {
        0 => {
            let mut other = item.message.clone();
            other.push(1);
            let h = cpu::hash_message_to_g1(item.scheme, &other);
            item.signature = (h * sk).to_affine().to_compressed();
        }
        1 => item.message.push(0x55),
        2 => {
            let other = Scalar::random(&mut *rng);
            item.public_key = (G2Affine::generator() * other).to_affine().to_compressed();
        }
        3 => {
            item.scheme = match item.scheme {
                BlsScheme::Threshold => BlsScheme::MultiSig,
                BlsScheme::MultiSig => BlsScheme::Threshold,
            }
        }
        4 => item.signature[0] &= 0x7f,
        5 => item.public_key[48..].copy_from_slice(&cpu::P_BYTES),
        6 => {
            // (0, 2) has order 3: on the curve, not in G1.
            let mut enc = [0u8; 48];
            enc[0] = 0x80;
            item.signature = enc;
        }
        7 => item.signature = G1Affine::identity().to_compressed(),
        8 => item.public_key = G2Affine::identity().to_compressed(),
        9 => {
            item.signature = G1Affine::identity().to_compressed();
            item.public_key = G2Affine::identity().to_compressed();
        }
        _ => {
            let bytes: [u8; 48] = std::array::from_fn(|_| rng.r#gen());
            item.signature = bytes;
        }
    }
}

/// `n` items with distinct messages (all one message when `same_message`) and `bad`
/// spoiled ones at random positions.
fn batch(seed: u64, n: usize, bad: usize, same_message: bool) -> Vec<Owned> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let shared: Vec<u8> = b"certified state root".to_vec();
    let mut out = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let message = if same_message {
            shared.clone()
        } else {
            let mut m = (i as u64).to_le_bytes().to_vec();
            m.extend((0..rng.gen_range(0..40)).map(|_| rng.r#gen::<u8>()));
            m
        };
        let scheme = if same_message {
            BlsScheme::Threshold
        } else {
            BlsScheme::ALL[i % 2]
        };
        let (item, sk) = signed(&mut rng, message, scheme);
        out.push(item);
        keys.push(sk);
    }
    let mut positions: Vec<usize> = (0..n).collect();
    for k in 0..bad.min(n) {
        let j = rng.gen_range(k..n);
        positions.swap(k, j);
        let p = positions[k];
        let how = rng.gen_range(0..11);
        spoil(&mut out[p], &keys[p], how, &mut rng);
    }
    out
}

fn assert_same_verdicts(gpu: &gpu_crypto::gpu::GpuBackend, batch: &[Owned], what: &str) {
    let want = cpu::bls_verify_batch(&items(batch));
    // The default choice of strategy, then each strategy.
    assert_eq!(
        gpu.bls_verify_batch(&items(batch)).expect("GPU verify"),
        want,
        "{what}: default strategy"
    );
    for strategy in [
        BlsGpuStrategy::RandomCombination,
        BlsGpuStrategy::RandomCombinationSplit,
        BlsGpuStrategy::RandomCombinationQuarters,
        BlsGpuStrategy::PerItem,
    ] {
        let got = gpu
            .bls_verify_batch_with(&items(batch), strategy)
            .unwrap_or_else(|e| panic!("{what} {strategy:?}: GPU error {e}"));
        assert_eq!(got.len(), want.len(), "{what} {strategy:?}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{what} {strategy:?}: item {i}");
        }
    }
    let invalid = want.iter().filter(|v| v.is_err()).count();
    eprintln!(
        "{what}: {} items, {invalid} rejected, GPU == CPU",
        batch.len()
    );
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn distinct_message_batches_equal_the_cpu_path() {
    let gpu = gpu();
    assert_eq!(gpu.bls_verify_batch(&[]).expect("empty batch"), vec![]);
    for (seed, n, bad) in [
        (10, 1, 0),
        (11, 1, 1),
        (12, 2, 1),
        (13, 3, 0),
        (14, 7, 7),
        (15, 64, 0),
        (16, 64, 1),
        (17, 100, 13),
        (18, 257, 1),
        (19, 300, 120),
        (20, 1000, 3),
    ] {
        let b = batch(seed, n, bad, false);
        assert_same_verdicts(&gpu, &b, &format!("seed {seed}, {bad} spoiled"));
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn same_message_batches_equal_the_cpu_path() {
    let gpu = gpu();
    for (seed, n, bad) in [(30, 28, 0), (31, 28, 1), (32, 100, 4)] {
        let b = batch(seed, n, bad, true);
        assert_same_verdicts(&gpu, &b, &format!("same message, seed {seed}"));
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn every_item_invalid_and_swapped_signatures() {
    let gpu = gpu();
    let mut b = batch(40, 50, 0, false);
    // Swapping two valid signatures: both items fail, the rest pass.
    let s = b[3].signature;
    b[3].signature = b[40].signature;
    b[40].signature = s;
    assert_same_verdicts(&gpu, &b, "swapped");
    let want = cpu::bls_verify_batch(&items(&b));
    assert_eq!(want[3], Err(VerifyError::Invalid));
    assert_eq!(want[40], Err(VerifyError::Invalid));
    // Every item signed for another message.
    for item in b.iter_mut() {
        item.message.push(7);
    }
    assert_same_verdicts(&gpu, &b, "all invalid");
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn engine_with_bls_pinned_to_the_gpu_equals_the_cpu_engine() {
    gpu();
    let mut policy = Policy::with_backend(BackendChoice::Cpu);
    policy.bls_verify.backend = BackendChoice::Gpu;
    policy.fallback = gpu_crypto::Fallback::Never;
    let engine = Engine::new(policy).expect("GPU engine");
    let b = batch(50, 80, 9, false);
    let got = engine.bls_verify_batch(&items(&b)).expect("GPU verify");
    assert_eq!(got, cpu::bls_verify_batch(&items(&b)));
    let stats = engine.stats();
    assert!(
        stats
            .operations
            .iter()
            .any(|c| c.operation == gpu_crypto::Operation::BlsVerify
                && c.executed == gpu_crypto_api::stats::Executed::Gpu
                && c.items == 80),
        "{stats:?}"
    );
}
