//! The subnet plan: per hardware profile, thread budgets (steady and burst) with and
//! without GPU offload, NI-DKG dealing verification per block against the block time,
//! checkpoint hashing time and threads, consensus signature load, and cost; plus one
//! configuration bundle per node. Every formula is in docs/operator-guide.md ("Plan
//! formulas"); the names below follow it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use gpu_crypto_api::{BackendChoice, OperationPolicy};
use hardware_profiles::{CostInputs, GpuRequirement, Profile};
use serde::Serialize;

use crate::bench::{BenchEntry, BenchFile, BenchOp};
use crate::subnet::Subnet;
use ed25519_dalek::SigningKey;
use sn_config::node::{NODE_CONFIG_SCHEMA, NodeNetwork, NodeOffload, NodeOperator};
use sn_config::{Bundle, ConfigError, NodeConfig};

/// Consensus signature shares each node's signature is verified for per block
/// (notarization, finalization, random beacon, certification).
pub const SHARES_PER_NODE_PER_BLOCK: u64 = 4;
/// 1 MiB state chunks per GiB.
pub const CHUNKS_PER_GIB: f64 = 1024.0;
/// Hours in an average month (a year of 365.25 days over 12).
pub const HOURS_PER_MONTH: f64 = 365.25 * 24.0 / 12.0;

/// The subnet plan (plan.json): the subnet's parameters as planned, one plan per hardware
/// profile with a benchmark, and the subnet's cost.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The subnet's name.
    pub subnet: String,
    /// The subnet size: the number of nodes.
    pub n: u64,
    /// b: seconds per block.
    pub block_time_seconds: f64,
    /// L: a DKG interval is L + 1 blocks.
    pub dkg_interval_length: u64,
    /// d: NI-DKG dealings per block.
    pub dkg_dealings_per_block: u64,
    /// T: NI-DKG transcripts per interval.
    pub dkg_transcripts_per_interval: u64,
    /// S: GiB of state hashed at a checkpoint.
    pub state_size_gib: f64,
    /// H: the checkpoint hashing target, seconds.
    pub checkpoint_hash_target_seconds: f64,
    /// One per hardware profile of the subnet file that has a benchmark, by profile name.
    pub profiles: Vec<ProfilePlan>,
    /// All nodes together.
    pub cost: SubnetCost,
}

/// The plan of one hardware profile: its thread budgets with and without the GPU, and the
/// cost of one of its nodes.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilePlan {
    /// The profile's name.
    pub profile: String,
    /// Nodes of the subnet on this profile.
    pub nodes: u64,
    /// The benchmark file the figures come from.
    pub bench_file: String,
    /// Where that benchmark was measured ([`BenchFile::describe`]).
    pub bench: String,
    /// Consensus + execution + query + p2p_http threads of the profile (always busy pools).
    pub base_threads: u64,
    /// Threads of the idkg pool (dealing verification).
    pub idkg_pool_threads: u64,
    /// Threads of the checkpoint pool (state hashing).
    pub checkpoint_pool_threads: u64,
    /// Threads of the consensus pool (signature verification among them).
    pub consensus_pool_threads: u64,
    /// The profile's `logical_cpus.max`, when it sets one.
    pub machine_threads: Option<u64>,
    /// Every operation on the CPU.
    pub without_gpu: ModeFigures,
    /// With the GPU, routed by the profile's crypto policy; None with the reason in
    /// `with_gpu_unavailable`.
    pub with_gpu: Option<ModeFigures>,
    /// Why there are no with-GPU figures.
    pub with_gpu_unavailable: Option<String>,
    /// What the GPU takes off the host, where there are with-GPU figures.
    pub gpu_frees: Option<GpuSaving>,
    /// The cost of one node of the profile.
    pub cost: NodeCost,
    /// Every benchmark entry a figure was computed from.
    pub figures_from: Vec<FigureSource>,
}

