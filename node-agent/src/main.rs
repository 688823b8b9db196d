use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use node_agent::compose::{self, FactsSource};
use node_agent::node_config::NodeConfiguration;
use node_agent::settings::Settings;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// sovereign-node agent.
#[derive(Parser)]
#[command(version, about, help_expected = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve health, readiness, status, metrics and the dashboard (systemd Type=notify).
    Run(Common),
    /// Print the readiness report once; exit status 1 when the node is not fit.
    Check(Common),
    /// Print the probed machine facts as JSON (usable later with --facts).
    Probe {
        /// Root of the /proc, /sys and /dev trees to probe (a fixture tree in development).
        #[arg(long, default_value = "/")]
        root: PathBuf,
    },
    /// Record NVML samples as JSON (an array of samples, each an array of GPUs): the
    /// format the golden tests replay. Xid counts come from the kernel log under `run`;
    /// here they are empty.
    SampleGpu {
        /// Number of samples to take.
        #[arg(long, default_value_t = 2)]
        count: u32,
        /// Seconds between two samples.
        #[arg(long, default_value_t = 15.0)]
        interval_seconds: f64,
    },
    /// Set the replica slice's AllowedCPUs= to the union of the pools' CPU sets in the
    /// runtime configuration the agent wrote (`systemctl set-property --runtime`, killed
    /// after the timeout). Run as root by sovereign-replica-cpus.service after the agent
    /// is ready; the agent itself has no access to systemd's bus.
    SetReplicaCpus {
        /// The runtime configuration the agent wrote (its settings' `runtime_config`): the
        /// pools' CPU sets give the slice's AllowedCPUs=.
        #[arg(long, default_value = "/run/sovereign-node/runtime-config.json")]
        runtime_config: PathBuf,
        /// The systemd slice the replica runs in.
        #[arg(long, default_value = "sovereign-replica.slice")]
        slice: String,
        /// Seconds `systemctl set-property` may take before it is killed (an error).
        #[arg(long, default_value_t = node_agent::pinning::SYSTEMCTL_TIMEOUT.as_secs())]
        timeout_seconds: u64,
    },
    /// Verify the configuration partition (signature, checksums, schema) and write what the
    /// node uses into DIR atomically: status.json, node.toml, hostname, network/, ic.json5.
    /// A refused partition leaves a failure record (status.json, state "failed") in DIR and
    /// exits 1; an all-zero or absent one records the image default and exits 0.
    /// The contract: provisioning/sn-config/README.md.
    ApplyConfig {
        /// The configuration partition (its block device) or a file with its bytes; an
        /// absent or all-zero one means the image's default configuration.
        #[arg(long, value_name = "PARTITION_OR_FILE")]
        from: PathBuf,
        /// The directory to write (`run --node-config` reads it); replaced as a whole, in
        /// one rename, so a reader never sees half of it.
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
        /// The measured kernel command line; `sn.config_signer=HEX[,HEX]` there pins the
        /// bundle's signer.
        #[arg(long, value_name = "FILE", default_value = "/proc/cmdline")]
        cmdline: PathBuf,
    },
    /// Internal: `run` starts this as a child process. Reads a crypto policy (JSON) on
    /// standard input, runs the crypto selftest under it, prints the report as JSON.
    #[command(hide = true)]
    Selftest,
    /// Internal: `run` starts this as a child process for each NVML query (probe, telemetry
    /// sample, GPU evidence): the request as JSON on standard input, the answer on standard
    /// output. The daemon never loads NVML itself.
    #[command(hide = true)]
    Nvml,
}

#[derive(Args)]
struct Common {
    /// Configuration file (TOML); unknown keys are an error.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Profile name, NAME! to force a non-matching one, or "auto".
    #[arg(long)]
    profile: Option<String>,
    /// The operator listener's address (default 127.0.0.1:9420): every route.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Root of the /proc, /sys and /dev trees to probe (a fixture tree in development).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Machine facts recorded as JSON instead of probing.
    #[arg(long, conflicts_with = "root")]
    facts: Option<PathBuf>,
    /// Directory of profile files that add to or replace the embedded ones.
    #[arg(long)]
    profiles_dir: Option<PathBuf>,
    /// The measured kernel command line (`/proc/cmdline` on a node): its `sn.evidence=`
    /// and `sn.test_measurement=` select the evidence source over the configuration file
    /// (node_agent::kernel_cmdline). Development runs leave it out.
    #[arg(long, value_name = "FILE")]
    kernel_cmdline: Option<PathBuf>,
    /// The directory `apply-config` wrote (the node's configuration from sn-config): node
    /// name, subnet, profile and collection interval come from it; a refused configuration
    /// makes the node NOT READY with the reason.
    #[arg(long, value_name = "DIR")]
    node_config: Option<PathBuf>,
}

