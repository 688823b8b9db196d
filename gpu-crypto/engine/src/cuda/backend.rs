//! [`GpuBackend`]: an opened device, its kernels and its worker pool, and the public
//! operations, each of which borrows a worker for its duration.

use super::bls::{self, BlsGpuStrategy};
use super::decompress::{self, DecompressKernel};
use super::device::{self, Context, Device, GpuWait};
use super::error::GpuError;
use super::functions::Kernels;
use super::g2_decompress::G2DecompressKernel;
use super::kernel_cache::KernelMode;
use super::load::{self, ProgramLoad};
use super::worker::{Pool, Worker};
use super::{g2_decompress, hash_to_g1, msm, msm_g2, msm_shared_u8, recombine, sha256};
use crate::input::MsmInput;
use cudarc::driver::CudaModule;
use gpu_crypto_api::{BlsItem, DecodeError, Operation, VerifyError};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective};
use std::sync::Arc;

/// An opened device with its kernels loaded. `Send + Sync`: share it among threads.
pub struct GpuBackend {
    device: Device,
    _modules: Vec<Arc<CudaModule>>,
    pool: Pool,
    description: String,
    loads: Vec<ProgramLoad>,
}

impl GpuBackend {
    /// Opens CUDA device `device`, compiles or loads every kernel and creates the worker pool.
    pub fn open(device: usize) -> Result<GpuBackend, GpuError> {
        let context = Context::open(device)?;
        let mode = KernelMode::from_env().map_err(GpuError::KernelNotPrecompiled)?;
        let (modules, loads) =
            load::load_programs(&context.ctx, &context.arch, context.driver_version, mode)?;
        let kernels = Kernels::load(&modules)?;
        let pool = Pool::new(&context.ctx)?;
        let description = context.describe();
        tracing::info!(device = %description, workers = pool.size(), ?loads, "GPU backend ready");
        Ok(GpuBackend {
            device: Device {
                ctx: context.ctx,
                kernels,
                arch: context.arch,
            },
            _modules: modules,
            pool,
            description,
            loads,
        })
    }

    /// e.g. "NVIDIA H200 (sm_90, driver 13.0)".
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// The architecture the kernels were built for, e.g. "sm_90".
    pub fn arch(&self) -> &str {
        &self.device.arch
    }

    /// How each program was obtained in `open` (cache hit, compiled, recompiled).
    pub fn program_loads(&self) -> &[ProgramLoad] {
        &self.loads
    }

    /// Sets how host threads wait for this device's work (blocking from `open` on).
    pub fn set_wait(&self, wait: GpuWait) -> Result<(), GpuError> {
        device::set_wait(&self.device.ctx, wait)
    }

    /// Whether `op` has a GPU path in this backend.
    pub fn supports(&self, op: Operation) -> bool {
        match op {
            Operation::Decompress
            | Operation::DecompressG2
            | Operation::Msm
            | Operation::PairingProducts
            | Operation::BlsVerify
            | Operation::MsmSharedU8
            | Operation::MsmG2
            | Operation::Sha256 => true,
        }
    }

    /// The device and its kernels (the bench measurements launch on them directly).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// Runs `op` on a borrowed worker; after a failure, quiesces the worker before it goes
    /// back to the pool.
    fn with_worker<T>(
        &self,
        op: impl FnOnce(&Device, &mut Worker) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let mut w = self.pool.worker();
        let result = op(&self.device, &mut w);
        if result.is_err() {
            w.quiesce();
        }
        result
    }

    /// Decompresses and fully validates compressed G1 points on the GPU; one result per
    /// point, identical to the CPU path.
    pub fn g1_decompress(
        &self,
        points: &[[u8; 48]],
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
        self.g1_decompress_with(points, DecompressKernel::for_batch(points.len()))
    }

    /// [`GpuBackend::g1_decompress`] with the kernel chosen by the caller instead of by the
    /// batch size (tests and benchmarks compare both kernels at every size).
    pub fn g1_decompress_with(
        &self,
        points: &[[u8; 48]],
        kernel: DecompressKernel,
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        self.with_worker(|gpu, w| decompress::run_with(gpu, w, points, kernel))
    }

