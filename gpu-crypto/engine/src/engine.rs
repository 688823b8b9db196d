//! The one entry point: an [`Engine`] routes each batch to the CPU or the GPU as its
//! [`Policy`] says, counts where it ran, and recomputes on the CPU after a GPU failure
//! only where the policy allows it (counted and logged with the reason).

use crate::counters::Counters;
use crate::cpu;
use crate::cuda::{GpuBackend, GpuError, GpuWait, kernel_cache};
use crate::input::{MsmInput, PairingProducts, check_shared_u8_shape};
use gpu_crypto_api::policy::bls_distinct_messages;
use gpu_crypto_api::stats::{Executed, StatsSnapshot};
use gpu_crypto_api::{
    BackendChoice, BlsItem, DecodeError, DomainSeparator, EngineError, EngineReport, Fallback,
    GpuStatus, KernelLoadCount, Operation, OperationPath, Policy, VerifyError,
};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Gt, Scalar};
use std::sync::Arc;

enum Route<'a> {
    Cpu,
    Gpu(&'a GpuBackend),
}

/// Thread-safe (`Send + Sync`): share one engine among all callers.
pub struct Engine {
    policy: Policy,
    gpu: Result<Option<Arc<GpuBackend>>, String>,
    stats: Arc<Counters>,
}

impl Engine {
    /// Opens the GPU when any operation may use it (compiling or loading the kernels now,
    /// never per call). Fails when an operation is pinned to the GPU and it is unusable.
    pub fn new(policy: Policy) -> Result<Engine, EngineError> {
        let gpu = if policy.wants_gpu() {
            match GpuBackend::open(policy.gpu_device) {
                Ok(backend) => Ok(Some(Arc::new(backend))),
                Err(e) => Err(e.to_string()),
            }
        } else {
            Ok(None)
        };
        let engine = Engine {
            policy,
            gpu,
            stats: Arc::new(Counters::default()),
        };
        for op in Operation::ALL {
            if engine.policy.operation(op).backend != BackendChoice::Gpu {
                continue;
            }
            match &engine.gpu {
                Err(reason) => {
                    return Err(EngineError::GpuUnavailable {
                        op,
                        reason: reason.clone(),
                    });
                }
                Ok(Some(g)) if !g.supports(op) => {
                    return Err(EngineError::NoGpuImplementation { op });
                }
                _ => {}
            }
        }
        if let Err(reason) = &engine.gpu {
            tracing::warn!(%reason, "GPU unusable; operations under the auto policy run on the CPU");
        }
        Ok(engine)
    }

    /// An engine that never touches the GPU.
    pub fn cpu_only() -> Engine {
        Engine {
            policy: Policy::cpu_only(),
            gpu: Ok(None),
            stats: Arc::new(Counters::default()),
        }
    }