/// The host work the GPU takes off a node: the CPU path's figures minus the GPU-assisted
/// ones.
#[derive(Debug, Clone, Serialize)]
pub struct GpuSaving {
    /// Host CPU seconds of one DKG round's `2n` dealing verifications.
    pub host_cpu_seconds_per_dkg_round: f64,
    /// Burst threads without the GPU minus with it (negative: the GPU mode needs more).
    pub burst_threads: i64,
    /// Steady threads without the GPU minus with it.
    pub steady_threads: f64,
}

impl GpuSaving {
    fn between(n: u64, cpu: &ModeFigures, gpu: &ModeFigures) -> GpuSaving {
        let per_dealing = |m: &ModeFigures| {
            m.dealing
                .host_cpu_seconds
                .unwrap_or(m.dealing.host_thread_seconds)
        };
        GpuSaving {
            host_cpu_seconds_per_dkg_round: 2.0 * n as f64 * (per_dealing(cpu) - per_dealing(gpu)),
            burst_threads: cpu.burst_threads as i64 - gpu.burst_threads as i64,
            steady_threads: cpu.steady_threads - gpu.steady_threads,
        }
    }
}

/// A benchmark entry a plan figure was computed from.
#[derive(Debug, Clone, Serialize)]
pub struct FigureSource {
    /// The entry's operation (`nidkg_verify`, `sha256_1mib`, `bls_verify_same_message`).
    pub op: String,
    /// `cpu` or `gpu`.
    pub backend: String,
    /// Items per call.
    pub batch: usize,
    /// The subnet size a dealing entry was measured at.
    pub subnet_size: Option<usize>,
    /// The entry's wall time per item, seconds.
    pub seconds_per_item: f64,
    /// Threads the entry ran on.
    pub threads: usize,
    /// Whether it was measured or written down (`measured`, `research`, ...), with its
    /// reference where it has one.
    pub source: String,
}

/// The figures of one mode (without or with the GPU).
#[derive(Debug, Clone, Serialize)]
pub struct ModeFigures {
    /// One dealing verification.
    pub dealing: DealingCost,
    /// NI-DKG dealing verification against the block time.
    pub dkg: DkgFigures,
    /// Checkpoint hashing against its target.
    pub checkpoint: CheckpointFigures,
    /// Threads of the consensus signature verification per block time (4n shares); None
    /// when the benchmark has no BLS figure.
    pub consensus_signature_threads: Option<f64>,
    /// Threads busy on average: base + DKG steady + checkpoint steady.
    pub steady_threads: f64,
    /// Threads at the peak, DKG and checkpoint bursts together: base + both bursts.
    pub burst_threads: u64,
    /// Whether the burst fits the profile's `logical_cpus.max`, where it sets one.
    pub fits_machine: Option<bool>,
}

/// The cost of one NI-DKG dealing verification.
#[derive(Debug, Clone, Serialize)]
pub struct DealingCost {
    /// `cpu` or `gpu-assisted`: the `nidkg_verify` entry the figure comes from (measured
    /// on one host thread; GPU-assisted under the engine's default auto routing).
    pub on: &'static str,
    /// The subnet size that entry was measured at; the figure is scaled by
    /// n / measured_subnet_size when the subnet's n differs (verification is linear in n
    /// but for a constant part, so scaling up overestimates slightly).
    pub measured_subnet_size: usize,
    /// Host thread-seconds per dealing verification: the one-thread wall time (the DKG's
    /// latency figures).
    pub host_thread_seconds: f64,
    /// The process CPU time of the same verification, where the benchmark measured it: the
    /// thread counts (burst, steady) use it, else the wall time.
    pub host_cpu_seconds: Option<f64>,
}

/// NI-DKG dealing verification per block.
#[derive(Debug, Clone, Serialize)]
pub struct DkgFigures {
    /// d * host_thread_seconds / idkg pool.
    pub seconds_per_block: f64,
    /// Whether `seconds_per_block` is within the block time.
    pub keeps_up: bool,
    /// Dealings the idkg pool verifies within one block time.
    pub max_dealings_per_block: u64,
    /// Threads that verify a block's d dealings within the block time.
    pub burst_threads: u64,
    /// Threads busy on average: T * n dealing verifications per interval.
    pub steady_threads: f64,
}

