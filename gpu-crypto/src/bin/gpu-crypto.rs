//! `gpu-crypto`: run each operation on files, for cross-checks by anyone.
//!
//! Output goes to standard output only once a command has fully succeeded, and depends only
//! on the results: the same input gives byte-identical output under `--backend cpu` and
//! `--backend gpu`. Diagnostics and logs go to standard error. Line-oriented input follows
//! the rules in `cli/input.rs`: one answer per input line, the final newline optional.

mod cli;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use gpu_crypto::manifest::ManifestVersion;
use gpu_crypto::{BackendChoice, BlsScheme, Engine, Policy};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "gpu-crypto", version, about = "BLS12-381 and SHA-256 batch operations on the GPU or the CPU, bit-exact with ic_bls12_381")]
struct Args {
    /// Backend for every operation. `gpu` fails when no GPU can be used; `auto` uses the
    /// GPU for large enough batches when one is usable, else the CPU (and says so).
    #[arg(long, global = true, value_enum)]
    backend: Option<BackendArg>,
    /// A backend policy in TOML (the `gpu_crypto::Policy` fields), for full control.
    #[arg(long, global = true, value_name = "FILE.toml", conflicts_with = "backend")]
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
    /// Decompress G1 points: one 96-hex-digit compressed point per line (`-` reads stdin);
    /// prints `ok <192 hex digits, uncompressed>` or `err <reason>` per line.
    Decompress { file: PathBuf },
    /// Multi-scalar multiplication: lines `<96 hex compressed point> <64 hex big-endian
    /// scalar>`; prints the compressed result (96 hex digits). Any bad line is an error.
    Msm { file: PathBuf },
    /// Verify BLS signatures: lines `<96 hex signature> <192 hex public key> <message hex,
    /// or - for an empty message>`; prints `ok` or `err <reason>` per line.
    Verify {
        file: PathBuf,
        /// Which of the IC's BLS schemes the signatures are under (the hash-to-G1 tag).
        #[arg(long, value_enum, default_value_t = SchemeArg::Threshold)]
        scheme: SchemeArg,
    },
    /// The root hash (64 hex digits) of a manifest in JSON form (see gpu_crypto::manifest),
    /// after the replica's consistency checks.
    ManifestHash {
        file: PathBuf,
        /// Skip the consistency checks (reproduces the IC's test vectors, which use
        /// made-up file hashes).
        #[arg(long)]
        unvalidated: bool,
    },
    /// Compute the manifest of a checkpoint directory: JSON on stdout, the root hash on
    /// stderr (or, with --root-hash, only the root hash on stdout).
    Manifest {
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
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpu-crypto: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn policy_of(args: &Args) -> anyhow::Result<Policy> {
    match (&args.policy, args.backend) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the policy {}", path.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing the policy {}", path.display()))
        }
        (None, backend) => Ok(Policy::with_backend(
            backend.map_or(BackendChoice::Auto, BackendChoice::from),
        )),
    }
}

fn engine_of(args: &Args) -> anyhow::Result<Engine> {
    let policy = policy_of(args)?;
    Engine::new(policy).context("cannot start the engine under this policy")
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing standard output")
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let engine = engine_of(&args)?;
    let read = |file: &Path| cli::input::read_input(file);
    match &args.command {
        Command::Decompress { file } => print(&cli::ops::decompress(&engine, &read(file)?)?)?,
        Command::Msm { file } => print(&cli::ops::msm(&engine, &read(file)?)?)?,
        Command::Verify { file, scheme } => {
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
            let (json, root) = cli::ops::manifest(&engine, dir, *version)?;
            if *root_hash {
                print(&format!("{root}\n"))?;
            } else {
                print(&json)?;
                eprintln!("root hash: {root}");
            }
        }
        Command::Selftest { size, seed } => {
            let (text, passed) = cli::selftest::run(&engine, *size, *seed)?;
            print(&text)?;
            if !passed {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Status => {
            let mut json =
                serde_json::to_string_pretty(&engine.report()).context("engine report")?;
            json.push('\n');
            print(&json)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
