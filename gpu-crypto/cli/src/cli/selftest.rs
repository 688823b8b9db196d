//! `selftest`: the library's selftest (`gpu_crypto::selftest`, shared with the node agent)
//! through the chosen engine, printed as text.

use anyhow::Context;
use gpu_crypto::{Engine, Operation};
use std::fmt::Write as _;

/// Runs every operation with `size` items; returns the report text and whether everything
/// passed. `not_run` lists operations the chosen backend cannot run, with the reason: each
/// is a failure.
pub(crate) fn run(
    engine: &Engine,
    not_run: &[(Operation, String)],
    size: usize,
    seed: u64,
) -> anyhow::Result<(String, bool)> {
    let report = gpu_crypto::selftest::run(engine, not_run, |_| size, seed);
    let mut out = String::new();
    let engine_json = serde_json::to_string_pretty(&report.engine).context("engine report")?;
    let _ = writeln!(out, "engine report:\n{engine_json}");
    let _ = writeln!(out, "selftest: size {size}, seed {seed}");
    for check in &report.operations {
        let _ = writeln!(out, "{}", check.line());
    }
    for line in report.execution_lines() {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "selftest {}",
        if report.passed { "PASS" } else { "FAIL" }
    );
    Ok((out, report.passed))
}
