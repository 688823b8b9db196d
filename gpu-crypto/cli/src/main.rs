//! `gpu-crypto`: run each operation on files, for cross-checks by anyone.
//!
//! Output goes to standard output only once a command has fully succeeded, and depends only
//! on the results: the same input gives byte-identical output under `--backend cpu` and
//! `--backend gpu`. Diagnostics and logs go to standard error. Line-oriented input follows
//! the rules in `cli/input.rs`: one answer per input line, the final newline optional.

mod cli;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use gpu_crypto::{BackendChoice, BlsScheme, Engine, EngineError, Operation, Policy};
use ic_state_manifest::ManifestVersion;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Input files (FILE may be - for standard input) are read line by line: the newline after \
the last line is optional, and every other line counts, empty ones included, so that \
output line i answers input line i (an empty line is answered `err bad-hex` by decompress \
and `err bad-line` by verify, and is an error for msm). Surrounding spaces and a CR before \
the newline are ignored; hex digits may be of either case.

Results go to standard output only once the whole command has succeeded, and depend only \
on the results, never on the backend: --backend cpu and --backend gpu print the same bytes. \
Per-item rejections (err lines) are results: the exit status is 0. It is 1 for an error \
of the whole command (unreadable file, a bad msm line, a GPU required but unusable) and \
for a failing selftest.

Under --backend, the operations a command runs take that backend and the others stay on \
the CPU (so that `--backend gpu decompress` needs only a GPU decompression); --policy \
FILE.toml sets every operation as written.

Exit status:
  0  success (per-item rejections included); nidkg verify, verify-ic: accepted; verify-pop: valid
  1  an error of the whole command or a failing selftest; nidkg: rejected (the component named)
  2  nidkg: unusable input (the file named)
  3  nidkg verify, verify-ic: no verdict (the backend failed)";

#[derive(Parser)]
#[command(
    name = "gpu-crypto",
    version,
    about = "BLS12-381 and SHA-256 batch operations on the GPU or the CPU, bit-exact with ic_bls12_381",
    after_help = AFTER_HELP,
    help_expected = true
)]
struct Args {
    /// Backend of the operations the command runs. `gpu` fails when no GPU can be used;
    /// `auto` uses the GPU for large enough batches when one is usable, else the CPU (and
    /// says so).
    #[arg(long, global = true, value_enum)]
    backend: Option<BackendArg>,
    /// A backend policy in TOML (the `gpu_crypto::Policy` fields), for full control.
    #[arg(
        long,
        global = true,
        value_name = "FILE.toml",
        conflicts_with = "backend"
    )]
    policy: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Cpu,
    Gpu,
    Auto,
}

