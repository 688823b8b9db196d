//! CUDA backend on cudarc: the driver API and NVRTC are loaded at run time, so a machine
//! without CUDA builds and runs the CPU path, and [`GpuBackend::open`] says why it cannot.
//!
//! Design (docs/gpu.md has the whole story):
//! * `open` compiles every kernel once for the device's architecture with NVRTC (or loads
//!   the cubin from the on-disk cache, see [`kernel_cache`]) before the engine reports ready.
//! * A pool of workers, each with its own CUDA streams, pinned staging buffers and device
//!   buffers (grown on demand, then reused). A call borrows one worker for its duration, so
//!   concurrent callers run on different streams; the only shared lock guards the idle list.
//! * Each batch is staged into pinned memory and uploaded with one copy; outputs are
//!   poisoned before the launch and checked after it, so an unwritten result is an error.

pub mod bench;
mod bls;
pub mod compile;
mod decompress;
mod g2_decompress;
mod hash_to_g1;
pub mod kernel_cache;
mod marks;
mod memory;
mod msm;
mod msm_shared_u8;
mod sha256;
pub mod sources;

use crate::input::MsmInput;
pub use bls::BlsGpuStrategy;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
pub use decompress::{DecompressKernel, LATENCY_KERNEL_MAX_POINTS};
use gpu_crypto_api::BlsItem;
use gpu_crypto_api::Operation;
use gpu_crypto_api::{DecodeError, VerifyError};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine};
use memory::driver;
use sources::KernelProgram;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A GPU failure. `kind()` is a short, bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    #[error("NVRTC (CUDA run-time compiler) unusable: {0}")]
    NoNvrtc(String),
    #[error("CUDA driver error: {0}")]
    Driver(String),
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    #[error("no precompiled kernel: {0}")]
    KernelNotPrecompiled(String),
    #[error("GPU output failed validation: {0}")]
    BadOutput(String),
    #[error("input outside what the GPU path handles: {0}")]
    InputTooLarge(String),
    #[error("operation not implemented on the GPU")]
    Unsupported,
}

impl GpuError {
    pub fn kind(&self) -> &'static str {
        match self {
            GpuError::NoDevice(_) => "no_device",
            GpuError::NoNvrtc(_) => "no_nvrtc",
            GpuError::Driver(_) => "driver",
            GpuError::Compile(_) => "compile",
            GpuError::KernelNotPrecompiled(_) => "kernel_not_precompiled",
            GpuError::BadOutput(_) => "bad_output",
            GpuError::InputTooLarge(_) => "input_too_large",
            GpuError::Unsupported => "unsupported",
        }
    }
}

/// How one program was obtained in `open`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramLoad {
    pub program: &'static str,
    /// "precompiled", "cache", "compiled", or "recompiled (reasons)" when a cubin was found
    /// but unusable (corrupt, refused for an old driver, rejected by the driver).
    pub source: String,
    pub seconds: f64,
}

pub(crate) struct Kernels {
    pub(crate) g1_decompress: CudaFunction,
    /// Small batches: one point over two warps (decompress.rs picks by batch size).
    pub(crate) g1_decompress_latency: CudaFunction,
    pub(crate) g2_decompress: CudaFunction,
    pub(crate) sha256_prefixed: CudaFunction,
    /// The same hash with every addition on the integer ALU (bench comparison only).
    pub(crate) sha256_prefixed_alu: CudaFunction,
    /// Also the message schedule's shifts on the FMA pipe (bench comparison only).
    pub(crate) sha256_prefixed_shr_fma: CudaFunction,
    pub(crate) fill_random: CudaFunction,
    pub(crate) msm: msm::MsmKernels,
    pub(crate) msm_u8: msm_shared_u8::MsmU8Kernels,
    pub(crate) bls: bls::BlsKernels,
}

/// Number of workers (stream sets with their own buffers); `GPU_CRYPTO_GPU_WORKERS` overrides.
const DEFAULT_WORKERS: usize = 8;

pub(crate) struct Worker {
    /// Upload, launch and download stream of single-segment work (decompression).
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) dec: decompress::DecompressBuffers,
    pub(crate) sha: sha256::ShaBuffers,
    pub(crate) msm: msm::MsmBuffers,
    pub(crate) bls: bls::BlsBuffers,
}

