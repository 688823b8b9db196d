//! `gpu-crypto nidkg timeline`: where one dealing verification's wall time and host CPU go.
//!
//! Every batch the verifier hands its backend is a step, with its start, its wall time and
//! the CPU time of the thread that ran it. The calling thread's CPU outside its steps is
//! the verifier's own host work (the oracles, the terms derived from them, the checks of
//! encodings); the process's CPU beyond the calling thread's is what other threads paid
//! (the overlap pool, the engine's workers, the GPU driver's threads).

use super::cpu_clock;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use nidkg::{BackendError, BatchOps, PairingBatch};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Instant;

/// One batch of a verification.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The batch operation (`BatchOps`' method name).
    pub op: &'static str,
    /// What the batch holds, in words.
    pub items: String,
    /// Seconds from the call's start.
    pub start: f64,
    pub wall: f64,
    /// CPU seconds of the thread that ran the step, where its clock reads.
    pub thread_cpu: Option<f64>,
    /// Whether the calling thread ran it (else a thread of the overlap pool).
    pub on_caller: bool,
}

/// One verification call: its steps and its totals.
#[derive(Clone, Debug)]
pub(crate) struct Pass {
    pub steps: Vec<Step>,
    pub wall: f64,
    /// CPU seconds of the calling thread over the call.
    pub caller_cpu: Option<f64>,
    /// CPU seconds of the whole process over the call.
    pub process_cpu: Option<f64>,
}

/// Runs `verify` on a backend that records each batch of `inner` as a step.
pub(crate) fn record_pass<T>(
    inner: &dyn BatchOps,
    verify: impl FnOnce(&dyn BatchOps) -> T,
) -> (T, Pass) {
    let recorder = Recorder {
        inner,
        start: Instant::now(),
        caller: std::thread::current().id(),
        steps: Mutex::new(Vec::new()),
    };
    let (thread0, process0) = (cpu_clock::thread_seconds(), cpu_clock::process_seconds());
    let out = verify(&recorder);
    let wall = recorder.start.elapsed().as_secs_f64();
    let pass = Pass {
        steps: recorder
            .steps
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
        wall,
        caller_cpu: elapsed(thread0, cpu_clock::thread_seconds()),
        process_cpu: elapsed(process0, cpu_clock::process_seconds()),
    };
    (out, pass)
}

fn elapsed(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    Some(after? - before?)
}

impl Pass {
    /// The calling thread's wall and CPU seconds outside its own steps: the verifier's
    /// host work between the batches.
    pub(crate) fn outside_steps(&self) -> (f64, Option<f64>) {
        let caller = || self.steps.iter().filter(|s| s.on_caller);
        let wall = self.wall - caller().map(|s| s.wall).sum::<f64>();
        let step_cpu: Option<f64> = caller().map(|s| s.thread_cpu).sum();
        (wall, elapsed(step_cpu, self.caller_cpu))
    }

    /// CPU seconds of the threads other than the calling one.
    pub(crate) fn other_threads_cpu(&self) -> Option<f64> {
        elapsed(self.caller_cpu, self.process_cpu)
    }

    /// Per batch operation, in order of first use, its steps summed.
    fn per_op(&self) -> Vec<OpTotal> {
        let mut ops: Vec<OpTotal> = Vec::new();
        for s in &self.steps {
            let i = match ops.iter().position(|o| o.op == s.op) {
                Some(i) => i,
                None => {
                    ops.push(OpTotal {
                        op: s.op,
                        steps: 0,
                        wall: 0.0,
                        thread_cpu: Some(0.0),
                    });
                    ops.len() - 1
                }
            };
            let o = &mut ops[i];
            o.steps += 1;
            o.wall += s.wall;
            o.thread_cpu = o.thread_cpu.zip(s.thread_cpu).map(|(a, b)| a + b);
        }
        ops
    }
}

