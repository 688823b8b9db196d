//! The replica's hooks: one safe function per call site of the IC's BLS12-381 type crate
//! (`rs/crypto/internal/crypto_lib/bls12_381/type`) and of the state manager's chunk
//! hashing that a batch on `libgpu_crypto.so` can serve (docs/replica-integration.md).
//!
//! Every hook answers with an [`Offload`]: [`Offload::Done`] with the library's GPU result,
//! bit-exact with `ic_bls12_381`; [`Offload::RunCpu`] when the caller must run its own
//! code (no runtime configuration, library absent or unusable, policy `cpu`, no usable GPU,
//! batch below the operation's `gpu_min_batch`, an input the library does not take, or a
//! GPU failure that the fallback rule lets the CPU recompute); [`Offload::Failed`] when the
//! GPU failed and the fallback rule is `never`. The caller's CPU path is always its own
//! code, never a copy of it here, and no hook returns a partial result. Every answer is
//! counted ([`stats`]); the first CPU routing of each kind per hook and every GPU failure
//! are logged.
//!
//! The hooks speak what the type crate has at hand: byte encodings of compressed points
//! and `ic_bls12_381` values (the type crate's wrappers hold them privately; the IC pins
//! `ic_bls12_381` 0.10, the line this workspace builds on, so one build has one copy).
//!
//! The process-wide instance ([`global`], used by the free functions) is opened once, on
//! first use, from the environment: the library from `GPU_CRYPTO_LIB` (else the loader's
//! search for `libgpu_crypto.so`), the policy from the node agent's runtime configuration
//! named by `SOVEREIGN_RUNTIME_CONFIG`. Without that file every hook answers `RunCpu`.

use crate::{Client, ClientError, ClientStatus, RUNTIME_CONFIG_ENV, policy_from_runtime_config};
use gpu_crypto::{
    BackendChoice, DecodeError, DomainSeparator, EngineError, EngineReport, Fallback, G1Affine,
    G1Projective, G2Affine, GpuStatus, MsmInput, Operation, PairingProducts, Policy, Scalar,
};
use gpu_crypto_api::abi::Status;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Directory the hooks write their counters to after every call (one JSON file per
/// process, `gpu-crypto-hooks-<program>-<pid>.json`), when set. A diagnostic for test runs
/// of the patched type crate; unset on nodes.
pub const STATS_DIR_ENV: &str = "GPU_CRYPTO_HOOKS_STATS_DIR";

/// The state manager's chunk domain separator (`rs/state_manager/src/manifest.rs`).
pub const STATE_CHUNK_SEPARATOR: &str = "ic-state-chunk";

/// A hook's answer.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offload<T> {
    /// The library's result, computed on the GPU.
    Done(T),
    /// Run the caller's own CPU code (counted in [`stats`] with the reason).
    RunCpu,
    /// The GPU failed and the runtime configuration forbids recomputing on the CPU.
    Failed(HookError),
}

impl<T> Offload<T> {
    /// The GPU result, if there is one.
    pub fn done(self) -> Option<T> {
        match self {
            Offload::Done(value) => Some(value),
            Offload::RunCpu | Offload::Failed(_) => None,
        }
    }
}

/// Why a hook has no result and the CPU must not compute one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The GPU failed and the fallback rule is `never`.
    #[error(
        "{hook}: the GPU failed ({reason}) and the runtime configuration's fallback is \"never\""
    )]
    GpuFailed {
        /// The hook called.
        hook: Hook,
        /// The library's failure.
        reason: String,
    },
}

/// Why one point encoding of a decoding batch was rejected. The type crate maps every
/// variant to its own `PairingInvalidPoint::InvalidPoint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PointRejected {
    /// An input of the wrong length.
    #[error("{len} bytes where a compressed point has {expected}")]
    WrongLength {
        /// The input's length in bytes.
        len: usize,
        /// The compressed size: 48 (G1) or 96 (G2).
        expected: usize,
    },
    /// The right length, but not a valid point of the subgroup.
    #[error(transparent)]
    Invalid(#[from] DecodeError),
}

