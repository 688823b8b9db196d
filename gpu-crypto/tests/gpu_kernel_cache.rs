//! The on-disk kernel cache: the first open compiles and stores, the second loads, and a
//! corrupted entry is recompiled (and overwritten), never fatal. One test in its own
//! binary, because it sets GPU_CRYPTO_KERNEL_CACHE for the process.

mod gpu_common;

use gpu_crypto::cuda::{GpuBackend, kernel_cache, sources};

#[test]
fn cache_hit_after_compile_and_recompile_after_corruption() {
    if gpu_common::gpu().is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    // SAFETY: this binary's only test; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("GPU_CRYPTO_KERNEL_CACHE", dir.path()) };
    assert_eq!(kernel_cache::cache_dir().as_deref(), Some(dir.path()));

    let first = GpuBackend::open(0).expect("open");
    for l in first.program_loads() {
        assert_eq!(l.source, "compiled", "{l:?}");
    }
    let arch = first.arch().to_string();
    drop(first);

    let second = GpuBackend::open(0).expect("open from cache");
    for l in second.program_loads() {
        assert_eq!(l.source, "cache", "{l:?}");
        eprintln!("{} from cache in {:.3} s", l.program, l.seconds);
    }
    drop(second);

    // Corrupt the SHA-256 entry (flip a byte of the cubin); truncate the decompress entry.
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read cache dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert_eq!(entries.len(), sources::PROGRAMS.len(), "{entries:?}");
    let sha = entries
        .iter()
        .find(|p| p.to_string_lossy().contains("sha256"))
        .expect("sha entry");
    let mut bytes = std::fs::read(sha).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(sha, &bytes).expect("write");
    let dec = entries
        .iter()
        .find(|p| p.to_string_lossy().contains("decompress"))
        .expect("decompress entry");
    std::fs::write(dec, b"gpu-crypto-cubin").expect("truncate");

    let third = GpuBackend::open(0).expect("open after corruption");
    for l in third.program_loads() {
        if l.program.contains("sha256") || l.program.contains("decompress") {
            assert!(l.source.starts_with("recompiled"), "{l:?}");
        } else {
            assert_eq!(l.source, "cache", "{l:?}");
        }
    }
    // The recompiled kernels work.
    let d = third
        .sha256_prefixed(b"", &[b"abc".as_slice()])
        .expect("sha");
    assert_eq!(
        hex::encode(d[0]),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let g = gpu_crypto::G1Affine::generator().to_compressed();
    let out = third.g1_decompress(&[g]).expect("decompress");
    assert_eq!(out[0], Ok(gpu_crypto::G1Affine::generator()));
    // And the entries were rewritten: a fourth open hits the cache everywhere.
    drop(third);
    let fourth = GpuBackend::open(0).expect("open");
    assert!(fourth.program_loads().iter().all(|l| l.source == "cache"));
    let _ = arch;
    let _ = kernel_cache::entry_file;
}
