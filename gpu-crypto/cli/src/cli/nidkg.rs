//! `gpu-crypto nidkg deal | verify`: NI-DKG dealings at the IC's shapes (the `nidkg` crate).

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use gpu_crypto::{Engine, NIDKG_OPERATIONS, NidkgBatchOps};

use crate::NidkgCommand;

/// Exit status of `verify` for input that is not a dealing file at all.
const UNUSABLE_INPUT: u8 = 2;
/// Exit status of `verify` when the backend failed: no verdict on the dealing.
const NO_VERDICT: u8 = 3;

pub fn run(
    cmd: &NidkgCommand,
    engine: impl FnOnce() -> anyhow::Result<Engine>,
) -> anyhow::Result<ExitCode> {
    match cmd {
        NidkgCommand::Deal { n, seed, out } => {
            let bytes = nidkg::deal(*n, *seed).with_context(|| format!("dealing for n = {n}"))?;
            write_atomic(out, &bytes)?;
            eprintln!(
                "wrote {} ({} bytes, n = {n}, seed {seed})",
                out.display(),
                bytes.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        NidkgCommand::Verify { file } => {
            let bytes = read_bytes(file)?;
            let engine = match engine() {
                Ok(engine) => engine,
                Err(e) => {
                    println!("no verdict: {e:#}");
                    return Ok(ExitCode::from(NO_VERDICT));
                }
            };
            let result = nidkg::verify_with(&NidkgBatchOps::new(&engine), &bytes);
            // Where each of the verification's batches ran, whatever the verdict.
            let stats = engine.stats();
            for op in NIDKG_OPERATIONS {
                let route = engine.policy().operation(op);
                let ran: Vec<String> = stats
                    .operations
                    .iter()
                    .filter(|c| c.operation == op && c.calls > 0)
                    .map(|c| format!("{} {} call(s) {} item(s)", c.executed, c.calls, c.items))
                    .collect();
                eprintln!(
                    "{op}: policy {} (gpu from {}), ran {}",
                    route.backend,
                    route.gpu_min_batch,
                    if ran.is_empty() {
                        "nothing".to_string()
                    } else {
                        ran.join(", ")
                    }
                );
            }
            for f in &stats.fallbacks {
                eprintln!(
                    "{}: recomputed on the CPU after a GPU failure ({}) {} time(s)",
                    f.operation, f.reason, f.count
                );
            }
            match result {
                Ok(report) => {
                    let p = &report.phases;
                    println!(
                        "accepted n={} t={} epoch={} backend={} ({} CPU threads) g1={} g2={}",
                        report.n,
                        report.t,
                        report.epoch,
                        report.backend,
                        rayon::current_num_threads(),
                        report.g1_points,
                        report.g2_points
                    );
                    println!(
                        "phases deserialise={:.3}ms integrity={:.3}ms chunking={:.3}ms sharing={:.3}ms",
                        ms(p.deserialize),
                        ms(p.integrity),
                        ms(p.chunking),
                        ms(p.sharing)
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) if e.is_unusable_input() => {
                    println!("unusable {}: {e}", e.component());
                    Ok(ExitCode::from(UNUSABLE_INPUT))
                }
                Err(e) if e.is_backend_failure() => {
                    println!("no verdict: {e}");
                    Ok(ExitCode::from(NO_VERDICT))
                }
                Err(e) => {
                    println!("rejected {}: {e}", e.component());
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn read_bytes(file: &Path) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading standard input")?;
    } else {
        bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    }
    Ok(bytes)
}

/// Temporary file in the same directory, fsync, rename, directory fsync.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes).context("writing the dealing")?;
    tmp.as_file().sync_all().context("fsync of the dealing")?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("fsync of {}", dir.display()))?;
    Ok(())
}
