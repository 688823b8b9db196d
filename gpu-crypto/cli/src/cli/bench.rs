//! `bench`: what each operation costs on this machine, through the public [`Engine`] API,
//! as a versioned JSON document for the subnet planner (`provision plan --bench`).
//!
//! Shapes follow the replica's: decompression of n*16 points and batches of 32 MSMs of n*16
//! points (n = subnet size; uniform 255-bit scalars over distinct bases, so the count of a
//! dealing's chunking-proof MSMs but not their 8-bit, shared-base shape: docs/nidkg.md), G2
//! decompression (NI-DKG dealings' and BLS public keys' points, up to 2^16 points),
//! products of three pairings (ciphertext integrity's shape), single MSMs of 2^12 and 2^16
//! points, BLS verification of distinct
//! messages and of one message under many keys (consensus shares), SHA-256 of 1 MiB state
//! chunks under the manifest's domain separator; the chunking proof's own shape
//! (`msm_shared_u8`: 32 MSMs over one set of n*16 bases with 8-bit scalars) on the engine's
//! path of either backend, beside the CPU peers in the same run: the IC's algorithm (a 4-bit
//! Pippenger over full-width scalars) on one thread and on all, the CPU 8-bit path
//! (`nidkg::msm::msm_shared_bases_u8`) on all threads, and blst's Pippenger on all threads
//! (the engine's CPU MSM, scalars widened); whole NI-DKG dealing verifications and DKG
//! rounds (`nidkg_bench`). The CPU path is always measured (the
//! planner's "without GPU" figures); the GPU path too when `--backend` is `gpu` or `auto`
//! and the GPU is usable. Every entry says where its calls really ran (the engine's own
//! counters), so a GPU figure that was in fact computed on the CPU cannot pass as one.
//!
//! Timing: one untimed warm-up call, then calls until both the minimum repetitions and the
//! minimum time are reached (or the maximum repetitions). The median call is reported, with
//! the minimum and maximum. Wall time; CPU calls use all of the engine's threads.

use super::progress::Progress;
use anyhow::Context;
use gpu_crypto::{
    BackendChoice, BlsItem, BlsScheme, DomainSeparator, Engine, EngineError, G1Affine,
    G1Projective, G2Affine, GpuStatus, MsmInput, Operation, OperationPolicy, PairingProducts,
    Policy, Scalar,
};
use gpu_crypto_api::bench::{BENCH_SCHEMA, BenchDocument, BenchEntry, BenchMachine};
use gpu_crypto_api::stats::Executed;
use ic_bls12_381::G2Projective;
use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::Sha256;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The manifest's chunk domain separator (`ic-state-chunk`, as the replica hashes chunks).
const CHUNK_DOMAIN: &str = "ic-state-chunk";
const CHUNK_BYTES: usize = 1 << 20;
/// Distinct 1 MiB buffers at most; larger batches cycle through them (memory stays bounded).
const MAX_DISTINCT_CHUNKS: usize = 256;

/// What to measure and how often.
struct Plan {
    subnet_sizes: &'static [usize],
    decompress_extra: &'static [usize],
    /// G2 decompression batches (points).
    decompress_g2: &'static [usize],
    /// G2 MSM batches: (MSMs, points per MSM).
    msm_g2: &'static [(usize, usize)],
    /// Batches of products of three pairings (ciphertext integrity's shape).
    pairing_products: &'static [usize],
    msm_sizes: &'static [usize],
    bls_distinct: &'static [usize],
    bls_same_message: &'static [usize],
    sha256_chunks: &'static [usize],
    /// Whether to measure DKG rounds (2n dealings) besides single dealings.
    dkg_rounds: bool,
    min_reps: usize,
    max_reps: usize,
    min_time: Duration,
    /// Seconds an entry takes on 2 CPU threads (release build; from the 2-core figures in
    /// provisioning/benchmarks/), for the start line's estimate.
    seconds_per_entry_2_threads: f64,
}

const FULL: Plan = Plan {
    subnet_sizes: &[13, 28, 40],
    decompress_extra: &[4096],
    decompress_g2: &[8, 32, 64, 128, 256, 4096, 1 << 16],
    // A dealing's 16 (integrity) and t + 2 = 21 (sharing, n = 28) points, larger single
    // MSMs, and a DKG round's 56 of each.
    msm_g2: &[(1, 16), (1, 21), (1, 64), (1, 256), (56, 16), (56, 21)],
    pairing_products: &[16, 64, 256, 1024],
    msm_sizes: &[1 << 12, 1 << 16],
    bls_distinct: &[64, 256],
    bls_same_message: &[28, 100],
    sha256_chunks: &[16, 256, 1024],
    dkg_rounds: true,
    min_reps: 3,
    max_reps: 50,
    min_time: Duration::from_secs(2),
    // ci-2core-cpu.json: 51 entries, 274 s of timed calls.
    seconds_per_entry_2_threads: 5.5,
};

/// Seconds on any machine: one subnet size, the smallest shapes, two timed calls each.
const QUICK: Plan = Plan {
    subnet_sizes: &[13],
    decompress_extra: &[],
    decompress_g2: &[8],
    msm_g2: &[(1, 16)],
    pairing_products: &[4],
    msm_sizes: &[1 << 12],
    bls_distinct: &[16],
    bls_same_message: &[16],
    sha256_chunks: &[8],
    dkg_rounds: false,
    min_reps: 2,
    max_reps: 2,
    min_time: Duration::ZERO,
    seconds_per_entry_2_threads: QUICK_SECONDS_PER_ENTRY,
};