/// The call sites served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hook {
    /// `G1Affine::deserialize`, `batch_deserialize`, `batch_deserialize_array`.
    G1Deserialize,
    /// `G2Affine::deserialize`, `deserialize_cached` (on a miss), `batch_deserialize*`.
    G2Deserialize,
    /// `G1Projective::muln_affine_vartime`, one MSM or a batch of independent ones.
    G1MulnAffineVartime,
    /// The chunking proof's MSMs over shared bases with 8-bit scalars.
    G1MsmSharedU8,
    /// Products of pairings compared with the identity of Gt (`Gt::multipairing` followed
    /// by `is_identity`).
    PairingProductsAreIdentity,
    /// The state manager's chunk hashes.
    StateChunkHashes,
}

impl Hook {
    /// Every hook, in declaration order.
    pub const ALL: [Hook; 6] = [
        Hook::G1Deserialize,
        Hook::G2Deserialize,
        Hook::G1MulnAffineVartime,
        Hook::G1MsmSharedU8,
        Hook::PairingProductsAreIdentity,
        Hook::StateChunkHashes,
    ];

    /// The snake_case name used in the counters.
    pub fn name(self) -> &'static str {
        match self {
            Hook::G1Deserialize => "g1_deserialize",
            Hook::G2Deserialize => "g2_deserialize",
            Hook::G1MulnAffineVartime => "g1_muln_affine_vartime",
            Hook::G1MsmSharedU8 => "g1_msm_shared_u8",
            Hook::PairingProductsAreIdentity => "pairing_products_are_identity",
            Hook::StateChunkHashes => "state_chunk_hashes",
        }
    }

    /// The library operation, and so the policy entry, that routes this hook.
    pub fn operation(self) -> Operation {
        match self {
            Hook::G1Deserialize => Operation::Decompress,
            Hook::G2Deserialize => Operation::DecompressG2,
            Hook::G1MulnAffineVartime => Operation::Msm,
            Hook::G1MsmSharedU8 => Operation::MsmSharedU8,
            Hook::PairingProductsAreIdentity => Operation::PairingProducts,
            Hook::StateChunkHashes => Operation::Sha256,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How one hook call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Served by the library on the GPU.
    Gpu,
    /// CPU: no runtime configuration, or the library is absent, unusable or refused it.
    Disabled,
    /// CPU: the policy runs the operation on the CPU.
    PolicyCpu,
    /// CPU: the library has no usable GPU.
    GpuUnusable,
    /// CPU: the library's GPU lacks the operation.
    NoGpuImplementation,
    /// CPU: nothing to compute.
    Empty,
    /// CPU: fewer items than the operation's `gpu_min_batch`.
    BelowCrossover,
    /// CPU: an input the library does not take (lengths that differ, a point outside the
    /// subgroup in an MSM or a pairing, ...); the caller's own code defines the answer.
    UnservedInput,
    /// CPU: the GPU failed and the fallback rule `recompute_on_cpu` lets the CPU recompute.
    GpuFailedRecomputed,
    /// No result: the GPU failed under the fallback rule `never`.
    GpuFailedNoFallback,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 10] = [
        Outcome::Gpu,
        Outcome::Disabled,
        Outcome::PolicyCpu,
        Outcome::GpuUnusable,
        Outcome::NoGpuImplementation,
        Outcome::Empty,
        Outcome::BelowCrossover,
        Outcome::UnservedInput,
        Outcome::GpuFailedRecomputed,
        Outcome::GpuFailedNoFallback,
    ];

    /// Whether the caller ran its CPU path.
    pub fn is_cpu(self) -> bool {
        !matches!(self, Outcome::Gpu | Outcome::GpuFailedNoFallback)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Calls and items of one hook with one outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookCount {
    /// The hook counted.
    pub hook: Hook,
    /// How its calls ended.
    pub outcome: Outcome,
    /// Calls so far.
    pub calls: u64,
    /// Items of those calls, in the unit of the operation's `gpu_min_batch` (points,
    /// scalars, products, chunks).
    pub items: u64,
}

/// The counters of a [`Hooks`] instance (only non-zero entries) and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookStats {
    /// Where the hooks send their batches, or why nowhere.
    pub status: String,
    /// Every (hook, outcome) with at least one call, in [`Hook::ALL`] then [`Outcome::ALL`] order.
    pub counts: Vec<HookCount>,
}

impl HookStats {
    /// Calls of `hook` that ended with `outcome`.
    pub fn calls(&self, hook: Hook, outcome: Outcome) -> u64 {
        self.counts
            .iter()
            .filter(|c| c.hook == hook && c.outcome == outcome)
            .map(|c| c.calls)
            .sum()
    }

    /// Calls of `hook` whose caller ran its CPU path.
    pub fn cpu_calls(&self, hook: Hook) -> u64 {
        Outcome::ALL
            .into_iter()
            .filter(|o| o.is_cpu())
            .map(|o| self.calls(hook, o))
            .sum()
    }

    /// Calls of every hook that ended with `outcome`.
    pub fn total(&self, outcome: Outcome) -> u64 {
        Hook::ALL.into_iter().map(|h| self.calls(h, outcome)).sum()
    }
}

const HOOKS: usize = Hook::ALL.len();
const OUTCOMES: usize = Outcome::ALL.len();

#[derive(Default)]
struct Counters {
    calls: [[AtomicU64; OUTCOMES]; HOOKS],
    items: [[AtomicU64; OUTCOMES]; HOOKS],
    logged: [[AtomicBool; OUTCOMES]; HOOKS],
}

/// What the hooks route to.
enum State {
    Disabled { reason: String },
    Open(Box<Open>),
}

struct Open {
    client: Client,
    /// The runtime configuration's policy: routing and the fallback rule. The library's
    /// engine runs it with `fallback = never`, so that a GPU failure reaches the hook and
    /// the CPU path that recomputes is the caller's own.
    policy: Policy,
    library: PathBuf,
    gpu: GpuStatus,
    no_gpu_implementation: Vec<Operation>,
}

/// A set of hooks over one library engine. The free functions of this module use the
/// process-wide one ([`global`]); tests and tools may open their own.
pub struct Hooks {
    state: State,
    counters: Counters,
    stats_dir: Option<PathBuf>,
    dump_lock: Mutex<()>,
}

static GLOBAL: OnceLock<Hooks> = OnceLock::new();

/// The process-wide hooks, opened from the environment on first use.
pub fn global() -> &'static Hooks {
    GLOBAL.get_or_init(Hooks::from_env)
}

