//! GPU G1 MSM (Pippenger, `GpuBackend::g1_msm_batch`) against the CPU path
//! (`cpu::g1_msm_batch`, blst) and, for small sizes, the naive `ic_bls12_381` sum: sizes 0
//! to 2^16, identity points, zero and r-1 scalars, repeated points, one point many times,
//! batches (NI-DKG shape 32 x 448, mixed sizes with empty MSMs, 3,280 MSMs of 16 points
//! across launch sequences), forced window widths, and
//! the engine with the GPU pinned. Ignored unless asked for: they need a GPU.

mod gpu_common;

use ff::Field;
use gpu_common::{gpu, rng};
use gpu_crypto::{
    BackendChoice, Engine, Fallback, G1Affine, G1Projective, MsmInput, Policy, Scalar, cpu,
};
use group::Group;
use rand_chacha::ChaCha20Rng;

/// Distinct random points: a random start plus multiples of a random step, normalised in
/// one batch (fast; the MSM's cost does not depend on how the points were drawn).
fn random_points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let step = G1Projective::random(&mut *rng);
    let mut acc = G1Projective::random(&mut *rng);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        acc += step;
        proj.push(acc);
    }
    let mut affine = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut affine);
    affine
}

fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// Runs the batch on the GPU and on the CPU path and compares every result.
fn check_batch(what: &str, msms: &[MsmInput<'_>]) -> Vec<G1Projective> {
    let gpu = gpu();
    let got = gpu
        .g1_msm_batch(msms)
        .unwrap_or_else(|e| panic!("{what}: GPU call: {e}"));
    let want = cpu::g1_msm_batch(msms);
    assert_eq!(got.len(), msms.len(), "{what}: result count");
    for (i, (g, c)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            c,
            "{what}: MSM {i} of {} ({} points) differs from cpu::g1_msm_batch",
            msms.len(),
            msms[i].points.len()
        );
    }
    got
}

fn check_one(what: &str, points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let out = check_batch(what, &[MsmInput { points, scalars }]);
    let g = out[0];
    if points.len() <= 128 {
        assert_eq!(g, cpu::g1_msm_naive(points, scalars), "{what}: naive sum");
    }
    g
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn sizes_from_0_to_2_pow_16_match_the_cpu() {
    let mut r = rng(60);
    // Fixed edge sizes, then random ones (non-powers of two, across the staging pieces of
    // 4096 points and the upload groups of 2^16).
    let mut sizes = vec![0usize, 1, 2, 3, 17, 100, 1000, 4095, 4097, 1 << 16];
    sizes.extend((0..4).map(|_| rand::Rng::gen_range(&mut r, 5..140_000usize)));
    for n in sizes {
        let points = random_points(n, &mut r);
        let scalars = random_scalars(n, &mut r);
        check_one(&format!("n={n}"), &points, &scalars);
        eprintln!("n={n}: equal");
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn identity_points_zero_and_extreme_scalars() {
    let mut r = rng(61);
    let n = 300;
    let mut points = random_points(n, &mut r);
    let mut scalars = random_scalars(n, &mut r);
    let minus_one = -Scalar::ONE; // r - 1
    for i in 0..n {
        match i % 7 {
            0 => points[i] = G1Affine::identity(),
            1 => scalars[i] = Scalar::ZERO,
            2 => scalars[i] = minus_one,
            3 => scalars[i] = Scalar::ONE,
            4 => scalars[i] = Scalar::from(1u64 << 15), // a window-boundary digit
            _ => {}
        }
    }
    check_one("mixed special cases", &points, &scalars);
    // All identity points, all zero scalars, all r - 1.
    let ids = vec![G1Affine::identity(); 50];
    let zeros = vec![Scalar::ZERO; 50];
    let some = random_points(50, &mut r);
    let g = check_one("all identity points", &ids, &random_scalars(50, &mut r));
    assert_eq!(g, G1Projective::identity());
    let g = check_one("all zero scalars", &some, &zeros);
    assert_eq!(g, G1Projective::identity());
    check_one("all r-1", &some, &vec![minus_one; 50]);
    // P and -P with equal scalars cancel: every bucket meets P == -acc.
    let p = some[0];
    let cancel_points: Vec<G1Affine> = (0..64).map(|i| if i % 2 == 0 { p } else { -p }).collect();
    let s = random_scalars(1, &mut r)[0];
    let g = check_one("P and -P cancel", &cancel_points, &vec![s; 64]);
    assert_eq!(g, G1Projective::identity());
}

/// (0, 2) is on the curve (order 3, outside G1) and `from_uncompressed_unchecked` accepts
/// it: the identity is told by ic_bls12_381's flag, never by x = 0, so this point must be
/// added like any other.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn on_curve_point_with_x_zero_is_not_the_identity() {
    let gpu = gpu();
    let mut enc = [0u8; 96];
    enc[95] = 2;
    let t = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&enc))
        .expect("(0, 2) is on the curve");
    let mut r = rng(65);
    let mut points = random_points(40, &mut r);
    points[3] = t;
    points[17] = t;
    let scalars = random_scalars(40, &mut r);
    let got = gpu
        .g1_msm_batch(&[MsmInput {
            points: &points,
            scalars: &scalars,
        }])
        .expect("GPU call");
    assert_eq!(got[0], cpu::g1_msm_naive(&points, &scalars));
}

