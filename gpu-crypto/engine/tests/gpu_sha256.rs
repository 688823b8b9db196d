//! GPU batch SHA-256(prefix || chunk) against the CPU (`sha2`), digest by digest: lengths
//! around every block boundary, prefixes of every alignment, 1 MiB chunks, batches that
//! span several segments and device slots, and the engine with the IC's chunk separator.

mod gpu_common;

use gpu_common::*;
use gpu_crypto::{BackendChoice, DomainSeparator, Engine, Policy};
use rand::{Rng, RngCore};

fn check(prefix: &[u8], chunks: &[Vec<u8>], what: &str) {
    let gpu = gpu();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let out = gpu.sha256_prefixed(prefix, &refs).expect("GPU call");
    assert_eq!(out.len(), chunks.len(), "{what}: digest count");
    for (i, (c, d)) in chunks.iter().zip(&out).enumerate() {
        assert_eq!(
            *d,
            cpu_sha256(prefix, c),
            "{what}: chunk {i} ({} bytes, prefix {} bytes)",
            c.len(),
            prefix.len()
        );
    }
}

fn random_chunk(r: &mut impl RngCore, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    r.fill_bytes(&mut v);
    v
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn every_length_near_block_boundaries_and_every_prefix_alignment() {
    gpu();
    let mut r = rng(10);
    let mut lens: Vec<usize> = (0..=200).collect();
    lens.extend([255, 256, 257, 1000, 4095, 4096, 4097, 65536 + 13]);
    for prefix_len in [
        0usize, 1, 3, 4, 5, 8, 12, 15, 16, 17, 31, 32, 55, 56, 63, 64, 65, 100, 255, 256, 1024,
    ] {
        let prefix = random_chunk(&mut r, prefix_len);
        let chunks: Vec<Vec<u8>> = lens.iter().map(|&l| random_chunk(&mut r, l)).collect();
        check(&prefix, &chunks, &format!("prefix {prefix_len}"));
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn ic_chunk_hash_of_full_mebibyte_chunks() {
    gpu();
    let mut r = rng(11);
    let prefix = DomainSeparator::new("ic-state-chunk").expect("separator");
    assert_eq!(prefix.prefix()[0], 14);
    let chunks: Vec<Vec<u8>> = (0..24).map(|_| random_chunk(&mut r, 1 << 20)).collect();
    check(prefix.prefix(), &chunks, "1 MiB chunks");
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn batches_spanning_segments_and_slots() {
    gpu();
    let mut r = rng(12);
    // 70 x 1 MiB + odd sizes: more than one 64 MiB segment.
    let mut chunks: Vec<Vec<u8>> = (0..70)
        .map(|i| random_chunk(&mut r, (1 << 20) - (i % 3) * 7))
        .collect();
    chunks.push(Vec::new());
    check(b"\x0eic-state-chunk", &chunks, "multi-segment");
    // 70,000 small chunks: 18 segments of at most 4096 chunks, so device slots are reused.
    let small: Vec<Vec<u8>> = (0..70_000)
        .map(|_| {
            let l = r.gen_range(0..200);
            random_chunk(&mut r, l)
        })
        .collect();
    check(b"\x0eic-state-chunk", &small, "many small chunks");
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn oversized_prefix_is_an_error_not_a_wrong_answer() {
    let gpu = gpu();
    let prefix = vec![7u8; 1025];
    let err = gpu
        .sha256_prefixed(&prefix, &[b"abc".as_slice()])
        .unwrap_err();
    assert_eq!(err.kind(), "input_too_large");
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn engine_pinned_to_gpu_hashes_chunks() {
    gpu();
    let mut policy = Policy::cpu_only();
    policy.sha256.backend = BackendChoice::Gpu;
    policy.fallback = gpu_crypto::Fallback::Never;
    let engine = Engine::new(policy).expect("engine with the GPU");
    let sep = DomainSeparator::new("ic-state-chunk").expect("separator");
    let mut r = rng(13);
    let chunks: Vec<Vec<u8>> = (0..100).map(|i| random_chunk(&mut r, i * 997)).collect();
    let refs: Vec<&[u8]> = chunks.iter().map(|c| c.as_slice()).collect();
    let out = engine.sha256_chunks(&sep, &refs).expect("engine call");
    for (c, d) in chunks.iter().zip(&out) {
        assert_eq!(*d, cpu_sha256(sep.prefix(), c));
    }
}