/// The process-wide hooks' counters.
pub fn stats() -> HookStats {
    global().stats()
}

impl Hooks {
    /// Hooks as the replica opens them: the policy from `SOVEREIGN_RUNTIME_CONFIG`, the
    /// library from `GPU_CRYPTO_LIB` (else `libgpu_crypto.so` from the loader's search),
    /// the counter dump directory from [`STATS_DIR_ENV`]. Never fails: whatever is missing
    /// disables them, with the reason in [`Hooks::status`] and the log.
    pub fn from_env() -> Hooks {
        let stats_dir = std::env::var_os(STATS_DIR_ENV).map(PathBuf::from);
        let hooks = match std::env::var_os(RUNTIME_CONFIG_ENV) {
            None => Hooks::disabled(format!("{RUNTIME_CONFIG_ENV} is not set")),
            Some(path) => match policy_from_runtime_config(Path::new(&path)) {
                Ok(policy) => Hooks::open(None, &policy),
                Err(e) => Hooks::disabled(e.to_string()),
            },
        };
        Hooks { stats_dir, ..hooks }
    }

    /// Hooks over the library at `library` (or `GPU_CRYPTO_LIB`, else the loader's search)
    /// routed by `policy`. Never fails: an unusable library disables them.
    pub fn open(library: Option<&Path>, policy: &Policy) -> Hooks {
        match open_state(library, policy) {
            Ok(open) => {
                tracing::info!(library = %open.library.display(), gpu = ?open.gpu,
                    "gpu-crypto hooks open");
                Hooks::with_state(State::Open(Box::new(open)))
            }
            Err(reason) => Hooks::disabled(reason),
        }
    }

    /// Hooks that answer `RunCpu` to every call, counted as [`Outcome::Disabled`].
    pub fn disabled(reason: String) -> Hooks {
        tracing::warn!(%reason, "gpu-crypto hooks disabled; the replica runs its own CPU code");
        Hooks::with_state(State::Disabled { reason })
    }

    fn with_state(state: State) -> Hooks {
        Hooks {
            state,
            counters: Counters::default(),
            stats_dir: None,
            dump_lock: Mutex::new(()),
        }
    }