/// Batches above 2^18 points cross in chunks that are sorted and added into the buckets one
/// after the other: one MSM over several chunks, and a batch whose MSMs straddle chunk
/// boundaries, with identities, zero and r - 1 scalars and repeated points among them.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn large_batches_cross_in_chunks() {
    gpu();
    let mut r = rng(66);
    let n = (1 << 19) + 12_345;
    let mut points = random_points(n, &mut r);
    let mut scalars = random_scalars(n, &mut r);
    let minus_one = -Scalar::ONE;
    for i in (0..n - 5).step_by(997) {
        points[i] = G1Affine::identity();
        scalars[i + 1] = Scalar::ZERO;
        scalars[i + 2] = minus_one;
        points[i + 3] = points[i + 4];
    }
    check_one("one MSM of 2^19 + 12345 points", &points, &scalars);
    let sizes = [200_000usize, 0, 3, 150_001, 1, 174_000];
    let mut at = 0;
    let msms: Vec<MsmInput<'_>> = sizes
        .iter()
        .map(|&len| {
            let m = MsmInput {
                points: &points[at..at + len],
                scalars: &scalars[at..at + len],
            };
            at += len;
            m
        })
        .collect();
    check_batch("MSMs straddling chunks", &msms);
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn repeated_points_and_one_point_many_times() {
    let mut r = rng(62);
    // The same point with the same scalar: every window's digit lands in one bucket, whose
    // additions meet acc == P (doubling) at the first step. From 1000 points that bucket
    // spans many accumulation slices, whose equal parts msm_merge adds (doubling again);
    // 300,000 points cross in two chunks, the second resuming the first's buckets.
    let p = random_points(1, &mut r)[0];
    let s = random_scalars(1, &mut r)[0];
    for n in [2usize, 3, 1000, 5000, 300_000] {
        let points = vec![p; n];
        check_one(&format!("same point and scalar x{n}"), &points, &vec![s; n]);
    }
    // The same point with random scalars, and a few points repeated in a long list.
    let points = vec![p; 4000];
    check_one(
        "same point, random scalars",
        &points,
        &random_scalars(4000, &mut r),
    );
    let few = random_points(5, &mut r);
    let points: Vec<G1Affine> = (0..3000).map(|i| few[i % 5]).collect();
    check_one("5 points repeated", &points, &random_scalars(3000, &mut r));
    // Small scalars: only the lowest window is non-zero.
    let small: Vec<Scalar> = (0..3000u64).map(|i| Scalar::from(i % 40)).collect();
    check_one("small scalars", &points, &small);
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn batch_of_32_by_448_and_mixed_batches() {
    let mut r = rng(63);
    let points: Vec<Vec<G1Affine>> = (0..32).map(|_| random_points(448, &mut r)).collect();
    let scalars: Vec<Vec<Scalar>> = (0..32).map(|_| random_scalars(448, &mut r)).collect();
    let msms: Vec<MsmInput<'_>> = points
        .iter()
        .zip(&scalars)
        .map(|(p, s)| MsmInput {
            points: p,
            scalars: s,
        })
        .collect();
    check_batch("32 x 448", &msms);
    // Mixed sizes with empty MSMs between, first and last.
    let sizes = [0usize, 1, 5, 0, 448, 2, 0, 1000, 3, 0];
    let pts: Vec<Vec<G1Affine>> = sizes.iter().map(|&n| random_points(n, &mut r)).collect();
    let scs: Vec<Vec<Scalar>> = sizes.iter().map(|&n| random_scalars(n, &mut r)).collect();
    let msms: Vec<MsmInput<'_>> = pts
        .iter()
        .zip(&scs)
        .map(|(p, s)| MsmInput {
            points: p,
            scalars: s,
        })
        .collect();
    check_batch("mixed sizes", &msms);
    // Only empty MSMs, and an empty batch.
    let empty = MsmInput {
        points: &[],
        scalars: &[],
    };
    let out = check_batch("only empty MSMs", &[empty, empty]);
    assert_eq!(out, vec![G1Projective::identity(); 2]);
    check_batch("empty batch", &[]);
}

/// More MSMs than one launch sequence takes (msm_reduce's grid has a row per MSM and
/// window): a DKG round's chunk recombinations at n = 40, 80 x 41 MSMs of 16 points.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn thousands_of_tiny_msms_match_the_cpu() {
    let mut r = rng(65);
    let points = random_points(16 * 3280, &mut r);
    let scalars = random_scalars(16 * 3280, &mut r);
    let msms: Vec<MsmInput<'_>> = points
        .chunks(16)
        .zip(scalars.chunks(16))
        .map(|(points, scalars)| MsmInput { points, scalars })
        .collect();
    check_batch("3,280 MSMs of 16 points", &msms);
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn engine_with_gpu_pinned_matches_cpu_and_rejects_length_mismatch() {
    gpu();
    // Only the MSM pinned to the GPU (other operations may have no GPU implementation).
    let mut policy = Policy::cpu_only();
    policy.msm.backend = BackendChoice::Gpu;
    policy.fallback = Fallback::Never;
    let engine = Engine::new(policy).expect("GPU engine");
    let mut r = rng(64);
    let points = random_points(777, &mut r);
    let scalars = random_scalars(777, &mut r);
    let got = engine.g1_msm(&points, &scalars).expect("engine msm");
    assert_eq!(
        got,
        cpu::g1_msm_batch(&[MsmInput {
            points: &points,
            scalars: &scalars
        }])[0]
    );
    eprintln!("engine stats: {:?}", engine.stats());
    assert!(
        engine.g1_msm(&points, &scalars[..10]).is_err(),
        "length mismatch must be an error"
    );
}