impl Worker {
    /// After a failed call: waits for (or abandons) whatever the call left queued, so the
    /// next call never reuses a buffer a stale copy still touches.
    fn quiesce(&mut self) {
        let _ = self.stream.synchronize();
        self.sha.quiesce();
        self.bls.quiesce();
    }
}

struct Pool {
    idle: Mutex<Vec<Worker>>,
    returned: Condvar,
}

/// Returns its worker to the pool on drop (also on error paths).
pub(crate) struct WorkerGuard<'a> {
    pool: &'a Pool,
    worker: Option<Worker>,
}

impl std::ops::Deref for WorkerGuard<'_> {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker.as_ref().expect("worker present until drop")
    }
}

impl std::ops::DerefMut for WorkerGuard<'_> {
    fn deref_mut(&mut self) -> &mut Worker {
        self.worker.as_mut().expect("worker present until drop")
    }
}

impl Drop for WorkerGuard<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push(w);
            self.pool.returned.notify_one();
        }
    }
}

/// An opened device with its kernels loaded. `Send + Sync`: share it among threads.
pub struct GpuBackend {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) kernels: Kernels,
    _modules: Vec<Arc<CudaModule>>,
    pool: Pool,
    description: String,
    arch: String,
    loads: Vec<ProgramLoad>,
}

fn load_program(
    ctx: &Arc<CudaContext>,
    program: &KernelProgram,
    arch: &str,
    driver_version: i32,
    mode: kernel_cache::KernelMode,
) -> Result<(Arc<CudaModule>, ProgramLoad), GpuError> {
    let start = Instant::now();
    let precompiled = kernel_cache::precompiled_dir();
    let dir = kernel_cache::cache_dir();
    let plan = kernel_cache::plan(
        program,
        arch,
        driver_version,
        kernel_cache::Sources {
            precompiled: precompiled.as_deref(),
            writable: dir.as_deref(),
        },
    );
    let mut skipped = plan.skipped;
    for candidate in plan.candidates {
        match ctx.load_module(cudarc::nvrtc::Ptx::from_binary(candidate.cubin)) {
            Ok(module) => {
                for s in &skipped {
                    kernel_cache::count_skip(s);
                    tracing::warn!(program = program.name, kind = s.kind, reason = %s,
                        "kernel source skipped");
                }
                kernel_cache::count(candidate.origin.label(), "");
                return Ok((
                    module,
                    ProgramLoad {
                        program: program.name,
                        source: candidate.origin.label().into(),
                        seconds: start.elapsed().as_secs_f64(),
                    },
                ));
            }
            Err(e) => skipped.push(kernel_cache::Skip {
                origin: candidate.origin,
                kind: "rejected_by_driver",
                reason: format!(
                    "{}: cubin rejected by the driver: {e}",
                    candidate.path.display()
                ),
            }),
        }
    }
    for s in &skipped {
        kernel_cache::count_skip(s);
        tracing::warn!(program = program.name, kind = s.kind, reason = %s, "kernel source skipped");
    }
    if mode == kernel_cache::KernelMode::CachedOnly {
        kernel_cache::count("refused_cached_only", "");
        return Err(GpuError::KernelNotPrecompiled(
            kernel_cache::cached_only_failure(program, arch, &skipped),
        ));
    }
    let compiled = compile::compile_program(program, arch)?;
    if !compiled.log.is_empty() {
        tracing::warn!(program = program.name, log = %compiled.log, "NVRTC warnings");
    }
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
        .map_err(driver("cuModuleLoadData"))?;
    if let Some(dir) = &dir
        && let Err(e) = kernel_cache::store(
            dir,
            program,
            &kernel_cache::cache_key(program, arch, driver_version),
            &compiled.cubin,
        )
    {
        tracing::warn!(program = program.name, dir = %dir.display(), error = %e,
            "could not write the kernel cache; the next start compiles again");
    }
    kernel_cache::count("compiled", "");
    let source = if skipped.is_empty() {
        "compiled".to_string()
    } else {
        let reasons: Vec<String> = skipped.iter().map(|s| s.to_string()).collect();
        format!("recompiled ({})", reasons.join("; "))
    };
    Ok((
        module,
        ProgramLoad {
            program: program.name,
            source,
            seconds: start.elapsed().as_secs_f64(),
        },
    ))
}

