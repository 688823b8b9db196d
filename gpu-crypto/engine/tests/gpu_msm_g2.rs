//! GPU G2 MSM (`GpuBackend::g2_msm_batch`, the endomorphism split of kernels/msm/g2_msm.cu)
//! against the CPU path (`cpu::g2_msm_batch`, blst) and the naive `ic_bls12_381` sum: sizes 0
//! to 300 across the kernel's 64-base chunks, the scalars the base-|z| split has edges at
//! (0, 1, -1, |z| and its powers, 2^k), identity points, a point and its negation, one point
//! many times, 128-bit scalars (the combined integrity check's shape), a DKG round's batch
//! of MSMs; then the engine's routes of `msm_g2` and of the chunk recombinations, and the
//! recombination kernel (kernels/msm/g1_recombine.cu) against `cpu::g1_recombine_chunks` on
//! random rows of every length and rows built to hit the addition's exceptional cases.
//! Ignored unless asked for: they need a GPU.

mod gpu_common;

use ff::Field;
use gpu_common::{gpu, rng};
use gpu_crypto::{
    BackendChoice, Engine, Fallback, G1Affine, G1Projective, G2Affine, G2Projective, MsmInput,
    Operation, Policy, Scalar, cpu,
};
use gpu_crypto_api::stats::Executed;
use group::Group;
use rand::Rng;
use rand_chacha::ChaCha20Rng;

/// |z|, the absolute value of the BLS parameter: the base of the kernel's scalar split.
const Z_ABS: u64 = 0xd201_0000_0001_0000;

fn random_points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G2Affine> {
    let step = G2Projective::random(&mut *rng);
    let mut acc = G2Projective::random(&mut *rng);
    let proj: Vec<G2Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut affine = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&proj, &mut affine);
    affine
}

fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// Runs the batch on the GPU and on the CPU path, compares every result, and each with
/// the naive sum.
fn check_batch(what: &str, msms: &[MsmInput<'_, G2Affine>]) -> Vec<G2Projective> {
    let got = gpu()
        .g2_msm_batch(msms)
        .unwrap_or_else(|e| panic!("{what}: GPU call: {e}"));
    let want = cpu::g2_msm_batch(msms);
    assert_eq!(got.len(), msms.len(), "{what}: result count");
    for (i, ((g, c), m)) in got.iter().zip(&want).zip(msms).enumerate() {
        assert_eq!(
            g,
            c,
            "{what}: MSM {i} ({} points) differs from the CPU",
            m.points.len()
        );
        assert_eq!(
            *c,
            cpu::g2_msm_naive(m.points, m.scalars),
            "{what}: MSM {i}: the CPU path differs from the naive sum"
        );
    }
    got
}

fn check_one(what: &str, points: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    check_batch(what, &[MsmInput { points, scalars }])[0]
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn sizes_across_the_chunks_match_the_cpu() {
    let mut r = rng(70);
    let mut sizes = vec![0usize, 1, 2, 3, 16, 21, 63, 64, 65, 128, 129, 300];
    sizes.extend((0..3).map(|_| r.gen_range(4..200usize)));
    for n in sizes {
        let points = random_points(n, &mut r);
        let scalars = random_scalars(n, &mut r);
        check_one(&format!("n={n}"), &points, &scalars);
        eprintln!("n={n}: equal");
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn scalars_at_the_edges_of_the_split_and_degenerate_points() {
    let mut r = rng(71);
    let z = Scalar::from(Z_ABS);
    let mut scalars = vec![
        Scalar::zero(),
        Scalar::one(),
        -Scalar::one(),
        z,
        z - Scalar::one(),
        z + Scalar::one(),
        z * z,
        z * z * z,
        z * z * z - Scalar::one(),
        -z,
        Scalar::from(u64::MAX),
    ];
    scalars.extend((0..255u64).map(|k| Scalar::from(2u64).pow_vartime(&[k, 0, 0, 0])));
    let points = random_points(scalars.len(), &mut r);
    check_one("edge scalars", &points, &scalars);
    // Each edge scalar alone (a single term chain), and on the generator.
    for s in &scalars[..11] {
        check_one("one edge scalar", &points[..1], std::slice::from_ref(s));
        check_one(
            "generator",
            &[G2Affine::generator()],
            std::slice::from_ref(s),
        );
    }
    // Identity bases, a point and its negation under one scalar (the terms cancel in the
    // block's tree), one point many times (equal operands in the tree's additions).
    let p = points[0];
    let s = random_scalars(1, &mut r)[0];
    let id = G2Affine::identity();
    let zero = check_one("p and -p", &[p, -p], &[s, s]);
    assert_eq!(zero, G2Projective::identity());
    check_one("identities", &[id, p, id], &[s, s, s]);
    check_one("only identities", &[id, id], &[s, s]);
    check_one("p 200 times", &vec![p; 200], &vec![s; 200]);
    check_one(
        "p 200 times, scalar 1",
        &vec![p; 200],
        &vec![Scalar::one(); 200],
    );
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn batches_of_the_dealing_shapes_match_the_cpu() {
    let mut r = rng(72);
    // A DKG round at n = 28: 56 integrity sums of 16 points with 128-bit coefficients and
    // 56 coefficient equations of t + 2 = 21 points; mixed with empty MSMs.
    let points: Vec<Vec<G2Affine>> = (0..112)
        .map(|i| random_points(if i < 56 { 16 } else { 21 }, &mut r))
        .collect();
    let scalars: Vec<Vec<Scalar>> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (0..p.len())
                .map(|_| {
                    if i < 56 {
                        Scalar::from_raw([r.r#gen(), r.r#gen(), 0, 0])
                    } else {
                        Scalar::random(&mut r)
                    }
                })
                .collect()
        })
        .collect();
    let mut msms: Vec<MsmInput<'_, G2Affine>> = points
        .iter()
        .zip(&scalars)
        .map(|(points, scalars)| MsmInput { points, scalars })
        .collect();
    check_batch("a round's G2 MSMs", &msms);
    let empty = MsmInput {
        points: &[],
        scalars: &[],
    };
    msms.insert(3, empty);
    msms.push(empty);
    check_batch("with empty MSMs", &msms);
    let out = check_batch("only empty MSMs", &[empty, empty]);
    assert_eq!(out, vec![G2Projective::identity(); 2]);
    check_batch("empty batch", &[]);
}

/// The engine with `msm_g2` and `msm` pinned to the GPU: G2 MSMs and chunk recombinations
/// equal the CPU's, run on the GPU, and a length mismatch is a typed error.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn engine_routes_g2_msms_and_recombinations_to_the_gpu() {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.msm_g2.backend = BackendChoice::Gpu;
    policy.msm.backend = BackendChoice::Gpu;
    policy.fallback = Fallback::Never;
    let engine = Engine::new(policy).expect("GPU engine");
    let mut r = rng(73);
    let points = random_points(21, &mut r);
    let scalars = random_scalars(21, &mut r);
    let input = [MsmInput {
        points: &points,
        scalars: &scalars,
    }];
    let got = engine.g2_msm_batch(&input).expect("engine G2 MSM");
    assert_eq!(got, cpu::g2_msm_batch(&input));
    let short = [MsmInput {
        points: &points,
        scalars: &scalars[..3],
    }];
    assert!(engine.g2_msm_batch(&short).is_err(), "length mismatch");

    // Rows of 16 chunks (a dealing's n + 1 = 29), and a short row.
    let g1: Vec<G1Affine> = (0..29 * 16)
        .map(|_| G1Affine::from(G1Projective::random(&mut r)))
        .collect();
    let mut rows: Vec<&[G1Affine]> = g1.chunks(16).collect();
    rows.push(&g1[..5]);
    let got = engine.g1_recombine_chunks(&rows).expect("recombination");
    assert_eq!(got, cpu::g1_recombine_chunks(&rows));
    let too_long = [&g1[..17]];
    assert!(
        engine.g1_recombine_chunks(&too_long).is_err(),
        "a row of 17"
    );

    let stats = engine.stats();
    for op in [Operation::MsmG2, Operation::Msm] {
        assert!(
            gpu_common::ran(&engine, op, Executed::Gpu),
            "{op}: {stats:?}"
        );
        assert!(
            !gpu_common::ran(&engine, op, Executed::Cpu),
            "{op}: {stats:?}"
        );
    }
}

/// `[2^16] p`: one chunk's shift.
fn shifted(p: G1Projective) -> G1Projective {
    (0..16).fold(p, |acc, _| acc.double())
}

/// Recombinations on the GPU equal the CPU's: random rows of 0 to 16 chunks, identity
/// chunks (first, inside, all), and rows whose Horner step adds a point to its own double
/// or to its negation (the addition's exceptional cases, a sum of the identity).
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn recombinations_match_the_cpu_on_random_and_adversarial_rows() {
    let gpu = gpu();
    let mut r = rng(79);
    let random = |r: &mut ChaCha20Rng, n: usize| -> Vec<G1Affine> {
        (0..n)
            .map(|_| G1Affine::from(G1Projective::random(&mut *r)))
            .collect()
    };
    let mut owned: Vec<Vec<G1Affine>> = (0..=16).map(|len| random(&mut r, len)).collect();
    let id = G1Affine::identity();
    let p = G1Projective::random(&mut r);
    let mut with_identities = random(&mut r, 16);
    with_identities[0] = id;
    with_identities[7] = id;
    owned.push(with_identities);
    owned.push(vec![id; 16]);
    // p * 2^16 + (-p * 2^16) = 0, then more chunks after the identity.
    owned.push(vec![p.into(), (-shifted(p)).into()]);
    owned.push(vec![p.into(), (-shifted(p)).into(), p.into(), id]);
    // p * 2^16 + p * 2^16: the addition meets equal points and doubles.
    owned.push(vec![p.into(), shifted(p).into()]);
    owned.push(vec![
        id,
        p.into(),
        shifted(p).into(),
        (-shifted(shifted(p).double())).into(),
    ]);
    let rows: Vec<&[G1Affine]> = owned.iter().map(Vec::as_slice).collect();
    let got = gpu.g1_recombine_chunks(&rows).expect("GPU recombination");
    let want = cpu::g1_recombine_chunks(&rows);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "row {i} of {} chunks", rows[i].len());
    }
    assert_eq!(got.len(), rows.len());
    assert_eq!(want[owned.len() - 4], G1Projective::identity());
    // A DKG round's shape at n = 40: 80 dealings of 41 rows, across many blocks.
    let big = random(&mut r, 16 * 64);
    let round: Vec<&[G1Affine]> = (0..80 * 41).map(|i| &big[16 * (i % 64)..][..16]).collect();
    assert_eq!(
        gpu.g1_recombine_chunks(&round).expect("round"),
        cpu::g1_recombine_chunks(&round)
    );
}
