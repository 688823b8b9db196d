//! The node's crypto selftest: `gpu_crypto::selftest` (the same one `gpu-crypto selftest`
//! runs) through an engine built from the profile's policy, so the crypto path the node
//! reports is proven, not assumed. Where an operation may run on the GPU, its data is at
//! least the operation's GPU crossover, so the batch really runs there and is compared
//! with the CPU reference item by item.
//!
//! `node-agent run` runs it in a short-lived child process (the agent's own binary, hidden
//! `selftest` subcommand; see [`crate::child`]) with a timeout and reads the report from its standard output:
//! the CUDA context, NVRTC and the kernels (over 100 MB of RSS on the H200) then never live
//! in the long-running daemon, and a GPU fault or hang cannot take the agent down with it.

use crate::metric_family::{FamilyWriter, flag, one};
use gpu_crypto::Engine;
use gpu_crypto::selftest;
use gpu_crypto_api::selftest::SelftestReport;
use gpu_crypto_api::stats::StatsSnapshot;
use gpu_crypto_api::{EngineReport, GpuStatus, Operation, Policy};
use prometheus_client::registry::Unit;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::process::Command;
use std::time::Duration;

/// Items per operation where the operation runs on the CPU.
const CPU_ITEMS: usize = 8;
/// Seed of the selftest's data.
const SEED: u64 = 0x5eed;
/// Longest a selftest child may take (GPU: context creation and kernel compilation, a few
/// seconds on the H200) before it is killed and the selftest counted as failed.
pub const SELFTEST_TIMEOUT: Duration = Duration::from_secs(120);

/// What the node reports about its crypto path: the engine's report (paths, GPU state), the
/// selftest's verdict, and the selftest engine's counters (where each operation ran).
#[derive(Debug, Clone)]
pub struct CryptoOutcome {
    /// The engine's paths and GPU state (a CPU-only engine's when the selftest failed).
    pub report: EngineReport,
    /// The selftest's verdict, one line per check.
    pub selftest: SelftestResult,
    /// The selftest engine's counters: calls and items per operation, by where they ran.
    pub stats: StatsSnapshot,
    /// How the selftest's engine obtained its GPU programs (none without a GPU).
    pub kernel_loads: Vec<KernelLoadCount>,
}

/// The crypto path as the snapshot reports it: the selftest's outcome and the CPU time the
/// GPU saved.
#[derive(Debug, Clone, Serialize)]
pub struct CryptoStatus {
    /// The engine's paths and GPU state, as established at start.
    pub report: EngineReport,
    /// The selftest's verdict.
    pub selftest: SelftestResult,
    /// The selftest engine's counters.
    pub stats: StatsSnapshot,
    /// CPU-seconds the GPU saved (GPU items x configured CPU cost per item).
    pub offloaded_cpu_seconds: f64,
    /// How the selftest's engine obtained its GPU programs at start.
    pub kernel_loads: Vec<KernelLoadCount>,
}

/// The selftest's verdict.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SelftestResult {
    /// Every check passed.
    pub passed: bool,
    /// One line per check, "ok: ..." or "FAILED: ...".
    pub checks: Vec<String>,
}

/// One counter of `gpu_crypto::Engine::kernel_loads` (precompiled, cache,
/// compiled, skipped or refused, with the reason kind), owned for the trip through JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLoadCount {
    /// `precompiled`, `cache`, `compiled`, `skipped` or `refused`.
    pub outcome: String,
    /// The reason kind (a short, bounded label); empty where there is none.
    pub reason: String,
    /// GPU programs loaded with this outcome and reason since the process started.
    pub count: u64,
}

fn kernel_loads() -> Vec<KernelLoadCount> {
    gpu_crypto::Engine::kernel_loads()
        .into_iter()
        .map(|c| KernelLoadCount {
            outcome: c.outcome,
            reason: c.reason,
            count: c.count,
        })
        .collect()
}