/// One call of an operation on an engine, its result dropped (only its success matters).
type Call<'a> = Box<dyn Fn(&Engine) -> Result<(), EngineError> + 'a>;

/// One shape of one operation, ready to call repeatedly.
struct Case<'a> {
    op: &'static str,
    operation: Operation,
    batch: usize,
    msms: Option<usize>,
    points_per_msm: Option<usize>,
    subnet_size: Option<usize>,
    call: Call<'a>,
}

/// Seconds an entry of the quick plan takes on 2 CPU threads, the dealings aside (a 2-core
/// machine: 15 s in all, 12 s of them the two dealings).
const QUICK_SECONDS_PER_ENTRY: f64 = 0.2;

/// The entries a run of `plan` produces: the progress bar's length (the quick run's unit
/// test holds it equal to the document's).
fn planned_entries(plan: &Plan, gpu: bool) -> usize {
    let engines = 1 + usize::from(gpu);
    let cases = 2 * plan.subnet_sizes.len()
        + plan.decompress_extra.len()
        + plan.decompress_g2.len()
        + plan.msm_g2.len()
        + plan.pairing_products.len()
        + plan.msm_sizes.len()
        + plan.bls_distinct.len()
        + plan.bls_same_message.len()
        + plan.sha256_chunks.len();
    let per_size =
        engines + SHARED_U8_PEERS + super::nidkg_bench::entries_per_size(plan.dkg_rounds, gpu);
    cases * engines + plan.subnet_sizes.len() * per_size
}

/// A rough duration of the run: its entries at the 2-thread rate, shorter with more
/// threads (not below the plan's minimum time per entry), and the dealings it creates.
fn estimated_seconds(plan: &Plan, entries: usize, threads: usize) -> f64 {
    let per_entry = (plan.seconds_per_entry_2_threads * 2.0 / threads.max(1) as f64)
        .max(plan.min_time.as_secs_f64());
    let dealings: f64 = plan
        .subnet_sizes
        .iter()
        .map(|&n| super::nidkg_bench::DEALINGS_PER_SIZE as f64 * super::nidkg::deal_seconds(n))
        .sum();
    entries as f64 * per_entry + dealings
}

/// The start line: what runs and about how long. Without a GPU under `auto` it is also
/// where the bench says, once, that only the CPU path is measured and why.
fn headline(plan: &Plan, quick: bool, entries: usize, gpu: &GpuStatus) -> String {
    let threads = rayon::current_num_threads();
    let paths = match gpu {
        GpuStatus::Ready { device } => format!("CPU and GPU paths, {device}"),
        GpuStatus::Unusable { reason } => format!("CPU path only, no usable GPU: {reason}"),
        _ => "CPU path only".to_string(),
    };
    format!(
        "bench{}: {entries} entries ({paths}), about {} on {threads} CPU thread(s)",
        if quick { " --quick" } else { "" },
        super::progress::about(estimated_seconds(plan, entries, threads))
    )
}

/// Runs the benchmark and returns the document.
pub(crate) fn run(backend: BackendChoice, quick: bool) -> anyhow::Result<BenchDocument> {
    let plan = if quick { &QUICK } else { &FULL };
    let mut notes = Vec::new();
    let cpu = Engine::cpu_only();
    let (gpu_engine, gpu_status) = engines(backend, &mut notes)?;
    let entries = planned_entries(plan, gpu_engine.is_some());
    let progress = Progress::bar(&headline(plan, quick, entries, &gpu_status), entries as u64);
    progress.step("generating the inputs");

    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed);
    let inputs = Inputs::generate(plan, &mut rng)?;
    let cases = cases(plan, &inputs)?;
    let gpu = gpu_engine.as_ref();
    let mut results = measure_cases(&cases, &cpu, gpu, plan, &progress)?;
    results.extend(measure_shared_u8_sizes(
        plan,
        &inputs.points,
        &mut rng,
        (&cpu, gpu),
        &progress,
    )?);
    results.extend(measure_dealings(
        plan,
        gpu.is_some(),
        &mut notes,
        &progress,
    )?);
    Ok(document(backend, quick, gpu_status, results, notes))
}

/// The engines to measure: the CPU engine is always there; the GPU engine (every
/// operation forced onto the GPU) when `backend` asks for it and it opens. Under `gpu` a
/// GPU that does not open is an error; under `auto` it is a note and the status says why.
fn engines(
    backend: BackendChoice,
    notes: &mut Vec<String>,
) -> anyhow::Result<(Option<Engine>, GpuStatus)> {
    Ok(match backend {
        BackendChoice::Cpu => (None, GpuStatus::NotRequested),
        BackendChoice::Gpu | BackendChoice::Auto => match gpu_engine(notes) {
            Ok(engine) => {
                let status = engine.gpu_status();
                (Some(engine), status)
            }
            Err(e) if backend == BackendChoice::Gpu => {
                return Err(e).context("--backend gpu: the GPU path cannot be measured");
            }
            Err(e) => {
                notes.push(format!("GPU not measured: {e}"));
                // The GPU's own reason: the error also names the first operation pinned.
                let reason = match e {
                    EngineError::GpuUnavailable { reason, .. } => reason,
                    other => other.to_string(),
                };
                (None, GpuStatus::Unusable { reason })
            }
        },
    })
}

