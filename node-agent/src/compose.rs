//! The composition root: `node-agent run` and `node-agent check` put together from the
//! agent's parts (probe, profile selection, readiness, the selftest child, collectors,
//! pinning, attestation, HTTP), then serve under systemd (Type=notify with watchdog).

use crate::assessment::{NodeAssessment, RuntimeConfigFile};
use crate::clock::{Clock, SystemClock};
use crate::collect::{Collectors, ReplicaSource};
use crate::cost::{CostParams, CostTracker};
use crate::listeners::Listener;
use crate::nvml_child::NvmlChild;
use crate::pinning_loop::{PinningLoop, ReplicaProcess};
use crate::probe::NvmlMode;
use crate::routes::{
    AppState, AttestationService, AttestationStatus, Heartbeat, public_router, router,
};
use crate::selftest_child::{self, CryptoOutcome};
use crate::settings::{
    AttestationSettings, EvidenceSource, GpuEvidence, SYSTEM_RUNTIME_DIR, SYSTEM_STATE_DIR,
    Settings,
};
use anyhow::Context;
use hardware_profiles::{MachineFacts, NvmlStatus, ProfileSet};
use sd_notify::NotifyState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Where the machine facts come from.
#[derive(Debug, Clone)]
pub enum FactsSource {
    /// Probe the tree under this root ("/" on a node, a fixture tree in development).
    Probe(PathBuf),
    /// Facts recorded earlier as JSON (`node-agent probe --json`), e.g. from a real node.
    Recorded(PathBuf),
}

/// Tells systemd, where it supervises us; a no-op elsewhere (NOTIFY_SOCKET unset).
pub fn notify(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "sd_notify failed");
    }
}

/// The machine's facts; `nvml` is how a probe of the real root reaches NVML.
pub fn machine_facts(source: &FactsSource, nvml: &NvmlMode) -> anyhow::Result<MachineFacts> {
    match source {
        FactsSource::Probe(root) => Ok(probe_root(root, nvml)),
        FactsSource::Recorded(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading facts {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("parsing facts {}", path.display()))
        }
    }
}

/// Probes the tree under `root`. NVML (through `nvml`) only for the real root: a fixture
/// tree has no GPU behind it.
pub fn probe_root(root: &Path, nvml: &NvmlMode) -> MachineFacts {
    if root == Path::new("/") {
        crate::probe::probe(root, nvml)
    } else {
        let fixture = NvmlMode::absent(format!("fixture tree {}", root.display()));
        crate::probe::probe(root, &fixture)
    }
}

/// How the daemon reaches NVML: a `node-agent nvml` child per query, never in itself
/// ([`crate::nvml_child`]).
pub fn daemon_nvml() -> NvmlMode {
    match NvmlChild::this_executable() {
        Ok(child) => NvmlMode::Child(child),
        Err(reason) => NvmlMode::absent(reason),
    }
}

pub(crate) fn profile_set(profiles_dir: Option<&Path>) -> anyhow::Result<ProfileSet> {
    Ok(match profiles_dir {
        Some(dir) => ProfileSet::embedded_with_overrides(dir)?,
        None => ProfileSet::embedded()?,
    })
}

/// Probe, select and evaluate readiness.
pub fn assess_node(
    settings: &Settings,
    facts: &FactsSource,
    profiles_dir: Option<&Path>,
    nvml: &NvmlMode,
) -> anyhow::Result<NodeAssessment> {
    let facts = machine_facts(facts, nvml)?;
    let profiles = profile_set(profiles_dir)?;
    let image = crate::assessment::ImageStatus::read(&settings.root);
    Ok(crate::assessment::assess(
        facts,
        &profiles,
        &settings.profile,
        image,
    )?)
}

/// The crypto selftest of the node's policy, in this process (`node-agent check`, a
/// one-shot). An engine that cannot start (a GPU-pinned operation without a usable GPU) is
/// a failed selftest saying why: the node then reports not ready.
pub fn crypto_selftest_in_process(node: &NodeAssessment) -> CryptoOutcome {
    let policy = node.runtime.crypto;
    selftest_child::outcome(&policy, selftest_child::run_selftest(policy))
}