/// What the `selftest` child prints on standard output (one JSON object).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ChildOutput {
    /// The engine started and the selftest ran.
    Report {
        /// The selftest's report: per-operation checks, engine report and counters.
        report: Box<SelftestReport>,
        /// How the engine obtained its GPU programs.
        #[serde(default)]
        kernel_loads: Vec<KernelLoadCount>,
    },
    /// The engine could not start under the policy (e.g. a GPU-pinned operation, no GPU, or
    /// kernels refused in cached-only mode: `kernel_loads` says which).
    EngineFailed {
        /// The engine's error.
        reason: String,
        /// How the engine tried to obtain its GPU programs.
        #[serde(default)]
        kernel_loads: Vec<KernelLoadCount>,
    },
}

/// The selftest's data size per operation for `engine`.
fn items_for(engine: &Engine) -> impl Fn(Operation) -> usize + '_ {
    move |op| selftest::gpu_batch(engine, op).map_or(CPU_ITEMS, |n| n.max(CPU_ITEMS))
}

/// Builds the engine of `policy` and runs the selftest in this process. This is what the
/// child does; `node-agent check` (one-shot) and the tests call it directly.
pub fn run_selftest(policy: Policy) -> ChildOutput {
    match Engine::new(policy) {
        Ok(engine) => ChildOutput::Report {
            report: Box::new(selftest::run(&engine, &[], items_for(&engine), SEED)),
            kernel_loads: kernel_loads(),
        },
        Err(e) => ChildOutput::EngineFailed {
            reason: e.to_string(),
            kernel_loads: kernel_loads(),
        },
    }
}

/// The hidden `node-agent selftest` subcommand: the policy as JSON on standard input, the
/// [`ChildOutput`] as JSON on standard output.
pub fn child_main() -> anyhow::Result<()> {
    crate::child::serve_json(run_selftest)
}

/// Runs the selftest of `policy` in `command` (normally `node-agent selftest`), giving it
/// `timeout`. A child that fails, hangs or prints something unreadable is a failed selftest
/// saying why, never a pass.
pub fn selftest_in_child(
    mut command: Command,
    policy: &Policy,
    timeout: Duration,
) -> CryptoOutcome {
    match crate::child::exchange_json(&mut command, policy, timeout, "selftest report") {
        Ok(output) => outcome(policy, output),
        Err(reason) => failed(policy, format!("the selftest process {reason}")),
    }
}

/// The outcome of a selftest run, in this process or read from a child.
pub fn outcome(policy: &Policy, output: ChildOutput) -> CryptoOutcome {
    match output {
        ChildOutput::Report {
            report,
            kernel_loads,
        } => {
            let checks = report
                .operations
                .iter()
                .map(|c| {
                    if c.passed() {
                        format!(
                            "ok: {}: {} items identical to the CPU reference and as expected",
                            c.operation, c.items
                        )
                    } else {
                        format!(
                            "FAILED: {}: {} problem(s) in {} items: {}",
                            c.operation,
                            c.problems.len(),
                            c.items,
                            c.problems
                                .iter()
                                .take(3)
                                .cloned()
                                .collect::<Vec<_>>()
                                .join("; ")
                        )
                    }
                })
                .chain(report.execution_lines())
                .collect();
            CryptoOutcome {
                selftest: SelftestResult {
                    passed: report.passed,
                    checks,
                },
                report: report.engine,
                stats: report.stats,
                kernel_loads,
            }
        }
        ChildOutput::EngineFailed {
            reason,
            kernel_loads,
        } => CryptoOutcome {
            kernel_loads,
            ..failed(
                policy,
                format!("the crypto engine could not start: {reason}"),
            )
        },
    }
}

/// A failed selftest: the paths as a CPU-only engine reports them, with the GPU marked
/// unusable (for the reason) where the policy wanted one, and no counts.
fn failed(policy: &Policy, reason: String) -> CryptoOutcome {
    let cpu = Engine::cpu_only();
    let mut report = cpu.report();
    if policy.wants_gpu() {
        report.gpu = GpuStatus::Unusable {
            reason: reason.clone(),
        };
    }
    tracing::error!(%reason, "crypto selftest failed");
    CryptoOutcome {
        report,
        selftest: SelftestResult {
            passed: false,
            checks: vec![format!("FAILED: {reason}")],
        },
        stats: cpu.stats(),
        kernel_loads: Vec::new(),
    }
}

