//! The dealing-level rows of `bench`, at the IC's subnet sizes, on the CPU (`nidkg`'s own
//! path) and GPU-assisted (`gpu`: the engine under the default `auto` policy, each batch
//! routed by its crossover), on one host thread and on every one; and, on one host thread,
//! offloaded (backend `gpu`, algorithm `offload`): every batch of a dealing on the GPU but
//! the pairing products (the configuration that frees the most host CPU), once more with
//! the host thread spinning on its GPU waits (algorithm `offload-spin`) instead of
//! sleeping, and once with the verifier's independent batches issued at once, the second of
//! each pair from a pool of three more host threads (algorithm `offload-overlap`,
//! `NidkgBatchOps::overlapping`; the row's `threads` counts all four):
//!
//! - `nidkg_verify`: one NI-DKG dealing, the exact checks, with the per-phase split;
//! - `nidkg_verify_combined`: the same dealing through `verify_batch`, the combined checks;
//! - `nidkg_dkg_round`: the 2n dealings of one round, verified one after another;
//! - `nidkg_dkg_round_batch`: the same 2n dealings in one `verify_batch` call, the combined
//!   checks (GPU-assisted on one host thread too).
//!
//! Every verification must accept: a rejection fails the bench.

use super::cpu_clock;
use super::progress::Progress;
use anyhow::Context;
use gpu_crypto::{Engine, GpuWait, NIDKG_OPERATIONS, NidkgBatchOps, Operation};
use gpu_crypto_api::bench::{BenchEntry, DealingPhases};
use gpu_crypto_api::stats::Executed;
use nidkg::{BatchOps, CpuBatchOps, PhaseTimes};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Threads of the overlap pool per calling thread: one per nested pair of the combined
/// checks (the proofs beside the integrity check, and each one's G2 MSM beside its G1 MSM).
const OVERLAP_THREADS: usize = 3;

/// What to measure and how often.
pub(super) struct DealingPlan<'a> {
    pub subnet_sizes: &'a [usize],
    /// Whether to measure whole DKG rounds (2n dealings) too.
    pub dkg_rounds: bool,
    pub min_reps: usize,
    pub max_reps: usize,
    pub min_time: Duration,
}

/// Distinct dealings per subnet size; a round cycles through them.
pub(super) const DEALINGS_PER_SIZE: u64 = 2;

/// The rows [`measure`] produces per subnet size.
pub(super) fn entries_per_size(dkg_rounds: bool, gpu: bool) -> usize {
    let engines = 1 + usize::from(gpu);
    let gpu = usize::from(gpu);
    // One dealing, exact and combined checks, on one and on every host thread per engine,
    // and offloaded on one host thread (exact, combined, combined spinning, combined
    // overlapped); a round one dealing after another per engine, and as one combined batch
    // per engine on every host thread, GPU-assisted on one too, offloaded on one and on
    // every one, and offloaded overlapped on one.
    4 * engines + 4 * gpu + if dkg_rounds { 2 * engines + 4 * gpu } else { 0 }
}

/// Where a row's batches run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// `nidkg`'s CPU path.
    Cpu,
    /// The engine under the default `auto` policy.
    Assisted,
    /// The engine with every dealing batch on the GPU but the pairing products.
    Offload,
    /// [`Path::Offload`] with the host thread spinning on its GPU waits.
    OffloadSpin,
    /// [`Path::Offload`] with independent batches issued at once, from a second host thread.
    OffloadOverlap,
}

impl Path {
    /// The row's `backend`: `cpu` or `gpu`, as the bench document's schema says.
    fn backend(self) -> &'static str {
        match self {
            Path::Cpu => "cpu",
            _ => "gpu",
        }
    }

    /// The row's `algorithm`: which GPU configuration, where it is not the default policy.
    fn algorithm(self) -> Option<&'static str> {
        match self {
            Path::Cpu | Path::Assisted => None,
            Path::Offload => Some("offload"),
            Path::OffloadSpin => Some("offload-spin"),
            Path::OffloadOverlap => Some("offload-overlap"),
        }
    }
}

/// The GPU engines of the dealing rows.
pub(super) struct DealingEngines<'a> {
    /// The engine under the default `auto` policy.
    pub assisted: &'a Engine,
    /// Every dealing batch on the GPU but the pairing products ([`offload_policy`]).
    pub offload: &'a Engine,
}