/// Checkpoint hashing of the whole state.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointFigures {
    /// 1 MiB chunks of the state.
    pub chunks: u64,
    /// `cpu` or `gpu`: where the profile's policy hashes them.
    pub on: &'static str,
    /// Host thread-seconds of hashing on the CPU (0 on the GPU).
    pub cpu_thread_seconds: f64,
    /// Seconds of hashing on the GPU (0 on the CPU).
    pub gpu_seconds: f64,
    /// cpu_thread_seconds / checkpoint pool + gpu_seconds.
    pub seconds: f64,
    /// Whether `seconds` is within the checkpoint hash target.
    pub meets_target: bool,
    /// Threads that hash the state within the target.
    pub burst_threads: u64,
    /// Threads busy on average: one checkpoint per DKG interval.
    pub steady_threads: f64,
}

/// The cost of one node: the profile's cost inputs and the monthly figures from them.
#[derive(Debug, Clone, Serialize)]
pub struct NodeCost {
    /// Purchase price, EUR.
    pub capex_eur: f64,
    /// Months the purchase price is spread over.
    pub amortisation_months: u32,
    /// Expected average power draw, W.
    pub expected_watts: f64,
    /// Electricity price, EUR per kWh.
    pub power_price_eur_per_kwh: f64,
    /// capex_eur / amortisation_months.
    pub capex_eur_per_month: f64,
    /// expected_watts over [`HOURS_PER_MONTH`] at the electricity price.
    pub power_eur_per_month: f64,
    /// Amortisation plus power, EUR per month.
    pub total_eur_per_month: f64,
}

/// The cost of every planned node together.
#[derive(Debug, Clone, Serialize)]
pub struct SubnetCost {
    /// Sum of the nodes' purchase prices, EUR.
    pub capex_eur: f64,
    /// Sum of the nodes' monthly cost, EUR.
    pub eur_per_month: f64,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The benchmark lacks an entry a figure needs.
    #[error("profile {profile}: benchmark {file} has no {backend} figure for {op}")]
    MissingFigure {
        /// The profile being planned.
        profile: String,
        /// Its benchmark file.
        file: String,
        /// The operation's entry name.
        op: &'static str,
        /// `cpu` or `gpu`.
        backend: &'static str,
    },
}

/// Which backend an operation of `items` takes with the GPU present, by the profile's policy.
fn runs_on_gpu(policy: &OperationPolicy, items: u64) -> bool {
    match policy.backend {
        BackendChoice::Cpu => false,
        BackendChoice::Gpu => true,
        BackendChoice::Auto => items >= policy.gpu_min_batch as u64,
    }
}

struct Costs<'a> {
    bench: &'a BenchFile,
    file: String,
    profile: String,
    used: Vec<FigureSource>,
}

impl<'a> Costs<'a> {
    /// The entry the plan uses for `op` on `backend` at `size`, recorded in `used`.
    fn entry(
        &mut self,
        op: BenchOp,
        backend: &'static str,
        size: u64,
    ) -> Result<&'a BenchEntry, PlanError> {
        let e: &'a BenchEntry =
            self.bench
                .pick(op, backend, size)
                .ok_or_else(|| PlanError::MissingFigure {
                    profile: self.profile.clone(),
                    file: self.file.clone(),
                    op: op.name(),
                    backend,
                })?;
        let source = FigureSource {
            op: e.op.clone(),
            backend: e.backend.clone(),
            batch: e.batch,
            subnet_size: e.subnet_size,
            seconds_per_item: e.seconds_per_item,
            threads: e.threads,
            source: match &e.reference {
                Some(r) => format!("{} ({r})", e.source),
                None => e.source.clone(),
            },
        };
        if !self.used.iter().any(|u| {
            u.op == source.op
                && u.backend == source.backend
                && u.batch == source.batch
                && u.subnet_size == source.subnet_size
        }) {
            self.used.push(source);
        }
        Ok(e)
    }

    /// `(seconds per item, threads)` of the entry [`Costs::entry`] picks.
    fn get(
        &mut self,
        op: BenchOp,
        backend: &'static str,
        size: u64,
    ) -> Result<(f64, f64), PlanError> {
        let e = self.entry(op, backend, size)?;
        Ok((e.seconds_per_item, e.threads as f64))
    }
}

