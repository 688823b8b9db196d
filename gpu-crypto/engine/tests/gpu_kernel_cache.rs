//! Where cubins come from (`kernel_cache`): the read-only precompiled directory (keyed by
//! NVRTC version, not the driver) before the writable driver-keyed cache, a driver older
//! than the precompiled cubins' CUDA version refused with its reason, `cached-only` mode
//! failing instead of compiling. The lookup tests run without a GPU, on real cubins from
//! NVRTC (ignored unless asked for: they need NVRTC).
//! The GPU test (its own binary's only test that sets GPU_CRYPTO_* variables) checks that
//! `GpuBackend::open` follows the same order: compile and store, load from the cache,
//! recompile a corrupt entry, load precompiled cubins in cached-only mode, and refuse to
//! open in cached-only mode without them.

mod gpu_common;

use gpu_crypto::gpu::{GpuBackend, GpuError};
use gpu_crypto::kernels;
use gpu_crypto::kernels::cache::{
    self, KernelMode, Origin, Sources, cached_only_failure, entry_prefix, min_driver_version, plan,
};
use gpu_crypto::kernels::{compile_program, nvrtc_version};
use std::path::Path;

/// The smallest program, compiled for sm_90 by the NVRTC found at run time.
fn real_cubin() -> ((i32, i32), Vec<u8>) {
    let version = gpu_common::nvrtc();
    let compiled = compile_program(&kernels::FILL_RANDOM, "sm_90").expect("compile fill_random");
    assert!(
        compiled.cubin.starts_with(b"\x7fELF"),
        "a cubin is an ELF file"
    );
    (version, compiled.cubin)
}

fn origins(p: &cache::Plan) -> Vec<Origin> {
    p.candidates.iter().map(|c| c.origin).collect()
}

fn kinds(p: &cache::Plan) -> Vec<(Origin, &'static str)> {
    p.skipped.iter().map(|s| (s.origin, s.kind)).collect()
}

/// A precompiled directory as the image build writes it, and a writable cache holding an
/// entry of the same program for `driver` (different bytes, so the tests see which one won).
fn two_sources(
    nvrtc: (i32, i32),
    cubin: &[u8],
    driver: i32,
) -> (tempfile::TempDir, tempfile::TempDir) {
    let pre = tempfile::tempdir().expect("temp dir");
    let cache = tempfile::tempdir().expect("temp dir");
    cache::write_nvrtc_version(pre.path(), nvrtc).expect("version file");
    cache::store_precompiled(pre.path(), &kernels::FILL_RANDOM, "sm_90", nvrtc, cubin)
        .expect("store precompiled");
    let mut other = cubin.to_vec();
    other.extend_from_slice(b"cache");
    let key = cache::cache_key(&kernels::FILL_RANDOM, "sm_90", driver);
    cache::store(cache.path(), &kernels::FILL_RANDOM, &key, &other).expect("store cache");
    (pre, cache)
}

fn sources_of<'a>(pre: &'a Path, cache: &'a Path) -> Sources<'a> {
    Sources {
        precompiled: Some(pre),
        writable: Some(cache),
    }
}

#[test]
#[ignore = "needs NVRTC: compiles a real cubin to cache"]
fn precompiled_comes_before_the_driver_keyed_cache_on_any_new_enough_driver() {
    let (nvrtc, cubin) = real_cubin();
    let min = min_driver_version(nvrtc);
    let (pre, cache) = two_sources(nvrtc, &cubin, min);
    let p = plan(
        &kernels::FILL_RANDOM,
        "sm_90",
        min,
        sources_of(pre.path(), cache.path()),
    );
    assert_eq!(origins(&p), [Origin::Precompiled, Origin::Cache]);
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(
        p.candidates[0].cubin, cubin,
        "the precompiled cubin comes first"
    );

    // A newer driver (another minor CUDA version, another major): the same precompiled
    // entry, although the writable cache (keyed by driver) has nothing for it.
    for newer in [min + 10, min + 1000] {
        let p = plan(
            &kernels::FILL_RANDOM,
            "sm_90",
            newer,
            sources_of(pre.path(), cache.path()),
        );
        assert_eq!(origins(&p), [Origin::Precompiled], "driver {newer}");
        assert_eq!(p.candidates[0].cubin, cubin);
    }
}

