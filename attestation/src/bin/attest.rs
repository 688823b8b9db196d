//! `attest`: the governing body's verifier.
//!
//! Exit status: 0 admitted, 1 rejected (some check failed), 2 unusable input (unreadable files,
//! malformed policy, nonce or bundle envelope).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use attestation::bundle::{Bundle, parse_nonce, verify_bundle};
use attestation::fleet::{self, FleetOptions, NodeStatus};
use attestation::fleet_watch::{self, RoundReport, Sources, WatchOptions};
use attestation::nodes::{ExpectedNode, NodeEntry, NodeList};
use attestation::policy::Policy;
use attestation::report::Verdict;
use attestation::snp;
use attestation::snp::amd::{ChainVerifier, SuppliedChain, parse_certs, parse_time};
use attestation::snp_checks::{self, SnpContext};
use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "\
Exit status: 0 admitted (fleet: every node; test-evidence: the bundle was written); \
1 rejected (a check failed; fleet: some node not admitted, unreachable or with bad \
evidence); 2 unusable input (an unreadable file, a malformed policy, node list, nonce, \
time or evidence bundle, a policy that cannot admit nodes without --lab-policy). A report \
or certificate that is present but wrong is a failed check (1). Errors go to standard \
error, the verdict to standard output. `fleet --every` runs until SIGTERM or SIGINT and then exits 0; it exits 2 when its files are unusable at start or the metrics address cannot be bound.";

