//! GPU shared-base MSMs with 8-bit scalars (`Engine::g1_msm_shared_u8`, the NI-DKG chunking
//! proof's 32 MSMs of 16n points) against the CPU reference `nidkg::msm::msm_shared_bases_u8`
//! and, for a small case, the naive `sum s * P` of ic_bls12_381: the engine with the GPU
//! pinned and no CPU fallback (a GPU error fails the test), on fresh random inputs (the
//! seed is printed) for n = 13, 28, 40, and adversarial inputs (zero scalars and rows,
//! identity bases, no rows, no bases, duplicate bases, P and -P, scalars 255 everywhere);
//! every plane-block width. Ignored unless asked for: they need a GPU.

mod gpu_common;

use gpu_common::{gpu, rng};
use gpu_crypto::gpu::GpuBackend;
use gpu_crypto::{
    BackendChoice, Engine, EngineError, Fallback, G1Affine, G1Projective, Policy, Scalar,
};
use group::Group;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha20Rng;
use std::time::Instant;

/// The engine with the shared-base MSM pinned to the GPU and no recomputation on the CPU.
fn engine() -> Engine {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.msm_shared_u8.backend = BackendChoice::Gpu;
    policy.fallback = Fallback::Never;
    Engine::new(policy).expect("GPU engine")
}

/// A fresh seed, printed so that a failure can be replayed.
fn fresh_rng(what: &str) -> ChaCha20Rng {
    let seed = std::env::var("MSM_U8_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().next_u64());
    eprintln!("{what}: seed {seed} (MSM_U8_SEED={seed} replays it)");
    rng(seed)
}

/// Distinct random points (a random start plus multiples of a random step).
fn random_points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let step = G1Projective::random(&mut *rng);
    let mut acc = G1Projective::random(&mut *rng);
    let proj: Vec<G1Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut affine = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut affine);
    affine
}

fn random_bytes(n: usize, rng: &mut ChaCha20Rng) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

fn reference(bases: &[G1Affine], scalars: &[u8], rows: usize) -> Vec<G1Projective> {
    (0..rows)
        .map(|k| nidkg::msm::msm_shared_bases_u8(bases, &scalars[k * bases.len()..][..bases.len()]))
        .collect()
}