/// Every operation of a dealing on the GPU from one item, but the pairing products: the
/// GPU runs one product per thread, tens of milliseconds for a dealing's one or sixteen.
pub(super) fn offload_policy() -> gpu_crypto::Policy {
    let mut policy = gpu_crypto::Policy::auto();
    for op in NIDKG_OPERATIONS {
        let p = policy.operation_mut(op);
        p.backend = gpu_crypto::BackendChoice::Gpu;
        p.gpu_min_batch = 1;
    }
    policy.pairing_products.backend = gpu_crypto::BackendChoice::Cpu;
    policy.fallback = gpu_crypto::Fallback::Never;
    policy
}

/// How a row's dealings are verified.
#[derive(Clone, Copy)]
enum Mode {
    /// One `verify_with` per dealing, the exact checks.
    OneByOne,
    /// All of them in one `verify_batch` call, the combined checks.
    CombinedBatch,
}

/// Rows of one set of dealings: the operation, how it is verified, where, and the host
/// thread counts.
type Job<'a> = (&'static str, Mode, Path, &'a [usize]);

/// The rows; `gpu` are the GPU engines, when one is usable.
pub(super) fn measure(
    plan: &DealingPlan<'_>,
    gpu: Option<&DealingEngines<'_>>,
    notes: &mut Vec<String>,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let one = [1];
    let one_and_all = [1, rayon::current_num_threads()];
    let all = [rayon::current_num_threads()];
    let (verify, combined) = ("nidkg_verify", "nidkg_verify_combined");
    let one_dealing: [Job<'_>; 8] = [
        (verify, Mode::OneByOne, Path::Cpu, &one_and_all),
        (verify, Mode::OneByOne, Path::Assisted, &one_and_all),
        (combined, Mode::CombinedBatch, Path::Cpu, &one_and_all),
        (combined, Mode::CombinedBatch, Path::Assisted, &one_and_all),
        (verify, Mode::OneByOne, Path::Offload, &one),
        (combined, Mode::CombinedBatch, Path::Offload, &one),
        (combined, Mode::CombinedBatch, Path::OffloadSpin, &one),
        (combined, Mode::CombinedBatch, Path::OffloadOverlap, &one),
    ];
    let (round, batch) = ("nidkg_dkg_round", "nidkg_dkg_round_batch");
    let a_round: [Job<'_>; 6] = [
        (round, Mode::OneByOne, Path::Cpu, &all),
        (batch, Mode::CombinedBatch, Path::Cpu, &all),
        (round, Mode::OneByOne, Path::Assisted, &all),
        (batch, Mode::CombinedBatch, Path::Assisted, &one_and_all),
        (batch, Mode::CombinedBatch, Path::Offload, &one_and_all),
        (batch, Mode::CombinedBatch, Path::OffloadOverlap, &one),
    ];
    let mut rows = Vec::new();
    for &n in plan.subnet_sizes {
        progress.step(format!("creating {DEALINGS_PER_SIZE} dealings, n={n}"));
        let dealings: Vec<Vec<u8>> = (0..DEALINGS_PER_SIZE)
            .map(|seed| nidkg::deal(n, seed).with_context(|| format!("dealing for n = {n}")))
            .collect::<anyhow::Result<_>>()?;
        let set = (n, &dealings[..1]);
        rows.extend(run_jobs(plan, set, gpu, &one_dealing, notes, progress)?);
        if plan.dkg_rounds {
            let round: Vec<Vec<u8>> = (0..2 * n)
                .map(|i| dealings[i % dealings.len()].clone())
                .collect();
            rows.extend(run_jobs(plan, (n, &round), gpu, &a_round, notes, progress)?);
        }
    }
    Ok(rows)
}