    /// Decompresses and fully validates compressed G2 points on the GPU (flags, canonical
    /// coordinates, the twist's equation, the subgroup); one result per point, identical to
    /// `cpu::g2_decompress`.
    pub fn g2_decompress(
        &self,
        points: &[[u8; 96]],
    ) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
        self.g2_decompress_with(points, G2DecompressKernel::for_batch(points.len()))
    }

    /// [`GpuBackend::g2_decompress`] with the kernel chosen by the caller instead of by the
    /// batch size (tests and benchmarks compare both kernels).
    pub fn g2_decompress_with(
        &self,
        points: &[[u8; 96]],
        kernel: G2DecompressKernel,
    ) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        self.with_worker(|gpu, w| g2_decompress::run(gpu, w, points, kernel))
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
        self.with_worker(|gpu, w| sha256::run(gpu, w, prefix, chunks))
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
        self.with_worker(|gpu, w| msm::run(gpu, w, msms))
    }

    /// `rows` MSMs over one set of bases with 8-bit scalars: result `k` is
    /// `sum_p scalars[k * bases.len() + p] * bases[p]`, identical to
    /// `nidkg::msm::msm_shared_bases_u8` per row. `scalars.len()` must be
    /// `rows * bases.len()` (`InputTooLarge` otherwise, and above the bounds of
    /// `msm_shared_u8`).
    pub fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, GpuError> {
        self.g1_msm_shared_u8_with(
            bases,
            scalars,
            rows,
            msm_shared_u8::plane_threads(bases.len()),
        )
    }

    /// [`GpuBackend::g1_msm_shared_u8`] with the plane blocks' thread count chosen by the
    /// caller (a power of two from 32 to `PLANE_THREADS_MAX`, 128; tests and benchmarks).
    pub fn g1_msm_shared_u8_with(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
        threads: u32,
    ) -> Result<Vec<G1Projective>, GpuError> {
        msm_shared_u8::check_call(bases.len(), scalars.len(), rows, threads)?;
        if rows == 0 {
            return Ok(Vec::new());
        }
        if bases.is_empty() {
            return Ok(vec![G1Projective::identity(); rows]);
        }
        self.with_worker(|gpu, w| msm_shared_u8::run(gpu, w, bases, scalars, rows, threads))
    }

    /// Many independent G2 MSMs in one upload, one launch and one download; equal to the
    /// naive sums. Every point must lie in G2 (the kernel's scalar split relies on it: pass
    /// decoded points only). Lengths must match (the engine checks).
    pub fn g2_msm_batch(
        &self,
        msms: &[MsmInput<'_, G2Affine>],
    ) -> Result<Vec<G2Projective>, GpuError> {
        if let Some(m) = msms.iter().find(|m| m.points.len() != m.scalars.len()) {
            return Err(GpuError::InputTooLarge(format!(
                "G2 MSM with {} points and {} scalars",
                m.points.len(),
                m.scalars.len()
            )));
        }
        if msms.iter().all(|m| m.points.is_empty()) {
            return Ok(vec![G2Projective::identity(); msms.len()]);
        }
        self.with_worker(|gpu, w| msm_g2::run(gpu, w, msms))
    }

    /// `sum_j 2^(16 (len - 1 - j)) * row[j]` for each row of at most 16 points (the
    /// NI-DKG sharing proof's chunk recombinations) in one upload, one launch and one
    /// download; equal to `cpu::g1_recombine_chunks`.
    pub fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, GpuError> {
        recombine::check_shape(rows)?;
        if rows.iter().all(|r| r.is_empty()) {
            return Ok(vec![G1Projective::identity(); rows.len()]);
        }
        self.with_worker(|gpu, w| recombine::run(gpu, w, rows))
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
        self.with_worker(|gpu, w| bls::verify_batch(gpu, w, items, strategy))
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
        self.with_worker(|gpu, w| bls::pairing_products(gpu, w, groups))
    }

    /// `hash_to_curve(message, tag)` in G1 for each `(tag, message)` pair, in order:
    /// equal to ic_bls12_381's `HashToCurve<ExpandMsgXmd<Sha256>>` for `G1Projective`.
    pub fn hash_to_g1(&self, messages: &[(&[u8], &[u8])]) -> Result<Vec<G1Affine>, GpuError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        self.with_worker(|gpu, w| {
            hash_to_g1::enqueue(gpu, w, messages).and_then(|p| hash_to_g1::finish(w, p, |_, p| p))
        })
    }
}
