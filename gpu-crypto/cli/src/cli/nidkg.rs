//! `gpu-crypto nidkg deal | verify | verify-ic | verify-pop | timeline`: NI-DKG dealings in
//! the IC's encoding (the `nidkg` crate).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use gpu_crypto::{Engine, NIDKG_OPERATIONS, NidkgBatchOps};

use super::progress::Progress;
use super::timeline;
use nidkg::ic_cbor;

#[derive(Subcommand)]
pub(crate) enum NidkgCommand {
    /// Create a dealing for n receivers (high threshold, epoch 1, dealer 0) from a seed and
    /// write the dealing file: the context, the receivers' keys, then the dealing in the
    /// IC's serde_cbor encoding.
    Deal {
        /// Number of receivers (the IC's subnets: 13, 28, 40).
        #[arg(long)]
        n: usize,
        /// Seed of the receivers' keys and the dealing's randomness.
        #[arg(long)]
        seed: u64,
        /// Where to write the dealing file (atomically).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Verify a dealing file (deserialisation with subgroup checks, ciphertext integrity,
    /// chunking proof, sharing proof) through the engine under `--backend` or `--policy`;
    /// prints where each batch ran. Exit 0 accepted, 1 rejected (the failing component is
    /// printed), 2 unusable input, 3 no verdict (the backend failed).
    Verify {
        /// The dealing file, or `-` for standard input.
        file: PathBuf,
    },
    /// Verify a dealing in the IC's own encoding under the IC's context, as the replica's
    /// `verify_dealing` does. Each FILE is the IC's serde_cbor encoding, binary or hex
    /// text. Exit 0 accepted, 1 rejected (the failing component is printed), 2 unusable
    /// input, 3 no verdict (the backend failed).
    VerifyIc {
        /// The dealing (the IC's `Dealing`).
        #[arg(long, value_name = "FILE")]
        dealing: PathBuf,
        /// A receiver's `FsEncryptionPublicKey`; one per receiver, in index order 0..n.
        #[arg(long = "receiver-key", value_name = "FILE", required = true)]
        receiver_keys: Vec<PathBuf>,
        /// The threshold: the number of public coefficients the dealing must have.
        #[arg(long)]
        threshold: usize,
        /// The epoch the shares are encrypted for.
        #[arg(long)]
        epoch: u32,
        /// The dealer's node index (its 4 big-endian bytes are the associated data).
        #[arg(long)]
        dealer_index: u32,
    },
    /// Verify a receiver key's proof of possession (the IC's `FsEncryptionPublicKey` and
    /// `FsEncryptionPop`, binary or hex text) for the associated data the key was made
    /// with. Exit 0 valid, 1 invalid, 2 unusable input.
    VerifyPop {
        /// The public key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The proof of possession.
        #[arg(long, value_name = "FILE")]
        pop: PathBuf,
        /// The associated data, as text (the replica's is `ic-crypto-kgen-assoc-data`).
        #[arg(long, value_name = "TEXT")]
        associated_data: String,
    },
    /// Verify a dealing file many times and print where the median call's wall time and
    /// host CPU go: every batch handed to the engine (under `--backend` or `--policy`) with
    /// its start, wall time and the CPU time of the thread that ran it, the verifier's own
    /// host work between the batches, and per batch the medians over the calls. The
    /// dealing must be accepted.
    Timeline {
        /// The dealing file, or `-` for standard input.
        file: PathBuf,
        /// The checks: the exact verifier's, or the combined ones of `verify_batch`.
        #[arg(long, value_enum, default_value_t = ChecksArg::Combined)]
        checks: ChecksArg,
        /// Timed calls, after one untimed call that opens the kernels and buffers.
        #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        calls: u32,
        /// Dealings per call: the file's dealing this many times in one `verify_batch`
        /// call (a DKG round at n is 2n), combined checks only.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
        batch: u32,
        /// Threads of the pool the verification and the engine's host work run in.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        host_threads: u16,
        /// Threads of an overlap pool that runs the second of each pair of independent
        /// batches (0: none, one batch after another).
        #[arg(long, default_value_t = 0)]
        overlap_threads: u16,
    },
}

/// Which checks `timeline` runs.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ChecksArg {
    /// The IC verifier's checks, one dealing at a time.
    Exact,
    /// The combined checks of one `verify_batch` call.
    Combined,
}