/// The inputs of every case, built once from the bench's seeded generator (in this order,
/// so every run measures the same inputs), each as large as the plan's largest shape.
struct Inputs {
    /// Distinct G1 points: the decompression, MSM and `msm_shared_u8` inputs.
    points: Vec<G1Affine>,
    /// `points` compressed.
    compressed: Vec<[u8; 48]>,
    /// Uniform full-width scalars, one per point.
    scalars: Vec<Scalar>,
    /// Distinct G2 points: the G2 MSM inputs.
    g2_points: Vec<G2Affine>,
    /// `g2_points` compressed.
    g2_compressed: Vec<[u8; 96]>,
    /// Signatures under distinct keys, each over its own message.
    distinct: Vec<Signed>,
    /// Signatures under distinct keys, all over one message.
    same: Vec<Signed>,
    /// Distinct random 1 MiB chunks (at most [`MAX_DISTINCT_CHUNKS`]).
    buffers: Vec<Vec<u8>>,
    /// The manifest's chunk domain separator.
    domain: DomainSeparator,
    /// The G2 table and the products of three pairings over it.
    pairing: (Vec<G2Affine>, Vec<Vec<(G1Affine, usize)>>),
}

impl Inputs {
    fn generate(plan: &Plan, rng: &mut ChaCha20Rng) -> anyhow::Result<Self> {
        let largest = |sizes: &[usize]| sizes.iter().copied().max().unwrap_or(0);
        let largest_points = plan
            .subnet_sizes
            .iter()
            .map(|n| n * 16)
            .chain(plan.decompress_extra.iter().copied())
            .chain(plan.msm_sizes.iter().copied())
            .max()
            .unwrap_or(0);
        let points = distinct_points(rng, largest_points);
        let compressed = points.iter().map(G1Affine::to_compressed).collect();
        let scalars = (0..largest_points)
            .map(|_| nidkg::random_scalar(rng))
            .collect();
        let g2_largest = plan
            .msm_g2
            .iter()
            .map(|(m, p)| m * p)
            .chain(plan.decompress_g2.iter().copied())
            .max()
            .unwrap_or(0);
        let g2_points = distinct_g2_points(rng, g2_largest);
        let g2_compressed = g2_points.iter().map(G2Affine::to_compressed).collect();
        let distinct = bls_signatures(rng, largest(plan.bls_distinct), false);
        let same = bls_signatures(rng, largest(plan.bls_same_message), true);
        let buffers = (0..largest(plan.sha256_chunks).min(MAX_DISTINCT_CHUNKS))
            .map(|_| {
                let mut b = vec![0u8; CHUNK_BYTES];
                rng.fill(&mut b[..]);
                b
            })
            .collect();
        let domain = DomainSeparator::new(CHUNK_DOMAIN)?;
        let pairing = pairing_products_input(rng, largest(plan.pairing_products));
        Ok(Self {
            points,
            compressed,
            scalars,
            g2_points,
            g2_compressed,
            distinct,
            same,
            buffers,
            domain,
            pairing,
        })
    }
}

/// Every case of the plan, each operation's shapes in turn.
fn cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let mut cases = decompress_cases(plan, inputs)?;
    cases.extend(decompress_g2_cases(plan, inputs)?);
    cases.extend(pairing_products_cases(plan, inputs)?);
    cases.extend(msm_cases(plan, inputs)?);
    cases.extend(msm_g2_cases(plan, inputs)?);
    cases.extend(bls_cases(plan, inputs));
    cases.extend(sha256_cases(plan, inputs));
    Ok(cases)
}

/// G1 decompression of each subnet's n*16 points, then of the extra sizes.
fn decompress_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let sizes = plan
        .subnet_sizes
        .iter()
        .map(|&n| (n * 16, Some(n)))
        .chain(plan.decompress_extra.iter().map(|&s| (s, None)));
    let mut cases = Vec::new();
    for (size, n) in sizes {
        let input = inputs.compressed.get(..size).context("decompress input")?;
        cases.push(Case {
            op: "decompress",
            operation: Operation::Decompress,
            batch: size,
            msms: None,
            points_per_msm: None,
            subnet_size: n,
            call: Box::new(move |e| e.g1_decompress(input).map(drop)),
        });
    }
    Ok(cases)
}

/// G2 decompression batches; every point must decompress.
fn decompress_g2_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let mut cases = Vec::new();
    for &size in plan.decompress_g2 {
        let input = inputs
            .g2_compressed
            .get(..size)
            .context("decompress_g2 input")?;
        cases.push(Case {
            op: "decompress_g2",
            operation: Operation::DecompressG2,
            batch: size,
            msms: None,
            points_per_msm: None,
            subnet_size: None,
            call: Box::new(move |e| {
                let out = e.g2_decompress(input)?;
                // Every point was built valid: a rejection means the bench measured
                // something other than the decompression of valid points.
                match out.iter().position(Result::is_err) {
                    None => Ok(()),
                    Some(i) => Err(EngineError::Policy(format!(
                        "bench G2 point {i} was rejected: {:?}",
                        out.get(i)
                    ))),
                }
            }),
        });
    }
    Ok(cases)
}

