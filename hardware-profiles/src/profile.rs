//! The profile file schema (TOML), its validation and the validated [`Profile`].
//!
//! Validation stops at the first problem and reports it as `file:line:column: reason`;
//! the fields checked after parsing are deserialised as [`toml::Spanned`] so that the
//! report points at the offending value.

use crate::cpulist::CpuSet;
use crate::error::{InvalidKind, Location, ProfileError};
use crate::facts::SevSnpState;
use gpu_crypto_api::policy::{BackendChoice, Fallback, OperationPolicy, Policy, defaults};
pub use gpu_crypto_api::runtime_config::PoolKind;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// Largest accepted GPU crossover (items per batch); beyond it the GPU would never be used.
pub const MAX_GPU_MIN_BATCH: u64 = 1 << 24;
/// Largest accepted thread count of one pool.
pub const MAX_POOL_THREADS: u64 = 1024;
/// Largest accepted CUDA device ordinal.
pub const MAX_GPU_DEVICE: u64 = 63;

// ---------------------------------------------------------------------------------------
// File schema (what the TOML says). Unknown keys are errors everywhere.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Spanned<String>,
    description: String,
    #[serde(default)]
    development_default: Option<Spanned<bool>>,
    #[serde(rename = "match", default)]
    criteria: Option<Spanned<RawMatch>>,
    #[serde(default)]
    require: Option<Spanned<RawRequire>>,
    crypto: RawCrypto,
    pools: RawPools,
    cost: RawCost,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    cpu_vendor: Option<Spanned<String>>,
    cpu_model: Option<Spanned<String>>,
    physical_cores: Option<Spanned<RawRange>>,
    logical_cpus: Option<Spanned<RawRange>>,
    memory_gib: Option<Spanned<RawRange>>,
    sev_snp: Option<SevSnpState>,
    gpu_count: Option<Spanned<RawRange>>,
    gpu_model: Option<Spanned<String>>,
    gpu_memory_gib: Option<Spanned<RawRange>>,
    gpu_cc_capable: Option<bool>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawRange {
    min: Option<u64>,
    max: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRequire {
    #[serde(default)]
    sev_snp: bool,
    #[serde(default)]
    gpu: Option<Spanned<GpuRequirement>>,
    #[serde(default)]
    gpu_cc: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCrypto {
    fallback: Fallback,
    #[serde(default)]
    gpu_device: Option<Spanned<u64>>,
    decompress: RawOperation,
    decompress_g2: RawOperation,
    msm: RawOperation,
    msm_shared_u8: RawOperation,
    msm_g2: RawOperation,
    pairing_products: RawOperation,
    bls_verify: RawOperation,
    checkpoint_hashing: RawOperation,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperation {
    backend: Spanned<BackendChoice>,
    gpu_min_batch: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPools {
    consensus: Spanned<RawPool>,
    execution: Spanned<RawPool>,
    query: Spanned<RawPool>,
    idkg: Spanned<RawPool>,
    checkpoint: Spanned<RawPool>,
    p2p_http: Spanned<RawPool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    threads: Spanned<u64>,
    cpus: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    capex_eur: Spanned<f64>,
    amortisation_months: Spanned<u64>,
    power_price_eur_per_kwh: Spanned<f64>,
    expected_watts: Spanned<f64>,
}

// ---------------------------------------------------------------------------------------
// Validated profile.

/// Whether the replica needs a GPU on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GpuRequirement {
    /// Not ready without a usable GPU.
    Required,
    /// Use a usable GPU; without one, the crypto paths switch to the CPU explicitly (reported).
    Preferred,
    /// Never open a GPU: every crypto path must be `cpu`.
    #[default]
    Off,
}

impl GpuRequirement {
    /// The profile's spelling: `required`, `preferred` or `off`.
    pub fn name(self) -> &'static str {
        match self {
            GpuRequirement::Required => "required",
            GpuRequirement::Preferred => "preferred",
            GpuRequirement::Off => "off",
        }
    }
}

impl fmt::Display for GpuRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An inclusive range of counts; either end may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountRange {
    /// The smallest accepted count; `None`: no lower bound.
    pub min: Option<u64>,
    /// The largest accepted count; `None`: no upper bound.
    pub max: Option<u64>,
}

impl CountRange {
    /// Whether `min <= value <= max` for the ends that are set.
    pub fn contains(&self, value: u64) -> bool {
        self.min.is_none_or(|min| value >= min) && self.max.is_none_or(|max| value <= max)
    }
}

impl fmt::Display for CountRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min, self.max) {
            (Some(min), Some(max)) if min == max => write!(f, "{min}"),
            (Some(min), Some(max)) => write!(f, "{min}..={max}"),
            (Some(min), None) => write!(f, ">= {min}"),
            (None, Some(max)) => write!(f, "<= {max}"),
            (None, None) => f.write_str("any"),
        }
    }
}