/// The crypto selftest of the node's policy in a child process (`node-agent selftest`, this
/// same executable), so that the daemon never opens a CUDA context of its own.
pub fn crypto_selftest_in_child(node: &NodeAssessment) -> CryptoOutcome {
    let policy = node.runtime.crypto;
    match crate::child::this_executable("selftest") {
        Ok(command) => {
            selftest_child::selftest_in_child(command, &policy, selftest_child::SELFTEST_TIMEOUT)
        }
        Err(reason) => selftest_child::outcome(
            &policy,
            selftest_child::ChildOutput::EngineFailed {
                reason,
                kernel_loads: Vec::new(),
            },
        ),
    }
}

/// Wires the collectors for a real node, and the pinning loop where pinning is on (the
/// collectors read its passes).
pub fn node_collectors(
    settings: &Settings,
    node: NodeAssessment,
    crypto: CryptoOutcome,
    clock: Arc<dyn Clock>,
    nvml: &NvmlMode,
) -> anyhow::Result<(Collectors, Option<PinningLoop>)> {
    let cost = CostTracker::new(CostParams::new(&node.cost, &settings.cost));
    let expects_gpu = !node.facts.gpus.gpus.is_empty() || node.runtime.crypto.wants_gpu();
    let pools =
        crate::pinning::plan_from_runtime(&node.runtime, &settings.pinning.thread_patterns)?;
    let mut collectors = Collectors::new(
        clock.clone(),
        node,
        crypto,
        cost,
        settings.cost.cpu_seconds_per_item.clone(),
    )?;
    set_gpu_source(&mut collectors, nvml, expects_gpu);
    let powercap = settings.root.join("sys/class/powercap");
    if powercap.is_dir() {
        collectors.rapl = Some(crate::collect::rapl::RaplReader::new(&settings.root));
    } else {
        collectors.disable(
            "cpu_energy",
            format!("{} does not exist (no RAPL)", powercap.display()),
        );
    }
    if settings.replica.metrics_url.is_empty() {
        collectors.disable("replica", "replica.metrics_url is empty");
    } else {
        let scraper = crate::collect::replica::ReplicaScraper::new(
            &settings.replica.metrics_url,
            Duration::from_secs_f64(settings.replica.scrape_timeout_seconds),
        )?;
        collectors.replica_url = settings.replica.metrics_url.clone();
        collectors.replica = Some(ReplicaSource::Http(Box::new(scraper)));
    }
    let pinning = pinning_loop(settings, pools, clock, &mut collectors);
    Ok((collectors, pinning))
}

/// The GPU collector's source: NVML samples from a child each (with the kernel log's
/// Xids) where the probe's child found NVML; otherwise a source failing with the reason
/// where the node should have a GPU, or the collector disabled where it needs none.
fn set_gpu_source(collectors: &mut Collectors, nvml: &NvmlMode, expects_gpu: bool) {
    let nvml_absent = match &collectors.node.facts.gpus.nvml {
        NvmlStatus::Available { .. } => None,
        NvmlStatus::Absent { reason } => Some(reason.clone()),
    };
    match (nvml, nvml_absent) {
        (NvmlMode::Child(child), None) => {
            use crate::collect::xid::{KMSG, XidWatcher};
            let xid = XidWatcher::start(Path::new(KMSG));
            collectors.gpu = Some(Box::new(crate::collect::gpu::ChildGpuSource::new(
                child.clone(),
                xid,
            )));
        }
        (mode, reason) => {
            let reason = reason.unwrap_or_else(|| match mode {
                NvmlMode::Absent { reason } => reason.clone(),
                _ => "the daemon samples NVML only through its child process".into(),
            });
            if expects_gpu {
                // Keep the collector, failing, so the missing GPU shows as gpu up=0.
                collectors.gpu = Some(Box::new(UnavailableGpu(format!("NVML: {reason}"))));
            } else {
                collectors.disable(
                    "gpu",
                    format!("NVML not available ({reason}) and the profile uses no GPU"),
                );
            }
        }
    }
}