/// Batches of products of three pairings; every product must get a verdict.
fn pairing_products_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let mut cases = Vec::new();
    for &count in plan.pairing_products {
        let (g2, products) = &inputs.pairing;
        let products = products.get(..count).context("pairing products")?;
        cases.push(Case {
            op: "pairing_products",
            operation: Operation::PairingProducts,
            batch: count,
            msms: None,
            points_per_msm: None,
            subnet_size: None,
            call: Box::new(move |e| {
                let verdicts = e.pairing_products_are_identity(PairingProducts { g2, products })?;
                if verdicts.len() == products.len() {
                    Ok(())
                } else {
                    Err(EngineError::Policy(format!(
                        "{} verdicts for {} products",
                        verdicts.len(),
                        products.len()
                    )))
                }
            }),
        });
    }
    Ok(cases)
}

/// Batches of 32 MSMs of each subnet's n*16 points, then single MSMs of the plan's sizes.
fn msm_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let points_and_scalars = |size: usize| -> anyhow::Result<(&'a [G1Affine], &'a [Scalar])> {
        Ok((
            inputs.points.get(..size).context("msm points")?,
            inputs.scalars.get(..size).context("msm scalars")?,
        ))
    };
    let mut cases = Vec::new();
    for &n in plan.subnet_sizes {
        let size = n * 16;
        let (p, s) = points_and_scalars(size)?;
        // 32 MSMs over the same points with full-width scalars: the generic MSM's cost at
        // this count and size (the chunking proof's 8-bit scalars are not modelled here).
        let batch: Vec<MsmInput<'_>> = (0..32)
            .map(|_| MsmInput {
                points: p,
                scalars: s,
            })
            .collect();
        cases.push(Case {
            op: "msm_batch",
            operation: Operation::Msm,
            batch: 32 * size,
            msms: Some(32),
            points_per_msm: Some(size),
            subnet_size: Some(n),
            call: Box::new(move |e| e.g1_msm_batch(&batch).map(drop)),
        });
    }
    for &size in plan.msm_sizes {
        let (p, s) = points_and_scalars(size)?;
        cases.push(Case {
            op: "msm",
            operation: Operation::Msm,
            batch: size,
            msms: Some(1),
            points_per_msm: Some(size),
            subnet_size: None,
            call: Box::new(move |e| e.g1_msm(p, s).map(drop)),
        });
    }
    Ok(cases)
}

/// Batches of G2 MSMs over distinct points with full scalars.
fn msm_g2_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> anyhow::Result<Vec<Case<'a>>> {
    let mut cases = Vec::new();
    for &(msms, size) in plan.msm_g2 {
        let points = inputs
            .g2_points
            .get(..msms * size)
            .context("msm_g2 points")?;
        let scalars = inputs
            .scalars
            .get(..msms * size)
            .context("msm_g2 scalars")?;
        let batch: Vec<MsmInput<'_, G2Affine>> = points
            .chunks(size)
            .zip(scalars.chunks(size))
            .map(|(points, scalars)| MsmInput { points, scalars })
            .collect();
        cases.push(Case {
            op: "msm_g2",
            operation: Operation::MsmG2,
            batch: msms * size,
            msms: Some(msms),
            points_per_msm: Some(size),
            subnet_size: None,
            call: Box::new(move |e| e.g2_msm_batch(&batch).map(drop)),
        });
    }
    Ok(cases)
}

/// BLS batch verification of distinct messages, then of one message under many keys;
/// every signature must verify.
fn bls_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> Vec<Case<'a>> {
    let mut cases = Vec::new();
    for (op, sizes, sigs) in [
        ("bls_verify_distinct", plan.bls_distinct, &inputs.distinct),
        (
            "bls_verify_same_message",
            plan.bls_same_message,
            &inputs.same,
        ),
    ] {
        for &size in sizes {
            let items: Vec<BlsItem<'_>> = sigs
                .iter()
                .take(size)
                .map(|s| BlsItem {
                    signature: &s.signature,
                    public_key: &s.public_key,
                    message: &s.message,
                    scheme: BlsScheme::MultiSig,
                })
                .collect();
            cases.push(Case {
                op,
                operation: Operation::BlsVerify,
                batch: size,
                msms: None,
                points_per_msm: None,
                subnet_size: None,
                call: Box::new(move |e| {
                    let verdicts = e.bls_verify_batch(&items)?;
                    // Every signature was built valid: a rejection means the bench measured
                    // something other than verification of valid signatures.
                    match verdicts.iter().position(Result::is_err) {
                        None => Ok(()),
                        Some(i) => Err(EngineError::Policy(format!(
                            "bench signature {i} was rejected: {:?}",
                            verdicts.get(i)
                        ))),
                    }
                }),
            });
        }
    }
    cases
}

/// SHA-256 of batches of 1 MiB chunks under the manifest's domain separator.
fn sha256_cases<'a>(plan: &Plan, inputs: &'a Inputs) -> Vec<Case<'a>> {
    let buffers = &inputs.buffers;
    let mut cases = Vec::new();
    for &count in plan.sha256_chunks {
        let chunks: Vec<&[u8]> = (0..count)
            .filter_map(|i| buffers.get(i % buffers.len().max(1)).map(Vec::as_slice))
            .collect();
        let domain = &inputs.domain;
        cases.push(Case {
            op: "sha256_1mib",
            operation: Operation::Sha256,
            batch: count,
            msms: None,
            points_per_msm: None,
            subnet_size: None,
            call: Box::new(move |e| e.sha256_chunks(domain, &chunks).map(drop)),
        });
    }
    cases
}