/// Exit status of `verify` for input that is not a dealing file at all.
const UNUSABLE_INPUT: u8 = 2;
/// Exit status of `verify` when the backend failed: no verdict on the dealing.
const NO_VERDICT: u8 = 3;
/// Seconds a dealing takes to create per receiver (one thread; 6 s for n = 13 on a 2-core
/// machine), for the start lines of `deal` and `bench`.
const DEAL_SECONDS_PER_RECEIVER: f64 = 0.6;

/// Roughly how long creating a dealing for `n` receivers takes.
pub(crate) fn deal_seconds(n: usize) -> f64 {
    DEAL_SECONDS_PER_RECEIVER * n as f64
}

/// Runs a `nidkg` subcommand; `engine` opens the engine, only once the input is known to
/// be usable.
pub(crate) fn run(
    cmd: &NidkgCommand,
    engine: impl FnOnce() -> anyhow::Result<Engine>,
) -> anyhow::Result<ExitCode> {
    match cmd {
        NidkgCommand::Deal { n, seed, out } => deal(*n, *seed, out),
        NidkgCommand::Verify { file } => verify(file, engine),
        NidkgCommand::VerifyIc {
            dealing,
            receiver_keys,
            threshold,
            epoch,
            dealer_index,
        } => {
            let context = nidkg::IcContext {
                dealer_index: *dealer_index,
                threshold: *threshold,
                epoch: *epoch,
            };
            verify_ic(dealing, receiver_keys, &context, engine)
        }
        NidkgCommand::VerifyPop {
            key,
            pop,
            associated_data,
        } => verify_pop(key, pop, associated_data),
        NidkgCommand::Timeline {
            file,
            checks,
            calls,
            batch,
            host_threads,
            overlap_threads,
        } => {
            let shape = TimelineShape {
                checks: *checks,
                calls: *calls as usize,
                batch: *batch as usize,
                host_threads: usize::from(*host_threads),
                overlap_threads: usize::from(*overlap_threads),
            };
            print_timeline(file, &shape, engine)
        }
    }
}