/// The crypto path's metric families: the engine's GPU state and paths, the selftest's
/// verdict and counters, and the kernel loads.
pub fn encode_metrics(crypto: &CryptoStatus, families: &mut FamilyWriter) -> fmt::Result {
    encode_engine(&crypto.report, families)?;
    families.gauge(
        "sovereign_crypto_selftest_passed",
        "Whether the crypto engine's known-answer selftest passed at start.",
        None,
        &one(vec![], flag(crypto.selftest.passed)),
    )?;
    encode_operations(&crypto.stats, families)?;
    families.counter(
        "sovereign_crypto_offloaded_cpu",
        "CPU time the GPU saved: GPU items times the configured CPU cost per item.",
        Some(Unit::Seconds),
        &one(vec![], crypto.offloaded_cpu_seconds),
    )?;
    encode_kernel_loads(&crypto.kernel_loads, families)
}

/// The engine's GPU backend state and each operation's backend policy.
fn encode_engine(report: &EngineReport, families: &mut FamilyWriter) -> fmt::Result {
    let (state, device) = match &report.gpu {
        gpu_crypto::GpuStatus::NotRequested => ("not_requested", String::new()),
        gpu_crypto::GpuStatus::Unusable { .. } => ("unusable", String::new()),
        gpu_crypto::GpuStatus::Ready { device } => ("ready", device.clone()),
    };
    let fallback = match report.fallback {
        gpu_crypto::Fallback::Never => "never",
        gpu_crypto::Fallback::RecomputeOnCpu => "recompute_on_cpu",
    };
    families.gauge(
        "sovereign_crypto_gpu_info",
        "State of the crypto engine's GPU backend.",
        None,
        &one(
            vec![
                ("state", state.to_string()),
                ("device", device),
                ("fallback", fallback.to_string()),
            ],
            1.0,
        ),
    )?;
    families.gauge(
        "sovereign_crypto_path_info",
        "Backend policy of each operation and the batch size from which the GPU serves it.",
        None,
        &report
            .operations
            .iter()
            .map(|path| {
                (
                    vec![
                        ("operation", path.operation.name().to_string()),
                        ("backend", path.backend.name().to_string()),
                        ("gpu_min_batch", path.gpu_min_batch.to_string()),
                    ],
                    1.0,
                )
            })
            .collect::<Vec<_>>(),
    )
}

/// Calls and items by where they ran, and the GPU calls that failed or fell back.
fn encode_operations(stats: &StatsSnapshot, families: &mut FamilyWriter) -> fmt::Result {
    let by_backend = |items: bool| {
        stats
            .operations
            .iter()
            .map(|counts| {
                let executed = match counts.executed {
                    gpu_crypto_api::stats::Executed::Cpu => "cpu",
                    gpu_crypto_api::stats::Executed::Gpu => "gpu",
                };
                (
                    vec![
                        ("operation", counts.operation.name().to_string()),
                        ("executed", executed.to_string()),
                    ],
                    if items { counts.items } else { counts.calls } as f64,
                )
            })
            .collect::<Vec<_>>()
    };
    families.counter(
        "sovereign_crypto_calls",
        "Batch calls of the agent's crypto engine, by where they ran.",
        None,
        &by_backend(false),
    )?;
    families.counter(
        "sovereign_crypto_items",
        "Items (points, signatures, chunks) processed, by where they ran.",
        None,
        &by_backend(true),
    )?;
    let by_reason = |reasons: &[gpu_crypto_api::stats::ReasonCount]| {
        reasons
            .iter()
            .map(|reason| {
                (
                    vec![
                        ("operation", reason.operation.name().to_string()),
                        ("reason", reason.reason.clone()),
                    ],
                    reason.count as f64,
                )
            })
            .collect::<Vec<_>>()
    };
    families.counter(
        "sovereign_crypto_fallbacks",
        "CPU recomputations after a failed GPU call, by reason.",
        None,
        &by_reason(&stats.fallbacks),
    )?;
    families.counter(
        "sovereign_crypto_gpu_errors",
        "Failed GPU calls, by reason (recomputed on the CPU or not).",
        None,
        &by_reason(&stats.gpu_errors),
    )
}