#[test]
#[ignore = "needs NVRTC: compiles a real cubin to cache"]
fn an_older_driver_refuses_the_precompiled_cubins_with_the_reason() {
    let (nvrtc, cubin) = real_cubin();
    let older = min_driver_version(nvrtc) - 10;
    let (pre, cache) = two_sources(nvrtc, &cubin, older);
    let p = plan(
        &kernels::FILL_RANDOM,
        "sm_90",
        older,
        sources_of(pre.path(), cache.path()),
    );
    assert_eq!(kinds(&p), [(Origin::Precompiled, "driver_too_old")]);
    assert!(
        p.skipped[0]
            .reason
            .contains(&format!("need CUDA {}.{}", nvrtc.0, nvrtc.1)),
        "{}",
        p.skipped[0]
    );
    // The writable cache (compiled on this node for this driver) is still used.
    assert_eq!(origins(&p), [Origin::Cache]);
    // cached-only with nothing usable: the error names the mode and every reason.
    let none = plan(
        &kernels::FILL_RANDOM,
        "sm_90",
        older,
        Sources {
            precompiled: Some(pre.path()),
            writable: None,
        },
    );
    assert!(none.candidates.is_empty());
    let msg = cached_only_failure(&kernels::FILL_RANDOM, "sm_90", &none.skipped);
    assert!(msg.contains("GPU_CRYPTO_KERNEL_MODE=cached-only"), "{msg}");
    assert!(msg.contains("driver supports CUDA"), "{msg}");
    assert!(msg.contains(kernels::FILL_RANDOM.name), "{msg}");
}

#[test]
#[ignore = "needs NVRTC: compiles a real cubin to cache"]
fn another_architecture_nvrtc_version_or_source_is_a_miss() {
    let (nvrtc, cubin) = real_cubin();
    let min = min_driver_version(nvrtc);
    let (pre, _cache) = two_sources(nvrtc, &cubin, min);
    let only_pre = Sources {
        precompiled: Some(pre.path()),
        writable: None,
    };
    // sm_120 was not shipped in this directory.
    let p = plan(&kernels::FILL_RANDOM, "sm_120", min, only_pre);
    assert_eq!(kinds(&p), [(Origin::Precompiled, "no_entry")]);
    // Another program (another source text) has no entry either.
    let p = plan(&kernels::SHA256_PREFIXED, "sm_90", min, only_pre);
    assert_eq!(kinds(&p), [(Origin::Precompiled, "no_entry")]);
    // The directory says another NVRTC built it: other keys, so the entry is not found.
    cache::write_nvrtc_version(pre.path(), (nvrtc.0, nvrtc.1 + 1)).expect("version");
    let p = plan(&kernels::FILL_RANDOM, "sm_90", min + 1000, only_pre);
    assert_eq!(kinds(&p), [(Origin::Precompiled, "no_entry")]);
    // A missing or malformed version file is a reason, not a guess.
    for bad in ["", "13", "x.y", "-1.0"] {
        std::fs::write(pre.path().join(cache::NVRTC_VERSION_FILE), bad).expect("write");
        let p = plan(&kernels::FILL_RANDOM, "sm_90", min, only_pre);
        assert_eq!(kinds(&p), [(Origin::Precompiled, "no_version")], "{bad:?}");
    }
    std::fs::remove_file(pre.path().join(cache::NVRTC_VERSION_FILE)).expect("rm");
    let p = plan(&kernels::FILL_RANDOM, "sm_90", min, only_pre);
    assert_eq!(kinds(&p), [(Origin::Precompiled, "no_version")]);
}

#[test]
#[ignore = "needs NVRTC: compiles a real cubin to cache"]
fn a_corrupt_precompiled_entry_falls_through_to_the_cache() {
    let (nvrtc, cubin) = real_cubin();
    let min = min_driver_version(nvrtc);
    let (pre, cache) = two_sources(nvrtc, &cubin, min);
    let entry = pre.path().join(
        std::fs::read_dir(pre.path())
            .expect("dir")
            .find_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.ends_with(".cubin").then_some(name)
            })
            .expect("entry"),
    );
    let mut bytes = std::fs::read(&entry).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&entry, &bytes).expect("write");
    let p = plan(
        &kernels::FILL_RANDOM,
        "sm_90",
        min,
        sources_of(pre.path(), cache.path()),
    );
    assert_eq!(kinds(&p), [(Origin::Precompiled, "corrupt")]);
    assert_eq!(origins(&p), [Origin::Cache]);
}