impl From<BackendArg> for BackendChoice {
    fn from(arg: BackendArg) -> BackendChoice {
        match arg {
            BackendArg::Cpu => BackendChoice::Cpu,
            BackendArg::Gpu => BackendChoice::Gpu,
            BackendArg::Auto => BackendChoice::Auto,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum GroupArg {
    /// G1: 48-byte compressed points (BLS signatures).
    G1,
    /// G2: 96-byte compressed points (BLS public keys, NI-DKG).
    G2,
}

impl From<GroupArg> for cli::ops::Group {
    fn from(arg: GroupArg) -> cli::ops::Group {
        match arg {
            GroupArg::G1 => cli::ops::Group::G1,
            GroupArg::G2 => cli::ops::Group::G2,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SchemeArg {
    /// Threshold signatures (random beacon, certification): tag ..._RO_NUL_.
    Threshold,
    /// Multi-signatures of nodes (consensus shares): tag ..._RO_POP_.
    MultiSig,
}

impl From<SchemeArg> for BlsScheme {
    fn from(arg: SchemeArg) -> BlsScheme {
        match arg {
            SchemeArg::Threshold => BlsScheme::Threshold,
            SchemeArg::MultiSig => BlsScheme::MultiSig,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Decompress and validate points: one compressed point per line (`-` reads stdin), 96
    /// hex digits for G1, 192 for G2; prints `ok <hex of the uncompressed point>` (192 or
    /// 384 hex digits) or `err <reason>` per line.
    Decompress {
        /// The input file, or `-` for standard input.
        file: PathBuf,
        /// The group of the points.
        #[arg(long, value_enum, default_value_t = GroupArg::G1)]
        group: GroupArg,
    },
    /// Multi-scalar multiplication: lines `<96 hex compressed point> <64 hex big-endian
    /// scalar>`; prints the compressed result (96 hex digits). Any bad line is an error.
    Msm {
        /// The input file, or `-` for standard input.
        file: PathBuf,
    },
    /// Verify BLS signatures: lines `<96 hex signature> <192 hex public key> <message hex,
    /// or - for an empty message>`; prints `ok` or `err <reason>` per line.
    Verify {
        /// The input file, or `-` for standard input.
        file: PathBuf,
        /// Which of the IC's BLS schemes the signatures are under (the hash-to-G1 tag).
        #[arg(long, value_enum, default_value_t = SchemeArg::Threshold)]
        scheme: SchemeArg,
    },
    /// The root hash (64 hex digits) of a manifest in JSON form (see ic_state_manifest),
    /// after the replica's consistency checks.
    ManifestHash {
        /// The manifest in JSON form, or `-` for standard input.
        file: PathBuf,
        /// Skip the consistency checks (reproduces the IC's test vectors, which use
        /// made-up file hashes).
        #[arg(long)]
        unvalidated: bool,
    },
    /// Compute the manifest of a checkpoint directory: JSON on stdout, the root hash on
    /// stderr (or, with --root-hash, only the root hash on stdout).
    Manifest {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Manifest (state sync) version, 0 to 4.
        #[arg(long, default_value_t = u64::from(ManifestVersion::CURRENT.as_u32()))]
        version: u64,
        /// Print only the root hash, on stdout, instead of the JSON.
        #[arg(long)]
        root_hash: bool,
    },
    /// Run every operation on seeded data through the chosen backend and the CPU
    /// reference, compare item by item, print the engine report and PASS/FAIL per operation.
    Selftest {
        /// Items per operation.
        #[arg(long, default_value_t = 256)]
        size: usize,
        /// Seed of the generated data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Print the engine report (backend per operation and why, GPU status) as JSON.
    Status,
    /// NI-DKG dealings at the IC's shapes (the `nidkg` crate, docs/nidkg.md).
    #[command(subcommand)]
    Nidkg(cli::nidkg::NidkgCommand),
    /// Measure each operation's cost on this machine (CPU path always; GPU path too under
    /// --backend gpu|auto when usable) for `provision plan --bench`.
    ///
    /// It takes minutes: on 2 CPU cores the CPU path's 51 entries take about 7 min and
    /// --quick's 15 about 15 s; more cores take less, a usable GPU adds 39 entries.
    /// Standard error says first how many entries and about how long on this machine,
    /// then, on a terminal, shows a progress bar; standard output gets the document only.
    Bench {
        /// Print the versioned JSON document (the only output format).
        #[arg(long)]
        json: bool,
        /// Smallest shapes, two timed calls each (about 15 s on 2 CPU cores), for CI.
        #[arg(long)]
        quick: bool,
    },
}

/// The error and its causes, each said once: several library errors already quote their
/// source in their own message, which `{:#}` would then print a second time.
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpu-crypto: error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

impl Command {
    /// The operations the command runs. Under `--backend`, only these take the chosen
    /// backend (the others are never called, so a GPU without an implementation of them
    /// must not stop the command); `--policy` is used as written.
    fn operations(&self) -> &'static [Operation] {
        match self {
            Command::Decompress { .. } => &[Operation::Decompress, Operation::DecompressG2],
            Command::Msm { .. } => &[Operation::Decompress, Operation::Msm],
            Command::Verify { .. } => &[Operation::BlsVerify],
            Command::Manifest { .. } => &[Operation::Sha256],
            Command::Nidkg(_) => &gpu_crypto::NIDKG_OPERATIONS,
            Command::ManifestHash { .. } => &[],
            Command::Selftest { .. } | Command::Status | Command::Bench { .. } => &Operation::ALL,
        }
    }
}

fn policy_of(args: &Args) -> anyhow::Result<Policy> {
    if let Some(path) = &args.policy {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the policy {}", path.display()))?;
        return toml::from_str(&text)
            .with_context(|| format!("parsing the policy {}", path.display()));
    }
    let backend = args
        .backend
        .map_or(BackendChoice::Auto, BackendChoice::from);
    let mut policy = Policy::with_backend(backend);
    let used = args.command.operations();
    for op in Operation::ALL {
        if !used.contains(&op) {
            policy.operation_mut(op).backend = BackendChoice::Cpu;
        }
    }
    Ok(policy)
}

fn engine_of(args: &Args) -> anyhow::Result<Engine> {
    let policy = policy_of(args)?;
    Engine::new(policy).context("cannot start the engine under this policy")
}

/// The selftest's engine: operations pinned to a GPU that has no implementation of them
/// are taken out (each reported as a failure by the selftest) so that the others still run
/// on the GPU; any other refusal (no usable GPU at all) is an error.
fn selftest_engine(args: &Args) -> anyhow::Result<(Engine, Vec<(Operation, String)>)> {
    let mut policy = policy_of(args)?;
    let mut not_run = Vec::new();
    loop {
        match Engine::new(policy) {
            Ok(engine) => return Ok((engine, not_run)),
            Err(e @ EngineError::NoGpuImplementation { op }) => {
                not_run.push((op, e.to_string()));
                policy.operation_mut(op).backend = BackendChoice::Cpu;
            }
            Err(e) => return Err(e).context("cannot start the engine under this policy"),
        }
    }
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing standard output")
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let read = |file: &Path| cli::input::read_input(file);
    match &args.command {
        Command::Decompress { file, group } => {
            let engine = engine_of(&args)?;
            print(&cli::ops::decompress(
                &engine,
                &read(file)?,
                (*group).into(),
            )?)?
        }
        Command::Msm { file } => {
            let engine = engine_of(&args)?;
            print(&cli::ops::msm(&engine, &read(file)?)?)?
        }
        Command::Verify { file, scheme } => {
            let engine = engine_of(&args)?;
            print(&cli::ops::verify(&engine, &read(file)?, (*scheme).into())?)?
        }
        Command::ManifestHash { file, unvalidated } => {
            print(&cli::ops::manifest_hash(&read(file)?, *unvalidated)?)?
        }
        Command::Manifest {
            dir,
            version,
            root_hash,
        } => {
            let engine = engine_of(&args)?;
            let (json, root) = cli::ops::manifest(&engine, dir, *version)?;
            if *root_hash {
                print(&format!("{root}\n"))?;
            } else {
                print(&json)?;
                eprintln!("root hash: {root}");
            }
        }
        Command::Selftest { size, seed } => {
            let (engine, not_run) = selftest_engine(&args)?;
            let (text, passed) = cli::selftest::run(&engine, &not_run, *size, *seed)?;
            print(&text)?;
            if !passed {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Bench { json: _, quick } => {
            anyhow::ensure!(
                args.policy.is_none(),
                "bench measures the CPU path and the GPU path themselves: use --backend, not --policy"
            );
            let backend = args
                .backend
                .map_or(BackendChoice::Auto, BackendChoice::from);
            let doc = cli::bench::run(backend, *quick)?;
            let mut json = serde_json::to_string_pretty(&doc).context("bench document")?;
            json.push('\n');
            print(&json)?;
        }
        Command::Nidkg(cmd) => return cli::nidkg::run(cmd, || engine_of(&args)),
        Command::Status => {
            let engine = engine_of(&args)?;
            let mut json =
                serde_json::to_string_pretty(&engine.report()).context("engine report")?;
            json.push('\n');
            print(&json)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every subcommand is described in `--help`: the command sets
    /// `help_expected`, which clap's debug assertions check for each argument.
    #[test]
    fn every_argument_has_help_text() {
        super::Args::command().debug_assert();
    }
}