#[derive(Parser)]
#[command(
    name = "attest",
    version,
    about = "Verify sovereign-node attestation evidence (SEV-SNP + NVIDIA GPU CC)",
    after_help = AFTER_HELP,
    help_expected = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify an evidence bundle (from GET /v1/attestation) against the nonce you sent.
    Verify {
        /// The evidence bundle (JSON) the node answered on GET /v1/attestation.
        #[arg(long, value_name = "BUNDLE.json")]
        evidence: PathBuf,
        /// The verification policy: trust anchors, allowed measurements, TCB and GPU rules.
        #[arg(long, value_name = "POLICY.toml")]
        policy: PathBuf,
        /// The 32-byte nonce sent to the node, 64 hex digits.
        #[arg(long)]
        nonce: String,
        /// Registered chip id of this node (hex), compared exactly.
        #[arg(long)]
        chip_id: Option<String>,
        /// Registered Ed25519 node public key (hex), compared exactly.
        #[arg(long)]
        node_key: Option<String>,
        /// Digest of the node's planned configuration bundle (hex), compared exactly.
        #[arg(long)]
        config_digest: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Verify a raw SNP report with its VCEK/VLEK, as snpguest and AMD KDS produce them.
    VerifyReport {
        /// Raw 1184-byte report (binary), or its hex text.
        #[arg(long)]
        report: PathBuf,
        /// VCEK or VLEK certificate, DER or PEM.
        #[arg(long)]
        vcek: PathBuf,
        /// Directory with ark.pem/ask.pem (or asvk.pem) or cert_chain.pem; default: the
        /// ASK/ARK embedded in this build.
        #[arg(long)]
        certs: Option<PathBuf>,
        /// Without it, the default policy: format, chain, signature, report-vs-certificate,
        /// debug and migration agent bind; allow-lists are skipped.
        #[arg(long)]
        policy: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Fetch fresh evidence from every node in NODES.toml and verify it.
    Fleet {
        /// The nodes to query: name, url, chip_id, node_public_key per entry
        /// (`provision registry nodes` writes it).
        #[arg(long, value_name = "NODES.toml")]
        nodes: PathBuf,
        /// The verification policy applied to every node.
        #[arg(long, value_name = "POLICY.toml")]
        policy: PathBuf,
        /// Nodes queried at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Deadline per node in milliseconds, for all its tries together (a busy node is tried
        /// again after its Retry-After or a backoff, each try with a fresh nonce).
        #[arg(long, default_value_t = 5000)]
        timeout_ms: u64,
        /// Service mode: check the fleet again every DURATION (e.g. 60s, 5m, 1m30s), re-reading
        /// NODES.toml and the policy each round, until SIGTERM or SIGINT; the verdicts are
        /// served as Prometheus metrics on --metrics-listen, not printed.
        #[arg(long, value_name = "DURATION", value_parser = fleet_watch::parse_interval)]
        every: Option<Duration>,
        /// Service mode: where GET /metrics is served (port 0: any free port).
        #[arg(long, value_name = "ADDR", default_value = fleet_watch::DEFAULT_METRICS_LISTEN, requires = "every")]
        metrics_listen: SocketAddr,
        /// Lab override: verify under a policy that cannot admit nodes (no measurement
        /// allow-list, TCB minimum, allowed VMPLs, GPU count or configuration signer, or a
        /// test root), or nodes whose NODES.toml entry lacks its chip id, node key or
        /// planned configuration digest (refused otherwise). Printed on every run; never
        /// for production.
        #[arg(long)]
        lab_policy: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Produce a bundle from the TEST evidence source (no SEV-SNP needed); never trusted by
    /// AMD's roots, only by a policy naming the ARK written to --ark-out.
    TestEvidence {
        /// 32-byte hex seed file of the test key chain; created (0600) if missing.
        #[arg(long)]
        seed: PathBuf,
        /// Unsealed Ed25519 node key (labelled PKCS#8 PEM); created (0600, atomically) if
        /// missing.
        #[arg(long)]
        node_key: PathBuf,
        /// The 32-byte nonce the bundle answers, 64 hex digits.
        #[arg(long)]
        nonce: String,
        /// Write the test ARK (PEM) here, for a policy's `trust.test_root_ark`.
        #[arg(long)]
        ark_out: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct Common {
    /// Machine-readable JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Verification time, `YYYY-MM-DDTHH:MM:SSZ` or `@unix`; default now.
    #[arg(long)]
    time: Option<String>,
}

impl Common {
    fn now(&self) -> anyhow::Result<u64> {
        match &self.time {
            Some(t) => parse_time(t)
                .ok_or_else(|| anyhow!("--time {t:?} is not YYYY-MM-DDTHH:MM:SSZ or @unix")),
            None => Ok(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)),
        }
    }
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn print_verdict(v: &Verdict, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        print!("{}", v.to_table());
    }
    Ok(())
}

fn load_report(path: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = read(path)?;
    // snpguest writes binary; some tools write hex text. A 1184-byte file is binary.
    if bytes.len() != snp::raw::REPORT_SIZE
        && let Ok(text) = std::str::from_utf8(&bytes)
        && let Ok(r) = snp::raw::AttestationReport::parse_hex(text)
    {
        return Ok(r.as_bytes().to_vec());
    }
    Ok(bytes)
}

fn certs_dir(dir: &Path) -> anyhow::Result<Vec<attestation::snp::amd::AmdCert>> {
    let mut out = Vec::new();
    let mut found = false;
    for name in [
        "ark.pem",
        "ask.pem",
        "asvk.pem",
        "cert_chain.pem",
        "ark.der",
        "ask.der",
        "asvk.der",
    ] {
        let p = dir.join(name);
        if p.exists() {
            found = true;
            out.extend(
                parse_certs(&read(&p)?).with_context(|| format!("parsing {}", p.display()))?,
            );
        }
    }
    if !found {
        return Err(anyhow!(
            "{} holds none of ark.pem, ask.pem, asvk.pem, cert_chain.pem",
            dir.display()
        ));
    }
    Ok(out)
}

fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::TestEvidence {
            seed,
            node_key,
            nonce,
            ark_out,
        } => test_evidence(&seed, &node_key, &nonce, ark_out.as_deref()),
        Command::Verify {
            evidence,
            policy,
            nonce,
            chip_id,
            node_key,
            config_digest,
            common,
        } => {
            let entry = NodeEntry {
                name: "cli".into(),
                url: String::new(),
                chip_id,
                node_public_key: node_key,
                config_digest,
            };
            verify(&evidence, &policy, &nonce, &entry, &common)
        }
        Command::VerifyReport {
            report,
            vcek,
            certs,
            policy,
            common,
        } => verify_report(&report, &vcek, certs.as_deref(), policy.as_deref(), &common),
        Command::Fleet {
            nodes,
            policy,
            concurrency,
            timeout_ms,
            every,
            metrics_listen,
            lab_policy,
            common,
        } => {
            let sources = Sources {
                nodes,
                policy,
                lab_policy,
            };
            let timeout = Duration::from_millis(timeout_ms);
            match every {
                Some(interval) => {
                    let opts = WatchOptions {
                        interval,
                        concurrency,
                        timeout,
                    };
                    watch_fleet(&sources, opts, metrics_listen, &common)
                }
                None => check_fleet(&sources, concurrency, timeout, &common),
            }
        }
    }
}

/// `attest test-evidence`: a bundle from the test evidence source, printed as JSON.
fn test_evidence(
    seed: &Path,
    node_key: &Path,
    nonce: &str,
    ark_out: Option<&Path>,
) -> anyhow::Result<bool> {
    use attestation::collect::{Attester, GpuSource, SnpSource};
    use attestation::identity::load_or_create_unsealed_key;
    use attestation::test_source::TestSigner;
    let nonce = parse_nonce(nonce).ok_or_else(|| anyhow!("--nonce must be 64 hex digits"))?;
    let signer = TestSigner::from_seed(TestSigner::load_or_create_seed(seed)?)?;
    if let Some(path) = ark_out {
        std::fs::write(path, signer.ark_pem())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let attester = Attester {
        node_key: load_or_create_unsealed_key(node_key)?.0,
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&attester.attest(&nonce)?)?
    );
    Ok(true)
}

/// `attest verify`: one bundle against the nonce sent and the node as `entry` registers it.
fn verify(
    evidence: &Path,
    policy: &Path,
    nonce: &str,
    entry: &NodeEntry,
    common: &Common,
) -> anyhow::Result<bool> {
    let now = common.now()?;
    let nonce = parse_nonce(nonce).ok_or_else(|| anyhow!("--nonce must be 64 hex digits"))?;
    let policy = Policy::load(policy)?;
    let bundle = Bundle::from_json(&read(evidence)?)
        .with_context(|| format!("evidence {}", evidence.display()))?;
    let expected: ExpectedNode = entry.expected()?;
    let chains = ChainVerifier::new(policy.trust_store());
    let v = verify_bundle(&bundle, &nonce, &policy, &chains, now, &expected);
    print_verdict(&v, common.json)?;
    Ok(v.admitted)
}

/// `attest verify-report`: a raw SNP report with its VCEK/VLEK and optional ASK/ARK
/// directory, under the policy given or the default one.
fn verify_report(
    report: &Path,
    vcek: &Path,
    certs: Option<&Path>,
    policy: Option<&Path>,
    common: &Common,
) -> anyhow::Result<bool> {
    let now = common.now()?;
    let policy = match policy {
        Some(p) => Policy::load(p)?,
        None => Policy::default_policy(),
    };
    let report = load_report(report)?;
    let others = certs.map(certs_dir).transpose()?.unwrap_or_default();
    // An unparsable VCEK is reported as a failed check, not as unusable input.
    let chain = parse_certs(&read(vcek)?)
        .map_err(|e| format!("{}: {e}", vcek.display()))
        .and_then(|mut c| {
            if c.is_empty() {
                Err("no certificate".into())
            } else {
                Ok(c.remove(0))
            }
        })
        .map(|v| SuppliedChain::from_certs(v, others));
    let chains = ChainVerifier::new(policy.trust_store());
    let mut checks = Vec::new();
    snp_checks::verify_report(
        &report,
        chain,
        &SnpContext {
            policy: &policy,
            chains: &chains,
            now,
        },
        &mut checks,
    );
    let v = Verdict::from_checks(checks);
    print_verdict(&v, common.json)?;
    Ok(v.admitted)
}

/// `attest fleet`: one check of every node, its verdicts printed.
fn check_fleet(
    sources: &Sources,
    concurrency: usize,
    timeout: Duration,
    common: &Common,
) -> anyhow::Result<bool> {
    let now = common.now()?;
    let nodes = NodeList::load(&sources.nodes)?;
    let policy = Arc::new(Policy::load(&sources.policy)?);
    let missing = fleet_watch::admission_gaps(&policy, &nodes);
    warn_or_refuse_lab(sources, &missing, "verdicts below are")?;
    // The verdicts hold only with what the policy waives: said with every run.
    if !policy.waivers.is_empty() {
        eprintln!(
            "attest: WAIVED by the policy {}: {}",
            sources.policy.display(),
            policy.waived().join("; ")
        );
    }
    let chains = Arc::new(ChainVerifier::new(policy.trust_store()));
    let opts = FleetOptions {
        concurrency,
        timeout,
        now,
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let results = runtime.block_on(fleet::run(&nodes, policy, chains, opts));
    if common.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", fleet::table(&results));
    }
    Ok(results.iter().all(|r| r.status == NodeStatus::Admitted))
}

/// A policy or node list that cannot admit is refused, unless in a lab, where it is said.
fn warn_or_refuse_lab(sources: &Sources, missing: &[String], verdicts: &str) -> anyhow::Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    if !sources.lab_policy {
        return Err(anyhow!(
            "policy {} cannot admit nodes: it lacks {} (--lab-policy overrides this in a lab)",
            sources.policy.display(),
            missing.join(", ")
        ));
    }
    eprintln!(
        "attest: LAB POLICY: {} lacks {}; {verdicts} NOT production admissions",
        sources.policy.display(),
        missing.join(", ")
    );
    Ok(())
}

