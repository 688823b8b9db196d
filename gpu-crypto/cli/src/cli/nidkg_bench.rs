//! The dealing-level rows of `bench`: one NI-DKG dealing verification (`nidkg_verify`) at
//! the IC's subnet sizes on one CPU thread and on every CPU thread (`nidkg`'s own CPU
//! path), and GPU-assisted (the engine under the default `auto` policy, each batch routed
//! by its crossover) on one host thread and on every one, with the per-phase split; and a DKG round (`nidkg_dkg_round`: the
//! 2n dealings of one round, verified one after another) on every CPU thread and
//! GPU-assisted. Every verification must accept: a rejection fails the bench.

use super::progress::Progress;
use anyhow::Context;
use gpu_crypto::{Engine, NIDKG_OPERATIONS, NidkgBatchOps, Operation};
use gpu_crypto_api::bench::{BenchEntry, DealingPhases};
use gpu_crypto_api::stats::Executed;
use nidkg::{BatchOps, CpuBatchOps, PhaseTimes};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
    // One and all CPU threads; GPU-assisted on one and on all host threads.
    2 * engines + if dkg_rounds { engines } else { 0 }
}

/// The rows; `gpu` is the GPU-assisted engine, when one is usable.
pub(super) fn measure(
    plan: &DealingPlan<'_>,
    gpu: Option<&Engine>,
    notes: &mut Vec<String>,
    progress: &Progress,
) -> anyhow::Result<Vec<BenchEntry>> {
    let one_thread = CpuBatchOps::single_thread();
    let all_threads = CpuBatchOps::rayon();
    let cpu_threads = rayon::current_num_threads();
    // GPU-assisted on one host thread too: its time is the host thread-seconds a dealing
    // costs (the planner's figure), as the one-thread CPU row's is without a GPU.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .context("a one-thread pool")?;
    let mut rows = Vec::new();
    for &n in plan.subnet_sizes {
        progress.step(format!("creating {DEALINGS_PER_SIZE} dealings, n={n}"));
        let dealings: Vec<Vec<u8>> = (0..DEALINGS_PER_SIZE)
            .map(|seed| nidkg::deal(n, seed).with_context(|| format!("dealing for n = {n}")))
            .collect::<anyhow::Result<_>>()?;
        let first = &dealings[..1];
        progress.step(format!("nidkg_verify n={n}"));
        rows.push(row(plan, "nidkg_verify", n, first, &one_thread, "cpu", 1)?);
        progress.done(1);
        rows.push(row(
            plan,
            "nidkg_verify",
            n,
            first,
            &all_threads,
            "cpu",
            cpu_threads,
        )?);
        progress.done(1);
        if let Some(engine) = gpu {
            let ops = NidkgBatchOps::new(engine);
            for threads in [1, cpu_threads] {
                let before = counts(engine);
                let mut entry = if threads == 1 {
                    one.install(|| row(plan, "nidkg_verify", n, first, &ops, "gpu", 1))?
                } else {
                    row(plan, "nidkg_verify", n, first, &ops, "gpu", threads)?
                };
                let (executed_on, routes) = routes(&before, &counts(engine));
                notes.push(format!(
                    "nidkg_verify n={n} GPU-assisted, {threads} host thread(s): {routes}"
                ));
                entry.executed_on = executed_on;
                rows.push(entry);
                progress.done(1);
            }
        }
        if plan.dkg_rounds {
            let round: Vec<Vec<u8>> = (0..2 * n)
                .map(|i| dealings[i % dealings.len()].clone())
                .collect();
            progress.step(format!("nidkg_dkg_round n={n} ({} dealings)", round.len()));
            rows.push(row(
                plan,
                "nidkg_dkg_round",
                n,
                &round,
                &all_threads,
                "cpu",
                cpu_threads,
            )?);
            progress.done(1);
            if let Some(engine) = gpu {
                let ops = NidkgBatchOps::new(engine);
                let before = counts(engine);
                let mut entry = row(plan, "nidkg_dkg_round", n, &round, &ops, "gpu", cpu_threads)?;
                entry.executed_on = routes(&before, &counts(engine)).0;
                rows.push(entry);
                progress.done(1);
            }
        }
    }
    Ok(rows)
}

/// Verifies `dealings` one after another per call, until the plan's repetitions and time.
fn row(
    plan: &DealingPlan<'_>,
    op: &str,
    n: usize,
    dealings: &[Vec<u8>],
    ops: &dyn BatchOps,
    backend: &str,
    threads: usize,
) -> anyhow::Result<BenchEntry> {
    let verify_all = || -> anyhow::Result<PhaseTimes> {
        let mut phases = PhaseTimes::default();
        for (i, dealing) in dealings.iter().enumerate() {
            let report = nidkg::verify_with(ops, dealing).map_err(|e| {
                anyhow::anyhow!(
                    "{op} n={n} on {}: dealing {i} not accepted: {e}",
                    ops.name()
                )
            })?;
            phases += report.phases;
        }
        Ok(phases)
    };
    verify_all()?;
    let started = Instant::now();
    let mut calls: Vec<(f64, PhaseTimes)> = Vec::new();
    let mut cpu_seconds: Vec<f64> = Vec::new();
    while calls.len() < plan.max_reps
        && (calls.len() < plan.min_reps || started.elapsed() < plan.min_time)
    {
        let cpu = process_cpu_seconds();
        let t = Instant::now();
        let phases = verify_all()?;
        calls.push((t.elapsed().as_secs_f64(), phases));
        if let (Some(before), Some(after)) = (cpu, process_cpu_seconds()) {
            cpu_seconds.push(after - before);
        }
    }
    cpu_seconds.sort_by(f64::total_cmp);
    // Every call or none: a median of some calls would describe other calls than the wall's.
    let host_cpu = (!cpu_seconds.is_empty() && cpu_seconds.len() == calls.len())
        .then(|| cpu_seconds[cpu_seconds.len() / 2]);
    let mut times: Vec<f64> = calls.iter().map(|(t, _)| *t).collect();
    times.sort_by(f64::total_cmp);
    let median_of = |f: fn(&PhaseTimes) -> Duration| {
        let mut v: Vec<f64> = calls.iter().map(|(_, p)| f(p).as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let median = times[times.len() / 2];
    let items = dealings.len() as f64;
    Ok(BenchEntry {
        op: op.to_string(),
        backend: backend.to_string(),
        executed_on: "cpu".to_string(),
        batch: dealings.len(),
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
        phases: (dealings.len() == 1).then(|| DealingPhases {
            deserialize: median_of(|p| p.deserialize),
            integrity: median_of(|p| p.integrity),
            chunking: median_of(|p| p.chunking),
            sharing: median_of(|p| p.sharing),
        }),
        host_cpu_seconds_per_call: host_cpu,
    })
}

/// The process's CPU time so far (user and system, every thread), where the clock reads.
fn process_cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant of the kernel.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
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