/// A shell-style pattern (`*`, `?`, `[...]`), matched case-insensitively against the
/// whole model name.
#[derive(Debug, Clone)]
pub struct ModelPattern {
    text: String,
    pattern: glob::Pattern,
}

impl ModelPattern {
    /// Compiles `text`; fails where it is not a valid glob pattern.
    pub fn new(text: &str) -> Result<ModelPattern, glob::PatternError> {
        Ok(ModelPattern {
            text: text.to_string(),
            pattern: glob::Pattern::new(text)?,
        })
    }

    /// Whether the whole of `candidate` (surrounding whitespace trimmed) matches, ignoring case.
    pub fn matches(&self, candidate: &str) -> bool {
        let options = glob::MatchOptions {
            case_sensitive: false,
            require_literal_separator: false,
            require_literal_leading_dot: false,
        };
        self.pattern.matches_with(candidate.trim(), options)
    }

    /// The pattern as written in the profile.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for ModelPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for ModelPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.text)
    }
}

/// How to recognise the machine. Every criterion that is set must hold; the GPU
/// criteria must all hold for one and the same GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MatchCriteria {
    /// Exact `vendor_id` ("AuthenticAMD", "GenuineIntel").
    pub cpu_vendor: Option<String>,
    /// Pattern on the first processor's `model name`.
    pub cpu_model: Option<ModelPattern>,
    /// Distinct (package, core) pairs among the online CPUs.
    pub physical_cores: Option<CountRange>,
    /// Online CPUs; a pool that pins CPUs needs a `max`.
    pub logical_cpus: Option<CountRange>,
    /// MemTotal in whole GiB (rounded down).
    pub memory_gib: Option<CountRange>,
    /// The machine's SEV-SNP state.
    pub sev_snp: Option<SevSnpState>,
    /// Number of GPUs that satisfy the per-GPU criteria below (all GPUs when none is set).
    pub gpu_count: Option<CountRange>,
    /// Pattern on the GPU's NVML name.
    pub gpu_model: Option<ModelPattern>,
    /// GPU memory in whole GiB (rounded down).
    pub gpu_memory_gib: Option<CountRange>,
    /// Whether the GPU can run in confidential-compute mode.
    pub gpu_cc_capable: Option<bool>,
}

impl MatchCriteria {
    /// How many criteria are set: the more, the more specific the profile.
    pub fn specificity(&self) -> usize {
        [
            self.cpu_vendor.is_some(),
            self.cpu_model.is_some(),
            self.physical_cores.is_some(),
            self.logical_cpus.is_some(),
            self.memory_gib.is_some(),
            self.sev_snp.is_some(),
            self.gpu_count.is_some(),
            self.gpu_model.is_some(),
            self.gpu_memory_gib.is_some(),
            self.gpu_cc_capable.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// Whether a per-GPU criterion (model, memory, CC capability) is set.
    pub fn has_gpu_criteria(&self) -> bool {
        self.gpu_model.is_some() || self.gpu_memory_gib.is_some() || self.gpu_cc_capable.is_some()
    }
}

/// What must hold for the node to be ready (checked by [`crate::Selection::readiness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Requirements {
    /// The replica must run inside a SEV-SNP guest.
    pub sev_snp: bool,
    /// Whether the node needs, prefers or never opens the GPU.
    pub gpu: GpuRequirement,
    /// The GPU must be in confidential-compute mode (on, production, accepting work).
    pub gpu_cc: bool,
}

/// One of the replica's thread pools, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPool {
    /// Threads, 1 to [`MAX_POOL_THREADS`]; equal to the CPU count of a pinned compute pool.
    pub threads: u32,
    /// None: not pinned (the scheduler places the threads).
    pub cpus: Option<CpuSet>,
    /// Where the pool's `cpus` (or, unpinned, its table) is in the profile file.
    pub location: Location,
}