/// `deal`: creates the dealing for `n` receivers from `seed` and writes the dealing file.
fn deal(n: usize, seed: u64, out: &Path) -> anyhow::Result<ExitCode> {
    let progress = Progress::spinner(&format!(
        "nidkg deal: a dealing for {n} receivers, about {}",
        super::progress::about(deal_seconds(n))
    ));
    progress.step(format!("dealing for n = {n}"));
    let bytes = nidkg::deal(n, seed).with_context(|| format!("dealing for n = {n}"))?;
    drop(progress);
    write_atomic(out, &bytes)?;
    eprintln!(
        "wrote {} ({} bytes, n = {n}, seed {seed})",
        out.display(),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `verify`: the dealing file's verdict through the engine.
fn verify(
    file: &Path,
    engine: impl FnOnce() -> anyhow::Result<Engine>,
) -> anyhow::Result<ExitCode> {
    let bytes = read_bytes(file)?;
    // What is not a dealing file needs no engine: refused before a GPU is opened.
    let form = nidkg::DealingFile::parse(&bytes)
        .and_then(|f| ic_cbor::dealing_stream(&f.dealing).map(drop));
    if let Some(e) = unusable_only(form) {
        return Ok(unusable(&named(file), &e));
    }
    let Some(engine) = engine_or_no_verdict(engine) else {
        return Ok(ExitCode::from(NO_VERDICT));
    };
    let result = nidkg::verify_with(&NidkgBatchOps::new(&engine), &bytes);
    Ok(print_verdict(&engine, &named(file), result))
}

/// How `timeline` verifies.
struct TimelineShape {
    checks: ChecksArg,
    calls: usize,
    batch: usize,
    host_threads: usize,
    overlap_threads: usize,
}

/// `timeline`: the dealing file verified `shape.calls` times after one untimed call, each
/// call recorded; the report on standard output.
fn print_timeline(
    file: &Path,
    shape: &TimelineShape,
    engine: impl FnOnce() -> anyhow::Result<Engine>,
) -> anyhow::Result<ExitCode> {
    let bytes = read_bytes(file)?;
    let parsed = nidkg::DealingFile::parse(&bytes)
        .with_context(|| format!("{}: not a dealing file", named(file)))?;
    if shape.batch > 1 && matches!(shape.checks, ChecksArg::Exact) {
        anyhow::bail!(
            "--batch needs --checks combined: the exact checks verify one dealing a call"
        );
    }
    let engine = engine()?;
    let overlap = match shape.overlap_threads {
        0 => None,
        threads => Some(thread_pool(threads)?),
    };
    let ops = match &overlap {
        Some(p) => NidkgBatchOps::overlapping(&engine, p),
        None => NidkgBatchOps::new(&engine),
    };
    let files = vec![bytes; shape.batch];
    let call = |ops: &dyn nidkg::BatchOps| verify_accepted(ops, shape.checks, &files);
    let passes = thread_pool(shape.host_threads)?.install(|| {
        call(&ops)?;
        (0..shape.calls)
            .map(|_| {
                let (verdict, pass) = timeline::record_pass(&ops, call);
                verdict.map(|()| pass)
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let title = format!(
        "timeline of {} {} verification(s) of {} dealing(s) in {} (n = {}, t = {}) on {}, after one untimed call; {} host thread(s), {} overlap thread(s)",
        shape.calls,
        match shape.checks {
            ChecksArg::Exact => "exact",
            ChecksArg::Combined => "combined",
        },
        shape.batch,
        named(file),
        parsed.receiver_keys.len(),
        parsed.t,
        nidkg::BatchOps::name(&ops),
        shape.host_threads,
        shape.overlap_threads
    );
    print_routes(&engine);
    print!("{}", timeline::report(&title, &passes));
    Ok(ExitCode::SUCCESS)
}

fn thread_pool(threads: usize) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("a thread pool")
}

/// One verification of `files` (exactly one with the exact checks): an error unless every
/// dealing is accepted.
fn verify_accepted(
    ops: &dyn nidkg::BatchOps,
    checks: ChecksArg,
    files: &[Vec<u8>],
) -> anyhow::Result<()> {
    let rejected = match checks {
        ChecksArg::Exact => nidkg::verify_with(ops, &files[0]).err(),
        ChecksArg::Combined => combined_batch(ops, files)?
            .verdicts
            .into_iter()
            .find_map(Result::err),
    };
    match rejected {
        None => Ok(()),
        Some(e) => anyhow::bail!("the dealing was not accepted: {}: {e}", e.component()),
    }
}

/// `verify-ic`: the verdict on a dealing in the IC's encoding under the IC's `context`,
/// the dealing and every receiver key checked for form before the engine is opened.
fn verify_ic(
    dealing: &Path,
    receiver_keys: &[PathBuf],
    context: &nidkg::IcContext,
    engine: impl FnOnce() -> anyhow::Result<Engine>,
) -> anyhow::Result<ExitCode> {
    let dealing_name = named(dealing);
    let dealing = ic_cbor::bytes_of_file(&read_bytes(dealing)?);
    if let Some(e) = unusable_only(ic_cbor::dealing_stream(&dealing).map(drop)) {
        return Ok(unusable(&dealing_name, &e));
    }
    let mut keys = Vec::with_capacity(receiver_keys.len());
    for (index, path) in receiver_keys.iter().enumerate() {
        let bytes = ic_cbor::bytes_of_file(&read_bytes(path)?);
        match ic_cbor::receiver_key(&bytes) {
            Ok(key) => keys.push(key),
            Err(e) => {
                let name = format!("{} (receiver key {index})", named(path));
                return Ok(unusable(&name, &e));
            }
        }
    }
    let Some(engine) = engine_or_no_verdict(engine) else {
        return Ok(ExitCode::from(NO_VERDICT));
    };
    let result = nidkg::verify_ic(&NidkgBatchOps::new(&engine), &dealing, &keys, context);
    Ok(print_verdict(&engine, &dealing_name, result))
}

/// `verify-pop`: whether the key's proof of possession holds for `associated_data`.
fn verify_pop(key: &Path, pop: &Path, associated_data: &str) -> anyhow::Result<ExitCode> {
    let key_bytes = ic_cbor::bytes_of_file(&read_bytes(key)?);
    let pop_bytes = ic_cbor::bytes_of_file(&read_bytes(pop)?);
    let key = match ic_cbor::receiver_key(&key_bytes) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(unusable(&format!("{} (key)", named(key)), &e)),
    };
    let pop = match ic_cbor::pop(&pop_bytes) {
        Ok(parsed) => parsed,
        Err(e) => {
            let name = format!("{} (proof of possession)", named(pop));
            return Ok(unusable(&name, &e));
        }
    };
    match nidkg::verify_pop(&key, &pop, associated_data.as_bytes()) {
        Ok(true) => {
            println!("valid proof of possession");
            Ok(ExitCode::SUCCESS)
        }
        Ok(false) => {
            println!("rejected proof of possession: the challenge does not match");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => {
            println!("rejected proof of possession: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The dealing files parsed and verified in one `verify_batch` call, combined checks.
pub(crate) fn combined_batch(
    ops: &dyn nidkg::BatchOps,
    dealings: &[Vec<u8>],
) -> anyhow::Result<nidkg::BatchReport> {
    let mut parsed = Vec::with_capacity(dealings.len());
    for bytes in dealings {
        let file = nidkg::DealingFile::parse(bytes)?;
        let (_, _, stream) = nidkg::ic_cbor::dealing_stream(&file.dealing)?;
        parsed.push((file, stream));
    }
    let inputs: Vec<nidkg::DealingInput<'_>> = parsed
        .iter()
        .map(|(file, stream)| nidkg::DealingInput {
            receiver_keys: &file.receiver_keys,
            t: file.t,
            epoch: file.epoch,
            associated_data: &file.associated_data,
            stream,
        })
        .collect();
    Ok(nidkg::verify_batch(ops, &inputs, nidkg::Checks::Combined))
}

/// The engine, or `None` after printing why there is no verdict.
fn engine_or_no_verdict(engine: impl FnOnce() -> anyhow::Result<Engine>) -> Option<Engine> {
    match engine() {
        Ok(engine) => Some(engine),
        Err(e) => {
            println!("no verdict: {e:#}");
            None
        }
    }
}

/// How an input is named in messages.
fn named(file: &Path) -> String {
    if file == Path::new("-") {
        "standard input".to_string()
    } else {
        file.display().to_string()
    }
}

/// The error of a check of the input's form, when it makes the input unusable (the
/// others are the verification's to report, as rejections).
fn unusable_only(form: Result<(), nidkg::VerifyError>) -> Option<nidkg::VerifyError> {
    form.err().filter(nidkg::VerifyError::is_unusable_input)
}

/// Unusable input is an error of the command: said once, on standard error, naming the
/// input (the error's own text starts with "unusable input").
fn unusable(input: &str, e: &nidkg::VerifyError) -> ExitCode {
    eprintln!("gpu-crypto: error: {input}: {e}");
    ExitCode::from(UNUSABLE_INPUT)
}

/// Prints the verdict on `input` and where each batch ran; returns the exit status.
fn print_verdict(
    engine: &Engine,
    input: &str,
    result: Result<nidkg::Report, nidkg::VerifyError>,
) -> ExitCode {
    match &result {
        Err(e) if e.is_unusable_input() => return unusable(input, e),
        _ => print_routes(engine),
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
            ExitCode::SUCCESS
        }
        Err(e) if e.is_backend_failure() => {
            println!("no verdict: {e}");
            ExitCode::from(NO_VERDICT)
        }
        Err(e) => {
            println!("rejected {}: {e}", e.component());
            ExitCode::FAILURE
        }
    }
}

/// Where each of the verification's batches ran, whatever the verdict.
fn print_routes(engine: &Engine) {
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