/// One batch operation's steps of a call, summed.
struct OpTotal {
    op: &'static str,
    steps: usize,
    wall: f64,
    thread_cpu: Option<f64>,
}

/// The report of `passes` (at least one): the median call's steps, then per operation
/// the median over the calls.
pub(crate) fn report(title: &str, passes: &[Pass]) -> String {
    let mut by_wall: Vec<&Pass> = passes.iter().collect();
    by_wall.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    let median_call = by_wall[by_wall.len() / 2];
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "median call: wall {}, host CPU {} (calling thread {}, other threads {})",
        ms(Some(median_call.wall)),
        ms(median_call.process_cpu),
        ms(median_call.caller_cpu),
        ms(median_call.other_threads_cpu())
    );
    out.push_str(&steps_table(median_call));
    out.push_str(&medians_table(passes));
    out
}

/// The median call's steps in start order.
fn steps_table(pass: &Pass) -> String {
    let mut steps: Vec<&Step> = pass.steps.iter().collect();
    steps.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut out = String::from(
        "\nthe median call's batches (ms from the call's start):\n     start      wall  thread CPU  thread  batch\n",
    );
    for s in steps {
        let _ = writeln!(
            out,
            "{:>10.3}{:>10.3}{:>12}  {:<6}  {} ({})",
            s.start * 1e3,
            s.wall * 1e3,
            ms_bare(s.thread_cpu),
            if s.on_caller { "caller" } else { "pool" },
            s.op,
            s.items
        );
    }
    let (wall, cpu) = pass.outside_steps();
    let _ = writeln!(
        out,
        "outside the batches, on the calling thread: wall {}, CPU {}",
        ms(Some(wall)),
        ms(cpu)
    );
    out
}

/// Per operation, the median over the calls of its summed wall and thread CPU; then the
/// verifier's host work outside the batches, the other threads' CPU and the whole call.
fn medians_table(passes: &[Pass]) -> String {
    let mut out = format!(
        "\nmedians over the {} calls (each operation's steps summed within a call):\n  batch                        steps       wall  thread CPU\n",
        passes.len()
    );
    let per_call: Vec<Vec<OpTotal>> = passes.iter().map(Pass::per_op).collect();
    // Every operation in its order of first use over the calls (overlapped calls may
    // order their steps differently), with its step count where it first appears.
    let mut seen: Vec<(&'static str, usize)> = Vec::new();
    for o in per_call.iter().flatten() {
        if !seen.iter().any(|(op, _)| *op == o.op) {
            seen.push((o.op, o.steps));
        }
    }
    for (op, steps) in seen {
        let of = |pick: fn(&OpTotal) -> Option<f64>| {
            median(per_call.iter().map(|ops| {
                ops.iter()
                    .find(|o| o.op == op)
                    .and_then(pick)
                    .unwrap_or(f64::NAN)
            }))
        };
        let (wall, cpu) = (of(|o| Some(o.wall)), of(|o| o.thread_cpu));
        medians_row(&mut out, op, &steps.to_string(), &ms(wall), &ms(cpu));
    }
    let over_calls = |value: fn(&Pass) -> Option<f64>| {
        ms(median(passes.iter().map(|p| value(p).unwrap_or(f64::NAN))))
    };
    let outside_wall = over_calls(|p| Some(p.outside_steps().0));
    let outside_cpu = over_calls(|p| p.outside_steps().1);
    medians_row(
        &mut out,
        "outside the batches",
        "",
        &outside_wall,
        &outside_cpu,
    );
    let others = over_calls(Pass::other_threads_cpu);
    medians_row(&mut out, "other threads", "", "", &others);
    let (wall, host) = (over_calls(|p| Some(p.wall)), over_calls(|p| p.process_cpu));
    medians_row(&mut out, "the call (host CPU: process)", "", &wall, &host);
    out
}

fn medians_row(out: &mut String, label: &str, steps: &str, wall: &str, cpu: &str) {
    let _ = writeln!(out, "  {label:<28} {steps:>5} {wall:>10} {cpu:>11}");
}

/// The median of values, `None` when any is not a number (a clock that did not read).
fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() || v.iter().any(|x| x.is_nan()) {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or("-".to_string(), |s| format!("{:.3} ms", s * 1e3))
}

fn ms_bare(seconds: Option<f64>) -> String {
    seconds.map_or("-".to_string(), |s| format!("{:.3}", s * 1e3))
}

/// A backend that records each batch of `inner` as a step.
struct Recorder<'a> {
    inner: &'a dyn BatchOps,
    start: Instant,
    caller: ThreadId,
    steps: Mutex<Vec<Step>>,
}