/// The pinning loop over the profile's `pools`, its board given to the collectors; `None`
/// (and the "pinning" collector disabled with the reason) when pinning is off or the
/// profile pins nothing.
fn pinning_loop(
    settings: &Settings,
    pools: Vec<crate::pinning::PoolPlan>,
    clock: Arc<dyn Clock>,
    collectors: &mut Collectors,
) -> Option<PinningLoop> {
    let off = if !settings.pinning.enabled {
        Some("pinning.enabled = false")
    } else if pools.is_empty() {
        Some("the profile gives no pool a CPU set (with a thread-name pattern)")
    } else {
        None
    };
    if let Some(reason) = off {
        collectors.pinning_disabled_reason = Some(reason.into());
        collectors.disable("pinning", reason);
        return None;
    }
    // Under systemd the slice and the replica's unit are found in the cgroup tree
    // (read-only): the agent has no access to systemd's bus.
    let slice = sd_notify::booted()
        .unwrap_or(false)
        .then(|| crate::pinning::SliceCheck {
            slice: settings.pinning.slice.clone(),
            cgroup: Path::new(CGROUP_ROOT)
                .join(crate::pinning::slice_cgroup_path(&settings.pinning.slice)),
        });
    let unit_cgroup = slice
        .as_ref()
        .map(|s| s.cgroup.join(&settings.replica.unit));
    let pinner = crate::pinning::Pinner::new(pools, Path::new("/proc"), slice);
    let process = ReplicaProcess::Locate {
        unit_cgroup,
        process_name: settings.replica.process_name.clone(),
    };
    let pinning_loop = PinningLoop::new(pinner, process, clock);
    collectors.pinning = Some(pinning_loop.board());
    Some(pinning_loop)
}

/// The unified cgroup hierarchy (cgroup v2), where systemd places units.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// A GPU source that always fails with the reason NVML could not be opened.
struct UnavailableGpu(String);

impl crate::collect::gpu::GpuSource for UnavailableGpu {
    fn sample(&mut self) -> Result<Vec<crate::snapshot::GpuSample>, String> {
        Err(self.0.clone())
    }
}

/// `node-agent run`.
pub async fn run(
    settings: Settings,
    facts: FactsSource,
    profiles_dir: Option<PathBuf>,
    node_config: crate::node_config::NodeConfiguration,
) -> anyhow::Result<()> {
    notify(&[NotifyState::Status(
        "probing the machine and selecting the profile",
    )]);
    let nvml = daemon_nvml();
    let node = assess_for_run(
        &settings,
        &facts,
        profiles_dir.as_deref(),
        &node_config,
        &nvml,
    )?;
    notify(&[NotifyState::Status(
        "running the crypto selftest (child process)",
    )]);
    let crypto = tokio::task::spawn_blocking({
        let node = node.clone();
        move || crypto_selftest_in_child(&node)
    })
    .await?;
    for line in &crypto.selftest.checks {
        tracing::info!("selftest {line}");
    }
    let ready = node.ready && crypto.selftest.passed;
    let profile = node.profile.clone();
    let (operator, public) = bind_listeners(&settings)?;
    // The real addresses (port 0 picks a free port; the READY status names them).
    let bound = operator.local_addr()?;
    let public_bound = public.as_ref().map(|l| l.local_addr()).transpose()?;
    let interval = settings.collect_interval();
    let heartbeat = Arc::new(Heartbeat::new(interval * settings.stale_after_intervals));
    let (attestation, attestation_status) = attestation_service(
        &settings.attestation,
        &node.facts,
        &|name| std::env::var_os(name),
        node.profile == DEVELOPMENT_PROFILE,
        &evidence_nvml(&nvml, &settings),
        node_config.binding(),
    );
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::default());
    let (mut collectors, mut pinning) = node_collectors(&settings, node, crypto, clock, &nvml)?;
    // A first pinning pass before the first snapshot, so that it shows the replica's pins.
    let first = tokio::task::block_in_place(|| {
        if let Some(p) = pinning.as_mut() {
            p.reconcile();
        }
        collectors.collect()
    });
    let state = AppState::new(first, heartbeat.clone())
        .with_limits(&settings.http)
        .with_history(crate::history::History::new(
            settings.collect_interval_seconds,
        ))
        .with_attestation(attestation)
        .with_attestation_status(attestation_status);
    let loops = Loops::start(interval, &state, collectors, pinning)?;

    let public_status = public_bound.map_or(String::new(), |a| format!("public listener on {a}; "));
    let status = format!(
        "serving on {bound}; {public_status}profile {profile}; {}",
        readiness_words(ready, &node_config)
    );
    tracing::info!("{status}");
    notify(&[NotifyState::Ready, NotifyState::Status(&status)]);
    if let Some(period) = sd_notify::watchdog_enabled() {
        tokio::spawn(feed_watchdog(period, heartbeat.clone()));
    }
    serve_until_shutdown(&settings, &state, operator, public).await?;
    loops.stop();
    Ok(())
}