/// The plan of `subnet`: every profile with a benchmark, with and without GPU; the formulas
/// are in docs/operator-guide.md ("Plan formulas").
pub fn plan(subnet: &Subnet) -> Result<Plan, PlanError> {
    let mut profiles = Vec::new();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for node in &subnet.nodes {
        *counts.entry(node.profile.as_str()).or_default() += 1;
    }
    for (name, profile) in &subnet.profiles {
        let Some((path, bench)) = subnet.benchmarks.get(name) else {
            continue;
        };
        let nodes = counts.get(name.as_str()).copied().unwrap_or(0);
        profiles.push(profile_plan(subnet, profile, nodes, path, bench)?);
    }
    let cost = SubnetCost {
        capex_eur: profiles
            .iter()
            .map(|p| p.cost.capex_eur * p.nodes as f64)
            .sum(),
        eur_per_month: profiles
            .iter()
            .map(|p| p.cost.total_eur_per_month * p.nodes as f64)
            .sum(),
    };
    Ok(Plan {
        subnet: subnet.name.clone(),
        n: subnet.n(),
        block_time_seconds: subnet.block_time_seconds,
        dkg_interval_length: subnet.dkg_interval_length,
        dkg_dealings_per_block: subnet.dkg_dealings_per_block,
        dkg_transcripts_per_interval: subnet.dkg_transcripts_per_interval,
        state_size_gib: subnet.state_size_gib,
        checkpoint_hash_target_seconds: subnet.checkpoint_hash_target_seconds,
        profiles,
        cost,
    })
}

fn profile_plan(
    subnet: &Subnet,
    profile: &Profile,
    nodes: u64,
    path: &Path,
    bench: &BenchFile,
) -> Result<ProfilePlan, PlanError> {
    let pools = &profile.pools;
    let t = |p: &hardware_profiles::ThreadPool| u64::from(p.threads);
    let base_threads =
        t(&pools.consensus) + t(&pools.execution) + t(&pools.query) + t(&pools.p2p_http);
    let mut costs = Costs {
        bench,
        file: path.display().to_string(),
        profile: profile.name.clone(),
        used: Vec::new(),
    };
    let machine_threads = profile.criteria.logical_cpus.and_then(|r| r.max);
    let without_gpu = mode(
        subnet,
        profile,
        base_threads,
        machine_threads,
        false,
        &mut costs,
    )?;
    let (with_gpu, with_gpu_unavailable) = gpu_mode(
        subnet,
        profile,
        base_threads,
        machine_threads,
        path,
        &mut costs,
    );
    Ok(ProfilePlan {
        profile: profile.name.clone(),
        nodes,
        bench_file: path.display().to_string(),
        bench: bench.describe(),
        base_threads,
        idkg_pool_threads: t(&pools.idkg),
        checkpoint_pool_threads: t(&pools.checkpoint),
        consensus_pool_threads: t(&pools.consensus),
        machine_threads,
        gpu_frees: with_gpu
            .as_ref()
            .map(|g| GpuSaving::between(subnet.n(), &without_gpu, g)),
        without_gpu,
        with_gpu,
        with_gpu_unavailable,
        cost: node_cost(&profile.cost),
        figures_from: costs.used,
    })
}

