//! Kernels precompiled for the image: gpu-crypto's read-only precompiled directory
//! (`gpu_crypto::cuda::kernel_cache`, `GPU_CRYPTO_PRECOMPILED_KERNELS`), keyed by source,
//! architecture and NVRTC version, so a node loads them on any driver supporting that CUDA
//! version and never compiles at boot.

use gpu_crypto::cuda::compile::{compile_program, nvrtc_version};
use gpu_crypto::cuda::kernel_cache;
use gpu_crypto::cuda::sources::{KernelProgram, PROGRAMS};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Clone, Serialize)]
pub struct Cubin {
    pub program: &'static str,
    pub arch: String,
    /// Oldest `cuDriverGetVersion` that loads it (the CUDA version of the NVRTC).
    pub min_driver_version: i32,
    /// Entry file name (relative to the precompiled directory).
    pub file: String,
    pub cubin_sha256: String,
    pub cubin_size: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Precompiled {
    pub nvrtc_version: String,
    pub cubins: Vec<Cubin>,
}

/// Compiles every program for every architecture and stores the cubins in `dir`, on as
/// many threads as the machine has (NVRTC compiles one program per call). Any compile
/// error fails the whole run; so do NVRTC warnings, since the kernels are meant to compile
/// cleanly (as in CI's nvrtc-check).
pub fn precompile(dir: &Path, archs: &[String]) -> anyhow::Result<Precompiled> {
    let (major, minor) = nvrtc_version().map_err(|e| anyhow::anyhow!("{e}"))?;
    kernel_cache::write_nvrtc_version(dir, (major, minor))?;
    let jobs: Vec<(&String, &KernelProgram)> = archs
        .iter()
        .flat_map(|arch| PROGRAMS.iter().map(move |p| (arch, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    let mut results: Vec<(usize, anyhow::Result<Cubin>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(arch, program)) = jobs.get(i) else {
                            return done;
                        };
                        done.push((i, compile_one(dir, program, arch, (major, minor))));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    // Job order, not completion order: the report is the same on every run.
    results.sort_by_key(|(i, _)| *i);
    let cubins = results
        .into_iter()
        .map(|(_, r)| r)
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Precompiled {
        nvrtc_version: format!("{major}.{minor}"),
        cubins,
    })
}

fn compile_one(
    dir: &Path,
    program: &KernelProgram,
    arch: &str,
    nvrtc: (i32, i32),
) -> anyhow::Result<Cubin> {
    let compiled = compile_program(program, arch)
        .map_err(|e| anyhow::anyhow!("{} for {arch}: {e}", program.name))?;
    if !compiled.log.is_empty() {
        anyhow::bail!(
            "{} for {arch}: NVRTC warnings:\n{}",
            program.name,
            compiled.log
        );
    }
    let path = kernel_cache::store_precompiled(dir, program, arch, nvrtc, &compiled.cubin)?;
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .ok_or_else(|| anyhow::anyhow!("entry name of {}", program.name))?
        .to_string();
    Ok(Cubin {
        program: program.name,
        arch: arch.to_string(),
        min_driver_version: kernel_cache::min_driver_version(nvrtc),
        file,
        cubin_sha256: hex::encode(Sha256::digest(&compiled.cubin)),
        cubin_size: compiled.cubin.len(),
    })
}