impl GpuBackend {
    /// Opens CUDA device `device`, compiles or loads every kernel and creates the worker pool.
    pub fn open(device: usize) -> Result<GpuBackend, GpuError> {
        // SAFETY: only probes whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDevice(
                "libcuda.so (NVIDIA driver) was not found on the library path".into(),
            ));
        }
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::NoDevice(format!("cuInit/cuDeviceGetCount: {e}")))?;
        if count <= 0 || device >= count as usize {
            return Err(GpuError::NoDevice(format!(
                "device {device} requested, {count} CUDA device(s) present"
            )));
        }
        let ctx = CudaContext::new(device)
            .map_err(|e| GpuError::NoDevice(format!("device {device}: {e}")))?;
        // SAFETY: buffers are raw allocations ordered by the owning worker's streams.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("compute capability"))?;
        let arch = format!("sm_{major}{minor}");
        let mut driver_version = 0;
        // SAFETY: valid out-pointer; libcuda is loaded.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(driver("cuDriverGetVersion"))?;
        let mode = kernel_cache::KernelMode::from_env().map_err(GpuError::KernelNotPrecompiled)?;

        // Compile the programs in parallel: NVRTC is single-threaded per program.
        let results: Vec<Result<(Arc<CudaModule>, ProgramLoad), GpuError>> =
            std::thread::scope(|s| {
                let handles: Vec<_> = sources::PROGRAMS
                    .iter()
                    .map(|p| {
                        let ctx = &ctx;
                        let arch = &arch;
                        s.spawn(move || {
                            ctx.bind_to_thread().map_err(driver("bind context"))?;
                            load_program(ctx, p, arch, driver_version, mode)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(GpuError::Compile("kernel build thread panicked".into()))
                        })
                    })
                    .collect()
            });
        let mut modules = Vec::new();
        let mut loads = Vec::new();
        for r in results {
            let (m, l) = r?;
            modules.push(m);
            loads.push(l);
        }
        let program_index = |p: &KernelProgram| {
            sources::PROGRAMS
                .iter()
                .position(|q| q.name == p.name)
                .ok_or_else(|| GpuError::Compile(format!("{} is not in PROGRAMS", p.name)))
        };
        let function = |program: usize, name: &str| {
            modules[program]
                .load_function(name)
                .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))
        };
        let kernels = Kernels {
            g1_decompress: function(0, "g1_decompress")?,
            g1_decompress_latency: function(
                program_index(&sources::G1_DECOMPRESS_LATENCY)?,
                "g1_decompress_latency",
            )?,
            g2_decompress: function(program_index(&sources::G2_DECOMPRESS)?, "g2_decompress")?,
            sha256_prefixed: function(1, "sha256_prefixed")?,
            sha256_prefixed_alu: function(1, "sha256_prefixed_alu")?,
            sha256_prefixed_shr_fma: function(1, "sha256_prefixed_shr_fma")?,
            fill_random: function(2, "fill_random")?,
            msm: msm::MsmKernels::load(&modules[program_index(&sources::G1_MSM)?])?,
            msm_u8: msm_shared_u8::MsmU8Kernels::load(
                &modules[program_index(&sources::G1_MSM_SHARED_U8)?],
            )?,
            bls: bls::BlsKernels::load(
                &modules[program_index(&sources::BLS_VERIFY)?],
                &modules[program_index(&sources::BLS_PAIRING)?],
                &modules[program_index(&sources::HASH_TO_G1)?],
            )?,
        };

        let workers = std::env::var("GPU_CRYPTO_GPU_WORKERS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_WORKERS);
        let mut idle = Vec::with_capacity(workers);
        for _ in 0..workers {
            idle.push(Worker {
                stream: ctx.new_stream().map_err(driver("cuStreamCreate"))?,
                dec: decompress::DecompressBuffers::new(&ctx),
                sha: sha256::ShaBuffers::new(&ctx),
                msm: msm::MsmBuffers::new(&ctx),
                bls: bls::BlsBuffers::new(&ctx),
            });
        }
        let (drv_major, drv_minor) = (driver_version / 1000, (driver_version % 1000) / 10);
        let description = format!("{name} ({arch}, driver {drv_major}.{drv_minor})");
        tracing::info!(device = %description, workers, ?loads, "GPU backend ready");
        Ok(GpuBackend {
            ctx,
            kernels,
            _modules: modules,
            pool: Pool {
                idle: Mutex::new(idle),
                returned: Condvar::new(),
            },
            description,
            arch,
            loads,
        })
    }

    /// e.g. "NVIDIA H200 (sm_90, driver 13.0)".
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// The architecture the kernels were built for, e.g. "sm_90".
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// How each program was obtained in `open` (cache hit, compiled, recompiled).
    pub fn program_loads(&self) -> &[ProgramLoad] {
        &self.loads
    }

    pub fn supports(&self, op: Operation) -> bool {
        match op {
            Operation::Decompress
            | Operation::DecompressG2
            | Operation::Msm
            | Operation::PairingProducts
            | Operation::BlsVerify
            | Operation::MsmSharedU8
            | Operation::Sha256 => true,
        }
    }

    pub(crate) fn worker(&self) -> WorkerGuard<'_> {
        let mut idle = self.pool.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(w) = idle.pop() {
                return WorkerGuard {
                    pool: &self.pool,
                    worker: Some(w),
                };
            }
            idle = self
                .pool
                .returned
                .wait(idle)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Decompresses and fully validates compressed G1 points on the GPU; one result per
    /// point, identical to the CPU path.
    pub fn g1_decompress(
        &self,
        points: &[[u8; 48]],
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
        self.g1_decompress_with(points, DecompressKernel::for_batch(points.len()))
    }

    /// Decompresses and fully validates compressed G2 points on the GPU (flags, canonical
    /// coordinates, the twist's equation, the subgroup); one result per point, identical to
    /// `cpu::g2_decompress`.
    pub fn g2_decompress(
        &self,
        points: &[[u8; 96]],
    ) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.worker();
        let result = g2_decompress::run(self, &mut w, points);
        if result.is_err() {
            w.quiesce();
        }
        result
    }

    /// `SHA-256(prefix || chunk)` for every chunk, identical to `cpu::sha256_prefixed`.
    pub fn sha256_prefixed(
        &self,
        prefix: &[u8],
        chunks: &[&[u8]],
    ) -> Result<Vec<[u8; 32]>, GpuError> {
        if chunks.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.worker();
        let result = sha256::run(self, &mut w, prefix, chunks);
        if result.is_err() {
            w.quiesce();
        }
        result
    }

    /// Many independent G1 MSMs in one upload, one launch sequence and one download;
    /// identical to `cpu::g1_msm_batch`. Lengths must match (the engine checks).
    pub fn g1_msm_batch(&self, msms: &[MsmInput<'_>]) -> Result<Vec<G1Projective>, GpuError> {
        if let Some(m) = msms.iter().find(|m| m.points.len() != m.scalars.len()) {
            return Err(GpuError::InputTooLarge(format!(
                "MSM with {} points and {} scalars",
                m.points.len(),
                m.scalars.len()
            )));
        }
        if msms.iter().all(|m| m.points.is_empty()) {
            return Ok(vec![G1Projective::identity(); msms.len()]);
        }
        let mut w = self.worker();
        let result = msm::run(self, &mut w, msms);
        if result.is_err() {
            w.quiesce();
        }
        result
    }

    /// Verifies BLS signatures (G1) under public keys (G2) with a random linear
    /// combination on the GPU; one verdict per item, identical to
    /// `cpu::bls_verify_batch` (docs/bls.md).
    pub fn bls_verify_batch(
        &self,
        items: &[BlsItem<'_>],
    ) -> Result<Vec<Result<(), VerifyError>>, GpuError> {
        self.bls_verify_batch_with(items, bls::default_strategy(items.len()))
    }

    /// [`GpuBackend::bls_verify_batch`] with the GPU strategy chosen by the caller.
    pub fn bls_verify_batch_with(
        &self,
        items: &[BlsItem<'_>],
        strategy: BlsGpuStrategy,
    ) -> Result<Vec<Result<(), VerifyError>>, GpuError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.worker();
        let result = bls::verify_batch(self, &mut w, items, strategy);
        if result.is_err() {
            w.quiesce();
        }
        result
    }

    /// `prod e(P, Q)` over each group of pairs, as `ic_bls12_381::Gt::to_bytes` (pairs
    /// with an identity point contribute 1, as in ic_bls12_381).
    pub fn pairing_products(
        &self,
        groups: &[&[(G1Affine, G2Affine)]],
    ) -> Result<Vec<[u8; 576]>, GpuError> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.worker();
        let result = bls::pairing_products(self, &mut w, groups);
        if result.is_err() {
            w.quiesce();
        }
        result
    }
}