/// The engine (GPU pinned) against the CPU reference, row by row.
fn check(engine: &Engine, what: &str, bases: &[G1Affine], scalars: &[u8], rows: usize) {
    let got = engine
        .g1_msm_shared_u8(bases, scalars, rows)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = reference(bases, scalars, rows);
    assert_eq!(got.len(), rows, "{what}: result count");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{what}: row {k} of {rows} ({} bases)", bases.len());
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn nidkg_shapes_match_the_cpu_reference() {
    let engine = engine();
    let mut r = fresh_rng("nidkg shapes");
    for n in [13usize, 28, 40] {
        let bases = random_points(16 * n, &mut r);
        for round in 0..3 {
            let scalars = random_bytes(32 * bases.len(), &mut r);
            check(
                &engine,
                &format!("32 x {} round {round}", bases.len()),
                &bases,
                &scalars,
                32,
            );
        }
        eprintln!("32 x {}: equal", 16 * n);
    }
    let stats = engine.stats();
    eprintln!("engine stats: {stats:?}");
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn small_case_matches_the_naive_sum() {
    let engine = engine();
    let mut r = fresh_rng("naive");
    let (n, rows) = (21usize, 5usize);
    let bases = random_points(n, &mut r);
    let mut scalars = random_bytes(n * rows, &mut r);
    scalars[0] = 255;
    scalars[1] = 1;
    scalars[2] = 0;
    let got = engine
        .g1_msm_shared_u8(&bases, &scalars, rows)
        .expect("GPU call");
    for k in 0..rows {
        let naive = bases
            .iter()
            .zip(&scalars[k * n..(k + 1) * n])
            .fold(G1Projective::identity(), |acc, (p, &s)| {
                acc + p * Scalar::from(u64::from(s))
            });
        assert_eq!(got[k], naive, "row {k}");
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn adversarial_inputs_match_the_cpu_reference() {
    let engine = engine();
    let mut r = fresh_rng("adversarial");
    let n = 448;
    let bases = random_points(n, &mut r);
    let rows = 32;
    // Zero scalars everywhere, and some all-zero rows among random ones.
    check(&engine, "all zero", &bases, &vec![0u8; n * rows], rows);
    let mut scalars = random_bytes(n * rows, &mut r);
    for k in [0usize, 7, 31] {
        scalars[k * n..(k + 1) * n].fill(0);
    }
    let out = engine
        .g1_msm_shared_u8(&bases, &scalars, rows)
        .expect("GPU");
    assert!(
        bool::from(out[7].is_identity()),
        "an all-zero row is the identity"
    );
    check(&engine, "zero rows", &bases, &scalars, rows);
    // 255 everywhere (every plane holds every base), and 255 with one base.
    check(
        &engine,
        "255 everywhere",
        &bases,
        &vec![255u8; n * rows],
        rows,
    );
    check(&engine, "one base, 255", &bases[..1], &[255u8; 3], 3);
    // Sparse scalars: powers of two only (one plane per base).
    let sparse: Vec<u8> = (0..n * rows).map(|_| 1u8 << r.gen_range(0..8)).collect();
    check(&engine, "powers of two", &bases, &sparse, rows);
    // Identity bases among the others, and only identity bases.
    let mut with_identity = bases.clone();
    for p in [0usize, 5, 100, n - 1] {
        with_identity[p] = G1Affine::identity();
    }
    check(
        &engine,
        "identity bases",
        &with_identity,
        &random_bytes(n * rows, &mut r),
        rows,
    );
    let identities = vec![G1Affine::identity(); 40];
    let out = engine
        .g1_msm_shared_u8(&identities, &[255u8; 40 * 4], 4)
        .expect("GPU");
    assert!(out.iter().all(|p| bool::from(p.is_identity())));
    // No rows; no bases (every row is the identity).
    assert!(
        engine
            .g1_msm_shared_u8(&bases, &[], 0)
            .expect("GPU")
            .is_empty()
    );
    let out = engine.g1_msm_shared_u8(&[], &[], 3).expect("GPU");
    assert_eq!(out, vec![G1Projective::identity(); 3]);
    // Duplicate bases (the additions meet P + P), all bases equal, and a base beside its
    // negation with equal scalars (P + (-P) = identity inside a plane sum).
    let mut dup = bases.clone();
    for p in (0..n).step_by(3) {
        dup[p] = bases[0];
    }
    check(
        &engine,
        "duplicates",
        &dup,
        &random_bytes(n * rows, &mut r),
        rows,
    );
    let same = vec![bases[1]; n];
    check(
        &engine,
        "all equal, 255",
        &same,
        &vec![255u8; n * rows],
        rows,
    );
    check(
        &engine,
        "all equal",
        &same,
        &random_bytes(n * rows, &mut r),
        rows,
    );
    let mut neg = bases.clone();
    for p in (0..n).step_by(2) {
        neg[p + 1] = -neg[p];
    }
    let mut pair_scalars = random_bytes(n * rows, &mut r);
    for row in pair_scalars.chunks_exact_mut(n) {
        for p in (0..n).step_by(2) {
            row[p + 1] = row[p];
        }
    }
    let out = engine
        .g1_msm_shared_u8(&neg, &pair_scalars, rows)
        .expect("GPU");
    assert!(
        out.iter().all(|p| bool::from(p.is_identity())),
        "P + (-P) cancels"
    );
    check(&engine, "negation pairs", &neg, &pair_scalars, rows);
    check(
        &engine,
        "negation pairs, 255",
        &neg,
        &vec![255u8; n * rows],
        rows,
    );
    // Shapes away from 16n: one row, many rows, odd sizes.
    for (n, rows) in [
        (1usize, 1usize),
        (2, 64),
        (31, 3),
        (33, 9),
        (129, 2),
        (1000, 5),
    ] {
        let b = random_points(n, &mut r);
        check(
            &engine,
            &format!("{rows} x {n}"),
            &b,
            &random_bytes(n * rows, &mut r),
            rows,
        );
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn length_mismatch_is_a_typed_error() {
    let engine = engine();
    let bases = random_points(16, &mut rng(5));
    let err = engine
        .g1_msm_shared_u8(&bases, &[1u8; 31], 2)
        .expect_err("31 scalars for 2 rows of 16 bases");
    assert!(
        matches!(
            err,
            EngineError::ScalarCountMismatch {
                op: gpu_crypto::Operation::MsmSharedU8,
                rows: 2,
                bases: 16,
                scalars: 31,
            }
        ),
        "{err:?}"
    );
    assert!(engine.g1_msm_shared_u8(&bases, &[1u8; 16], 0).is_err());
}

/// Every plane-block width gives the same results; then the time of each on the NI-DKG
/// shapes (median of 30 calls after a warm-up), printed for docs/msm.md.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn every_plane_width_matches_and_is_timed() {
    let gpu: std::sync::Arc<GpuBackend> = gpu();
    let mut r = fresh_rng("plane widths");
    for n in [13usize, 28, 40] {
        let bases = random_points(16 * n, &mut r);
        let scalars = random_bytes(32 * bases.len(), &mut r);
        let want = reference(&bases, &scalars, 32);
        let mut line = format!("32 x {}:", bases.len());
        for threads in [32u32, 64, 128] {
            let got = gpu
                .g1_msm_shared_u8_with(&bases, &scalars, 32, threads)
                .expect("GPU call");
            assert_eq!(got, want, "32 x {} with {threads} threads", bases.len());
            let mut times: Vec<f64> = (0..30)
                .map(|_| {
                    let t = Instant::now();
                    gpu.g1_msm_shared_u8_with(&bases, &scalars, 32, threads)
                        .expect("GPU call");
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            times.sort_by(f64::total_cmp);
            line.push_str(&format!(" {threads} threads {:.3} ms;", times[15]));
        }
        eprintln!("plane widths {line}");
    }
}
