//! Soak (ignored by default; the device runner runs it): 16 threads call decompression and
//! SHA-256 concurrently for GPU_CRYPTO_SOAK_BATCHES batches in total (default 100,000) of
//! mixed sizes, every result compared with a reference computed once on the CPU.
//! Zero mismatches and zero errors are required.

mod gpu_common;

use gpu_common::*;
use rand::{Rng, RngCore};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[test]
#[ignore = "needs a GPU: a soak of minutes; the device runner runs it"]
fn sixteen_threads_mixed_batches() {
    let gpu = gpu();
    let total: usize = std::env::var("GPU_CRYPTO_SOAK_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut r = rng(30);
    // Pools with precomputed answers, so checking costs no CPU curve arithmetic per batch.
    let mut points = valid_points(&mut r, 3000);
    points.extend(adversarial(&mut r).into_iter().map(|(_, b)| b));
    for _ in 0..500 {
        points.push(random_x(&mut r, 0x80));
    }
    let point_refs: Vec<_> = points.iter().map(reference_decompress).collect();
    let prefix = b"\x0eic-state-chunk";
    let mut chunks: Vec<Vec<u8>> = (0..512)
        .map(|i| {
            let len = if i % 64 == 0 {
                1 << 20
            } else {
                r.gen_range(0..16384)
            };
            let mut c = vec![0u8; len];
            r.fill_bytes(&mut c);
            c
        })
        .collect();
    chunks.push(Vec::new());
    let digests: Vec<[u8; 32]> = chunks.iter().map(|c| cpu_sha256(prefix, c)).collect();

    let next = AtomicUsize::new(0);
    let mismatches = AtomicUsize::new(0);
    let errors = AtomicUsize::new(0);
    let items = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (gpu, points, point_refs, chunks, digests) =
                (&gpu, &points, &point_refs, &chunks, &digests);
            let (next, mismatches, errors, items) = (&next, &mismatches, &errors, &items);
            s.spawn(move || {
                let mut r = rng(1000 + t);
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    if r.gen_bool(0.5) {
                        let n = r.gen_range(1..=512);
                        let idx: Vec<usize> =
                            (0..n).map(|_| r.gen_range(0..points.len())).collect();
                        let batch: Vec<[u8; 48]> = idx.iter().map(|&i| points[i]).collect();
                        match gpu.g1_decompress(&batch) {
                            Ok(out) => {
                                items.fetch_add(n, Ordering::Relaxed);
                                let bad = idx
                                    .iter()
                                    .zip(&out)
                                    .filter(|(i, o)| point_refs[**i] != **o)
                                    .count();
                                mismatches.fetch_add(bad, Ordering::Relaxed);
                            }
                            Err(e) => {
                                eprintln!("decompress error: {e}");
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    } else {
                        let n = r.gen_range(1..=24);
                        let idx: Vec<usize> =
                            (0..n).map(|_| r.gen_range(0..chunks.len())).collect();
                        let batch: Vec<&[u8]> = idx.iter().map(|&i| chunks[i].as_slice()).collect();
                        match gpu.sha256_prefixed(prefix, &batch) {
                            Ok(out) => {
                                items.fetch_add(n, Ordering::Relaxed);
                                let bad = idx
                                    .iter()
                                    .zip(&out)
                                    .filter(|(i, o)| digests[**i] != **o)
                                    .count();
                                mismatches.fetch_add(bad, Ordering::Relaxed);
                            }
                            Err(e) => {
                                eprintln!("sha256 error: {e}");
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        }
    });
    let (m, e) = (
        mismatches.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
    );
    eprintln!(
        "soak: {total} batches, {} items, 16 threads, {:.1} s: {m} mismatches, {e} errors",
        items.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    assert_eq!((m, e), (0, 0));
}