/// Probe, selection and readiness for `run`, with the runtime configuration written, the
/// node configuration's outcome, and what was chosen and why logged.
fn assess_for_run(
    settings: &Settings,
    facts: &FactsSource,
    profiles_dir: Option<&Path>,
    node_config: &crate::node_config::NodeConfiguration,
    nvml: &NvmlMode,
) -> anyhow::Result<NodeAssessment> {
    let mut node = assess_node(settings, facts, profiles_dir, nvml)?;
    node.set_runtime_config_file(write_runtime_config(settings, &node));
    node.set_node_configuration(node_config);
    if node_config.ok() {
        tracing::info!("configuration: {}", node_config.detail());
    } else {
        tracing::error!("NOT READY: {}", node_config.detail());
    }
    log_explanation(&node);
    for line in image_lines(&node.image) {
        tracing::info!("{line}");
    }
    if !node.ready {
        tracing::warn!(reasons = ?node.reasons(), "node is not ready under profile {}", node.profile);
    }
    Ok(node)
}

/// The operator listener, and the public one where the agent's settings name it.
fn bind_listeners(
    settings: &Settings,
) -> anyhow::Result<(tokio::net::TcpListener, Option<tokio::net::TcpListener>)> {
    let operator = crate::listeners::bind(settings.listen)
        .with_context(|| format!("binding the operator listener {}", settings.listen))?;
    let public = match settings.public_listen {
        Some(addr) => Some(
            crate::listeners::bind(addr)
                .with_context(|| format!("binding the public listener {addr}"))?,
        ),
        None => None,
    };
    Ok((operator, public))
}

/// How GPU evidence reaches NVML: the daemon's NVML children, killed at the attestation
/// deadline.
fn evidence_nvml(nvml: &NvmlMode, settings: &Settings) -> NvmlMode {
    match nvml {
        NvmlMode::Child(child) => NvmlMode::Child(
            child
                .clone()
                .with_evidence_timeout(settings.http.attestation_timeout()),
        ),
        other => other.clone(),
    }
}

/// The end of the READY status: whether the node is ready, and why not.
fn readiness_words(ready: bool, node_config: &crate::node_config::NodeConfiguration) -> String {
    if ready {
        "node ready".to_string()
    } else if !node_config.ok() {
        format!("node NOT ready: {}", node_config.detail())
    } else {
        "node NOT ready (see /readyz)".to_string()
    }
}

/// Pings systemd's watchdog every half `period` while the collection thread is alive.
async fn feed_watchdog(period: Duration, heartbeat: Arc<Heartbeat>) {
    let mut tick = tokio::time::interval(period / 2);
    loop {
        tick.tick().await;
        // Only a live collection thread keeps the watchdog fed: a stuck NVML call
        // or a dead thread lets systemd restart the agent.
        match heartbeat.check() {
            Ok(()) => notify(&[NotifyState::Watchdog]),
            Err(reason) => {
                tracing::error!(%reason, "withholding the watchdog ping");
                notify(&[NotifyState::Status(&reason)]);
            }
        }
    }
}