#[test]
fn kernel_mode_values() {
    assert_eq!(KernelMode::parse(""), Ok(KernelMode::Compile));
    assert_eq!(KernelMode::parse("compile"), Ok(KernelMode::Compile));
    assert_eq!(KernelMode::parse("cached-only"), Ok(KernelMode::CachedOnly));
    let e = KernelMode::parse("cached_only").expect_err("unknown value");
    assert!(e.contains("GPU_CRYPTO_KERNEL_MODE"), "{e}");
    // Without any source, cached-only says that nothing was configured.
    let msg = cached_only_failure(&kernels::G1_MSM, "sm_120", &[]);
    assert!(
        msg.contains("GPU_CRYPTO_PRECOMPILED_KERNELS unset"),
        "{msg}"
    );
}

#[test]
#[ignore = "needs a GPU: loads compiled and cached programs on the device"]
fn cache_hit_after_compile_and_recompile_after_corruption() {
    gpu_common::gpu();
    let dir = tempfile::tempdir().expect("temp dir");
    // SAFETY: this binary's only test; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("GPU_CRYPTO_KERNEL_CACHE", dir.path()) };
    assert_eq!(cache::cache_dir().as_deref(), Some(dir.path()));

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
    assert_eq!(entries.len(), kernels::PROGRAMS.len(), "{entries:?}");
    // Entries are named after their program; other programs share parts of these names.
    let entry = |program: &kernels::KernelProgram| {
        let prefix = entry_prefix(program);
        entries
            .iter()
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("no cache entry for {}: {entries:?}", program.name))
    };
    const SHA: &str = kernels::SHA256_PREFIXED.name;
    const DECOMPRESS: &str = kernels::G1_DECOMPRESS.name;
    let sha = entry(&kernels::SHA256_PREFIXED);
    let mut bytes = std::fs::read(sha).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(sha, &bytes).expect("write");
    let dec = entry(&kernels::G1_DECOMPRESS);
    std::fs::write(dec, b"gpu-crypto-cubin").expect("truncate");

    let third = GpuBackend::open(0).expect("open after corruption");
    for l in third.program_loads() {
        if l.program == SHA || l.program == DECOMPRESS {
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
    drop(fourth);

    // The image's setup: a precompiled directory for this architecture, cached-only mode,
    // an empty writable cache. Every program loads from the precompiled directory.
    let pre = tempfile::tempdir().expect("temp dir");
    let empty = tempfile::tempdir().expect("temp dir");
    let nvrtc = nvrtc_version().expect("NVRTC (it compiled above)");
    cache::write_nvrtc_version(pre.path(), nvrtc).expect("version");
    for p in kernels::PROGRAMS {
        let c = compile_program(p, &arch).expect("compile");
        cache::store_precompiled(pre.path(), p, &arch, nvrtc, &c.cubin).expect("store");
    }
    // SAFETY: as above.
    unsafe {
        std::env::set_var("GPU_CRYPTO_KERNEL_CACHE", empty.path());
        std::env::set_var(cache::PRECOMPILED_ENV, pre.path());
        std::env::set_var(cache::MODE_ENV, "cached-only");
    }
    let fifth = GpuBackend::open(0).expect("open from the precompiled directory");
    for l in fifth.program_loads() {
        assert_eq!(l.source, "precompiled", "{l:?}");
    }
    let d = fifth
        .sha256_prefixed(b"", &[b"abc".as_slice()])
        .expect("sha");
    assert_eq!(
        hex::encode(d[0]),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    drop(fifth);

    // cached-only without the precompiled directory: opening fails, nothing is compiled.
    // SAFETY: as above.
    unsafe { std::env::set_var(cache::PRECOMPILED_ENV, empty.path().join("absent")) };
    match GpuBackend::open(0) {
        Err(e @ GpuError::KernelNotPrecompiled(_)) => {
            assert!(e.to_string().contains("cached-only"), "{e}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("cached-only mode opened without precompiled kernels"),
    }
    assert_eq!(
        std::fs::read_dir(empty.path()).expect("dir").count(),
        0,
        "nothing compiled"
    );
    let counts = cache::load_counts();
    assert!(
        counts
            .iter()
            .any(|c| c.outcome == "precompiled" && c.count >= kernels::PROGRAMS.len() as u64),
        "{counts:?}"
    );
    assert!(
        counts.iter().any(|c| c.outcome == "refused_cached_only"),
        "{counts:?}"
    );
    // SAFETY: as above.
    unsafe {
        std::env::remove_var(cache::PRECOMPILED_ENV);
        std::env::remove_var(cache::MODE_ENV);
    }
}