/// The with-GPU figures, or why there are none: the profile runs without a GPU, the
/// benchmark at `path` has no GPU figures, or a figure the mode needs is missing.
fn gpu_mode(
    subnet: &Subnet,
    profile: &Profile,
    base_threads: u64,
    machine_threads: Option<u64>,
    path: &Path,
    costs: &mut Costs<'_>,
) -> (Option<ModeFigures>, Option<String>) {
    if profile.requirements.gpu == GpuRequirement::Off {
        return (
            None,
            Some("the profile runs without a GPU (require.gpu = \"off\")".to_string()),
        );
    }
    if !costs.bench.has(BenchOp::NidkgVerify, "gpu")
        && !costs.bench.has(BenchOp::Sha256Chunk, "gpu")
    {
        return (
            None,
            Some(format!("benchmark {} has no GPU figures", path.display())),
        );
    }
    match mode(subnet, profile, base_threads, machine_threads, true, costs) {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// A node's cost per month: the capex over its amortisation plus the power it draws.
fn node_cost(c: &CostInputs) -> NodeCost {
    let capex_eur_per_month = c.capex_eur / f64::from(c.amortisation_months);
    let power_eur_per_month =
        c.expected_watts / 1000.0 * HOURS_PER_MONTH * c.power_price_eur_per_kwh;
    NodeCost {
        capex_eur: c.capex_eur,
        amortisation_months: c.amortisation_months,
        expected_watts: c.expected_watts,
        power_price_eur_per_kwh: c.power_price_eur_per_kwh,
        capex_eur_per_month,
        power_eur_per_month,
        total_eur_per_month: capex_eur_per_month + power_eur_per_month,
    }
}

fn on(gpu: bool) -> &'static str {
    if gpu { "gpu" } else { "cpu" }
}

/// Seconds of one DKG interval: `dkg_interval_length + 1` blocks.
fn interval_seconds(subnet: &Subnet) -> f64 {
    (subnet.dkg_interval_length + 1) as f64 * subnet.block_time_seconds
}

/// The figures of one mode; `gpu`: the GPU is present and the profile's policy routes.
/// The benchmark entries are looked up (and recorded in `costs`) in the order DKG,
/// checkpoint, consensus.
fn mode(
    subnet: &Subnet,
    profile: &Profile,
    base_threads: u64,
    machine_threads: Option<u64>,
    gpu: bool,
    costs: &mut Costs<'_>,
) -> Result<ModeFigures, PlanError> {
    let (dealing, dkg) = dkg_figures(subnet, profile, gpu, costs)?;
    let checkpoint = checkpoint_figures(subnet, profile, gpu, costs)?;
    let consensus_signature_threads = consensus_signature_threads(subnet, profile, gpu, costs);
    let steady_threads = base_threads as f64 + dkg.steady_threads + checkpoint.steady_threads;
    let burst_threads = base_threads + dkg.burst_threads + checkpoint.burst_threads;
    Ok(ModeFigures {
        dealing,
        dkg,
        checkpoint,
        consensus_signature_threads,
        steady_threads,
        burst_threads,
        fits_machine: machine_threads.map(|m| burst_threads <= m),
    })
}

/// One dealing verification, from the benchmark's whole-dealing entry on one host thread
/// (GPU-assisted where a GPU is present and its entry exists), and the DKG figures of
/// `dkg_dealings_per_block` of them per block on the idkg pool.
fn dkg_figures(
    subnet: &Subnet,
    profile: &Profile,
    gpu: bool,
    costs: &mut Costs<'_>,
) -> Result<(DealingCost, DkgFigures), PlanError> {
    let n = subnet.n();
    let b = subnet.block_time_seconds;
    let d = subnet.dkg_dealings_per_block as f64;
    let idkg = f64::from(profile.pools.idkg.threads.max(1));
    let dealing_gpu = gpu && costs.bench.has(BenchOp::NidkgVerify, "gpu");
    let e = costs.entry(BenchOp::NidkgVerify, on(dealing_gpu), n)?;
    let measured_n = e.subnet_size.unwrap_or(1).max(1);
    let scale = n as f64 / measured_n as f64;
    // Latency: the one-thread wall time. Cores: the process CPU time of the same calls
    // (GPU-assisted, the host thread waits for the device without using its core); the
    // wall time where the benchmark has no CPU time.
    let host_ts = e.seconds_per_item * e.threads as f64 * scale;
    let host_cpu = e
        .host_cpu_seconds_per_call
        .map(|c| c / e.batch.max(1) as f64 * scale);
    let cpu_ts = host_cpu.unwrap_or(host_ts);
    let per_dealing = host_ts / idkg;
    let dkg = DkgFigures {
        seconds_per_block: d * per_dealing,
        keeps_up: d * per_dealing <= b,
        max_dealings_per_block: if per_dealing > 0.0 {
            (b / per_dealing).floor() as u64
        } else {
            u64::MAX
        },
        burst_threads: (d * cpu_ts / b).ceil() as u64,
        steady_threads: (subnet.dkg_transcripts_per_interval * n) as f64 * cpu_ts
            / interval_seconds(subnet),
    };
    let dealing = DealingCost {
        on: if dealing_gpu { "gpu-assisted" } else { "cpu" },
        measured_subnet_size: measured_n,
        host_thread_seconds: host_ts,
        host_cpu_seconds: host_cpu,
    };
    Ok((dealing, dkg))
}

/// Checkpoint hashing: every 1 MiB chunk of the state, one batch, on the checkpoint pool or
/// the GPU as the profile's SHA-256 policy routes it.
fn checkpoint_figures(
    subnet: &Subnet,
    profile: &Profile,
    gpu: bool,
    costs: &mut Costs<'_>,
) -> Result<CheckpointFigures, PlanError> {
    let ckpt = f64::from(profile.pools.checkpoint.threads.max(1));
    let chunks = (subnet.state_size_gib * CHUNKS_PER_GIB).ceil() as u64;
    let sha_gpu = gpu && runs_on_gpu(&profile.crypto.sha256, chunks);
    let (c_cpu_ts, c_gpu_s) = if sha_gpu {
        (
            0.0,
            chunks as f64 * costs.get(BenchOp::Sha256Chunk, "gpu", chunks)?.0,
        )
    } else {
        let (s, thr) = costs.get(BenchOp::Sha256Chunk, "cpu", chunks)?;
        (chunks as f64 * s * thr, 0.0)
    };
    let c_host_ts = c_cpu_ts + c_gpu_s;
    let c_seconds = c_cpu_ts / ckpt + c_gpu_s;
    let target = subnet.checkpoint_hash_target_seconds;
    Ok(CheckpointFigures {
        chunks,
        on: on(sha_gpu),
        cpu_thread_seconds: c_cpu_ts,
        gpu_seconds: c_gpu_s,
        seconds: c_seconds,
        meets_target: c_seconds <= target,
        burst_threads: (c_host_ts / target).ceil() as u64,
        steady_threads: c_host_ts / interval_seconds(subnet),
    })
}

/// Threads of consensus signature verification: 4 same-message batches of n signatures per
/// block, per block time. Optional: a benchmark without a BLS figure leaves this figure
/// out (said in the output).
fn consensus_signature_threads(
    subnet: &Subnet,
    profile: &Profile,
    gpu: bool,
    costs: &mut Costs<'_>,
) -> Option<f64> {
    let n = subnet.n();
    let shares = SHARES_PER_NODE_PER_BLOCK * n;
    let bls_gpu = gpu && runs_on_gpu(&profile.crypto.bls_verify, n);
    let sig_ts = if bls_gpu {
        costs
            .get(BenchOp::BlsVerifySameMessage, "gpu", n)
            .ok()
            .map(|(s, _)| shares as f64 * s)
    } else {
        costs
            .get(BenchOp::BlsVerifySameMessage, "cpu", n)
            .ok()
            .map(|(s, thr)| shares as f64 * s * thr)
    };
    sig_ts.map(|t| t / subnet.block_time_seconds)
}

/// The plan for people.
pub fn render(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "subnet {}: n = {} nodes, block time {} s, DKG interval {} (+1) blocks, {} dealing(s) per block, {} transcripts per interval, state {} GiB, checkpoint hash target {} s",
        plan.subnet,
        plan.n,
        plan.block_time_seconds,
        plan.dkg_interval_length,
        plan.dkg_dealings_per_block,
        plan.dkg_transcripts_per_interval,
        plan.state_size_gib,
        plan.checkpoint_hash_target_seconds
    );
    for p in &plan.profiles {
        render_profile(&mut o, plan, p);
    }
    let _ = writeln!(
        o,
        "\nsubnet cost: capex {:.0} EUR, {:.2} EUR/month",
        plan.cost.capex_eur, plan.cost.eur_per_month
    );
    o
}