/// Every case on the CPU engine, then on the GPU engine when there is one.
fn measure_cases(
    cases: &[Case<'_>],
    cpu: &Engine,
    gpu: Option<&Engine>,
    plan: &Plan,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let cpu_threads = rayon::current_num_threads();
    let mut results = Vec::new();
    for case in cases {
        progress.step(format!("{} batch {}", case.op, case.batch));
        results.push(measure(cpu, case, "cpu", cpu_threads, plan)?);
        progress.done(1);
        if let Some(gpu) = gpu {
            results.push(measure(gpu, case, "gpu", 1, plan)?);
            progress.done(1);
        }
    }
    Ok(results)
}

/// The `msm_shared_u8` entries of every subnet size, each on fresh 8-bit scalars from
/// `rng` over the first n*16 of `points`.
fn measure_shared_u8_sizes(
    plan: &Plan,
    points: &[G1Affine],
    rng: &mut ChaCha20Rng,
    (cpu, gpu): (&Engine, Option<&Engine>),
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let mut results = Vec::new();
    for &n in plan.subnet_sizes {
        let bases = points.get(..n * 16).context("msm_shared_u8 bases")?;
        let mut u8_scalars = vec![0u8; SHARED_U8_ROWS * bases.len()];
        rng.fill(&mut u8_scalars[..]);
        progress.step(format!("msm_shared_u8 n={n}"));
        let inputs = SharedU8 {
            bases,
            scalars: &u8_scalars,
            n,
        };
        results.extend(measure_shared_u8(cpu, gpu, &inputs, plan, progress)?);
    }
    Ok(results)
}

/// The dealing-level rows (`nidkg_bench`). GPU-assisted means the engine under the default
/// auto policy (each batch where its crossover sends it); offloaded, every dealing batch
/// but the pairing products on the GPU; measured only when the GPU is (`gpu`).
fn measure_dealings(
    plan: &Plan,
    gpu: bool,
    notes: &mut Vec<String>,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let engines = if gpu {
        Some((
            Engine::new(Policy::auto()).context("the GPU-assisted engine")?,
            Engine::new(super::nidkg_bench::offload_policy()).context("the offload engine")?,
        ))
    } else {
        None
    };
    let engines = engines
        .as_ref()
        .map(|(assisted, offload)| super::nidkg_bench::DealingEngines { assisted, offload });
    let dealing_plan = super::nidkg_bench::DealingPlan {
        subnet_sizes: plan.subnet_sizes,
        dkg_rounds: plan.dkg_rounds,
        min_reps: plan.min_reps,
        max_reps: plan.max_reps,
        min_time: plan.min_time,
    };
    super::nidkg_bench::measure(&dealing_plan, engines.as_ref(), notes, progress)
}

/// The document of a finished run: its results and notes, when and where it ran.
fn document(
    backend: BackendChoice,
    quick: bool,
    gpu_status: GpuStatus,
    results: Vec<BenchEntry>,
    notes: Vec<String>,
) -> BenchDocument {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let gpu_name = match &gpu_status {
        GpuStatus::Ready { device } => Some(device.clone()),
        _ => None,
    };
    BenchDocument {
        schema: BENCH_SCHEMA.to_string(),
        source: "measured".to_string(),
        // Empty only for a clock past the year 262142.
        date_utc: utc_timestamp(now).unwrap_or_default(),
        unix_time: Some(now),
        git_describe: git_describe(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        quick,
        backend_requested: Some(backend.name().to_string()),
        machine: BenchMachine {
            cpu_model: cpu_model(),
            logical_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_threads: rayon::current_num_threads(),
            gpu_name,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
        },
        gpu: Some(gpu_status),
        results,
        notes,
    }
}

/// An engine with every operation forced onto the GPU (whatever the batch size), so GPU
/// entries are GPU figures; operations the GPU backend lacks are noted and left out.
fn gpu_engine(notes: &mut Vec<String>) -> Result<Engine, EngineError> {
    let mut policy = Policy::with_backend(BackendChoice::Gpu);
    loop {
        match Engine::new(policy) {
            Err(EngineError::NoGpuImplementation { op }) => {
                notes.push(format!("{op}: no GPU implementation; GPU not measured"));
                *policy.operation_mut(op) = OperationPolicy {
                    backend: BackendChoice::Cpu,
                    gpu_min_batch: 1,
                };
            }
            other => return other,
        }
    }
}

/// The chunking proof's MSMs: 32 rows over one set of bases.
const SHARED_U8_ROWS: usize = 32;
/// The CPU peers of the engine's `msm_shared_u8` entries, per subnet size.
const SHARED_U8_PEERS: usize = 4;

/// One subnet size's `msm_shared_u8` inputs: [`SHARED_U8_ROWS`] rows of 8-bit scalars
/// over one set of bases.
struct SharedU8<'a> {
    bases: &'a [G1Affine],
    /// The rows, one after another, each as long as `bases`.
    scalars: &'a [u8],
    /// The subnet size (`bases` holds n*16 points).
    n: usize,
}

/// The `msm_shared_u8` entries of one subnet size: the engine's path on the CPU engine and
/// the GPU engine (when measured), then the CPU peers, all on the same inputs.
fn measure_shared_u8(
    cpu: &Engine,
    gpu: Option<&Engine>,
    inputs: &SharedU8<'_>,
    plan: &Plan,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let mut out = shared_u8_engine_entries(cpu, gpu, inputs, plan, progress)?;
    out.extend(shared_u8_peer_entries(inputs, plan, progress));
    Ok(out)
}

/// The engine's path: nidkg's 8-bit MSM per row on all threads (CPU engine), or the
/// bit-plane kernels (GPU engine).
fn shared_u8_engine_entries(
    cpu: &Engine,
    gpu: Option<&Engine>,
    &SharedU8 { bases, scalars, n }: &SharedU8<'_>,
    plan: &Plan,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let rows = SHARED_U8_ROWS;
    let size = bases.len();
    let engine_case = Case {
        op: "msm_shared_u8",
        operation: Operation::MsmSharedU8,
        batch: rows * size,
        msms: Some(rows),
        points_per_msm: Some(size),
        subnet_size: Some(n),
        call: Box::new(move |e| e.g1_msm_shared_u8(bases, scalars, rows).map(drop)),
    };
    let mut out = Vec::new();
    let mut entry = measure(cpu, &engine_case, "cpu", rayon::current_num_threads(), plan)?;
    entry.algorithm = Some("shared-bases-u8".to_string());
    out.push(entry);
    progress.done(1);
    if let Some(gpu) = gpu {
        let mut entry = measure(gpu, &engine_case, "gpu", 1, plan)?;
        entry.algorithm = Some("gpu-bit-planes".to_string());
        out.push(entry);
        progress.done(1);
    }
    Ok(out)
}

/// The CPU peers, outside the engine (its counters do not see them): the IC's 4-bit
/// full-width Pippenger on one thread and on all, the CPU 8-bit path on one, blst's
/// Pippenger on all. The scalars are widened to field elements once, outside the timed
/// calls.
fn shared_u8_peer_entries(
    inputs: &SharedU8<'_>,
    plan: &Plan,
    progress: &Progress,
) -> Vec<BenchEntry> {
    use rayon::prelude::*;
    let &SharedU8 { bases, scalars, .. } = inputs;
    let size = bases.len();
    let cpu_threads = rayon::current_num_threads();
    let wide: Vec<Scalar> = scalars
        .iter()
        .map(|&s| Scalar::from(u64::from(s)))
        .collect();
    let wide_rows: Vec<&[Scalar]> = wide.chunks_exact(size).collect();
    let byte_rows: Vec<&[u8]> = scalars.chunks_exact(size).collect();
    let blst_batch: Vec<MsmInput<'_>> = wide_rows
        .iter()
        .map(|s| MsmInput {
            points: bases,
            scalars: s,
        })
        .collect();
    let mut out = Vec::new();
    let ic_1t = time_calls(plan, || {
        for s in &wide_rows {
            std::hint::black_box(nidkg::msm::msm_4bit_full_width(bases, s));
        }
    });
    out.extend(peer_entry(inputs, "ic-4bit-full-width", 1, ic_1t));
    progress.done(1);
    let ic_all = time_calls(plan, || {
        let r: Vec<G1Projective> = wide_rows
            .par_iter()
            .map(|s| nidkg::msm::msm_4bit_full_width(bases, s))
            .collect();
        std::hint::black_box(r);
    });
    out.extend(peer_entry(
        inputs,
        "ic-4bit-full-width",
        cpu_threads,
        ic_all,
    ));
    progress.done(1);
    let u8_1t = time_calls(plan, || {
        for s in &byte_rows {
            std::hint::black_box(nidkg::msm::msm_shared_bases_u8(bases, s));
        }
    });
    out.extend(peer_entry(inputs, "shared-bases-u8", 1, u8_1t));
    progress.done(1);
    let blst = time_calls(plan, || {
        std::hint::black_box(gpu_crypto::cpu::g1_msm_batch(&blst_batch));
    });
    out.extend(peer_entry(inputs, "blst-pippenger", cpu_threads, blst));
    progress.done(1);
    debug_assert_eq!(out.len(), SHARED_U8_PEERS);
    out
}

/// A CPU peer's `msm_shared_u8` entry from its call times (`None` for no calls).
fn peer_entry(
    inputs: &SharedU8<'_>,
    algorithm: &str,
    threads: usize,
    seconds: Vec<f64>,
) -> Option<BenchEntry> {
    let rows = SHARED_U8_ROWS;
    let size = inputs.bases.len();
    let batch = rows * size;
    summarise(seconds).map(|(median, min, max, reps)| BenchEntry {
        op: "msm_shared_u8".to_string(),
        backend: "cpu".to_string(),
        executed_on: "cpu".to_string(),
        batch,
        msms: Some(rows),
        points_per_msm: Some(size),
        subnet_size: Some(inputs.n),
        repetitions: reps,
        seconds_per_call: median,
        seconds_per_call_min: Some(min),
        seconds_per_call_max: Some(max),
        seconds_per_item: median / batch as f64,
        items_per_second: if median > 0.0 {
            batch as f64 / median
        } else {
            0.0
        },
        algorithm: Some(algorithm.to_string()),
        threads,
        source: "measured".to_string(),
        reference: None,
        phases: None,
        host_cpu_seconds_per_call: None,
    })
}

/// Seconds of each timed call of `call` after one untimed warm-up, as `measure` times.
fn time_calls(plan: &Plan, call: impl Fn()) -> Vec<f64> {
    call();
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < plan.max_reps
        && (times.len() < plan.min_reps || started.elapsed() < plan.min_time)
    {
        let t = Instant::now();
        call();
        times.push(t.elapsed().as_secs_f64());
    }
    times
}

/// Median, minimum, maximum and count of call times (`None` for no calls).
fn summarise(mut times: Vec<f64>) -> Option<(f64, f64, f64, usize)> {
    times.sort_by(f64::total_cmp);
    Some((
        *times.get(times.len() / 2)?,
        *times.first()?,
        *times.last()?,
        times.len(),
    ))
}

fn measure(
    engine: &Engine,
    case: &Case<'_>,
    backend: &'static str,
    threads: usize,
    plan: &Plan,
) -> anyhow::Result<BenchEntry> {
    let describe = || format!("{} batch {} on the {backend} engine", case.op, case.batch);
    (case.call)(engine).with_context(|| format!("warm-up call of {}", describe()))?;
    let before = counts(engine, case.operation);
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < plan.max_reps
        && (times.len() < plan.min_reps || started.elapsed() < plan.min_time)
    {
        let t = Instant::now();
        (case.call)(engine).with_context(describe)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let after = counts(engine, case.operation);
    let on_cpu = after.0 > before.0;
    let on_gpu = after.1 > before.1;
    let executed_on = match (on_cpu, on_gpu) {
        (true, false) => "cpu",
        (false, true) => "gpu",
        _ => "mixed",
    };
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    let items = case.batch.max(1) as f64;
    Ok(BenchEntry {
        op: case.op.to_string(),
        backend: backend.to_string(),
        executed_on: executed_on.to_string(),
        batch: case.batch,
        msms: case.msms,
        points_per_msm: case.points_per_msm,
        subnet_size: case.subnet_size,
        repetitions: times.len(),
        seconds_per_call: median,
        seconds_per_call_min: times.first().copied(),
        seconds_per_call_max: times.last().copied(),
        seconds_per_item: median / items,
        items_per_second: if median > 0.0 { items / median } else { 0.0 },
        algorithm: None,
        threads,
        source: "measured".to_string(),
        reference: None,
        phases: None,
        host_cpu_seconds_per_call: None,
    })
}

/// Items the engine ran on (CPU, GPU) for `op` so far, fallbacks included on the CPU side.
fn counts(engine: &Engine, op: Operation) -> (u64, u64) {
    let stats = engine.stats();
    let items = |on: Executed| {
        stats
            .operations
            .iter()
            .filter(|c| c.operation == op && c.executed == on)
            .map(|c| c.items)
            .sum::<u64>()
    };
    (items(Executed::Cpu), items(Executed::Gpu))
}

/// `count` distinct points R + i*Q (one addition each, then one batch normalisation),
/// so 2^16 points take milliseconds to build rather than 2^16 scalar multiplications.
fn distinct_points(rng: &mut ChaCha20Rng, count: usize) -> Vec<G1Affine> {
    let r = G1Affine::generator() * nidkg::random_scalar(rng);
    let q = G1Affine::generator() * nidkg::random_scalar(rng);
    let mut projective = Vec::with_capacity(count);
    let mut p = r;
    for _ in 0..count {
        projective.push(p);
        p += q;
    }
    let mut affine = vec![G1Affine::identity(); count];
    G1Projective::batch_normalize(&projective, &mut affine);
    affine
}

/// `count` distinct G2 points R + i*Q, as [`distinct_points`] for G1.
fn distinct_g2_points(rng: &mut ChaCha20Rng, count: usize) -> Vec<G2Affine> {
    let r = G2Affine::generator() * nidkg::random_scalar(rng);
    let q = G2Affine::generator() * nidkg::random_scalar(rng);
    let mut projective = Vec::with_capacity(count);
    let mut p = r;
    for _ in 0..count {
        projective.push(p);
        p += q;
    }
    let mut affine = vec![G2Affine::identity(); count];
    G2Projective::batch_normalize(&projective, &mut affine);
    affine
}

/// `count` products of three pairings over a table of 18 G2 points, shaped as ciphertext
/// integrity's (two shared G2 points and one of 16 per product); the points are random, so
/// the products are not the identity.
fn pairing_products_input(
    rng: &mut ChaCha20Rng,
    count: usize,
) -> (Vec<G2Affine>, Vec<Vec<(G1Affine, usize)>>) {
    let g2 = distinct_g2_points(rng, 18);
    let g1 = distinct_points(rng, 3 * count);
    let products = g1
        .chunks_exact(3)
        .enumerate()
        .map(|(k, p)| vec![(p[0], 0), (p[1], 1), (p[2], 2 + k % 16)])
        .collect();
    (g2, products)
}

struct Signed {
    signature: [u8; 48],
    public_key: [u8; 96],
    message: Vec<u8>,
}

/// `count` valid multi-signature-scheme signatures under distinct keys; with
/// `same_message` all over one 32-byte message (n nodes signing one block), else each
/// over its own.
fn bls_signatures(rng: &mut ChaCha20Rng, count: usize, same_message: bool) -> Vec<Signed> {
    let mut shared = [0u8; 32];
    rng.fill(&mut shared[..]);
    (0..count)
        .map(|_| {
            let mut message = shared.to_vec();
            if !same_message {
                rng.fill(&mut message[..]);
            }
            let secret = nidkg::random_scalar(rng);
            let hashed = <G1Projective as HashToCurve<ExpandMsgXmd<Sha256>>>::hash_to_curve(
                &message,
                BlsScheme::MultiSig.dst(),
            );
            Signed {
                signature: G1Affine::from(hashed * secret).to_compressed(),
                public_key: G2Affine::from(G2Affine::generator() * secret).to_compressed(),
                message,
            }
        })
        .collect()
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// `git describe --always --dirty` of the working directory's repository, if any.
fn git_describe() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix seconds (proleptic Gregorian calendar, UTC); `None`
/// past chrono's last representable year (262142).
fn utc_timestamp(unix: u64) -> Option<String> {
    let secs = i64::try_from(unix).ok()?;
    let time = chrono::DateTime::from_timestamp(secs, 0)?;
    Some(time.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_known_instants() {
        assert_eq!(utc_timestamp(0).as_deref(), Some("1970-01-01T00:00:00Z"));
        // 2000-02-29 (leap day of a century leap year) 12:34:56.
        assert_eq!(
            utc_timestamp(951_827_696).as_deref(),
            Some("2000-02-29T12:34:56Z")
        );
        // `date -u -d 2026-11-30T00:00:00Z +%s`; 2100 is not a leap year.
        assert_eq!(
            utc_timestamp(1_795_996_800).as_deref(),
            Some("2026-11-30T00:00:00Z")
        );
        assert_eq!(
            utc_timestamp(4_107_628_799).as_deref(),
            Some("2100-03-01T23:59:59Z")
        );
        assert_eq!(utc_timestamp(u64::MAX), None);
    }

    /// The quick run measures every operation the planner needs on the CPU, each entry
    /// consistent (seconds per item = per call / batch, items/s its inverse) and run on
    /// the CPU by the engine's own counters.
    #[test]
    fn quick_cpu_run_measures_every_operation() {
        let doc = run(BackendChoice::Cpu, true).expect("bench");
        assert_eq!(doc.schema, BENCH_SCHEMA);
        for op in [
            "decompress",
            "decompress_g2",
            "pairing_products",
            "msm_batch",
            "msm",
            "msm_shared_u8",
            "bls_verify_distinct",
            "bls_verify_same_message",
            "sha256_1mib",
        ] {
            let m = doc
                .results
                .iter()
                .find(|m| m.op == op)
                .unwrap_or_else(|| panic!("{op} missing"));
            assert_eq!(m.backend, "cpu");
            assert_eq!(m.executed_on, "cpu", "{op}");
            assert_eq!(m.repetitions, 2);
            assert!(m.seconds_per_call > 0.0, "{op}");
            let per_item = m.seconds_per_call / m.batch as f64;
            assert!(
                (m.seconds_per_item - per_item).abs() <= per_item * 1e-12,
                "{op}"
            );
            assert!(
                (m.items_per_second * m.seconds_per_item - 1.0).abs() < 1e-9,
                "{op}"
            );
            let (min, max) = (
                m.seconds_per_call_min.unwrap(),
                m.seconds_per_call_max.unwrap(),
            );
            assert!(
                min <= m.seconds_per_call && m.seconds_per_call <= max,
                "{op}"
            );
            let back: BenchDocument =
                serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
            assert_eq!(back, doc, "the document reads back as written");
        }
        let batch = doc
            .results
            .iter()
            .find(|m| m.op == "msm_batch")
            .expect("msm_batch");
        assert_eq!(batch.batch, 32 * 13 * 16);
        assert_eq!(batch.subnet_size, Some(13));
        assert!(doc.results.iter().all(|m| m.backend == "cpu"));
        assert!(doc.machine.cpu_threads >= 1);
        assert_eq!(doc.results.len(), planned_entries(&QUICK, false));
    }

    /// The start line says the entries, which paths and why, and a duration.
    #[test]
    fn headline_says_what_runs_and_how_long() {
        let line = headline(&QUICK, true, 15, &GpuStatus::NotRequested);
        assert!(
            line.starts_with("bench --quick: 15 entries (CPU path only), about "),
            "{line}"
        );
        let reason = "libcuda.so was not found".to_string();
        let line = headline(&FULL, false, 51, &GpuStatus::Unusable { reason });
        assert!(
            line.starts_with(
                "bench: 51 entries (CPU path only, no usable GPU: libcuda.so was not found), about "
            ),
            "{line}"
        );
        // At least the plan's 2 s per entry: minutes on any machine.
        assert!(line.contains(" min on "), "{line}");
    }

    /// The full plan's entries without and with a GPU: 13 and 30 per subnet size (dealing
    /// rows counted by `nidkg_bench::entries_per_size`, shared-base MSM rows, the two
    /// per-size operation cases on each engine) plus the other operation rows, 27 cases on
    /// each engine.
    #[test]
    fn planned_entries_of_the_full_plan() {
        assert_eq!(planned_entries(&FULL, false), 3 * 13 + 27);
        assert_eq!(planned_entries(&FULL, true), 3 * 30 + 2 * 27);
    }
}