impl Recorder<'_> {
    fn record<T>(&self, op: &'static str, items: String, batch: impl FnOnce() -> T) -> T {
        let start = self.start.elapsed().as_secs_f64();
        let cpu = cpu_clock::thread_seconds();
        let t = Instant::now();
        let out = batch();
        let step = Step {
            op,
            items,
            start,
            wall: t.elapsed().as_secs_f64(),
            thread_cpu: elapsed(cpu, cpu_clock::thread_seconds()),
            on_caller: std::thread::current().id() == self.caller,
        };
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step);
        out
    }
}

fn msms_items<P>(msms: &[(Vec<P>, Vec<Scalar>)]) -> String {
    let points: usize = msms.iter().map(|(p, _)| p.len()).sum();
    format!("{} MSMs, {points} points", msms.len())
}

impl BatchOps for Recorder<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn overlap_pool(&self) -> Option<&rayon::ThreadPool> {
        self.inner.overlap_pool()
    }

    fn g1_decompress(&self, points: &[[u8; 48]]) -> Result<Vec<Option<G1Affine>>, BackendError> {
        let items = format!("{} points", points.len());
        self.record("g1_decompress", items, || self.inner.g1_decompress(points))
    }

    fn g2_decompress(&self, points: &[[u8; 96]]) -> Result<Vec<Option<G2Affine>>, BackendError> {
        let items = format!("{} points", points.len());
        self.record("g2_decompress", items, || self.inner.g2_decompress(points))
    }

    fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        let items = format!("{rows} MSMs, {} bases", bases.len());
        self.record("g1_msm_shared_u8", items, || {
            self.inner.g1_msm_shared_u8(bases, scalars, rows)
        })
    }

    fn g1_msm_shared(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        let items = format!("{rows} MSMs, {} bases", bases.len());
        self.record("g1_msm_shared", items, || {
            self.inner.g1_msm_shared(bases, scalars, rows)
        })
    }

    fn g1_msm(
        &self,
        msms: &[(Vec<G1Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.record("g1_msm", msms_items(msms), || self.inner.g1_msm(msms))
    }

    fn g2_msm(
        &self,
        msms: &[(Vec<G2Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G2Projective>, BackendError> {
        self.record("g2_msm", msms_items(msms), || self.inner.g2_msm(msms))
    }

    fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, BackendError> {
        let items = format!("{} rows", rows.len());
        self.record("g1_recombine_chunks", items, || {
            self.inner.g1_recombine_chunks(rows)
        })
    }

    fn pairing_products_are_identity(
        &self,
        batch: &PairingBatch,
    ) -> Result<Vec<bool>, BackendError> {
        let pairs: usize = batch.products.iter().map(Vec::len).sum();
        let items = format!("{} products, {pairs} pairs", batch.products.len());
        self.record("pairing_products", items, || {
            self.inner.pairing_products_are_identity(batch)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nidkg::CpuBatchOps;

    fn dealing(n: usize) -> Vec<u8> {
        nidkg::deal(n, 7).expect("a dealing")
    }

    #[test]
    fn a_recorded_verification_keeps_its_verdict_and_accounts_for_its_time() {
        let bytes = dealing(4);
        let cpu = CpuBatchOps::single_thread();
        let (report, pass) = record_pass(&cpu, |ops| nidkg::verify_with(ops, &bytes));
        assert!(report.is_ok(), "{report:?}");
        // The exact checks' batches, each named once at least.
        for op in [
            "g1_decompress",
            "g2_decompress",
            "pairing_products",
            "g1_msm",
        ] {
            assert!(pass.steps.iter().any(|s| s.op == op), "{op}: {pass:?}");
        }
        assert!(pass.steps.iter().all(|s| s.on_caller));
        // Steps lie inside the call, one after the other on one thread.
        let mut end = 0.0;
        for s in &pass.steps {
            assert!(s.start >= end - 1e-9 && s.start + s.wall <= pass.wall + 1e-9);
            end = s.start + s.wall;
        }
        let (outside_wall, outside_cpu) = pass.outside_steps();
        assert!(outside_wall >= 0.0 && outside_wall < pass.wall);
        // The CPU path computes on the calling thread: its steps' CPU is most of the call's.
        let steps_cpu: f64 = pass.steps.iter().filter_map(|s| s.thread_cpu).sum();
        let caller = pass.caller_cpu.expect("the thread clock reads");
        assert!(steps_cpu > 0.5 * caller, "steps {steps_cpu} of {caller}");
        assert!((outside_cpu.unwrap() + steps_cpu - caller).abs() < 1e-9);
    }

    /// Overlapped, the second batch of each pair runs on the pool: its step says so, and
    /// the calling thread's time outside its steps counts only its own.
    #[test]
    fn overlapped_batches_are_recorded_on_the_pool() {
        let file = dealing(4);
        let engine = gpu_crypto::Engine::cpu_only();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let ops = gpu_crypto::NidkgBatchOps::overlapping(&engine, &pool);
        let (report, pass) = record_pass(&ops, |ops| {
            crate::cli::nidkg::combined_batch(ops, std::slice::from_ref(&file))
        });
        let report = report.expect("parsed");
        assert!(report.verdicts.iter().all(Result::is_ok), "{report:?}");
        let on_pool: Vec<&str> = pass
            .steps
            .iter()
            .filter(|s| !s.on_caller)
            .map(|s| s.op)
            .collect();
        // The G2 decompression beside the G1's, the proofs beside the integrity check.
        assert!(on_pool.contains(&"g2_decompress"), "{on_pool:?}");
        assert!(pass.steps.iter().any(|s| s.on_caller), "{pass:?}");
        let caller_steps: f64 = pass
            .steps
            .iter()
            .filter(|s| s.on_caller)
            .map(|s| s.wall)
            .sum();
        let (outside_wall, _) = pass.outside_steps();
        assert!((outside_wall - (pass.wall - caller_steps)).abs() < 1e-12);
    }

    #[test]
    fn a_rejection_passes_through_the_recorder_unchanged() {
        let mut bytes = dealing(4);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let cpu = CpuBatchOps::single_thread();
        let plain = nidkg::verify_with(&cpu, &bytes).map(|_| ());
        let (recorded, _) = record_pass(&cpu, |ops| nidkg::verify_with(ops, &bytes).map(|_| ()));
        assert!(plain.is_err());
        assert_eq!(format!("{plain:?}"), format!("{recorded:?}"));
    }

    #[test]
    fn the_report_names_every_operation_and_the_host_work_outside_them() {
        let bytes = dealing(4);
        let cpu = CpuBatchOps::single_thread();
        let passes: Vec<Pass> = (0..3)
            .map(|_| record_pass(&cpu, |ops| nidkg::verify_with(ops, &bytes)).1)
            .collect();
        let text = report("title", &passes);
        for op in [
            "g1_decompress",
            "g2_msm",
            "pairing_products",
            "outside the batches",
        ] {
            assert!(text.contains(op), "{op} in\n{text}");
        }
        assert!(text.starts_with("title\nmedian call: wall "), "{text}");
        assert!(!text.contains("NaN"), "{text}");
    }
}