/// One profile's section of [`render`]: its costs per operation, pools, both modes, what
/// the GPU frees and the cost per node.
fn render_profile(o: &mut String, plan: &Plan, p: &ProfilePlan) {
    let _ = writeln!(o, "\nprofile {} ({} node(s))", p.profile, p.nodes);
    render_figures_from(o, p);
    let _ = writeln!(
        o,
        "  pools: base (consensus+execution+query+p2p_http) {} threads, idkg {}, checkpoint {}; machine {}",
        p.base_threads,
        p.idkg_pool_threads,
        p.checkpoint_pool_threads,
        p.machine_threads
            .map_or("unbounded".to_string(), |m| format!("{m} threads"))
    );
    let modes = [
        ("without GPU", Some(&p.without_gpu)),
        ("with GPU", p.with_gpu.as_ref()),
    ];
    for (label, m) in modes {
        match m {
            Some(m) => render_mode(o, plan, p, label, m),
            None => {
                let _ = writeln!(
                    o,
                    "  {label}: n/a ({})",
                    p.with_gpu_unavailable.as_deref().unwrap_or("no figures")
                );
            }
        }
    }
    if let Some(f) = &p.gpu_frees {
        let _ = writeln!(
            o,
            "  the GPU frees: {:.2} s of host CPU per DKG round (2n dealing verifications), {} burst and {:.2} steady thread(s)",
            f.host_cpu_seconds_per_dkg_round, f.burst_threads, f.steady_threads
        );
    }
    let c = &p.cost;
    let _ = writeln!(
        o,
        "  cost per node: capex {:.0} EUR; {:.2} EUR/month = {:.2} amortisation ({} months) + {:.2} power ({} W at {} EUR/kWh)",
        c.capex_eur,
        c.total_eur_per_month,
        c.capex_eur_per_month,
        c.amortisation_months,
        c.power_eur_per_month,
        c.expected_watts,
        c.power_price_eur_per_kwh
    );
}

