//! The GPU MSM's fallback staging (`GPU_CRYPTO_MSM_STAGING=encoded`: points as uncompressed
//! encodings converted on the GPU, scalars as `to_bytes`), which the backend uses when
//! ic_bls12_381's in-memory form cannot be read as Montgomery limbs. Its own test binary
//! with one test, so setting the variable races with no other thread. Compared with the
//! CPU path (`cpu::g1_msm_batch`) and the naive ic_bls12_381 sum; ignored unless asked for: it needs a GPU.

mod gpu_common;

use ff::Field;
use gpu_common::{gpu, rng};
use gpu_crypto::{G1Affine, G1Projective, MsmInput, Scalar, cpu};
use group::Group;

/// Distinct points: a random start plus multiples of a random step, normalised in one
/// batch (G1Projective::random per point would take most of a minute at 300,000 points).
fn random_points(n: usize, r: &mut rand_chacha::ChaCha20Rng) -> Vec<G1Affine> {
    let step = G1Projective::random(&mut *r);
    let mut acc = G1Projective::random(&mut *r);
    let proj: Vec<G1Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut points = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut points);
    points
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn encoded_staging_matches_the_cpu() {
    // SAFETY: this binary's only test sets the variable before any other thread reads it.
    unsafe { std::env::set_var("GPU_CRYPTO_MSM_STAGING", "encoded") };
    let gpu = gpu();
    let mut r = rng(70);
    let minus_one = -Scalar::ONE;
    // 300_001 points cross in two chunks.
    for n in [0usize, 1, 17, 1000, 4097, 70_001, 300_001] {
        let mut points = random_points(n, &mut r);
        let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut r)).collect();
        for i in 0..n {
            match i % 5 {
                0 => points[i] = G1Affine::identity(),
                1 => scalars[i] = Scalar::ZERO,
                2 => scalars[i] = minus_one,
                _ => {}
            }
        }
        if n > 2 {
            points[n - 1] = points[n - 2]; // a repeated point
        }
        let m = [MsmInput {
            points: &points,
            scalars: &scalars,
        }];
        let got = gpu.g1_msm_batch(&m).expect("GPU call");
        assert_eq!(got, cpu::g1_msm_batch(&m), "n={n}");
        if n <= 128 {
            assert_eq!(got[0], cpu::g1_msm_naive(&points, &scalars), "n={n} naive");
        }
        eprintln!("n={n}: equal");
    }
    // A batch with empty MSMs between.
    let points = random_points(900, &mut r);
    let scalars: Vec<Scalar> = (0..900).map(|_| Scalar::random(&mut r)).collect();
    let msms: Vec<MsmInput<'_>> = [0usize, 448, 0, 3, 449]
        .iter()
        .scan(0usize, |at, &len| {
            let m = MsmInput {
                points: &points[*at..*at + len],
                scalars: &scalars[*at..*at + len],
            };
            *at += len;
            Some(m)
        })
        .collect();
    assert_eq!(
        gpu.g1_msm_batch(&msms).expect("GPU batch"),
        cpu::g1_msm_batch(&msms)
    );
}