/// Serves the operator routes (and the public ones) until SIGTERM or Ctrl-C, then lets the
/// listeners finish what they serve.
async fn serve_until_shutdown(
    settings: &Settings,
    state: &AppState,
    operator: tokio::net::TcpListener,
    public: Option<tokio::net::TcpListener>,
) -> anyhow::Result<()> {
    let (stop_serving, serving) = tokio::sync::watch::channel(false);
    let mut listeners = vec![tokio::spawn(
        Listener {
            role: "operator",
            listener: operator,
            router: router(state.clone()),
            limits: settings.http.clone(),
        }
        .serve(serving.clone()),
    )];
    if let Some(public) = public {
        listeners.push(tokio::spawn(
            Listener {
                role: "public",
                listener: public,
                router: public_router(state.clone()),
                limits: settings.http.clone(),
            }
            .serve(serving.clone()),
        ));
    }
    shutdown_signal().await;
    let _ = stop_serving.send(true);
    for listener in listeners {
        listener.await?;
    }
    Ok(())
}

/// The collection thread, publishing each snapshot to the routes' state, and the pinning
/// thread where pinning is on.
struct Loops {
    stop: Arc<AtomicBool>,
    collection: std::thread::JoinHandle<()>,
    pinning: Option<std::thread::JoinHandle<()>>,
}

impl Loops {
    fn start(
        interval: Duration,
        state: &AppState,
        mut collectors: Collectors,
        pinning: Option<PinningLoop>,
    ) -> std::io::Result<Loops> {
        let stop = Arc::new(AtomicBool::new(false));
        let collection = every(interval, "collectors", &stop, {
            let state = state.clone();
            move || state.publish(collectors.collect())
        })?;
        let pinning = match pinning {
            Some(mut p) => Some(every(interval, "pinning", &stop, move || {
                p.reconcile();
            })?),
            None => None,
        };
        Ok(Loops {
            stop,
            collection,
            pinning,
        })
    }

    /// Stops both threads and waits for them.
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.collection.join();
        if let Some(pinning) = self.pinning {
            let _ = pinning.join();
        }
    }
}

/// A thread named `name` that runs `f` every `interval` until `stop` is set.
fn every(
    interval: Duration,
    name: &str,
    stop: &Arc<AtomicBool>,
    mut f: impl FnMut() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let stop = stop.clone();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut slept = Duration::ZERO;
                while slept < interval && !stop.load(Ordering::Relaxed) {
                    let step = Duration::from_millis(200).min(interval - slept);
                    std::thread::sleep(step);
                    slept += step;
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                f();
            }
        })
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutdown requested");
    notify(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// Writes the replica's runtime configuration where `settings` says (see
/// [`Settings::runtime_config_path`]), atomically; the outcome becomes a readiness check.
pub fn write_runtime_config(settings: &Settings, node: &NodeAssessment) -> RuntimeConfigFile {
    let location = settings.runtime_config_path(
        &|name| std::env::var_os(name),
        Path::new(SYSTEM_RUNTIME_DIR),
        node.profile == DEVELOPMENT_PROFILE,
    );
    let file = match location {
        Err(reason) => RuntimeConfigFile {
            path: None,
            origin: String::new(),
            written: false,
            error: Some(reason),
        },
        Ok(choice) => {
            let written = choice
                .path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| node.runtime.write_atomic(&choice.path));
            RuntimeConfigFile {
                path: Some(choice.path),
                origin: choice.origin,
                written: written.is_ok(),
                error: written.err().map(|e| e.to_string()),
            }
        }
    };
    match (&file.path, &file.error) {
        (Some(path), None) => {
            tracing::info!(path = %path.display(), origin = %file.origin, "wrote the replica's runtime configuration")
        }
        (path, Some(error)) => {
            tracing::error!(path = ?path, %error, "cannot write the replica's runtime configuration: node not ready")
        }
        (None, None) => {}
    }
    file
}

/// The profile choice at info level: the choice and what concerns the chosen profile (its
/// mismatches under a forced pin, criteria not verified), then one line counting the other
/// profiles; why each of those does not fit (dozens of lines with the embedded set) goes to
/// debug level, and `node-agent check` and `/v1/status` show it in full.
fn log_explanation(node: &crate::assessment::NodeAssessment) {
    let chosen = format!("  `{}` ", node.profile);
    let mut others = 0;
    for (i, line) in node.explanation.iter().enumerate() {
        if i == 0 || line.starts_with(&chosen) {
            tracing::info!("{line}");
        } else {
            others += usize::from(line.starts_with('`'));
            tracing::debug!("{line}");
        }
    }
    if others > 0 {
        tracing::info!(
            "{others} other profiles not chosen (why: `node-agent check`, /v1/status, or RUST_LOG=debug)"
        );
    }
}

