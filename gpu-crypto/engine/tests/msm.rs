//! G1 MSM (blst Pippenger behind the engine) against the naive `ic_bls12_381` sum and
//! against blst used directly: sizes 0..3 and non-powers of two, identity points, zero
//! and r-1 scalars, repeated points, many-MSM batches on both threading paths.

use ff::Field;
use gpu_crypto::{Engine, EngineError, G1Affine, G1Projective, MsmInput, Scalar, cpu};
use group::{Curve, Group};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn random_points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let projective: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut *rng)).collect();
    let mut affine = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&projective, &mut affine);
    affine
}

fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// blst's own multi-threaded MSM on the same inputs, independent of our bridge code.
fn blst_msm(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    use blst::MultiPoint;
    if points.is_empty() {
        return G1Projective::identity();
    }
    let blst_points: Vec<blst::blst_p1_affine> = points
        .iter()
        .map(|p| {
            let mut out = blst::blst_p1_affine::default();
            let bytes = p.to_uncompressed();
            // SAFETY: 96-byte uncompressed encoding.
            let err = unsafe { blst::blst_p1_deserialize(&mut out, bytes.as_ptr()) };
            assert_eq!(err, blst::BLST_ERROR::BLST_SUCCESS);
            out
        })
        .collect();
    let scalar_bytes: Vec<u8> = scalars.iter().flat_map(|s| s.to_bytes()).collect();
    let sum = blst_points.as_slice().mult(&scalar_bytes, 255);
    let mut bytes = [0u8; 96];
    // SAFETY: blst writes 96 bytes.
    unsafe { blst::blst_p1_serialize(bytes.as_mut_ptr(), &sum) };
    G1Projective::from(G1Affine::from_uncompressed(&bytes).expect("blst result in G1"))
}

fn check(points: &[G1Affine], scalars: &[Scalar]) {
    let naive = cpu::g1_msm_naive(points, scalars);
    let ours = cpu::g1_msm_batch(&[MsmInput { points, scalars }]);
    assert_eq!(
        ours,
        vec![naive],
        "n={} vs naive ic_bls12_381 sum",
        points.len()
    );
    assert_eq!(
        blst_msm(points, scalars),
        naive,
        "n={} blst direct vs naive",
        points.len()
    );
}

#[test]
fn small_and_odd_sizes() {
    let mut rng = rng(1);
    for n in [0usize, 1, 2, 3, 5, 7, 31, 32, 33, 100, 257] {
        let points = random_points(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        check(&points, &scalars);
    }
}

#[test]
fn edge_scalars_and_points() {
    let mut rng = rng(2);
    let r_minus_1 = -Scalar::ONE;
    for n in [1usize, 2, 3, 40, 64] {
        let mut points = random_points(n, &mut rng);
        let mut scalars = random_scalars(n, &mut rng);
        // All zero scalars, all r-1, all one.
        check(&points, &vec![Scalar::ZERO; n]);
        check(&points, &vec![r_minus_1; n]);
        check(&points, &vec![Scalar::ONE; n]);
        // All identity points.
        check(&vec![G1Affine::identity(); n], &scalars);
        // Mixed: identities, zeros, r-1, a point and its negation, repeated points.
        for i in 0..n {
            match i % 5 {
                0 => points[i] = G1Affine::identity(),
                1 => scalars[i] = Scalar::ZERO,
                2 => scalars[i] = r_minus_1,
                3 if i > 0 => points[i] = -points[i - 1],
                _ => points[i] = points[0],
            }
        }
        check(&points, &scalars);
        // The same point with s and r-s: the sum is the identity.
        if n >= 2 {
            let p = random_points(1, &mut rng)[0];
            let s = Scalar::random(&mut rng);
            let cancelling = [p, p];
            let sc = [s, -s];
            check(&cancelling, &sc);
            assert_eq!(
                cpu::g1_msm_naive(&cancelling, &sc),
                G1Projective::identity()
            );
        }
    }
    // Every point the same (doubling inside buckets).
    let p = random_points(1, &mut rng)[0];
    let n = 300;
    check(&vec![p; n], &random_scalars(n, &mut rng));
    check(&vec![p; n], &vec![r_minus_1; n]);
}

#[test]
fn batches_of_small_and_large_msms() {
    let mut rng = rng(3);
    // Many small MSMs of NI-DKG-like and degenerate sizes.
    let sizes = [0usize, 1, 2, 13 * 16, 3, 40, 28 * 16, 7, 1];
    let data: Vec<(Vec<G1Affine>, Vec<Scalar>)> = sizes
        .iter()
        .map(|&n| (random_points(n, &mut rng), random_scalars(n, &mut rng)))
        .collect();
    let inputs: Vec<MsmInput<'_>> = data
        .iter()
        .map(|(p, s)| MsmInput {
            points: p,
            scalars: s,
        })
        .collect();
    let naive: Vec<G1Projective> = data.iter().map(|(p, s)| cpu::g1_msm_naive(p, s)).collect();
    assert_eq!(cpu::g1_msm_batch(&inputs), naive);
    let engine = Engine::cpu_only();
    assert_eq!(engine.g1_msm_batch(&inputs).expect("cpu engine"), naive);
    assert_eq!(engine.g1_msm_batch(&[]).expect("cpu engine"), vec![]);

    // A batch holding a large MSM (2^14 + 3 points: parallel point conversion),
    // checked against blst directly (the naive sum would dominate test time), and the
    // small MSMs of the same batch against the naive sum.
    let n = (1 << 14) + 3;
    let big_points = random_points(n, &mut rng);
    let big_scalars = random_scalars(n, &mut rng);
    let mut inputs = inputs.clone();
    inputs.push(MsmInput {
        points: &big_points,
        scalars: &big_scalars,
    });
    let out = cpu::g1_msm_batch(&inputs);
    assert_eq!(out[..naive.len()], naive[..]);
    assert_eq!(out[naive.len()], blst_msm(&big_points, &big_scalars));
    // And cross-check that one by an independent split: the sum of two halves.
    let (a, b) = big_points.split_at(n / 2);
    let (sa, sb) = big_scalars.split_at(n / 2);
    let halves = cpu::g1_msm_batch(&[
        MsmInput {
            points: a,
            scalars: sa,
        },
        MsmInput {
            points: b,
            scalars: sb,
        },
    ]);
    assert_eq!(
        (halves[0] + halves[1]).to_affine(),
        out[naive.len()].to_affine()
    );
}

#[test]
fn engine_rejects_length_mismatch() {
    let mut rng = rng(4);
    let points = random_points(3, &mut rng);
    let scalars = random_scalars(2, &mut rng);
    let err = Engine::cpu_only()
        .g1_msm(&points, &scalars)
        .expect_err("length mismatch must fail");
    assert!(
        matches!(
            err,
            EngineError::LengthMismatch {
                points: 3,
                scalars: 2,
                ..
            }
        ),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_msms_equal_naive_sum(seed in any::<u64>(), n in 0usize..80, zero_mask in any::<u64>(), identity_mask in any::<u64>()) {
        let mut rng = rng(seed);
        let mut points = random_points(n, &mut rng);
        let mut scalars = random_scalars(n, &mut rng);
        for i in 0..n.min(64) {
            if zero_mask >> i & 1 == 1 && i % 3 == 0 { scalars[i] = Scalar::ZERO; }
            if identity_mask >> i & 1 == 1 && i % 3 == 1 { points[i] = G1Affine::identity(); }
        }
        check(&points, &scalars);
    }
}