/// The rows of `jobs` on the dealings of a subnet of `n`; GPU jobs only with engines.
fn run_jobs(
    plan: &DealingPlan<'_>,
    (n, dealings): (usize, &[Vec<u8>]),
    gpu: Option<&DealingEngines<'_>>,
    jobs: &[Job<'_>],
    notes: &mut Vec<String>,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let mut rows = Vec::new();
    for &(op, mode, path, threads) in jobs {
        let engine = match (path, gpu) {
            (Path::Cpu, _) => None,
            (_, None) => continue,
            (Path::Assisted, Some(g)) => Some(g.assisted),
            (Path::Offload | Path::OffloadSpin | Path::OffloadOverlap, Some(g)) => Some(g.offload),
        };
        progress.step(format!("{op} n={n} ({} dealing(s))", dealings.len()));
        let wait = |w| engine.map_or(Ok(()), |e| e.set_gpu_wait(w));
        wait(if path == Path::OffloadSpin {
            GpuWait::Spin
        } else {
            GpuWait::Block
        })?;
        let measured = engine_rows(
            plan,
            (op, mode, path),
            n,
            dealings,
            engine,
            threads,
            notes,
            progress,
        );
        wait(GpuWait::Block)?;
        rows.extend(measured?);
    }
    Ok(rows)
}

/// One row per host thread count: `dealings` verified on the CPU (`engine` none) or
/// GPU-assisted, inside a pool of that many threads.
#[allow(clippy::too_many_arguments)]
fn engine_rows(
    plan: &DealingPlan<'_>,
    (op, mode, path): (&str, Mode, Path),
    n: usize,
    dealings: &[Vec<u8>],
    engine: Option<&Engine>,
    host_threads: &[usize],
    notes: &mut Vec<String>,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let mut rows = Vec::new();
    for &threads in host_threads {
        // A pool of `threads`: its time is the host thread-seconds the work costs.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("a thread pool")?;
        let entry = match engine {
            None => {
                let cpu = if threads == 1 {
                    CpuBatchOps::single_thread()
                } else {
                    CpuBatchOps::rayon()
                };
                pool.install(|| row(plan, op, mode, n, dealings, &cpu, "cpu", threads))?
            }
            Some(engine) => {
                // Overlapped, the second batch of each pair runs on a pool of three threads
                // per calling thread (every pair of the combined checks at once): the row
                // counts them all.
                let companion = (path == Path::OffloadOverlap)
                    .then(|| {
                        rayon::ThreadPoolBuilder::new()
                            .num_threads(OVERLAP_THREADS * threads)
                            .build()
                    })
                    .transpose()
                    .context("a thread pool")?;
                let (ops, threads) = match &companion {
                    Some(c) => (
                        NidkgBatchOps::overlapping(engine, c),
                        (1 + OVERLAP_THREADS) * threads,
                    ),
                    None => (NidkgBatchOps::new(engine), threads),
                };
                let before = counts(engine);
                let backend = path.backend();
                let mut entry =
                    pool.install(|| row(plan, op, mode, n, dealings, &ops, backend, threads))?;
                let (executed_on, routes) = routes(&before, &counts(engine));
                let variant = path.algorithm().map_or(String::new(), |a| format!(" {a}"));
                notes.push(format!(
                    "{op} n={n} {backend}{variant}, {threads} host thread(s): {routes}"
                ));
                entry.executed_on = executed_on;
                entry.algorithm = path.algorithm().map(str::to_string);
                entry
            }
        };
        rows.push(entry);
        progress.done(1);
    }
    Ok(rows)
}

/// Verifies `dealings` (per call, as `mode` says), until the plan's repetitions and time.
#[allow(clippy::too_many_arguments)]
fn row(
    plan: &DealingPlan<'_>,
    op: &str,
    mode: Mode,
    n: usize,
    dealings: &[Vec<u8>],
    ops: &dyn BatchOps,
    backend: &str,
    threads: usize,
) -> anyhow::Result<BenchEntry> {
    let call = || verify_all(op, mode, n, dealings, ops);
    call()?;
    let calls = timed_calls(plan, call)?;
    let mut entry = calls.entry(op, n, dealings.len(), backend, threads);
    entry.phases = (dealings.len() == 1).then(|| calls.median_phases());
    Ok(entry)
}

/// One call of a row: every dealing verified (as `mode` says), each one accepted; the
/// phases summed over the dealings.
fn verify_all(
    op: &str,
    mode: Mode,
    n: usize,
    dealings: &[Vec<u8>],
    ops: &dyn BatchOps,
) -> anyhow::Result<PhaseTimes> {
    let not_accepted = |i: usize, e: &nidkg::VerifyError| {
        anyhow::anyhow!(
            "{op} n={n} on {}: dealing {i} not accepted: {e}",
            ops.name()
        )
    };
    match mode {
        Mode::OneByOne => {
            let mut phases = PhaseTimes::default();
            for (i, dealing) in dealings.iter().enumerate() {
                let report = nidkg::verify_with(ops, dealing).map_err(|e| not_accepted(i, &e))?;
                phases += report.phases;
            }
            Ok(phases)
        }
        Mode::CombinedBatch => {
            let report = super::nidkg::combined_batch(ops, dealings)?;
            if let Some((i, Err(e))) = report.verdicts.iter().enumerate().find(|(_, v)| v.is_err())
            {
                return Err(not_accepted(i, e));
            }
            Ok(report.phases)
        }
    }
}

/// The timed calls of a row: each call's wall seconds and phases, and the median of the
/// process CPU seconds per call.
struct Calls {
    /// (wall seconds, phases) per call, in call order.
    calls: Vec<(f64, PhaseTimes)>,
    /// The median host CPU seconds of a call, when the clock read for every call (a median
    /// of some calls would describe other calls than the wall's).
    host_cpu: Option<f64>,
}

/// Calls `call` until the plan's repetitions and time, timing each by the wall and the
/// process's CPU clock.
fn timed_calls(
    plan: &DealingPlan<'_>,
    call: impl Fn() -> anyhow::Result<PhaseTimes>,
) -> anyhow::Result<Calls> {
    let started = Instant::now();
    let mut calls: Vec<(f64, PhaseTimes)> = Vec::new();
    let mut cpu_seconds: Vec<f64> = Vec::new();
    while calls.len() < plan.max_reps
        && (calls.len() < plan.min_reps || started.elapsed() < plan.min_time)
    {
        let cpu = cpu_clock::process_seconds();
        let t = Instant::now();
        let phases = call()?;
        calls.push((t.elapsed().as_secs_f64(), phases));
        if let (Some(before), Some(after)) = (cpu, cpu_clock::process_seconds()) {
            cpu_seconds.push(after - before);
        }
    }
    cpu_seconds.sort_by(f64::total_cmp);
    let host_cpu = (!cpu_seconds.is_empty() && cpu_seconds.len() == calls.len())
        .then(|| cpu_seconds[cpu_seconds.len() / 2]);
    Ok(Calls { calls, host_cpu })
}

impl Calls {
    /// The row's entry from the calls' wall times: the median call, the fastest and the
    /// slowest, per call of `batch` dealings; no phases.
    fn entry(&self, op: &str, n: usize, batch: usize, backend: &str, threads: usize) -> BenchEntry {
        let mut times: Vec<f64> = self.calls.iter().map(|(t, _)| *t).collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let items = batch as f64;
        BenchEntry {
            op: op.to_string(),
            backend: backend.to_string(),
            executed_on: "cpu".to_string(),
            batch,
            msms: None,
            points_per_msm: None,
            subnet_size: Some(n),
            repetitions: times.len(),
            seconds_per_call: median,
            seconds_per_call_min: times.first().copied(),
            seconds_per_call_max: times.last().copied(),
            seconds_per_item: median / items,
            items_per_second: items / median,
            threads,
            source: "measured".to_string(),
            reference: None,
            algorithm: None,
            phases: None,
            host_cpu_seconds_per_call: self.host_cpu,
        }
    }

    /// The median of each phase over the calls (each phase's own median).
    fn median_phases(&self) -> DealingPhases {
        let median_of = |f: fn(&PhaseTimes) -> Duration| {
            let mut v: Vec<f64> = self.calls.iter().map(|(_, p)| f(p).as_secs_f64()).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        DealingPhases {
            deserialize: median_of(|p| p.deserialize),
            integrity: median_of(|p| p.integrity),
            chunking: median_of(|p| p.chunking),
            sharing: median_of(|p| p.sharing),
        }
    }
}

/// Items the engine ran per (operation, where) so far.
fn counts(engine: &Engine) -> BTreeMap<(Operation, Executed), u64> {
    engine
        .stats()
        .operations
        .into_iter()
        .map(|c| ((c.operation, c.executed), c.items))
        .collect()
}

/// Where the calls between two counts ran (`cpu`, `gpu` or `mixed`), and per operation.
fn routes(
    before: &BTreeMap<(Operation, Executed), u64>,
    after: &BTreeMap<(Operation, Executed), u64>,
) -> (String, String) {
    let ran = |op: Operation, on: Executed| {
        after.get(&(op, on)).copied().unwrap_or(0) > before.get(&(op, on)).copied().unwrap_or(0)
    };
    let mut any = [false; 2];
    let mut parts = Vec::new();
    for op in NIDKG_OPERATIONS {
        let on: Vec<&str> = [Executed::Cpu, Executed::Gpu]
            .into_iter()
            .enumerate()
            .filter(|(_, e)| ran(op, *e))
            .map(|(i, e)| {
                any[i] = true;
                e.name()
            })
            .collect();
        if !on.is_empty() {
            parts.push(format!("{op} on {}", on.join("+")));
        }
    }
    let executed_on = match any {
        [true, false] => "cpu",
        [false, true] => "gpu",
        _ => "mixed",
    };
    (executed_on.to_string(), parts.join(", "))
}

#[cfg(test)]
mod tests {
    /// The GPU suite's timelines read the offload configuration from a policy file: it must
    /// be the bench's.
    #[test]
    fn the_suites_offload_policy_file_is_the_benchs_offload_policy() {
        let file: gpu_crypto::Policy =
            toml::from_str(include_str!("../../../device/suite/offload-policy.toml"))
                .expect("the suite's policy file parses");
        assert_eq!(file, super::offload_policy());
    }
}
