//! The backend's runtime behaviour: a clear error without a device, concurrent callers
//! from many threads, and `supports`.

mod gpu_common;

use gpu_common::*;
use gpu_crypto::Operation;
use gpu_crypto::gpu::{GpuBackend, GpuError};
use rand::Rng;

#[test]
fn open_fails_with_a_clear_error_where_no_device_exists() {
    // A device ordinal no machine has: NoDevice (no GPU, no driver, or no such ordinal).
    match GpuBackend::open(4096) {
        Ok(_) => panic!("device 4096 opened"),
        Err(e) => {
            assert!(
                matches!(e, GpuError::NoDevice(_)),
                "expected NoDevice, got {e:?}"
            );
            assert!(!e.to_string().is_empty());
            eprintln!("open(4096): {e}");
        }
    }
}

#[test]
#[ignore = "needs a GPU: opens the CUDA backend on device 0"]
fn supports_every_operation() {
    let gpu = gpu();
    for op in [
        Operation::Decompress,
        Operation::Sha256,
        Operation::Msm,
        Operation::BlsVerify,
    ] {
        assert!(gpu.supports(op), "{op:?}");
    }
    // An empty batch is an empty answer, not an error (tests/gpu_bls.rs checks the rest).
    assert_eq!(gpu.bls_verify_batch(&[]), Ok(vec![]));
    let d = gpu.describe();
    assert!(d.contains("sm_"), "describe: {d}");
    eprintln!("device: {d}; programs: {:?}", gpu.program_loads());
}

#[test]
#[ignore = "needs a GPU: opens the CUDA backend on device 0"]
fn sixteen_threads_share_the_backend() {
    let gpu = gpu();
    let mut r = rng(20);
    let points = valid_points(&mut r, 512);
    let mut corpus: Vec<[u8; 48]> = adversarial(&mut r).into_iter().map(|(_, b)| b).collect();
    corpus.extend_from_slice(&points);
    let expected: Vec<_> = corpus.iter().map(reference_decompress).collect();
    let chunks: Vec<Vec<u8>> = (0..64)
        .map(|i| (0..(i * 1031 + 5)).map(|j| (j * 7 + i) as u8).collect())
        .collect();
    let digests: Vec<[u8; 32]> = chunks.iter().map(|c| cpu_sha256(b"\x03abc", c)).collect();
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (gpu, corpus, expected, chunks, digests) =
                (&gpu, &corpus, &expected, &chunks, &digests);
            s.spawn(move || {
                let mut r = rng(100 + t);
                for _ in 0..40 {
                    let a = r.gen_range(0..corpus.len());
                    let b = r.gen_range(a..=corpus.len());
                    let out = gpu.g1_decompress(&corpus[a..b]).expect("decompress");
                    assert_eq!(out.as_slice(), &expected[a..b]);
                    let a = r.gen_range(0..chunks.len());
                    let b = r.gen_range(a..=chunks.len());
                    let refs: Vec<&[u8]> = chunks[a..b].iter().map(|c| c.as_slice()).collect();
                    let out = gpu.sha256_prefixed(b"\x03abc", &refs).expect("sha256");
                    assert_eq!(out.as_slice(), &digests[a..b]);
                }
            });
        }
    });
}