/// All six of the replica's thread pools; pinned pools never share a CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPools {
    /// [`PoolKind::Consensus`].
    pub consensus: ThreadPool,
    /// [`PoolKind::Execution`].
    pub execution: ThreadPool,
    /// [`PoolKind::Query`].
    pub query: ThreadPool,
    /// [`PoolKind::Idkg`].
    pub idkg: ThreadPool,
    /// [`PoolKind::Checkpoint`].
    pub checkpoint: ThreadPool,
    /// [`PoolKind::P2pHttp`].
    pub p2p_http: ThreadPool,
}

impl ThreadPools {
    /// The pool of `kind`.
    pub fn get(&self, kind: PoolKind) -> &ThreadPool {
        match kind {
            PoolKind::Consensus => &self.consensus,
            PoolKind::Execution => &self.execution,
            PoolKind::Query => &self.query,
            PoolKind::Idkg => &self.idkg,
            PoolKind::Checkpoint => &self.checkpoint,
            PoolKind::P2pHttp => &self.p2p_http,
        }
    }

    /// Every pool with its kind, in [`PoolKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (PoolKind, &ThreadPool)> {
        PoolKind::ALL.into_iter().map(|kind| (kind, self.get(kind)))
    }
}

/// Inputs of the cost telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostInputs {
    /// Purchase price of the machine in EUR, 0 to 10,000,000.
    pub capex_eur: f64,
    /// Months the purchase price is spread over, 1 to 240.
    pub amortisation_months: u32,
    /// Electricity price in EUR per kWh, above 0 and at most 10.
    pub power_price_eur_per_kwh: f64,
    /// Expected average power draw in watts, above 0 and at most 20,000.
    pub expected_watts: f64,
}

impl CostInputs {
    /// Straight-line amortisation of the purchase price.
    pub fn capex_eur_per_month(&self) -> f64 {
        self.capex_eur / f64::from(self.amortisation_months)
    }

    /// Energy cost of drawing `watts` for an average month (365.25 / 12 days).
    pub fn power_eur_per_month(&self, watts: f64) -> f64 {
        const HOURS_PER_MONTH: f64 = 365.25 * 24.0 / 12.0;
        watts / 1000.0 * HOURS_PER_MONTH * self.power_price_eur_per_kwh
    }
}

/// A validated hardware profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The name to pin it by: lowercase letters, digits and `-`.
    pub name: String,
    /// Free text for operators.
    pub description: String,
    /// The file it was read from (`embedded:<name>.toml` for embedded ones).
    pub source: String,
    /// Matches any machine, chosen only when no other profile matches.
    pub development_default: bool,
    /// Where `development_default` is set in the file.
    pub development_default_at: Option<Location>,
    /// `[match]`: how to recognise the machine (empty for a development default).
    pub criteria: MatchCriteria,
    /// `[require]`: what must hold for the node to be ready.
    pub requirements: Requirements,
    /// `[crypto]`: the backend policy.
    pub crypto: Policy,
    /// `[pools]`: the replica's thread pools.
    pub pools: ThreadPools,
    /// `[cost]`: inputs of the cost telemetry.
    pub cost: CostInputs,
}

impl Profile {
    /// The crypto backend policy this profile prescribes (before any adjustment for the
    /// probed machine; see [`crate::Selection::runtime_config`]).
    pub fn crypto_policy(&self) -> Policy {
        self.crypto
    }

    /// Parses and validates one profile file.
    pub fn parse(file: &str, source: &str) -> Result<Profile, ProfileError> {
        let raw: RawProfile = toml::from_str(source).map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            let message = err.message().trim().to_string();
            ProfileError::Invalid {
                location: Location::of_span(file, source, span),
                kind: classify_toml_error(&message),
                reason: message,
            }
        })?;
        Validator { file, source }.profile(raw)
    }
}

