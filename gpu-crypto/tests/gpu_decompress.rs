//! GPU batch G1 decompression against the CPU reference, item by item: random valid
//! points, the adversarial corpus, random bytes, several batch sizes (including the
//! parallel host conversion path) and the engine with the GPU pinned.

mod gpu_common;

use gpu_common::*;
use gpu_crypto::{BackendChoice, DecodeError, Engine, G1Affine, Policy};
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
    assert_eq!(cpu.len(), gpu.len(), "result count");
    for (i, (c, g)) in cpu.iter().zip(gpu).enumerate() {
        assert_eq!(c, g, "item {i}: GPU differs from cpu::g1_decompress");
    }
}

#[test]
fn shared_corpus_matches_its_expected_verdicts() {
    let Some(gpu) = gpu() else { return };
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
fn adversarial_corpus_matches_reference() {
    let Some(gpu) = gpu() else { return };
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
fn random_valid_points_and_random_bytes_at_many_batch_sizes() {
    let Some(gpu) = gpu() else { return };
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
fn batches_of_several_pipeline_segments() {
    let Some(gpu) = gpu() else { return };
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
fn repeated_calls_reuse_buffers_without_stale_results() {
    let Some(gpu) = gpu() else { return };
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
fn engine_pinned_to_gpu_decompresses_on_gpu() {
    if gpu().is_none() {
        return;
    }
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