    /// Sets how host threads wait for the GPU's work: [`GpuWait::Block`] (the default)
    /// costs no host CPU while the GPU works, [`GpuWait::Spin`] a busy core for the lowest
    /// latency. The setting belongs to the device's context: every engine on it sees it.
    /// Without an open GPU there is nothing to set.
    pub fn set_gpu_wait(&self, wait: GpuWait) -> Result<(), EngineError> {
        match &self.gpu {
            Ok(Some(g)) => g.set_wait(wait).map_err(|e| EngineError::GpuWait {
                reason: e.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// The policy the engine was built from.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether the GPU was asked for, and if so whether it opened (its device) or why not.
    pub fn gpu_status(&self) -> GpuStatus {
        match &self.gpu {
            Ok(None) => GpuStatus::NotRequested,
            Ok(Some(g)) => GpuStatus::Ready {
                device: g.describe(),
            },
            Err(reason) => GpuStatus::Unusable {
                reason: reason.clone(),
            },
        }
    }

    /// A snapshot of the engine's counters (calls and items per backend, fallbacks, GPU
    /// errors).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// How this process obtained its GPU programs so far (precompiled, cache, compiled,
    /// skipped or refused, by reason kind). Process-wide, so that it also explains an
    /// engine that failed to open.
    pub fn kernel_loads() -> Vec<KernelLoadCount> {
        kernel_cache::load_counts()
            .into_iter()
            .map(|c| KernelLoadCount {
                outcome: c.outcome.to_string(),
                reason: c.reason.to_string(),
                count: c.count,
            })
            .collect()
    }

    /// Which backend serves each operation, and why.
    pub fn report(&self) -> EngineReport {
        let operations = Operation::ALL
            .iter()
            .map(|&op| {
                let p = self.policy.operation(op);
                let explanation = match (p.backend, &self.gpu) {
                    (BackendChoice::Cpu, _) => "cpu: the policy runs it on the CPU".to_string(),
                    (BackendChoice::Gpu, _) => "gpu: the policy pins it to the GPU".to_string(),
                    (BackendChoice::Auto, Err(reason)) => {
                        format!("cpu: no usable GPU ({reason})")
                    }
                    (BackendChoice::Auto, Ok(None)) => "cpu: GPU not opened".to_string(),
                    (BackendChoice::Auto, Ok(Some(g))) if !g.supports(op) => {
                        "cpu: no GPU implementation of this operation".to_string()
                    }
                    (BackendChoice::Auto, Ok(Some(_))) => format!(
                        "gpu for batches of {} items or more, cpu below (crossover)",
                        p.gpu_min_batch
                    ),
                };
                OperationPath {
                    operation: op,
                    backend: p.backend,
                    gpu_min_batch: p.gpu_min_batch,
                    explanation,
                }
            })
            .collect();
        EngineReport {
            gpu: self.gpu_status(),
            fallback: self.policy.fallback,
            operations,
        }
    }

    fn route(&self, op: Operation, items: usize) -> Result<Route<'_>, EngineError> {
        let p = self.policy.operation(op);
        let gpu = match &self.gpu {
            Ok(Some(g)) if g.supports(op) => Some(g.as_ref()),
            _ => None,
        };
        match p.backend {
            BackendChoice::Cpu => Ok(Route::Cpu),
            BackendChoice::Gpu => match (gpu, &self.gpu) {
                (Some(g), _) => Ok(Route::Gpu(g)),
                (None, Err(reason)) => Err(EngineError::GpuUnavailable {
                    op,
                    reason: reason.clone(),
                }),
                (None, _) => Err(EngineError::NoGpuImplementation { op }),
            },
            BackendChoice::Auto => match gpu {
                Some(g) if items >= p.gpu_min_batch && items > 0 => Ok(Route::Gpu(g)),
                _ => Ok(Route::Cpu),
            },
        }
    }

    /// Runs `gpu` or `cpu` as routed; after a GPU failure recomputes with `cpu` only where
    /// the policy allows, always counting and logging the reason.
    fn dispatch<T>(
        &self,
        op: Operation,
        items: usize,
        cpu: impl FnOnce() -> T,
        gpu: impl FnOnce(&GpuBackend) -> Result<T, GpuError>,
    ) -> Result<T, EngineError> {
        self.dispatch_sized(op, items, items, cpu, gpu)
    }

    /// [`Engine::dispatch`] routing by `route_size` (the work that decides the
    /// crossover) while counting `items`.
    fn dispatch_sized<T>(
        &self,
        op: Operation,
        route_size: usize,
        items: usize,
        cpu: impl FnOnce() -> T,
        gpu: impl FnOnce(&GpuBackend) -> Result<T, GpuError>,
    ) -> Result<T, EngineError> {
        match self.route(op, route_size)? {
            Route::Cpu => {
                self.stats.record(op, Executed::Cpu, items);
                Ok(cpu())
            }
            Route::Gpu(g) => match gpu(g) {
                Ok(out) => {
                    self.stats.record(op, Executed::Gpu, items);
                    Ok(out)
                }
                Err(e) => {
                    let kind = e.kind();
                    self.stats.record_gpu_error(op, kind);
                    match self.policy.fallback {
                        Fallback::RecomputeOnCpu => {
                            tracing::warn!(operation = %op, reason = %e, kind, items,
                                "GPU call failed; recomputing on the CPU as the policy allows");
                            self.stats.record_fallback(op, kind);
                            self.stats.record(op, Executed::Cpu, items);
                            Ok(cpu())
                        }
                        Fallback::Never => {
                            tracing::error!(operation = %op, reason = %e, kind, items,
                                "GPU call failed; the policy forbids recomputing on the CPU");
                            Err(EngineError::GpuFailed {
                                op,
                                reason: e.to_string(),
                            })
                        }
                    }
                }
            },
        }
    }

    /// Decompresses and fully validates 48-byte compressed G1 points; accepts and rejects
    /// exactly what `ic_bls12_381::G1Affine::from_compressed` does, with the reason per item.
    pub fn g1_decompress(
        &self,
        points: &[[u8; 48]],
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, EngineError> {
        self.dispatch(
            Operation::Decompress,
            points.len(),
            || cpu::g1_decompress(points),
            |g| g.g1_decompress(points),
        )
    }

    /// Decompresses and fully validates 96-byte compressed G2 points; accepts and rejects
    /// exactly what `ic_bls12_381::G2Affine::from_compressed` does, with the reason per item.
    pub fn g2_decompress(
        &self,
        points: &[[u8; 96]],
    ) -> Result<Vec<Result<G2Affine, DecodeError>>, EngineError> {
        self.dispatch(
            Operation::DecompressG2,
            points.len(),
            || cpu::g2_decompress(points),
            |g| g.g2_decompress(points),
        )
    }

    /// `sum(scalars[i] * points[i])`; the identity for empty input.
    pub fn g1_msm(
        &self,
        points: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, EngineError> {
        let mut out = self.g1_msm_batch(&[MsmInput { points, scalars }])?;
        out.pop().ok_or(EngineError::Policy(
            "internal: msm batch returned no result".into(),
        ))
    }

    /// Many independent MSMs in one call (NI-DKG: 32 MSMs of n*16 points).
    pub fn g1_msm_batch(&self, msms: &[MsmInput<'_>]) -> Result<Vec<G1Projective>, EngineError> {
        let items = msm_batch_points(Operation::Msm, msms)?;
        self.dispatch(
            Operation::Msm,
            items,
            || cpu::g1_msm_batch(msms),
            |g| g.g1_msm_batch(msms),
        )
    }

    /// `sum_j 2^(16 (15 - j)) * row[j]` for each row of 16 points (the NI-DKG sharing
    /// proof's recombined ciphertexts and randomizer; `nidkg::batch::recombine_chunks`).
    /// Counted and routed as `msm` by the points of the batch: on the GPU, one warp per
    /// row runs Horner in RNS (kernels/msm/g1_recombine.cu); on the CPU, Horner's 240
    /// doublings per row (fewer operations than a general MSM of 16 points).
    pub fn g1_recombine_chunks(
        &self,
        rows: &[&[G1Affine]],
    ) -> Result<Vec<G1Projective>, EngineError> {
        if let Some(row) = rows.iter().find(|r| r.len() > RECOMBINATION_CHUNKS) {
            return Err(EngineError::LengthMismatch {
                op: Operation::Msm,
                points: row.len(),
                scalars: RECOMBINATION_CHUNKS,
            });
        }
        let items = rows.iter().map(|r| r.len()).sum();
        self.dispatch(
            Operation::Msm,
            items,
            || cpu::g1_recombine_chunks(rows),
            |g| g.g1_recombine_chunks(rows),
        )
    }

    /// Many independent G2 MSMs in one call (NI-DKG: the sharing proof's `t + 2` points,
    /// the combined integrity check's 16). Every point must lie in G2, as decoded points
    /// do: the GPU's scalar split relies on it. Routed by the points of the whole batch.
    pub fn g2_msm_batch(
        &self,
        msms: &[MsmInput<'_, G2Affine>],
    ) -> Result<Vec<G2Projective>, EngineError> {
        let items = msm_batch_points(Operation::MsmG2, msms)?;
        self.dispatch(
            Operation::MsmG2,
            items,
            || cpu::g2_msm_batch(msms),
            |g| g.g2_msm_batch(msms),
        )
    }

    /// `rows` MSMs over one set of bases with 8-bit scalars (NI-DKG chunking proof: 32 MSMs
    /// of 16n points): result `k` is `sum_p scalars[k * bases.len() + p] * bases[p]`,
    /// identical to `nidkg::msm::msm_shared_bases_u8` per row. `scalars.len()` must be
    /// `rows * bases.len()`.
    pub fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, EngineError> {
        check_shared_u8_shape(bases.len(), scalars.len(), rows)?;
        let cpu = || cpu::g1_msm_shared_u8(bases, scalars, rows);
        let gpu = |g: &GpuBackend| g.g1_msm_shared_u8(bases, scalars, rows);
        self.dispatch(Operation::MsmSharedU8, scalars.len(), cpu, gpu)
    }

    /// Whether each product of pairings is the identity of GT, as `ic_bls12_381`'s
    /// `multi_miller_loop(..).final_exponentiation() == Gt::identity()` (pairs with an
    /// identity point contribute 1). Routed by the number of products: the GPU runs one
    /// product per thread, so it needs many products to win.
    pub fn pairing_products_are_identity(
        &self,
        input: PairingProducts<'_>,
    ) -> Result<Vec<bool>, EngineError> {
        input.check_indices()?;
        self.dispatch(
            Operation::PairingProducts,
            input.products.len(),
            || cpu::pairing_products_are_identity(input),
            |g| {
                let groups: Vec<Vec<(G1Affine, G2Affine)>> = input
                    .products
                    .iter()
                    .map(|pairs| pairs.iter().map(|(p, i)| (*p, input.g2[*i])).collect())
                    .collect();
                let groups: Vec<&[(G1Affine, G2Affine)]> =
                    groups.iter().map(Vec::as_slice).collect();
                let one = Gt::identity().to_bytes();
                Ok(g.pairing_products(&groups)?
                    .iter()
                    .map(|gt| *gt == one)
                    .collect())
            },
        )
    }

    /// Verifies BLS signatures (G1) under public keys (G2); one verdict per item.
    ///
    /// Strategy under `Auto` (docs/bls.md): the GPU path pays one Miller loop per item,
    /// the CPU path one per distinct message (items sharing a message combine into one
    /// pairing), so the GPU is chosen by the number of distinct messages
    /// ([`bls_distinct_messages`]) against the measured crossover;
    /// same-message batches (certification shares) stay on the CPU.
    pub fn bls_verify_batch(
        &self,
        items: &[BlsItem<'_>],
    ) -> Result<Vec<Result<(), VerifyError>>, EngineError> {
        let route_size = bls_distinct_messages(items);
        self.dispatch_sized(
            Operation::BlsVerify,
            route_size,
            items.len(),
            || cpu::bls_verify_batch(items),
            |g| g.bls_verify_batch(items),
        )
    }

    /// `SHA-256(domain_separator.prefix() || chunk)` for every chunk.
    pub fn sha256_chunks(
        &self,
        domain_separator: &DomainSeparator,
        chunks: &[&[u8]],
    ) -> Result<Vec<[u8; 32]>, EngineError> {
        let prefix = domain_separator.prefix();
        self.dispatch(
            Operation::Sha256,
            chunks.len(),
            || cpu::sha256_prefixed(prefix, chunks),
            |g| g.sha256_prefixed(prefix, chunks),
        )
    }
}

/// The points of a batch of MSMs, after checking that each MSM has a scalar per point.
fn msm_batch_points<A>(op: Operation, msms: &[MsmInput<'_, A>]) -> Result<usize, EngineError> {
    if let Some(m) = msms.iter().find(|m| m.points.len() != m.scalars.len()) {
        return Err(EngineError::LengthMismatch {
            op,
            points: m.points.len(),
            scalars: m.scalars.len(),
        });
    }
    Ok(msms.iter().map(|m| m.points.len()).sum())
}

/// Chunks of one recombination row: the weights `2^(16 (15 - j))`, `j` = 0..16.
const RECOMBINATION_CHUNKS: usize = 16;