    /// Where the hooks send their batches, or why nowhere.
    pub fn status(&self) -> String {
        match &self.state {
            State::Disabled { reason } => format!("disabled: {reason}"),
            State::Open(open) => {
                let gpu = match &open.gpu {
                    GpuStatus::Ready { device } => format!("GPU ready ({device})"),
                    GpuStatus::Unusable { reason } => format!("GPU unusable ({reason})"),
                    GpuStatus::NotRequested => "GPU not requested".to_string(),
                };
                format!("open: {}, {gpu}", open.library.display())
            }
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> HookStats {
        let mut counts = Vec::new();
        for hook in Hook::ALL {
            for outcome in Outcome::ALL {
                let calls =
                    self.counters.calls[hook.index()][outcome.index()].load(Ordering::Relaxed);
                if calls > 0 {
                    let items =
                        self.counters.items[hook.index()][outcome.index()].load(Ordering::Relaxed);
                    counts.push(HookCount {
                        hook,
                        outcome,
                        calls,
                        items,
                    });
                }
            }
        }
        HookStats {
            status: self.status(),
            counts,
        }
    }

    /// G1 decoding with the subgroup check: one result per input, in input order, as
    /// `ic_bls12_381::G1Affine::from_compressed` decides (the identity's encoding decodes
    /// to the identity; non-canonical coordinates, bad flags and points outside the
    /// subgroup are rejected); an input that is not 48 bytes is [`PointRejected::WrongLength`].
    pub fn g1_batch_deserialize<B: AsRef<[u8]>>(
        &self,
        inputs: &[B],
    ) -> Offload<Vec<Result<G1Affine, PointRejected>>> {
        self.decode_batch(
            Hook::G1Deserialize,
            inputs,
            |client, points: &[[u8; 48]]| client.g1_decompress(points),
        )
    }

    /// G2 decoding with the subgroup check, as [`Hooks::g1_batch_deserialize`] for
    /// 96-byte encodings (`ic_bls12_381::G2Affine::from_compressed`).
    pub fn g2_batch_deserialize<B: AsRef<[u8]>>(
        &self,
        inputs: &[B],
    ) -> Offload<Vec<Result<G2Affine, PointRejected>>> {
        self.decode_batch(
            Hook::G2Deserialize,
            inputs,
            |client, points: &[[u8; 96]]| client.g2_decompress(points),
        )
    }

    /// `sum points[i] * scalars[i]`, as `G1Projective::muln_affine_vartime`. Points and
    /// scalars of different lengths are left to the caller (its own contract decides).
    pub fn g1_muln_affine_vartime(
        &self,
        points: &[G1Affine],
        scalars: &[Scalar],
    ) -> Offload<G1Projective> {
        match self.g1_muln_affine_vartime_batch(&[(points, scalars)]) {
            Offload::Done(mut sums) => sums.pop().map_or(Offload::RunCpu, Offload::Done),
            Offload::RunCpu => Offload::RunCpu,
            Offload::Failed(e) => Offload::Failed(e),
        }
    }

    /// Independent MSMs in one library call (the chunking proof's `n` MSMs over the
    /// randomizers), each as `G1Projective::muln_affine_vartime`. Routed by the total
    /// number of points.
    pub fn g1_muln_affine_vartime_batch(
        &self,
        msms: &[(&[G1Affine], &[Scalar])],
    ) -> Offload<Vec<G1Projective>> {
        let hook = Hook::G1MulnAffineVartime;
        let items = msms.iter().map(|(points, _)| points.len()).sum();
        let client = match self.route(hook, items) {
            Ok(client) => client,
            Err(outcome) => return self.run_cpu(hook, outcome, items, ""),
        };
        if msms.iter().any(|(p, s)| p.len() != s.len()) {
            return self.run_cpu(hook, Outcome::UnservedInput, items, "lengths differ");
        }
        let inputs: Vec<MsmInput<'_>> = msms
            .iter()
            .map(|(points, scalars)| MsmInput { points, scalars })
            .collect();
        self.finish(hook, items, client.g1_msm_batch(&inputs))
    }

    /// `rows` MSMs over one set of bases with 8-bit scalars: result `k` is
    /// `sum_p scalars[k * bases.len() + p] * bases[p]` (the chunking proof's 32 MSMs of
    /// `16n` points). Routed by the number of scalars.
    pub fn g1_muln_affine_shared_u8_vartime(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Offload<Vec<G1Projective>> {
        let hook = Hook::G1MsmSharedU8;
        let items = scalars.len();
        match self.route(hook, items) {
            Ok(client) => self.finish(hook, items, client.g1_msm_shared_u8(bases, scalars, rows)),
            Err(outcome) => self.run_cpu(hook, outcome, items, ""),
        }
    }

    /// Whether each product `prod e(p, g2[i])` over the pairs `(p, i)` of `products[k]` is
    /// the identity of Gt, as `Gt::multipairing(..).is_identity()` (pairs with an identity
    /// point contribute 1; an empty product is the identity). The library gives the
    /// verdict, not the Gt value. Routed by the number of products.
    pub fn pairing_products_are_identity(
        &self,
        g2: &[G2Affine],
        products: &[Vec<(G1Affine, usize)>],
    ) -> Offload<Vec<bool>> {
        let hook = Hook::PairingProductsAreIdentity;
        let items = products.len();
        match self.route(hook, items) {
            Ok(client) => {
                let input = PairingProducts { g2, products };
                self.finish(hook, items, client.pairing_products_are_identity(input))
            }
            Err(outcome) => self.run_cpu(hook, outcome, items, ""),
        }
    }

    /// `SHA-256(dsep("ic-state-chunk") || chunk)` for each chunk, the state manager's
    /// chunk hashes. Routed by the number of chunks.
    pub fn state_chunk_hashes(&self, chunks: &[&[u8]]) -> Offload<Vec<[u8; 32]>> {
        let hook = Hook::StateChunkHashes;
        let items = chunks.len();
        let client = match self.route(hook, items) {
            Ok(client) => client,
            Err(outcome) => return self.run_cpu(hook, outcome, items, ""),
        };
        match DomainSeparator::new(STATE_CHUNK_SEPARATOR) {
            Ok(separator) => self.finish(hook, items, client.sha256_chunks(&separator, chunks)),
            Err(e) => self.run_cpu(hook, Outcome::UnservedInput, items, &e.to_string()),
        }
    }

    /// Decodes the well-sized inputs in one library call and puts every result back at
    /// its input's index.
    fn decode_batch<B: AsRef<[u8]>, P, const N: usize>(
        &self,
        hook: Hook,
        inputs: &[B],
        call: impl FnOnce(&Client, &[[u8; N]]) -> Result<Vec<Result<P, DecodeError>>, ClientError>,
    ) -> Offload<Vec<Result<P, PointRejected>>> {
        let items = inputs.len();
        let client = match self.route(hook, items) {
            Ok(client) => client,
            Err(outcome) => return self.run_cpu(hook, outcome, items, ""),
        };
        let sized: Vec<Result<[u8; N], PointRejected>> = inputs
            .iter()
            .map(|input| {
                let bytes = input.as_ref();
                <[u8; N]>::try_from(bytes).map_err(|_| PointRejected::WrongLength {
                    len: bytes.len(),
                    expected: N,
                })
            })
            .collect();
        let encoded: Vec<[u8; N]> = sized
            .iter()
            .filter_map(|s| s.as_ref().ok().copied())
            .collect();
        if encoded.is_empty() {
            return self.run_cpu(hook, Outcome::UnservedInput, items, "no input has the size");
        }
        let decoded = match call(client, &encoded) {
            Ok(decoded) if decoded.len() == encoded.len() => decoded,
            Ok(decoded) => {
                let detail = format!("{} results for {} points", decoded.len(), encoded.len());
                return self.gpu_failed(hook, items, detail);
            }
            Err(e) => return self.failure(hook, items, e),
        };
        let mut decoded = decoded.into_iter();
        let results = sized
            .into_iter()
            .map(|slot| {
                let _encoding = slot?;
                // One decoded item per well-sized input, checked above.
                decoded
                    .next()
                    .unwrap_or(Err(DecodeError::NotCompressed))
                    .map_err(PointRejected::from)
            })
            .collect();
        self.done(hook, items, results)
    }

    /// The client when a batch of `items` goes to the GPU, else why it does not. Mirrors
    /// the library's own routing, so that every batch the library would run on its CPU
    /// path runs on the caller's instead.
    fn route(&self, hook: Hook, items: usize) -> Result<&Client, Outcome> {
        let open = match &self.state {
            State::Open(open) => open,
            State::Disabled { .. } => return Err(Outcome::Disabled),
        };
        let operation = hook.operation();
        let policy = open.policy.operation(operation);
        if items == 0 {
            return Err(Outcome::Empty);
        }
        if policy.backend == BackendChoice::Cpu {
            return Err(Outcome::PolicyCpu);
        }
        if !matches!(open.gpu, GpuStatus::Ready { .. }) {
            return Err(Outcome::GpuUnusable);
        }
        if open.no_gpu_implementation.contains(&operation) {
            return Err(Outcome::NoGpuImplementation);
        }
        if policy.backend == BackendChoice::Auto && items < policy.gpu_min_batch {
            return Err(Outcome::BelowCrossover);
        }
        Ok(&open.client)
    }

    /// The library call's result: the GPU's answer, the caller's input left to it, or a
    /// GPU failure under the fallback rule.
    fn finish<T>(&self, hook: Hook, items: usize, result: Result<T, ClientError>) -> Offload<T> {
        match result {
            Ok(value) => self.done(hook, items, value),
            Err(e) => self.failure(hook, items, e),
        }
    }

    fn failure<T>(&self, hook: Hook, items: usize, error: ClientError) -> Offload<T> {
        if refuses_input(&error) {
            return self.run_cpu(hook, Outcome::UnservedInput, items, &error.to_string());
        }
        self.gpu_failed(hook, items, error.to_string())
    }

    fn gpu_failed<T>(&self, hook: Hook, items: usize, reason: String) -> Offload<T> {
        let fallback = match &self.state {
            State::Open(open) => open.policy.fallback,
            State::Disabled { .. } => Fallback::RecomputeOnCpu,
        };
        match fallback {
            Fallback::RecomputeOnCpu => {
                tracing::warn!(%hook, %reason, items,
                    "GPU call failed; the caller recomputes on its CPU path as the policy allows");
                self.record(hook, Outcome::GpuFailedRecomputed, items, &reason);
                Offload::RunCpu
            }
            Fallback::Never => {
                tracing::error!(%hook, %reason, items,
                    "GPU call failed; the policy forbids recomputing on the CPU");
                self.record(hook, Outcome::GpuFailedNoFallback, items, &reason);
                Offload::Failed(HookError::GpuFailed { hook, reason })
            }
        }
    }

    fn done<T>(&self, hook: Hook, items: usize, value: T) -> Offload<T> {
        self.record(hook, Outcome::Gpu, items, "");
        Offload::Done(value)
    }

    fn run_cpu<T>(&self, hook: Hook, outcome: Outcome, items: usize, detail: &str) -> Offload<T> {
        self.record(hook, outcome, items, detail);
        Offload::RunCpu
    }

    /// Counts the call; logs the first of its kind (GPU failures are logged where they
    /// happen); writes the counters when a dump directory is set.
    fn record(&self, hook: Hook, outcome: Outcome, items: usize, detail: &str) {
        let (h, o) = (hook.index(), outcome.index());
        self.counters.calls[h][o].fetch_add(1, Ordering::Relaxed);
        self.counters.items[h][o].fetch_add(items as u64, Ordering::Relaxed);
        if !self.counters.logged[h][o].swap(true, Ordering::Relaxed) && outcome.is_cpu() {
            tracing::info!(%hook, ?outcome, items, detail, status = %self.status(),
                "first CPU routing of this kind; later ones are counted in the hooks' stats");
        }
        if let Some(dir) = &self.stats_dir {
            self.dump(dir);
        }
    }

    /// Rewrites this process's counter file (temporary file, then rename).
    fn dump(&self, dir: &Path) {
        let _guard = self.dump_lock.lock().unwrap_or_else(|p| p.into_inner());
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".to_string());
        let name = format!("gpu-crypto-hooks-{program}-{}.json", std::process::id());
        let text = match serde_json::to_string_pretty(&self.stats()) {
            Ok(text) => text,
            Err(_) => return,
        };
        let temporary = dir.join(format!(".{name}.tmp"));
        let written = std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, dir.join(&name)));
        if let Err(e) = written {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write the hooks' counters");
        }
    }
}

/// Opens the library engine for `policy` with `fallback = never` and reads its GPU state.
fn open_state(library: Option<&Path>, policy: &Policy) -> Result<Open, String> {
    let engine_policy = Policy {
        fallback: Fallback::Never,
        ..*policy
    };
    let client = Client::open(library, &engine_policy).map_err(|e| e.to_string())?;
    let library = match client.status() {
        ClientStatus::Loaded { path, .. } => path.clone(),
        ClientStatus::CpuFallback { reason } => return Err(reason.clone()),
    };
    let report = client.report_json().map_err(|e| e.to_string())?;
    let report: EngineReport =
        serde_json::from_str(&report).map_err(|e| format!("engine report: {e}"))?;
    let no_gpu_implementation = report
        .operations
        .iter()
        .filter(|p| p.explanation.contains("no GPU implementation"))
        .map(|p| p.operation)
        .collect();
    Ok(Open {
        client,
        policy: *policy,
        library,
        gpu: report.gpu,
        no_gpu_implementation,
    })
}

/// Whether the library refused the call's input (which the caller's own code then
/// judges) rather than failed computing it.
fn refuses_input(error: &ClientError) -> bool {
    match error {
        ClientError::Call { status, .. } => matches!(
            status.status(),
            Some(
                Status::Length
                    | Status::InvalidArgument
                    | Status::InvalidPoint
                    | Status::InvalidScalar
            )
        ),
        ClientError::LengthMismatch { .. } => true,
        ClientError::Engine(e) => matches!(
            e,
            EngineError::LengthMismatch { .. }
                | EngineError::ScalarCountMismatch { .. }
                | EngineError::PairingIndex { .. }
                | EngineError::DomainSeparatorTooLong { .. }
        ),
        _ => false,
    }
}

/// [`Hooks::g1_batch_deserialize`] on the process-wide hooks.
pub fn g1_batch_deserialize<B: AsRef<[u8]>>(
    inputs: &[B],
) -> Offload<Vec<Result<G1Affine, PointRejected>>> {
    global().g1_batch_deserialize(inputs)
}

/// [`Hooks::g2_batch_deserialize`] on the process-wide hooks.
pub fn g2_batch_deserialize<B: AsRef<[u8]>>(
    inputs: &[B],
) -> Offload<Vec<Result<G2Affine, PointRejected>>> {
    global().g2_batch_deserialize(inputs)
}

/// [`Hooks::g1_muln_affine_vartime`] on the process-wide hooks.
pub fn g1_muln_affine_vartime(points: &[G1Affine], scalars: &[Scalar]) -> Offload<G1Projective> {
    global().g1_muln_affine_vartime(points, scalars)
}

/// [`Hooks::g1_muln_affine_vartime_batch`] on the process-wide hooks.
pub fn g1_muln_affine_vartime_batch(
    msms: &[(&[G1Affine], &[Scalar])],
) -> Offload<Vec<G1Projective>> {
    global().g1_muln_affine_vartime_batch(msms)
}

/// [`Hooks::g1_muln_affine_shared_u8_vartime`] on the process-wide hooks.
pub fn g1_muln_affine_shared_u8_vartime(
    bases: &[G1Affine],
    scalars: &[u8],
    rows: usize,
) -> Offload<Vec<G1Projective>> {
    global().g1_muln_affine_shared_u8_vartime(bases, scalars, rows)
}

/// [`Hooks::pairing_products_are_identity`] on the process-wide hooks.
pub fn pairing_products_are_identity(
    g2: &[G2Affine],
    products: &[Vec<(G1Affine, usize)>],
) -> Offload<Vec<bool>> {
    global().pairing_products_are_identity(g2, products)
}

/// [`Hooks::state_chunk_hashes`] on the process-wide hooks.
pub fn state_chunk_hashes(chunks: &[&[u8]]) -> Offload<Vec<[u8; 32]>> {
    global().state_chunk_hashes(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_hooks_run_the_cpu_path_and_count_it() {
        let hooks = Hooks::disabled("test".into());
        assert_eq!(hooks.g1_batch_deserialize(&[[0u8; 48]]), Offload::RunCpu);
        assert_eq!(hooks.state_chunk_hashes(&[b"x"]), Offload::RunCpu);
        let stats = hooks.stats();
        assert_eq!(stats.calls(Hook::G1Deserialize, Outcome::Disabled), 1);
        assert_eq!(stats.calls(Hook::StateChunkHashes, Outcome::Disabled), 1);
        assert_eq!(stats.status, "disabled: test");
    }

    #[test]
    fn hook_and_outcome_indices_are_their_positions() {
        for (i, hook) in Hook::ALL.into_iter().enumerate() {
            assert_eq!(hook.index(), i);
        }
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome.index(), i);
        }
    }
}