/// The benchmark and every entry of it the profile's figures come from.
fn render_figures_from(o: &mut String, p: &ProfilePlan) {
    let _ = writeln!(o, "  costs per operation: {} [{}]", p.bench, p.bench_file);
    for f in &p.figures_from {
        let _ = writeln!(
            o,
            "    {:<24} {:<3} {:<12}: {:.3e} s/item x {} thread(s)  [{}]",
            f.op,
            f.backend,
            match f.subnet_size {
                Some(n) if f.op == BenchOp::NidkgVerify.name() => format!("n = {n}"),
                _ => format!("batch {}", f.batch),
            },
            f.seconds_per_item,
            f.threads,
            f.source
        );
    }
}

/// One mode (`label`: without or with GPU) of a profile: dealing verification, DKG and
/// checkpoint against their targets, then the thread budget.
fn render_mode(o: &mut String, plan: &Plan, p: &ProfilePlan, label: &str, m: &ModeFigures) {
    let _ = writeln!(o, "  {label}:");
    let _ = writeln!(
        o,
        "    dealing verification ({}, measured at n = {}): {:.4} host thread-s, {}",
        m.dealing.on,
        m.dealing.measured_subnet_size,
        m.dealing.host_thread_seconds,
        match m.dealing.host_cpu_seconds {
            Some(c) => format!("{c:.4} s of host CPU (the thread counts use it)"),
            None => {
                "no CPU time in the benchmark (the thread counts use the wall time)".to_string()
            }
        }
    );
    let _ = writeln!(
        o,
        "    DKG: {:.4} s per block with the idkg pool vs block time {} s: {}; at most {} dealing(s) per block",
        m.dkg.seconds_per_block,
        plan.block_time_seconds,
        if m.dkg.keeps_up {
            "keeps up"
        } else {
            "FALLS BEHIND"
        },
        m.dkg.max_dealings_per_block
    );
    let _ = writeln!(
        o,
        "    checkpoint: {} chunks on {}: {:.1} s with the checkpoint pool vs target {} s: {}",
        m.checkpoint.chunks,
        m.checkpoint.on,
        m.checkpoint.seconds,
        plan.checkpoint_hash_target_seconds,
        if m.checkpoint.meets_target {
            "meets it"
        } else {
            "MISSES IT"
        }
    );
    render_threads(o, p, m);
}