/// `attest fleet --every`: rounds until SIGTERM or SIGINT. Inputs that are bad at start are
/// unusable input (2), as are `--json` and `--time` (a single check's options); later rounds
/// refuse a bad file and keep the last verdicts.
fn watch_fleet(
    sources: &Sources,
    opts: WatchOptions,
    listen: SocketAddr,
    common: &Common,
) -> anyhow::Result<bool> {
    if common.json || common.time.is_some() {
        return Err(anyhow!(
            "--every serves metrics at the current time: --json and --time apply to a single check"
        ));
    }
    let first = sources.load()?;
    warn_or_refuse_lab(sources, &first.lab_gaps, "the verdicts served are")?;
    if opts.timeout >= opts.interval {
        eprintln!(
            "attest: warning: the per-node timeout ({:?}) is not below the interval ({:?}); a slow node delays the next round",
            opts.timeout, opts.interval
        );
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("--metrics-listen {listen}"))?;
        let shutdown = shutdown_signal()?;
        eprintln!(
            "attest: checking {} nodes every {:?}; metrics on http://{}/metrics",
            first.nodes.node.len(),
            opts.interval,
            listener.local_addr()?
        );
        fleet_watch::run(sources.clone(), first, opts, listener, shutdown, log_round).await;
        anyhow::Ok(())
    })?;
    // A verification still running on a blocking thread is not waited for long.
    runtime.shutdown_timeout(Duration::from_millis(500));
    eprintln!("attest: stopped");
    Ok(true)
}

/// Completes on SIGTERM or SIGINT; the handlers are installed before it returns.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

fn log_round(report: &RoundReport) {
    match report {
        RoundReport::Checked {
            nodes,
            admitted,
            took,
            changes,
        } => {
            for change in changes {
                eprintln!("attest: {change}");
            }
            eprintln!("attest: round: {admitted}/{nodes} nodes admitted in {took:.1?}");
        }
        RoundReport::Refused(e) => {
            eprintln!("attest: round refused, last verdicts kept: {e}");
        }
    }
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
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::from(0),
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("attest: unusable input: {}", error_chain(&e));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every subcommand is described in `--help`: the command sets
    /// `help_expected`, which clap's debug assertions check for each argument.
    #[test]
    fn every_argument_has_help_text() {
        super::Cli::command().debug_assert();
    }
}