/// What the image was built with, in words: one line, plus one per missing optional input.
fn image_lines(image: &crate::assessment::ImageStatus) -> Vec<String> {
    let Some(version) = &image.version else {
        return vec![format!(
            "image: {}",
            image.absent_reason.as_deref().unwrap_or("unknown")
        )];
    };
    let mut lines = vec![format!("image: sovereign-node {version}")];
    for input in image.optional_inputs.iter().filter(|i| !i.present) {
        lines.push(format!(
            "image: optional input {} is MISSING ({})",
            input.name, input.what
        ));
    }
    lines
}

/// `node-agent check`: the readiness report; Ok(true) when the node is fit.
pub fn check(
    settings: &Settings,
    facts: &FactsSource,
    profiles_dir: Option<&Path>,
    node_config: &crate::node_config::NodeConfiguration,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<bool> {
    let mut node = assess_node(settings, facts, profiles_dir, &NvmlMode::System)?;
    node.set_node_configuration(node_config);
    let crypto = crypto_selftest_in_process(&node);
    let selftest = &crypto.selftest;
    writeln!(out, "profile: {} ({})", node.profile, node.selection)?;
    for line in &node.explanation {
        writeln!(out, "  {line}")?;
    }
    if node.readiness.is_empty() {
        writeln!(
            out,
            "readiness: profile `{}` sets no requirements",
            node.profile
        )?;
    } else {
        writeln!(out, "readiness:")?;
    }
    for c in &node.readiness {
        let mark = if c.satisfied { "ok  " } else { "FAIL" };
        writeln!(out, "  {mark} {}: {}", c.requirement, c.detail)?;
    }
    writeln!(
        out,
        "SEV-SNP: {} (guest device: {})",
        node.sev_snp.state, node.sev_snp.guest_device
    )?;
    for line in image_lines(&node.image) {
        writeln!(out, "{line}")?;
    }
    writeln!(out, "crypto paths:")?;
    for op in &crypto.report.operations {
        writeln!(out, "  {}: {}", op.operation, op.explanation)?;
    }
    for note in &node.runtime.crypto_notes {
        writeln!(out, "  note: {note}")?;
    }
    writeln!(out, "crypto selftest:")?;
    for line in &selftest.checks {
        writeln!(out, "  {line}")?;
    }
    let fit = node.ready && selftest.passed;
    writeln!(
        out,
        "{}",
        if fit {
            "node is FIT"
        } else {
            "node is NOT FIT"
        }
    )?;
    Ok(fit)
}

/// The profile whose node may keep its state in the user's XDG state directory.
pub const DEVELOPMENT_PROFILE: &str = "development";

/// The evidence source of `GET /v1/attestation`, and what /v1/status says about it. A source
/// that cannot be set up is served as a 503 with the reason (and logged), never as a quietly
/// different source. `env` reads the environment (`STATE_DIRECTORY`, `XDG_STATE_HOME`,
/// `HOME`); `development` allows the user state directory (see `AttestationSettings::state_dir`).
pub fn attestation_service(
    settings: &AttestationSettings,
    facts: &MachineFacts,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    development: bool,
    nvml: &NvmlMode,
    config_binding: ([u8; 32], [u8; 32]),
) -> (AttestationService, AttestationStatus) {
    let mut status = AttestationStatus {
        source: match settings.source {
            EvidenceSource::Hardware => "hardware",
            EvidenceSource::Test => "test",
            EvidenceSource::Off => "off",
        }
        .to_string(),
        ..AttestationStatus::default()
    };
    let gpu = gpu_evidence_source(settings.gpu_evidence, facts, nvml);
    status.gpu_evidence = !matches!(gpu, attestation::collect::GpuSource::None);
    let attester = refuse_unusable_source(settings, facts)
        .and_then(|()| attestation_state_dir(settings, env, development, &mut status))
        .and_then(|state_dir| {
            let in_state_dir = |configured: &Option<PathBuf>, name: &str| {
                configured
                    .clone()
                    .or_else(|| state_dir.as_ref().map(|d| d.join(name)))
                    .unwrap_or_default()
            };
            let snp = snp_source(settings, &in_state_dir, &mut status)?;
            let binding =
                attestation::bundle::ConfigBinding::from_parts(config_binding.0, config_binding.1);
            let key_file = in_state_dir(&settings.node_key, "node-key.pem");
            attester(settings, snp, gpu, binding, &key_file, &mut status)
        });
    match attester {
        Ok(attester) => {
            status.available = true;
            (AttestationService::Ready(Arc::new(attester)), status)
        }
        // `public` goes to callers of /v1/attestation; `detail` (paths, errors) to the log
        // and to /v1/status, an operator view.
        Err(Unavailable { public, detail }) => {
            tracing::warn!(reason = %detail, "/v1/attestation answers 503");
            status.available = false;
            status.reason = Some(detail);
            (AttestationService::Unavailable(public.to_string()), status)
        }
    }
}

/// Why `/v1/attestation` cannot serve evidence: what its callers are told, and the detail
/// (paths, errors) for the log and /v1/status.
struct Unavailable {
    public: &'static str,
    detail: String,
}

impl Unavailable {
    fn new(public: &'static str, detail: impl Into<String>) -> Unavailable {
        Unavailable {
            public,
            detail: detail.into(),
        }
    }
}

const ATTESTATION_DISABLED: &str = "disabled in the configuration";

/// Where GPU evidence comes from: NVML through `nvml` where the configuration asks for it
/// (or, under `auto`, where the probe found an NVIDIA GPU), none otherwise.
fn gpu_evidence_source(
    evidence: GpuEvidence,
    facts: &MachineFacts,
    nvml: &NvmlMode,
) -> attestation::collect::GpuSource {
    use attestation::collect::GpuSource;
    let nvml_source = || match nvml {
        NvmlMode::System => GpuSource::Nvml,
        NvmlMode::Child(child) => GpuSource::External(Arc::new(child.clone())),
        NvmlMode::Absent { reason } => {
            GpuSource::External(Arc::new(crate::nvml_child::Unreachable(reason.clone())))
        }
    };
    match evidence {
        GpuEvidence::Nvml => nvml_source(),
        GpuEvidence::None => GpuSource::None,
        GpuEvidence::Auto if facts.gpus.gpus.is_empty() && facts.gpus.pci_nvidia.is_empty() => {
            GpuSource::None
        }
        GpuEvidence::Auto => nvml_source(),
    }
}

/// Refuses a source that is off, or a hardware source with a key file or without an
/// SEV-SNP guest device.
fn refuse_unusable_source(
    settings: &AttestationSettings,
    facts: &MachineFacts,
) -> Result<(), Unavailable> {
    if settings.source == EvidenceSource::Off {
        return Err(Unavailable::new(ATTESTATION_DISABLED, ATTESTATION_DISABLED));
    }
    if settings.source == EvidenceSource::Hardware && settings.node_key.is_some() {
        // A key file would be something the host can read or plant; refuse rather than
        // leave the operator believing a file is the node's identity.
        return Err(Unavailable::new(
            "this node's identity key configuration is refused",
            "attestation.node_key names a key file, but the hardware source derives a sealed \
             key from the SNP derived key and never reads or writes one: remove node_key",
        ));
    }
    if settings.source == EvidenceSource::Hardware && !facts.sev_snp.guest_device {
        return Err(Unavailable::new(
            "this node has no SEV-SNP guest device",
            "hardware evidence source, but the probe found no SEV-SNP guest device \
             (/dev/sev-guest): not an SEV-SNP guest",
        ));
    }
    Ok(())
}

/// The state directory, where the test source keeps the files the configuration leaves to
/// it; `None` when nothing goes there (the hardware source writes nothing).
fn attestation_state_dir(
    settings: &AttestationSettings,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    development: bool,
    status: &mut AttestationStatus,
) -> Result<Option<PathBuf>, Unavailable> {
    let needs_state_dir = settings.source == EvidenceSource::Test
        && (settings.node_key.is_none() || settings.test_seed.is_none());
    if !needs_state_dir {
        return Ok(None);
    }
    match settings.state_dir(env, Path::new(SYSTEM_STATE_DIR), development) {
        Ok(dir) => {
            tracing::info!(path = %dir.path.display(), origin = %dir.origin, "attestation state directory");
            status.state_dir = Some(dir.path.display().to_string());
            status.state_dir_origin = Some(dir.origin.clone());
            Ok(Some(dir.path))
        }
        Err(e) => Err(Unavailable::new("no state directory for the node key", e)),
    }
}

/// The SEV-SNP report source: the guest device, or a test signer whose seed lies at the
/// configured path (or in the state directory, through `in_state_dir`).
fn snp_source(
    settings: &AttestationSettings,
    in_state_dir: &dyn Fn(&Option<PathBuf>, &str) -> PathBuf,
    status: &mut AttestationStatus,
) -> Result<attestation::collect::SnpSource, Unavailable> {
    use attestation::collect::SnpSource;
    use attestation::test_source::TestSigner;
    match settings.source {
        EvidenceSource::Off => Err(Unavailable::new(ATTESTATION_DISABLED, ATTESTATION_DISABLED)),
        EvidenceSource::Hardware => Ok(SnpSource::Hardware {
            vmpl: settings.vmpl,
            cert_cache: settings.cert_cache.clone(),
        }),
        EvidenceSource::Test => {
            let seed_path = in_state_dir(&settings.test_seed, "test-evidence-seed");
            status.test_seed = Some(seed_path.display().to_string());
            let mut signer = TestSigner::load_or_create_seed(&seed_path)
                .and_then(TestSigner::from_seed)
                .map_err(|e| {
                    Unavailable::new(
                        "the test evidence source is unusable",
                        format!("test evidence source: {e}"),
                    )
                })?;
            let measurement = settings
                .test_measurement
                .unwrap_or_else(attestation::test_source::test_measurement);
            signer.template.measurement(measurement);
            tracing::warn!(seed = %seed_path.display(),
                measurement = %hex::encode(measurement),
                "attestation serves TEST evidence: no governing body policy admits it");
            Ok(SnpSource::Test(Box::new(signer)))
        }
    }
}

/// The attester over `snp` and `gpu` with the node's identity key: sealed (derived from
/// the SNP derived key, never stored) under the hardware source, the unsealed `key_file`
/// under the test source.
fn attester(
    settings: &AttestationSettings,
    snp: attestation::collect::SnpSource,
    gpu: attestation::collect::GpuSource,
    binding: attestation::bundle::ConfigBinding,
    key_file: &Path,
    status: &mut AttestationStatus,
) -> Result<attestation::collect::Attester, Unavailable> {
    use attestation::identity::{
        KeyFileOrigin, derive_sealed_node_key, load_or_create_unsealed_key,
    };
    let node_key = if settings.source == EvidenceSource::Hardware {
        let sealed = derive_sealed_node_key(settings.vmpl).map_err(|e| {
            Unavailable::new(
                "the sealed node identity key could not be derived",
                format!("sealed node identity key: {e}"),
            )
        })?;
        let kind = format!(
            "sealed: derived from the SNP derived key (VCEK root; measurement, guest policy, committed TCB {:#018x}, VMPL {}); never stored",
            sealed.request.tcb_version, sealed.request.vmpl
        );
        tracing::info!(%kind, "node identity key");
        status.node_key_kind = Some(kind);
        sealed.key
    } else {
        status.node_key = Some(key_file.display().to_string());
        let (key, origin) = load_or_create_unsealed_key(key_file).map_err(|e| {
            Unavailable::new(
                "the node identity key is unusable",
                format!("node identity key unusable: {e}"),
            )
        })?;
        let action = match origin {
            KeyFileOrigin::Created => "created",
            KeyFileOrigin::Loaded => "loaded",
        };
        tracing::warn!(path = %key_file.display(), action,
            "UNSEALED node identity key (test evidence source): a file, not sealed to SEV-SNP");
        status.node_key_kind = Some(format!("UNSEALED file ({action}), test evidence only"));
        key
    };
    status.node_public_key = Some(hex::encode(node_key.verifying_key().to_bytes()));
    Ok(attestation::collect::Attester {
        node_key,
        snp,
        gpu,
        config: binding,
    })
}