/// A mode's consensus signature threads and its steady and burst thread budget against
/// the machine.
fn render_threads(o: &mut String, p: &ProfilePlan, m: &ModeFigures) {
    let _ = match m.consensus_signature_threads {
        Some(t) => writeln!(
            o,
            "    consensus signatures: {t:.3} threads (consensus pool {})",
            p.consensus_pool_threads
        ),
        None => writeln!(
            o,
            "    consensus signatures: n/a (no BLS figure in the benchmark)"
        ),
    };
    let _ = writeln!(
        o,
        "    threads: steady {:.2} (base {} + DKG {:.2} + checkpoint {:.2}), burst {} (base {} + DKG {} + checkpoint {}){}",
        m.steady_threads,
        p.base_threads,
        m.dkg.steady_threads,
        m.checkpoint.steady_threads,
        m.burst_threads,
        p.base_threads,
        m.dkg.burst_threads,
        m.checkpoint.burst_threads,
        match m.fits_machine {
            Some(true) => ", fits the machine",
            Some(false) => ", EXCEEDS the machine",
            None => "",
        }
    );
}

/// node.toml of every node of the subnet (the sn-config contract), with the host work
/// the GPU takes off its profile where `plan` has GPU-assisted figures for it.
pub fn node_configs(subnet: &Subnet, plan: &Plan) -> Vec<NodeConfig> {
    subnet
        .nodes
        .iter()
        .map(|node| {
            let operator = subnet
                .operators
                .iter()
                .find(|o| o.name == node.operator)
                .map(|o| NodeOperator {
                    name: o.name.clone(),
                    ssh_keys: o.ssh_keys.clone(),
                })
                .unwrap_or(NodeOperator {
                    name: node.operator.clone(),
                    ssh_keys: Vec::new(),
                });
            let net = &subnet.network;
            NodeConfig {
                schema: NODE_CONFIG_SCHEMA.to_string(),
                subnet: subnet.name.clone(),
                name: node.name.clone(),
                hostname: node.name.clone(),
                profile: node.profile.clone(),
                collect_interval_seconds: None,
                network: NodeNetwork {
                    ipv6_address: format!("{}/{}", node.ipv6_address, net.ipv6_prefix.prefix_len()),
                    ipv6_gateway: net.ipv6_gateway.to_string(),
                    ipv4_address: node.ipv4_address.map(|a| a.to_string()),
                    ipv4_gateway: node
                        .ipv4_address
                        .and(net.ipv4_gateway)
                        .map(|g| g.to_string()),
                    dns: net.dns.clone(),
                },
                operator,
                offload: plan
                    .profiles
                    .iter()
                    .find(|p| p.profile == node.profile)
                    .and_then(|p| node_offload(p, plan.n)),
            }
        })
        .collect()
}

/// node.toml's `[offload]` for a node of `profile` in a subnet of `n` nodes.
fn node_offload(profile: &ProfilePlan, n: u64) -> Option<NodeOffload> {
    let frees = profile.gpu_frees.as_ref()?;
    Some(NodeOffload {
        benchmark: profile.bench.clone(),
        dkg_round_dealings: 2 * n,
        host_cpu_seconds_per_dkg_round: frees.host_cpu_seconds_per_dkg_round,
        burst_threads_freed: frees.burst_threads,
        steady_threads_freed: frees.steady_threads,
    })
}

/// One signed configuration bundle per node.
pub fn bundles(subnet: &Subnet, plan: &Plan, key: &SigningKey) -> Result<Vec<Bundle>, ConfigError> {
    node_configs(subnet, plan)
        .iter()
        .map(|node| Bundle::sign(node, None, key))
        .collect()
}
