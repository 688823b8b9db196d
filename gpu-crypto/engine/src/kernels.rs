//! The GPU programs as sources and cubins, without a GPU: the embedded CUDA sources, their
//! compilation with NVRTC, the on-disk cubin cache and precompiled directory the engine
//! loads them from ([`cache`]), and [`precompile`], which writes that directory for a node
//! image so that a node never compiles at boot.

pub use crate::cuda::compile::{CompiledProgram, compile_program, nvrtc_version};
pub use crate::cuda::kernel_cache as cache;
pub use crate::cuda::sources::{
    BENCH_PROGRAMS, BLS_PAIRING, BLS_VERIFY, FILL_RANDOM, FP_CHAIN_BENCH, G1_DECOMPRESS,
    G1_DECOMPRESS_LATENCY, G1_DECOMPRESS_VARIANTS, G1_MSM, G1_MSM_SHARED_U8, G1_RECOMBINE,
    G2_DECOMPRESS, G2_DECOMPRESS_LATENCY, G2_MSM, HASH_TO_G1, HEADERS, KernelProgram, PROGRAMS,
    SHA256_PREFIXED, TARGET_ARCHS,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One precompiled cubin.
#[derive(Debug, Clone, Serialize)]
pub struct Cubin {
    /// The program's path under `kernels/`.
    pub program: &'static str,
    /// The architecture it was compiled for, e.g. `sm_90`.
    pub arch: String,
    /// Oldest `cuDriverGetVersion` that loads it (the CUDA version of the NVRTC).
    pub min_driver_version: i32,
    /// Entry file name (relative to the precompiled directory).
    pub file: String,
    /// SHA-256 of the cubin, hex.
    pub cubin_sha256: String,
    /// Bytes of the cubin.
    pub cubin_size: usize,
}

/// What [`precompile`] wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Precompiled {
    /// The NVRTC that compiled them, e.g. `12.4`.
    pub nvrtc_version: String,
    /// Every cubin written, one per program and architecture.
    pub cubins: Vec<Cubin>,
}

/// Why precompilation failed.
#[derive(Debug, thiserror::Error)]
pub enum PrecompileError {
    /// NVRTC is unusable; why.
    #[error("{0}")]
    Nvrtc(String),
    /// A program failed to compile for an architecture.
    #[error("{program} for {arch}: {reason}")]
    Compile {
        /// The program's path under `kernels/`.
        program: &'static str,
        /// The architecture, e.g. `sm_90`.
        arch: String,
        /// NVRTC's error.
        reason: String,
    },
    /// A program compiled with warnings (refused: an image ships warning-free kernels).
    #[error("{program} for {arch}: NVRTC warnings:\n{log}")]
    Warnings {
        /// The program's path under `kernels/`.
        program: &'static str,
        /// The architecture, e.g. `sm_90`.
        arch: String,
        /// NVRTC's log.
        log: String,
    },
    /// Writing into the precompiled directory failed.
    #[error("{path}: {source}", path = path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Compiles every program for every architecture and stores the cubins in `dir`, on as
/// many threads as the machine has (NVRTC compiles one program per call). Any compile
/// error fails the whole run; so do NVRTC warnings, since the kernels are meant to compile
/// cleanly (as CI's NVRTC compile test checks).
pub fn precompile(dir: &Path, archs: &[String]) -> Result<Precompiled, PrecompileError> {
    let (major, minor) = nvrtc_version().map_err(|e| PrecompileError::Nvrtc(e.to_string()))?;
    cache::write_nvrtc_version(dir, (major, minor)).map_err(|source| PrecompileError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let jobs: Vec<(&String, &KernelProgram)> = archs
        .iter()
        .flat_map(|arch| PROGRAMS.iter().map(move |p| (arch, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    let mut results: Vec<(usize, Result<Cubin, PrecompileError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(arch, program)) = jobs.get(i) else {
                            return done;
                        };
                        done.push((i, precompile_one(dir, program, arch, (major, minor))));
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
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Precompiled {
        nvrtc_version: format!("{major}.{minor}"),
        cubins,
    })
}

fn precompile_one(
    dir: &Path,
    program: &KernelProgram,
    arch: &str,
    nvrtc: (i32, i32),
) -> Result<Cubin, PrecompileError> {
    let compiled = compile_program(program, arch).map_err(|e| PrecompileError::Compile {
        program: program.name,
        arch: arch.to_string(),
        reason: e.to_string(),
    })?;
    if !compiled.log.is_empty() {
        return Err(PrecompileError::Warnings {
            program: program.name,
            arch: arch.to_string(),
            log: compiled.log,
        });
    }
    let path =
        cache::store_precompiled(dir, program, arch, nvrtc, &compiled.cubin).map_err(|source| {
            PrecompileError::Io {
                path: dir.to_path_buf(),
                source,
            }
        })?;
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or_default()
        .to_string();
    Ok(Cubin {
        program: program.name,
        arch: arch.to_string(),
        min_driver_version: cache::min_driver_version(nvrtc),
        file,
        cubin_sha256: hex::encode(Sha256::digest(&compiled.cubin)),
        cubin_size: compiled.cubin.len(),
    })
}