impl Common {
    fn resolve(&self) -> anyhow::Result<(Settings, FactsSource, NodeConfiguration)> {
        let mut settings = match &self.config {
            Some(path) => Settings::load(path)?,
            None => Settings::default(),
        };
        // The boot parameters (the measured kernel command line): the listeners and the
        // evidence source. `--kernel-cmdline FILE` names it explicitly; otherwise /proc/cmdline. The
        // command line's --listen (development) wins over both.
        let cmdline = match &self.kernel_cmdline {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the kernel command line {}", path.display()))?,
            None => match std::fs::read_to_string("/proc/cmdline") {
                Ok(text) => text,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read /proc/cmdline: no sn.* settings");
                    String::new()
                }
            },
        };
        let listeners = node_agent::listeners::BootListeners::parse(&cmdline)
            .map_err(|e| anyhow::anyhow!(e))?;
        if let Some(addr) = listeners.operator {
            settings.listen = addr;
        }
        if let Some(addr) = listeners.public {
            settings.public_listen = Some(addr);
        }
        let boot = node_agent::kernel_cmdline::BootParameters::parse(&cmdline)?;
        if let Some(source) = boot.evidence {
            settings.attestation.source = source;
        }
        if boot.test_measurement.is_some() {
            settings.attestation.test_measurement = boot.test_measurement;
        }
        let node_config = match &self.node_config {
            Some(dir) => NodeConfiguration::load(dir),
            None => NodeConfiguration::development(),
        };
        if let Some(node) = &node_config.node {
            settings.profile = node.profile.clone();
            if let Some(s) = node.collect_interval_seconds {
                settings.collect_interval_seconds = s;
            }
        }
        if let Some(p) = &self.profile {
            settings.profile = p.clone();
        }
        if let Some(l) = self.listen {
            settings.listen = l;
        }
        if let Some(r) = &self.root {
            settings.root = r.clone();
        }
        settings.validate()?;
        let facts = match &self.facts {
            Some(f) => FactsSource::Recorded(f.clone()),
            None => FactsSource::Probe(settings.root.clone()),
        };
        Ok((settings, facts, node_config))
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("node-agent: error: {}", error_chain(&e));
            std::process::ExitCode::FAILURE
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

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Run(common) => serve(&common),
        Command::Check(common) => check(&common),
        Command::Probe { root } => {
            let facts = compose::probe_root(&root, &node_agent::probe::NvmlMode::System);
            println!("{}", serde_json::to_string_pretty(&facts)?);
            Ok(())
        }
        Command::SetReplicaCpus {
            runtime_config,
            slice,
            timeout_seconds,
        } => set_replica_cpus(&runtime_config, &slice, timeout_seconds),
        Command::ApplyConfig { from, to, cmdline } => apply_config(&from, &to, &cmdline),
        Command::Selftest => node_agent::selftest_child::child_main(),
        Command::Nvml => node_agent::nvml_child::child_main(),
        Command::SampleGpu {
            count,
            interval_seconds,
        } => sample_gpu(count, interval_seconds),
    }
}

/// `node-agent run`: the daemon, on its own tokio runtime.
fn serve(common: &Common) -> anyhow::Result<()> {
    let (settings, facts, node_config) = common.resolve()?;
    // Two workers: the agent serves a handful of requests per scrape interval. Blocking
    // work (evidence collection, bounded by its own slots) needs few threads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .thread_name("agent-http")
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(compose::run(
        settings,
        facts,
        common.profiles_dir.clone(),
        node_config,
    ))
}

/// `node-agent check`: exits 1 when the node is not fit.
fn check(common: &Common) -> anyhow::Result<()> {
    let (settings, facts, node_config) = common.resolve()?;
    let fit = compose::check(
        &settings,
        &facts,
        common.profiles_dir.as_deref(),
        &node_config,
        &mut std::io::stdout(),
    )?;
    if !fit {
        std::process::exit(1);
    }
    Ok(())
}

/// `node-agent set-replica-cpus`: the slice's AllowedCPUs= from the runtime configuration.
fn set_replica_cpus(
    runtime_config: &Path,
    slice: &str,
    timeout_seconds: u64,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(runtime_config)
        .with_context(|| format!("reading {}", runtime_config.display()))?;
    let runtime = hardware_profiles::runtime::RuntimeConfig::from_json(&text)
        .with_context(|| format!("parsing {}", runtime_config.display()))?;
    match node_agent::pinning::slice_cpus(&runtime) {
        None => println!(
            "profile {}: no pool has a CPU set; {slice} AllowedCPUs= left unset",
            runtime.profile
        ),
        Some(cpus) => {
            node_agent::pinning::set_slice_cpus(
                slice,
                &cpus,
                std::time::Duration::from_secs(timeout_seconds),
            )?;
            println!("profile {}: {slice} AllowedCPUs={cpus}", runtime.profile);
        }
    }
    Ok(())
}

/// `node-agent apply-config`: prints what was applied; exits 1 on a refused partition.
fn apply_config(from: &Path, to: &Path, cmdline: &Path) -> anyhow::Result<()> {
    match node_agent::node_config::apply_config(from, to, cmdline) {
        Ok(status) => {
            let outcome = match status.state {
                sn_config::apply::ApplyState::Applied => format!(
                    "applied bundle {} of node {} (signer {}): {}",
                    status.bundle_digest.as_deref().unwrap_or("?"),
                    status.node.as_deref().unwrap_or("?"),
                    status.signer.as_deref().unwrap_or("?"),
                    status.files.join(", ")
                ),
                _ => status.reason.unwrap_or_default(),
            };
            println!("{}: {outcome}", to.display());
            Ok(())
        }
        Err(e) => {
            eprintln!("node-agent apply-config: {e:#}");
            std::process::exit(1);
        }
    }
}

/// `node-agent sample-gpu`: `count` NVML samples, `interval_seconds` apart, as JSON.
fn sample_gpu(count: u32, interval_seconds: f64) -> anyhow::Result<()> {
    use node_agent::nvml::NvmlSampler;
    let mut source = NvmlSampler::open().context("opening NVML")?;
    let mut samples = Vec::new();
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(interval_seconds));
        }
        samples.push(source.sample().map_err(|e| anyhow::anyhow!(e))?);
    }
    println!("{}", serde_json::to_string_pretty(&samples)?);
    Ok(())
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
