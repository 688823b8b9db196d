//! GPU batch G1 and G2 decompression against the CPU reference, item by item: random
//! valid points, the adversarial corpora, random bytes, several batch sizes (including the
//! parallel host conversion path and several pipeline segments) and the engine with the
//! GPU pinned.

mod gpu_common;

use gpu_common::*;
use gpu_crypto::gpu::{
    DecompressKernel, G2_LATENCY_KERNEL_MAX_POINTS, G2DecompressKernel, LATENCY_KERNEL_MAX_POINTS,
};
use gpu_crypto::{BackendChoice, DecodeError, Engine, G1Affine, G2Affine, Policy};
use ic_bls12_381::G2Projective;
use rand::RngCore;

fn compare(points: &[[u8; 48]], gpu: &[Result<G1Affine, DecodeError>], what: &str) {
    assert_eq!(points.len(), gpu.len(), "{what}: result count");
    for (i, (b, g)) in points.iter().zip(gpu).enumerate() {
        let want = reference_decompress(b);
        assert_eq!(*g, want, "{what}: item {i} input {}", hex::encode(b));
        if let Ok(p) = g {
            assert_eq!(
                p.to_compressed(),
                *b,
                "{what}: item {i} does not round-trip"
            );
        }
    }
}

/// Also compares with the crate's CPU path, item by item.
fn compare_cpu_path(points: &[[u8; 48]], gpu: &[Result<G1Affine, DecodeError>]) {
    let cpu = gpu_crypto::cpu::g1_decompress(points);
    assert_equals_cpu(&cpu, gpu, "");
}