fn classify_toml_error(message: &str) -> InvalidKind {
    if message.contains("unknown field") {
        InvalidKind::UnknownKey
    } else if message.contains("missing field") {
        InvalidKind::MissingKey
    } else if message.contains("invalid type")
        || message.contains("invalid value")
        || message.contains("unknown variant")
        || message.contains("invalid length")
    {
        InvalidKind::WrongType
    } else {
        InvalidKind::Syntax
    }
}

/// What a profile says about its machine that pinned pool CPUs are checked against.
struct PoolMachine {
    /// `[match] logical_cpus`'s max: every pinned CPU is below it.
    logical_cpus_max: Option<u64>,
    /// Where `[match]` is, for the error when `logical_cpus` has no max.
    criteria_span: Option<Range<usize>>,
}

struct Validator<'a> {
    file: &'a str,
    source: &'a str,
}

impl Validator<'_> {
    fn error(&self, span: Range<usize>, kind: InvalidKind, reason: String) -> ProfileError {
        ProfileError::Invalid {
            location: self.location(span),
            kind,
            reason,
        }
    }

    fn location(&self, span: Range<usize>) -> Location {
        Location::of_span(self.file, self.source, span)
    }

    fn profile(&self, raw: RawProfile) -> Result<Profile, ProfileError> {
        let name = raw.name.get_ref();
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return Err(self.error(
                raw.name.span(),
                InvalidKind::BadSyntaxValue,
                format!("profile name `{name}`: use lowercase letters, digits and `-`"),
            ));
        }

        let development_default = raw
            .development_default
            .as_ref()
            .is_some_and(|flag| *flag.get_ref());
        let criteria = match &raw.criteria {
            Some(table) => self.criteria(table.get_ref())?,
            None => MatchCriteria::default(),
        };
        if development_default
            && let Some(table) = &raw.criteria
            && criteria.specificity() > 0
        {
            return Err(self.error(
                table.span(),
                InvalidKind::Inconsistent,
                "a development default matches any machine: it cannot have [match] criteria".into(),
            ));
        }
        if !development_default && criteria.specificity() == 0 {
            let span = raw.name.span();
            return Err(self.error(
                span,
                InvalidKind::Inconsistent,
                "no [match] criteria: only the development default may match any machine".into(),
            ));
        }

        let requirements = self.requirements(raw.require.as_ref())?;
        if development_default
            && let Some(require) = &raw.require
            && requirements != Requirements::default()
        {
            return Err(self.error(
                require.span(),
                InvalidKind::Inconsistent,
                "the development default must not require anything (it runs on any machine)".into(),
            ));
        }

        let crypto = self.crypto(&raw.crypto, requirements)?;
        let pools = self.pools(&raw.pools, &raw.criteria, &criteria)?;
        let cost = self.cost(&raw.cost)?;

        Ok(Profile {
            name: raw.name.into_inner(),
            description: raw.description,
            source: self.file.to_string(),
            development_default,
            development_default_at: raw
                .development_default
                .as_ref()
                .map(|flag| self.location(flag.span())),
            criteria,
            requirements,
            crypto,
            pools,
            cost,
        })
    }

    fn pattern(&self, text: &Spanned<String>) -> Result<ModelPattern, ProfileError> {
        ModelPattern::new(text.get_ref()).map_err(|err| {
            self.error(
                text.span(),
                InvalidKind::BadSyntaxValue,
                format!("pattern `{}`: {}", text.get_ref(), err.msg),
            )
        })
    }

    fn range(&self, what: &str, range: &Spanned<RawRange>) -> Result<CountRange, ProfileError> {
        let RawRange { min, max } = *range.get_ref();
        let reason = match (min, max) {
            (None, None) => Some(format!("{what}: give `min`, `max` or both")),
            (Some(min), Some(max)) if min > max => {
                Some(format!("{what}: min {min} is above max {max}"))
            }
            _ => None,
        };
        match reason {
            Some(reason) => Err(self.error(range.span(), InvalidKind::OutOfRange, reason)),
            None => Ok(CountRange { min, max }),
        }
    }

    fn criteria(&self, raw: &RawMatch) -> Result<MatchCriteria, ProfileError> {
        let range = |what: &str, value: &Option<Spanned<RawRange>>| {
            value.as_ref().map(|r| self.range(what, r)).transpose()
        };
        Ok(MatchCriteria {
            cpu_vendor: raw.cpu_vendor.as_ref().map(|v| v.get_ref().clone()),
            cpu_model: raw
                .cpu_model
                .as_ref()
                .map(|p| self.pattern(p))
                .transpose()?,
            physical_cores: range("physical_cores", &raw.physical_cores)?,
            logical_cpus: range("logical_cpus", &raw.logical_cpus)?,
            memory_gib: range("memory_gib", &raw.memory_gib)?,
            sev_snp: raw.sev_snp,
            gpu_count: range("gpu_count", &raw.gpu_count)?,
            gpu_model: raw
                .gpu_model
                .as_ref()
                .map(|p| self.pattern(p))
                .transpose()?,
            gpu_memory_gib: range("gpu_memory_gib", &raw.gpu_memory_gib)?,
            gpu_cc_capable: raw.gpu_cc_capable,
        })
    }

    fn requirements(
        &self,
        raw: Option<&Spanned<RawRequire>>,
    ) -> Result<Requirements, ProfileError> {
        let Some(raw) = raw else {
            return Ok(Requirements::default());
        };
        let raw = raw.get_ref();
        let gpu = raw
            .gpu
            .as_ref()
            .map_or(GpuRequirement::Off, |g| *g.get_ref());
        let gpu_cc = raw.gpu_cc.as_ref().is_some_and(|cc| *cc.get_ref());
        if gpu_cc
            && gpu != GpuRequirement::Required
            && let Some(cc) = &raw.gpu_cc
        {
            return Err(self.error(
                cc.span(),
                InvalidKind::Inconsistent,
                format!("gpu_cc = true needs gpu = \"required\" (it is \"{gpu}\")"),
            ));
        }
        Ok(Requirements {
            sev_snp: raw.sev_snp,
            gpu,
            gpu_cc,
        })
    }

    fn crypto(&self, raw: &RawCrypto, requirements: Requirements) -> Result<Policy, ProfileError> {
        let gpu_device = match &raw.gpu_device {
            Some(device) if *device.get_ref() > MAX_GPU_DEVICE => {
                return Err(self.error(
                    device.span(),
                    InvalidKind::OutOfRange,
                    format!("gpu_device {} is above {MAX_GPU_DEVICE}", device.get_ref()),
                ));
            }
            Some(device) => *device.get_ref() as usize,
            None => 0,
        };
        let operation = |name: &str, op: &RawOperation, default_batch: usize| {
            let backend = *op.backend.get_ref();
            if requirements.gpu == GpuRequirement::Off && backend != BackendChoice::Cpu {
                return Err(self.error(
                    op.backend.span(),
                    InvalidKind::Inconsistent,
                    format!(
                        "crypto.{name}.backend = \"{backend}\" but require.gpu is \"off\": with the GPU off every path must be \"cpu\""
                    ),
                ));
            }
            let gpu_min_batch = match &op.gpu_min_batch {
                Some(batch) => {
                    let value = *batch.get_ref();
                    if !(1..=MAX_GPU_MIN_BATCH).contains(&value) {
                        return Err(self.error(
                            batch.span(),
                            InvalidKind::OutOfRange,
                            format!(
                                "crypto.{name}.gpu_min_batch {value} is outside 1..={MAX_GPU_MIN_BATCH}"
                            ),
                        ));
                    }
                    value as usize
                }
                None => default_batch,
            };
            Ok(OperationPolicy {
                backend,
                gpu_min_batch,
            })
        };
        Ok(Policy {
            decompress: operation(
                "decompress",
                &raw.decompress,
                defaults::DECOMPRESS_GPU_MIN_BATCH,
            )?,
            decompress_g2: operation(
                "decompress_g2",
                &raw.decompress_g2,
                defaults::DECOMPRESS_G2_GPU_MIN_BATCH,
            )?,
            msm: operation("msm", &raw.msm, defaults::MSM_GPU_MIN_BATCH)?,
            msm_shared_u8: operation(
                "msm_shared_u8",
                &raw.msm_shared_u8,
                defaults::MSM_SHARED_U8_GPU_MIN_BATCH,
            )?,
            msm_g2: operation("msm_g2", &raw.msm_g2, defaults::MSM_G2_GPU_MIN_BATCH)?,
            pairing_products: operation(
                "pairing_products",
                &raw.pairing_products,
                defaults::PAIRING_PRODUCTS_GPU_MIN_BATCH,
            )?,
            bls_verify: operation(
                "bls_verify",
                &raw.bls_verify,
                defaults::BLS_VERIFY_GPU_MIN_BATCH,
            )?,
            sha256: operation(
                "checkpoint_hashing",
                &raw.checkpoint_hashing,
                defaults::SHA256_GPU_MIN_BATCH,
            )?,
            fallback: raw.fallback,
            gpu_device,
        })
    }

    /// Every thread pool, in the order consensus, execution, query, idkg, checkpoint,
    /// p2p_http; the first invalid one is the error.
    fn pools(
        &self,
        raw: &RawPools,
        raw_criteria: &Option<Spanned<RawMatch>>,
        criteria: &MatchCriteria,
    ) -> Result<ThreadPools, ProfileError> {
        let machine = PoolMachine {
            logical_cpus_max: criteria.logical_cpus.and_then(|range| range.max),
            criteria_span: raw_criteria.as_ref().map(|c| c.span()),
        };
        let mut taken: Vec<(PoolKind, CpuSet)> = Vec::new();
        let mut pool =
            |kind: PoolKind, raw: &Spanned<RawPool>| self.pool(kind, raw, &machine, &mut taken);
        Ok(ThreadPools {
            consensus: pool(PoolKind::Consensus, &raw.consensus)?,
            execution: pool(PoolKind::Execution, &raw.execution)?,
            query: pool(PoolKind::Query, &raw.query)?,
            idkg: pool(PoolKind::Idkg, &raw.idkg)?,
            checkpoint: pool(PoolKind::Checkpoint, &raw.checkpoint)?,
            p2p_http: pool(PoolKind::P2pHttp, &raw.p2p_http)?,
        })
    }

    /// One pool: its thread count and, where it pins CPUs, a CPU set that fits the thread
    /// count, the profile's machine and no pool validated before it (`taken`, to which it
    /// is added).
    fn pool(
        &self,
        kind: PoolKind,
        raw: &Spanned<RawPool>,
        machine: &PoolMachine,
        taken: &mut Vec<(PoolKind, CpuSet)>,
    ) -> Result<ThreadPool, ProfileError> {
        let threads = *raw.get_ref().threads.get_ref();
        if !(1..=MAX_POOL_THREADS).contains(&threads) {
            return Err(self.error(
                raw.get_ref().threads.span(),
                InvalidKind::OutOfRange,
                format!("pools.{kind}.threads {threads} is outside 1..={MAX_POOL_THREADS}"),
            ));
        }
        let Some(cpus_text) = &raw.get_ref().cpus else {
            return Ok(ThreadPool {
                threads: threads as u32,
                cpus: None,
                location: self.location(raw.span()),
            });
        };
        let span = cpus_text.span();
        let cpus = self.pool_cpus(kind, cpus_text, threads)?;
        self.check_pool_cpus_on_machine(kind, &cpus, span.clone(), machine)?;
        self.check_pool_cpus_unshared(kind, &cpus, span.clone(), taken)?;
        taken.push((kind, cpus.clone()));
        Ok(ThreadPool {
            threads: threads as u32,
            cpus: Some(cpus),
            location: self.location(span),
        })
    }

    /// Parses a pool's `cpus` and checks its size against `threads`: equal for a compute
    /// pool (one thread per pinned CPU), at least as many threads as CPUs for the others.
    fn pool_cpus(
        &self,
        kind: PoolKind,
        cpus_text: &Spanned<String>,
        threads: u64,
    ) -> Result<CpuSet, ProfileError> {
        let span = cpus_text.span();
        let cpus: CpuSet = cpus_text.get_ref().parse().map_err(|err| {
            self.error(
                span.clone(),
                InvalidKind::BadSyntaxValue,
                format!("pools.{kind}.cpus `{}`: {err}", cpus_text.get_ref()),
            )
        })?;
        let size = cpus.len() as u64;
        if kind.threads_must_equal_cpus() && threads != size {
            return Err(self.error(
                span,
                InvalidKind::PoolSizeMismatch,
                format!(
                    "pools.{kind}: {threads} threads on {size} CPUs ({cpus}); a compute pool runs one thread per pinned CPU"
                ),
            ));
        }
        if !kind.threads_must_equal_cpus() && threads < size {
            return Err(self.error(
                span,
                InvalidKind::PoolSizeMismatch,
                format!("pools.{kind}: {threads} threads cannot use {size} CPUs ({cpus})"),
            ));
        }
        Ok(cpus)
    }

    /// A pinned CPU set needs `[match] logical_cpus` with a max, and names no CPU at or
    /// above it.
    fn check_pool_cpus_on_machine(
        &self,
        kind: PoolKind,
        cpus: &CpuSet,
        span: Range<usize>,
        machine: &PoolMachine,
    ) -> Result<(), ProfileError> {
        let Some(machine_cpus) = machine.logical_cpus_max else {
            let span = machine.criteria_span.clone().unwrap_or(span);
            return Err(self.error(
                span,
                InvalidKind::Inconsistent,
                format!(
                    "pools.{kind} pins CPUs but [match] logical_cpus has no max: the CPU sets cannot be checked against the machine"
                ),
            ));
        };
        if let Some(highest) = cpus.max()
            && u64::from(highest) >= machine_cpus
        {
            return Err(self.error(
                span,
                InvalidKind::CpuBeyondMachine,
                format!(
                    "pools.{kind}.cpus `{cpus}` names CPU {highest}, but the profile's machine has at most {machine_cpus} logical CPUs (0-{})",
                    machine_cpus.saturating_sub(1)
                ),
            ));
        }
        Ok(())
    }

    /// A pinned CPU set shares no CPU with the pools already validated (`taken`).
    fn check_pool_cpus_unshared(
        &self,
        kind: PoolKind,
        cpus: &CpuSet,
        span: Range<usize>,
        taken: &[(PoolKind, CpuSet)],
    ) -> Result<(), ProfileError> {
        for (other, other_cpus) in taken {
            let shared = cpus.intersection(other_cpus);
            if !shared.is_empty() {
                return Err(self.error(
                    span,
                    InvalidKind::CpuOverlap,
                    format!(
                        "pools.{kind}.cpus `{cpus}` overlaps pools.{other}.cpus `{other_cpus}` on CPUs {shared}"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn cost(&self, raw: &RawCost) -> Result<CostInputs, ProfileError> {
        let real = |name: &str, value: &Spanned<f64>, min: f64, max: f64, min_inclusive: bool| {
            let v = *value.get_ref();
            let above_min = if min_inclusive { v >= min } else { v > min };
            if v.is_finite() && above_min && v <= max {
                Ok(v)
            } else {
                let bracket = if min_inclusive { "[" } else { "(" };
                Err(self.error(
                    value.span(),
                    InvalidKind::OutOfRange,
                    format!("cost.{name} {v} is outside {bracket}{min}, {max}]"),
                ))
            }
        };
        let months = *raw.amortisation_months.get_ref();
        if !(1..=240).contains(&months) {
            return Err(self.error(
                raw.amortisation_months.span(),
                InvalidKind::OutOfRange,
                format!("cost.amortisation_months {months} is outside 1..=240"),
            ));
        }
        Ok(CostInputs {
            capex_eur: real("capex_eur", &raw.capex_eur, 0.0, 10_000_000.0, true)?,
            amortisation_months: months as u32,
            power_price_eur_per_kwh: real(
                "power_price_eur_per_kwh",
                &raw.power_price_eur_per_kwh,
                0.0,
                10.0,
                false,
            )?,
            expected_watts: real("expected_watts", &raw.expected_watts, 0.0, 20_000.0, false)?,
        })
    }
}