/// How the selftest's engine obtained its GPU programs at start.
fn encode_kernel_loads(loads: &[KernelLoadCount], families: &mut FamilyWriter) -> fmt::Result {
    families.counter(
        "sovereign_crypto_kernel_loads",
        "GPU programs the selftest's engine obtained at start, by outcome (precompiled, cache, compiled, skipped_*, refused_cached_only) and reason kind.",
        None,
        &loads
            .iter()
            .map(|load| {
                (
                    vec![("outcome", load.outcome.clone()), ("reason", load.reason.clone())],
                    load.count as f64,
                )
            })
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn cpu_policy_passes_in_process() {
        let policy = Policy::cpu_only();
        let o = outcome(&policy, run_selftest(policy));
        assert!(o.selftest.passed, "{:#?}", o.selftest.checks);
        assert_eq!(
            o.selftest
                .checks
                .iter()
                .filter(|c| c.starts_with("ok: "))
                .count(),
            gpu_crypto::Operation::ALL.len(),
            "{:#?}",
            o.selftest.checks
        );
        assert_eq!(o.report.gpu, GpuStatus::NotRequested);
        let calls: u64 = o.stats.operations.iter().map(|c| c.calls).sum();
        assert!(
            calls >= gpu_crypto::Operation::ALL.len() as u64,
            "{:?}",
            o.stats
        );
    }

    #[test]
    fn the_childs_kernel_loads_reach_the_outcome() {
        // As a node image's child prints them when cached-only mode refused to compile.
        let json = r#"{"outcome":"engine_failed","reason":"kernel not precompiled","kernel_loads":[{"outcome":"refused_cached_only","reason":"no_entry","count":6}]}"#;
        let output: ChildOutput = serde_json::from_str(json).unwrap();
        let o = outcome(&Policy::cpu_only(), output);
        assert!(!o.selftest.passed);
        assert_eq!(
            o.kernel_loads,
            vec![KernelLoadCount {
                outcome: "refused_cached_only".into(),
                reason: "no_entry".into(),
                count: 6
            }]
        );
        // A child of an older agent prints no counts: none, not an error.
        let old: ChildOutput =
            serde_json::from_str(r#"{"outcome":"engine_failed","reason":"x"}"#).unwrap();
        assert!(outcome(&Policy::cpu_only(), old).kernel_loads.is_empty());
    }

    #[test]
    fn a_child_that_hangs_is_killed_and_fails() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let start = Instant::now();
        let o = selftest_in_child(cmd, &Policy::cpu_only(), Duration::from_millis(300));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(!o.selftest.passed);
        assert!(
            o.selftest.checks[0].contains("did not finish within"),
            "{:?}",
            o.selftest.checks
        );
    }

    #[test]
    fn a_child_that_prints_garbage_or_fails_is_a_failed_selftest() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "cat >/dev/null; echo hello"]);
        let o = selftest_in_child(cmd, &Policy::cpu_only(), SELFTEST_TIMEOUT);
        assert!(!o.selftest.passed);
        assert!(
            o.selftest.checks[0].contains("printed no selftest report"),
            "{:?}",
            o.selftest.checks
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let o = selftest_in_child(cmd, &Policy::cpu_only(), SELFTEST_TIMEOUT);
        assert!(!o.selftest.passed);
        assert!(
            o.selftest.checks[0].contains("failed"),
            "{:?}",
            o.selftest.checks
        );
    }
}