/// `gpu` equals the CPU path's results `cpu`, item by item (`what` names the call).
fn assert_equals_cpu(
    cpu: &[Result<G1Affine, DecodeError>],
    gpu: &[Result<G1Affine, DecodeError>],
    what: &str,
) {
    assert_eq!(cpu.len(), gpu.len(), "{what}: result count");
    for (i, (c, g)) in cpu.iter().zip(gpu).enumerate() {
        assert_eq!(
            c, g,
            "{what}: item {i}: GPU differs from cpu::g1_decompress"
        );
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn shared_corpus_matches_its_expected_verdicts() {
    let gpu = gpu();
    let corpus = gpu_crypto::corpus::g1_decompress_corpus();
    let points: Vec<[u8; 48]> = corpus.iter().map(|e| e.bytes).collect();
    let out = gpu.g1_decompress(&points).expect("GPU call");
    assert_eq!(out.len(), corpus.len());
    for (e, g) in corpus.iter().zip(&out) {
        assert_eq!(*g, e.expected, "{}: {}", e.label, hex::encode(e.bytes));
    }
    compare_cpu_path(&points, &out);
    eprintln!("{} corpus entries equal", corpus.len());
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn adversarial_corpus_matches_reference() {
    let gpu = gpu();
    let corpus = adversarial(&mut rng(1));
    let points: Vec<[u8; 48]> = corpus.iter().map(|(_, b)| *b).collect();
    let out = gpu.g1_decompress(&points).expect("GPU call");
    for ((name, b), g) in corpus.iter().zip(&out) {
        assert_eq!(*g, reference_decompress(b), "{name}: {}", hex::encode(b));
    }
    // Every reason occurs, so the corpus exercises each branch.
    for e in DecodeError::ALL {
        assert!(out.contains(&Err(e)), "corpus never produced {e:?}");
    }
    assert!(out.iter().any(|r| r.is_ok()));
    compare_cpu_path(&points, &out);
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn random_valid_points_and_random_bytes_at_many_batch_sizes() {
    let gpu = gpu();
    let mut r = rng(2);
    for &n in &[1usize, 2, 31, 127, 128, 129, 448, 1000, 4097, 20000] {
        let mut points = valid_points(&mut r, n);
        // Every third item corrupted: random bytes, or a random canonical x.
        for (i, p) in points.iter_mut().enumerate() {
            match i % 6 {
                1 => r.fill_bytes(p),
                4 => *p = random_x(&mut r, 0x80),
                _ => {}
            }
        }
        let out = gpu.g1_decompress(&points).expect("GPU call");
        compare(&points, &out, &format!("batch of {n}"));
        compare_cpu_path(&points, &out);
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn batches_of_several_pipeline_segments() {
    let gpu = gpu();
    let mut r = rng(5);
    // More than three segments of the two-stream pipeline (2^16 points each) with a
    // partial last one, invalid items of three kinds in every segment; then a batch of
    // just over one segment on the same (reused) buffers and streams.
    let n = 3 * 65536 + 777;
    let mut points = valid_points(&mut r, n);
    for (i, p) in points.iter_mut().enumerate() {
        match i % 1000 {
            3 => r.fill_bytes(p),
            500 => *p = random_x(&mut r, 0x80),
            999 => p[0] &= 0x7f,
            _ => {}
        }
    }
    for len in [n, 65536 + 5] {
        let out = gpu.g1_decompress(&points[..len]).expect("GPU call");
        assert_eq!(out.len(), len);
        assert!(out.iter().any(|x| x.is_err()) && out.iter().any(|x| x.is_ok()));
        compare_cpu_path(&points[..len], &out);
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn repeated_calls_reuse_buffers_without_stale_results() {
    let gpu = gpu();
    let mut r = rng(3);
    // A large batch, then smaller ones with different content in the same pooled buffers:
    // a result left over from the large batch would show up as a mismatch.
    let big = valid_points(&mut r, 5000);
    compare(&big, &gpu.g1_decompress(&big).expect("GPU call"), "large");
    for n in [4000usize, 17, 1] {
        let mut small: Vec<[u8; 48]> = (0..n).map(|_| random_x(&mut r, 0x80)).collect();
        small[0] = valid_points(&mut r, 1)[0];
        compare(
            &small,
            &gpu.g1_decompress(&small).expect("GPU call"),
            "after large",
        );
    }
    assert!(gpu.g1_decompress(&[]).expect("empty").is_empty());
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn engine_pinned_to_gpu_decompresses_on_gpu() {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.decompress.backend = BackendChoice::Gpu;
    policy.fallback = gpu_crypto::Fallback::Never;
    let engine = Engine::new(policy).expect("engine with the GPU");
    let mut r = rng(4);
    let mut points = valid_points(&mut r, 300);
    points[7][0] &= 0x7f;
    let out = engine.g1_decompress(&points).expect("engine call");
    compare(&points, &out, "engine");
    let stats = serde_json::to_string(&engine.stats()).unwrap_or_default();
    assert!(
        stats.contains("gpu") || stats.contains("Gpu"),
        "stats: {stats}"
    );
}

/// Points on the curve outside the prime-order subgroup (random canonical x until the
/// CPU says so), with both sort flags, and the order-3 points (0, +-2).
fn non_subgroup_points(r: &mut rand_chacha::ChaCha20Rng, n: usize) -> Vec<[u8; 48]> {
    let mut out = Vec::with_capacity(n + 2);
    let mut zero_x = [0u8; 48];
    zero_x[0] = 0x80;
    out.push(zero_x);
    zero_x[0] = 0xa0;
    out.push(zero_x);
    while out.len() < n + 2 {
        let b = random_x(r, if out.len() % 2 == 0 { 0x80 } else { 0xa0 });
        if reference_decompress(&b) == Err(DecodeError::NotInSubgroup) {
            out.push(b);
        }
    }
    out
}

/// Both kernels, forced, against the CPU at sizes around warp shapes, at 448 and around the
/// switch between the kernels, on a mix of random valid
/// points, the shared corpus, random bytes and on-curve points outside G1 (the host
/// poisons every output, so an unwritten item fails the call).
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn both_kernels_match_the_cpu_at_sizes_around_their_shapes_and_the_switch() {
    let gpu = gpu();
    let mut r = rng(6);
    let corpus: Vec<[u8; 48]> = gpu_crypto::corpus::g1_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .chain(adversarial(&mut rng(7)).into_iter().map(|(_, b)| b))
        .collect();
    let outside = non_subgroup_points(&mut r, 64);
    let max = LATENCY_KERNEL_MAX_POINTS;
    let sizes = [1usize, 2, 7, 8, 9, 31, 32, 33, 448, max - 1, max, max + 1];
    let mut mix = valid_points(&mut r, max + 1);
    for (i, p) in mix.iter_mut().enumerate() {
        match i % 8 {
            1 => r.fill_bytes(p),
            3 => *p = corpus[(i / 8) % corpus.len()],
            5 => *p = outside[(i / 8) % outside.len()],
            6 => *p = random_x(&mut r, 0x80),
            _ => {}
        }
    }
    for &n in &sizes {
        // Each size starts at a different offset so every kind of item meets every lane.
        let start = (n * 5) % (mix.len() - n + 1);
        let points = &mix[start..start + n];
        let cpu = gpu_crypto::cpu::g1_decompress(points);
        for kernel in [DecompressKernel::Latency, DecompressKernel::Throughput] {
            let what = format!("{kernel:?} kernel, batch of {n}");
            let out = gpu.g1_decompress_with(points, kernel).expect("GPU call");
            compare(points, &out, &what);
            assert_equals_cpu(&cpu, &out, &what);
        }
        let auto = gpu.g1_decompress(points).expect("GPU call");
        assert_equals_cpu(&cpu, &auto, &format!("batch of {n}"));
    }
    // The whole corpus and the non-subgroup points through the latency kernel alone.
    for (what, points) in [("corpus", &corpus), ("outside G1", &outside)] {
        let out = gpu
            .g1_decompress_with(points, DecompressKernel::Latency)
            .expect("GPU call");
        compare(points, &out, what);
        if what == "outside G1" {
            assert!(out.iter().all(|x| *x == Err(DecodeError::NotInSubgroup)));
        }
    }
}

#[test]
fn the_switch_picks_the_latency_kernel_for_small_batches() {
    assert_eq!(DecompressKernel::for_batch(1), DecompressKernel::Latency);
    assert_eq!(DecompressKernel::for_batch(448), DecompressKernel::Latency);
    assert_eq!(
        DecompressKernel::for_batch(LATENCY_KERNEL_MAX_POINTS),
        DecompressKernel::Latency
    );
    assert_eq!(
        DecompressKernel::for_batch(LATENCY_KERNEL_MAX_POINTS + 1),
        DecompressKernel::Throughput
    );
}

// ---- G2 (96-byte compressed points, kernels/ops/g2_decompress.cu) ----

/// `n` distinct valid G2 points, compressed: R + i Q (one addition each, one batch
/// normalisation), so large batches take milliseconds to build.
fn valid_g2_points(r: &mut rand_chacha::ChaCha20Rng, n: usize) -> Vec<[u8; 96]> {
    use group::Group;
    let start = G2Projective::random(&mut *r);
    let step = G2Projective::random(&mut *r);
    let mut projective = Vec::with_capacity(n);
    let mut p = start;
    for _ in 0..n {
        projective.push(p);
        p += step;
    }
    let mut affine = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&projective, &mut affine);
    affine.iter().map(G2Affine::to_compressed).collect()
}

/// A random canonical x (both coordinates below p) with the given flags.
fn random_g2_x(r: &mut impl RngCore, flags: u8) -> [u8; 96] {
    let mut b = [0u8; 96];
    loop {
        r.fill_bytes(&mut b);
        b[0] &= 0x1f;
        b[48] &= 0x1f;
        if b[..48] < P_BE[..] && b[48..] < P_BE[..] {
            b[0] |= flags;
            return b;
        }
    }
}

/// Random canonical x until the CPU says "on the twist, not in G2", alternating the sort
/// flag.
fn non_subgroup_g2_points(r: &mut rand_chacha::ChaCha20Rng, n: usize) -> Vec<[u8; 96]> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let b = random_g2_x(r, if out.len() % 2 == 0 { 0x80 } else { 0xa0 });
        if gpu_crypto::cpu::g2_decompress_one(&b) == Err(DecodeError::NotInSubgroup) {
            out.push(b);
        }
    }
    out
}

/// The GPU's results equal the CPU path's (`cpu::g2_decompress`, ic_bls12_381's
/// from_compressed with the reasons) and the corpus's independent reference verdict,
/// item by item; accepted points round-trip to their encoding.
fn compare_g2(points: &[[u8; 96]], gpu: &[Result<G2Affine, DecodeError>], what: &str) {
    assert_eq!(points.len(), gpu.len(), "{what}: result count");
    let cpu = gpu_crypto::cpu::g2_decompress(points);
    for (i, ((b, g), c)) in points.iter().zip(gpu).zip(&cpu).enumerate() {
        assert_eq!(g, c, "{what}: item {i} input {}", hex::encode(b));
        assert_eq!(
            *g,
            gpu_crypto::corpus::g2_reference_verdict(b),
            "{what}: item {i} input {}",
            hex::encode(b)
        );
        if let Ok(p) = g {
            assert_eq!(
                p.to_compressed(),
                *b,
                "{what}: item {i} does not round-trip"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn g2_shared_corpus_matches_its_expected_verdicts() {
    let gpu = gpu();
    let corpus = gpu_crypto::corpus::g2_decompress_corpus();
    let points: Vec<[u8; 96]> = corpus.iter().map(|e| e.bytes).collect();
    let out = gpu.g2_decompress(&points).expect("GPU call");
    assert_eq!(out.len(), corpus.len());
    for (e, g) in corpus.iter().zip(&out) {
        assert_eq!(*g, e.expected, "{}: {}", e.label, hex::encode(e.bytes));
    }
    for e in DecodeError::ALL {
        assert!(out.contains(&Err(e)), "corpus never produced {e:?}");
    }
    compare_g2(&points, &out, "corpus");
    // Every entry alone (batch of one), in the order of the corpus.
    for (e, b) in corpus.iter().zip(&points).take(200) {
        let one = gpu
            .g2_decompress(std::slice::from_ref(b))
            .expect("GPU call");
        assert_eq!(one, vec![e.expected], "{} alone", e.label);
    }
    eprintln!("{} G2 corpus entries equal", corpus.len());
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn g2_random_valid_points_and_adversarial_items_at_many_batch_sizes() {
    let gpu = gpu();
    let mut r = rng(12);
    let outside = non_subgroup_g2_points(&mut r, 64);
    let pool = valid_g2_points(&mut r, 4097);
    for &n in &[0usize, 1, 2, 31, 32, 33, 127, 128, 129, 1000, 4097] {
        let mut points = pool[..n].to_vec();
        // Half the items corrupted: random bytes, a random canonical x (no root or off
        // the subgroup), a point of the twist outside G2, a flipped flag bit, x.c0 >= p.
        for (i, p) in points.iter_mut().enumerate() {
            match i % 10 {
                1 => r.fill_bytes(p),
                3 => *p = random_g2_x(&mut r, 0x80),
                5 => *p = outside[i % outside.len()],
                7 => p[0] ^= [0x80, 0x40, 0x20][i % 3],
                9 => p[48..].copy_from_slice(&P_BE),
                _ => {}
            }
        }
        let out = gpu.g2_decompress(&points).expect("GPU call");
        compare_g2(&points, &out, &format!("batch of {n}"));
    }
    let out = gpu.g2_decompress(&outside).expect("GPU call");
    assert!(out.iter().all(|x| *x == Err(DecodeError::NotInSubgroup)));
}

/// Both G2 kernels (one warp per point in RNS, one thread per point) against the CPU at
/// sizes around the latency kernel's block of four and the switch, on a mix of valid
/// points, the shared corpus, random bytes, random x (no root, or off the subgroup),
/// points of the twist outside G2 and non-canonical x.
#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn g2_both_kernels_match_the_cpu_at_sizes_around_their_shapes_and_the_switch() {
    let gpu = gpu();
    let mut r = rng(14);
    let corpus: Vec<[u8; 96]> = gpu_crypto::corpus::g2_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .collect();
    let outside = non_subgroup_g2_points(&mut r, 64);
    let max = G2_LATENCY_KERNEL_MAX_POINTS;
    let mut mix = valid_g2_points(&mut r, max + 1);
    for (i, p) in mix.iter_mut().enumerate() {
        match i % 8 {
            1 => r.fill_bytes(p),
            3 => *p = corpus[(i / 8) % corpus.len()],
            5 => *p = outside[(i / 8) % outside.len()],
            6 => *p = random_g2_x(&mut r, 0xa0),
            7 if i % 16 == 7 => p[48..].copy_from_slice(&P_BE),
            _ => {}
        }
    }
    for &n in &[1usize, 2, 3, 4, 5, 7, 8, 9, 36, 128, max - 1, max, max + 1] {
        let start = (n * 5) % (mix.len() - n + 1);
        let points = &mix[start..start + n];
        let cpu = gpu_crypto::cpu::g2_decompress(points);
        for kernel in [G2DecompressKernel::Latency, G2DecompressKernel::Throughput] {
            let what = format!("{kernel:?} kernel, batch of {n}");
            let out = gpu.g2_decompress_with(points, kernel).expect("GPU call");
            compare_g2(points, &out, &what);
            assert_eq!(out, cpu, "{what}");
        }
    }
    for (what, points) in [("corpus", &corpus), ("outside G2", &outside)] {
        let out = gpu
            .g2_decompress_with(points, G2DecompressKernel::Latency)
            .expect("GPU call");
        compare_g2(points, &out, what);
        if what == "outside G2" {
            assert!(out.iter().all(|x| *x == Err(DecodeError::NotInSubgroup)));
        }
    }
}

#[test]
fn the_g2_switch_picks_the_latency_kernel_for_small_batches() {
    assert_eq!(
        G2DecompressKernel::for_batch(1),
        G2DecompressKernel::Latency
    );
    assert_eq!(
        G2DecompressKernel::for_batch(G2_LATENCY_KERNEL_MAX_POINTS),
        G2DecompressKernel::Latency
    );
    assert_eq!(
        G2DecompressKernel::for_batch(G2_LATENCY_KERNEL_MAX_POINTS + 1),
        G2DecompressKernel::Throughput
    );
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn g2_batches_of_several_pipeline_segments() {
    let gpu = gpu();
    let mut r = rng(13);
    // Three segments of 2^15 points and a partial fourth, invalid items in every segment;
    // then a batch of just over one segment on the same (reused) buffers and streams, then
    // small batches (stale results from the large ones would show as mismatches).
    let n = 3 * 32768 + 777;
    let mut points = valid_g2_points(&mut r, n);
    for (i, p) in points.iter_mut().enumerate() {
        match i % 1000 {
            3 => r.fill_bytes(p),
            500 => *p = random_g2_x(&mut r, 0x80),
            999 => p[0] &= 0x7f,
            _ => {}
        }
    }
    for len in [n, 32768 + 5, 17, 1] {
        let out = gpu.g2_decompress(&points[..len]).expect("GPU call");
        compare_g2(&points[..len], &out, &format!("batch of {len}"));
        if len > 1000 {
            assert!(out.iter().any(|x| x.is_err()) && out.iter().any(|x| x.is_ok()));
        }
    }
    assert!(gpu.g2_decompress(&[]).expect("empty").is_empty());
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn g2_engine_pinned_to_gpu_decompresses_on_gpu() {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.decompress_g2.backend = BackendChoice::Gpu;
    policy.fallback = gpu_crypto::Fallback::Never;
    let engine = Engine::new(policy).expect("engine with the GPU");
    let mut r = rng(14);
    let mut points = valid_g2_points(&mut r, 300);
    points[7][0] &= 0x7f;
    let out = engine.g2_decompress(&points).expect("engine call");
    compare_g2(&points, &out, "engine");
    let stats = engine.stats();
    let on_gpu: u64 = stats
        .operations
        .iter()
        .filter(|c| {
            c.operation == gpu_crypto::Operation::DecompressG2
                && c.executed == gpu_crypto_api::stats::Executed::Gpu
        })
        .map(|c| c.items)
        .sum();
    assert_eq!(on_gpu, 300, "stats: {stats:?}");
}
