//! `attest fleet --every`: the fleet check as a service. Every interval it re-reads NODES.toml
//! and the policy, checks every node ([`crate::fleet::run`], its per-node timeout and
//! retries), and keeps the verdicts as Prometheus metrics served on a small HTTP listener.
//!
//! Rounds never overlap: a round that outlasts the interval delays the next one. A round
//! whose NODES.toml or policy is refused (unreadable, malformed, more than [`MAX_NODES`]
//! nodes, a name given twice, a policy that cannot admit) checks no node: the last good
//! verdicts stay, the round counts as `input_refused`, and the nodes' last-success times age
//! until a good file is back, so that a broken input fails closed into the stale alert.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use thiserror::Error;
use tokio::net::TcpListener;

use crate::fleet::{self, FleetOptions, NodeResult, NodeStatus};
use crate::nodes::{NodeList, NodeListError};
use crate::policy::{Policy, PolicyError};
use crate::report::Verdict;
use crate::snp::amd::ChainVerifier;
use crate::snp::tcb::Product;

/// The most nodes one NODES.toml may list: a list beyond it is refused. Each node costs a
/// handful of series; one verifier process checks some hundreds of nodes a second
/// (docs/results/fleet-verifier-throughput), so this many fit a round of a minute or more.
pub const MAX_NODES: usize = 10_000;
/// The shortest and longest interval `--every` accepts.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// See [`MIN_INTERVAL`].
pub const MAX_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// Where the metrics are served unless told otherwise (the node agent uses 9420 and 9421).
pub const DEFAULT_METRICS_LISTEN: &str = "127.0.0.1:9430";
/// The content type of the metrics page (OpenMetrics text, which Prometheus asks for).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Longest failure reason kept as a label value.
const MAX_REASON_CHARS: usize = 200;
/// Scrapes served at once; more connections are closed unanswered.
const MAX_CONNECTIONS: usize = 16;

/// Why text is not an `--every` interval.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum IntervalError {
    /// No text.
    #[error("empty interval")]
    Empty,
    /// Not numbers with units.
    #[error("{0:?}: expected a number followed by ms, s, m or h (e.g. 60s, 5m, 1m30s)")]
    Syntax(String),
    /// Outside [`MIN_INTERVAL`]..=[`MAX_INTERVAL`].
    #[error("{0:?} is out of range ({MIN_INTERVAL:?} to {MAX_INTERVAL:?})")]
    Range(String),
}

/// A duration such as `60s`, `5m`, `1h` or `1m30s`: numbers each followed by a unit (ms, s,
/// m, h), between [`MIN_INTERVAL`] and [`MAX_INTERVAL`].
pub fn parse_interval(text: &str) -> Result<Duration, IntervalError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(IntervalError::Empty);
    }
    let syntax = || IntervalError::Syntax(text.to_owned());
    let mut total = Duration::ZERO;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(syntax)?;
        let number: u64 = rest[..digits].parse().map_err(|_| syntax())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(syntax()),
        };
        let part = u32::try_from(number)
            .ok()
            .and_then(|n| unit.checked_mul(n))
            .ok_or_else(|| IntervalError::Range(text.to_owned()))?;
        total = total.saturating_add(part);
        rest = &rest[unit_len..];
    }
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&total) {
        return Err(IntervalError::Range(text.to_owned()));
    }
    Ok(total)
}

/// Why a round's NODES.toml or policy was refused.
#[derive(Debug, Error)]
pub enum InputError {
    /// NODES.toml is unusable.
    #[error(transparent)]
    Nodes(#[from] NodeListError),
    /// The policy is unusable.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// More than [`MAX_NODES`] nodes.
    #[error("{path} lists {count} nodes; one verifier checks at most {MAX_NODES}")]
    TooManyNodes {
        /// The node list.
        path: String,
        /// How many nodes it lists.
        count: usize,
    },
    /// Two entries with one name (the metrics key on it).
    #[error("{path} names node {name:?} twice")]
    DuplicateNode {
        /// The node list.
        path: String,
        /// The repeated name.
        name: String,
    },
    /// Inputs that cannot admit nodes, without the lab override ([`admission_gaps`]).
    #[error(
        "policy {path} cannot admit nodes: it lacks {missing} (--lab-policy overrides this in a lab)"
    )]
    CannotAdmit {
        /// The policy.
        path: String,
        /// What it and the node list lack, comma separated.
        missing: String,
    },
}

/// What keeps a policy and node list from admitting nodes in production: the policy's gaps
/// ([`Policy::missing_for_admission`]) and every entry without its chip id, node key or
/// planned configuration digest (admission compares each node with what was registered).
pub fn admission_gaps(policy: &Policy, nodes: &NodeList) -> Vec<String> {
    let mut missing = policy.missing_for_admission();
    for node in &nodes.node {
        let absent: Vec<&str> = [
            ("chip_id", node.chip_id.is_none()),
            ("node_public_key", node.node_public_key.is_none()),
            ("config_digest", node.config_digest.is_none()),
        ]
        .into_iter()
        .filter_map(|(field, absent)| absent.then_some(field))
        .collect();
        if !absent.is_empty() {
            missing.push(format!(
                "node {}'s registered {} (NODES.toml)",
                node.name,
                absent.join(", ")
            ));
        }
    }
    missing
}

/// The files a round reads.
#[derive(Debug, Clone)]
pub struct Sources {
    /// NODES.toml.
    pub nodes: PathBuf,
    /// POLICY.toml.
    pub policy: PathBuf,
    /// Accept a policy or entries that cannot admit in production ([`admission_gaps`]).
    pub lab_policy: bool,
}

/// One round's inputs, read and accepted.
pub struct Inputs {
    /// The nodes to check.
    pub nodes: NodeList,
    /// The policy to check them against.
    pub policy: Arc<Policy>,
    /// A chain verifier trusting the policy's roots.
    pub chains: Arc<ChainVerifier>,
    /// What the lab override let through (empty for a production policy).
    pub lab_gaps: Vec<String>,
}

impl Sources {
    /// Read NODES.toml and the policy and accept them or say why not.
    pub fn load(&self) -> Result<Inputs, InputError> {
        self.reload(None)
    }

    /// [`Sources::load`], keeping `previous`'s chain verifier while the policy trusts the same
    /// roots: its cache spares every node's RSA chain verification after the first round.
    pub fn reload(&self, previous: Option<&Inputs>) -> Result<Inputs, InputError> {
        let nodes = NodeList::load(&self.nodes)?;
        self.check_nodes(&nodes)?;
        let policy = Policy::load(&self.policy)?;
        let gaps = admission_gaps(&policy, &nodes);
        if !gaps.is_empty() && !self.lab_policy {
            return Err(InputError::CannotAdmit {
                path: self.policy.display().to_string(),
                missing: gaps.join(", "),
            });
        }
        let chains = match previous {
            Some(p) if test_root_der(&p.policy) == test_root_der(&policy) => p.chains.clone(),
            _ => Arc::new(ChainVerifier::new(policy.trust_store())),
        };
        Ok(Inputs {
            nodes,
            policy: Arc::new(policy),
            chains,
            lab_gaps: gaps,
        })
    }

    /// Bounded, and one series per node: names are the metrics' keys.
    fn check_nodes(&self, nodes: &NodeList) -> Result<(), InputError> {
        let path = self.nodes.display().to_string();
        if nodes.node.len() > MAX_NODES {
            return Err(InputError::TooManyNodes {
                path,
                count: nodes.node.len(),
            });
        }
        let mut seen = BTreeSet::new();
        for node in &nodes.node {
            if !seen.insert(node.name.as_str()) {
                return Err(InputError::DuplicateNode {
                    path,
                    name: node.name.clone(),
                });
            }
        }
        Ok(())
    }
}

/// What a policy adds to AMD's embedded roots (the only part of its trust store that varies).
fn test_root_der(policy: &Policy) -> Option<(Product, Vec<Vec<u8>>)> {
    policy.test_root.as_ref().map(|anchor| {
        let certs = std::iter::once(&anchor.ark).chain(&anchor.intermediates);
        (anchor.product, certs.map(|c| c.der().to_vec()).collect())
    })
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabel {
    node: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    node: String,
    /// admitted, rejected, unreachable or bad_evidence.
    status: String,
    /// Empty when admitted; else the failed checks or why there was no evidence.
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    node: String,
    check: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RoundLabel {
    result: String,
}

type GaugeF64 = Gauge<f64, AtomicU64>;

/// The metrics page. Updates and encoding take `page`, so that a scrape never sees a
/// node between the removal of its old verdict series and the setting of the new one.
pub struct FleetMetrics {
    registry: Registry,
    page: Mutex<()>,
    admitted: Family<VerdictLabels, Gauge>,
    last_success: Family<NodeLabel, GaugeF64>,
    check_failures: Family<CheckLabels, Counter>,
    evidence_changed: Family<NodeLabel, Counter>,
    round_duration: GaugeF64,
    last_round: GaugeF64,
    rounds: Family<RoundLabel, Counter>,
    nodes: Gauge,
    interval: GaugeF64,
}

impl FleetMetrics {
    fn new(interval: Duration) -> FleetMetrics {
        let m = FleetMetrics {
            registry: Registry::default(),
            page: Mutex::new(()),
            admitted: Family::default(),
            last_success: Family::default(),
            check_failures: Family::default(),
            evidence_changed: Family::default(),
            round_duration: GaugeF64::default(),
            last_round: GaugeF64::default(),
            rounds: Family::default(),
            nodes: Gauge::default(),
            interval: GaugeF64::default(),
        };
        m.interval.set(interval.as_secs_f64());
        // Both results from the start, so that a rate over either is 0, not absent.
        for result in [ROUND_OK, ROUND_REFUSED] {
            m.rounds.get_or_create_owned(&RoundLabel {
                result: result.into(),
            });
        }
        m.register()
    }

    /// Help texts end without a full stop: the encoder adds one.
    fn register(mut self) -> FleetMetrics {
        let r = &mut self.registry;
        r.register(
            "sovereign_fleet_node_admitted",
            "1 when the node's latest evidence was admitted, else 0 (status and reason say why)",
            self.admitted.clone(),
        );
        r.register(
            "sovereign_fleet_node_last_success_timestamp_seconds",
            "When the node was last admitted (Unix seconds); absent until its first admission",
            self.last_success.clone(),
        );
        r.register(
            "sovereign_fleet_node_check_failures",
            "Rounds in which the named check failed for the node (fetch: no answer, evidence: not a bundle)",
            self.check_failures.clone(),
        );
        r.register(
            "sovereign_fleet_node_evidence_changed",
            "Times the node's measurement, node key or configuration digest differed from its previous evidence",
            self.evidence_changed.clone(),
        );
        r.register(
            "sovereign_fleet_round_duration_seconds",
            "How long the latest round took",
            self.round_duration.clone(),
        );
        r.register(
            "sovereign_fleet_last_round_timestamp_seconds",
            "When the latest round ended (Unix seconds), whatever its result",
            self.last_round.clone(),
        );
        r.register(
            "sovereign_fleet_rounds",
            "Rounds by result: ok (every node checked) or input_refused (NODES.toml or policy refused; no node checked)",
            self.rounds.clone(),
        );
        r.register(
            "sovereign_fleet_nodes",
            "Nodes in the latest accepted NODES.toml",
            self.nodes.clone(),
        );
        r.register(
            "sovereign_fleet_interval_seconds",
            "The interval between round starts",
            self.interval.clone(),
        );
        self
    }

    /// The page in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let _page = self.page.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

const ROUND_OK: &str = "ok";
const ROUND_REFUSED: &str = "input_refused";

/// What identifies a node's evidence across rounds: its measurement, node key and
/// configuration digest, as the verdict's checks name them (the first hex value of each
/// check's detail is the node's own; the registered or allowed values follow it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct EvidenceId {
    measurement: Option<String>,
    node_key: Option<String>,
    config_digest: Option<String>,
}

impl EvidenceId {
    fn of(v: &Verdict) -> EvidenceId {
        let value = |check: &str| v.check(check).and_then(|c| first_hex(&c.detail));
        EvidenceId {
            measurement: value("snp.identity.measurement"),
            node_key: value("binding.node_key"),
            config_digest: value("config.bundle_digest"),
        }
    }

    /// Which of the three differ, by name.
    fn changes(&self, now: &EvidenceId) -> Vec<&'static str> {
        [
            ("measurement", self.measurement != now.measurement),
            ("node key", self.node_key != now.node_key),
            ("config digest", self.config_digest != now.config_digest),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect()
    }
}

/// The first run of at least 64 hex digits (a key or digest) in `text`.
fn first_hex(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() >= 64)
        .map(str::to_ascii_lowercase)
}

/// What the service remembers of a node between rounds.
struct NodeMemory {
    verdict: VerdictLabels,
    evidence: Option<EvidenceId>,
    failed_checks: BTreeSet<String>,
}

/// What one round did, for the service's log.
#[derive(Debug)]
pub enum RoundReport {
    /// The round checked every node.
    Checked {
        /// Nodes checked.
        nodes: usize,
        /// Nodes admitted.
        admitted: usize,
        /// The round's duration.
        took: Duration,
        /// One line per node whose verdict or evidence changed (or not admitted at first).
        changes: Vec<String>,
    },
    /// The round's inputs were refused; the last verdicts are kept.
    Refused(InputError),
}

/// The verdicts between rounds and the metrics they feed.
pub struct FleetWatch {
    metrics: Arc<FleetMetrics>,
    memory: BTreeMap<String, NodeMemory>,
}

impl FleetWatch {
    /// No verdicts yet; the metrics say rounds run every `interval`.
    pub fn new(interval: Duration) -> FleetWatch {
        FleetWatch {
            metrics: Arc::new(FleetMetrics::new(interval)),
            memory: BTreeMap::new(),
        }
    }

    /// The metrics the verdicts feed.
    pub fn metrics(&self) -> Arc<FleetMetrics> {
        self.metrics.clone()
    }

    /// Take a completed round's results; nodes no longer listed lose their series.
    pub fn record_round(
        &mut self,
        results: &[NodeResult],
        now: u64,
        took: Duration,
    ) -> RoundReport {
        let metrics = self.metrics.clone();
        let _page = metrics.page.lock().unwrap_or_else(|e| e.into_inner());
        let listed: BTreeSet<&str> = results.iter().map(|r| r.name.as_str()).collect();
        self.forget_unlisted(&listed);
        let changes = results
            .iter()
            .filter_map(|r| self.record_node(r, now))
            .collect();
        metrics.nodes.set(results.len() as i64);
        self.end_round(ROUND_OK, now, took);
        RoundReport::Checked {
            nodes: results.len(),
            admitted: results
                .iter()
                .filter(|r| r.status == NodeStatus::Admitted)
                .count(),
            took,
            changes,
        }
    }

    /// A round whose inputs were refused: the last verdicts stay as they are.
    pub fn record_refused(&mut self, error: InputError, now: u64, took: Duration) -> RoundReport {
        let _page = self.metrics.page.lock().unwrap_or_else(|e| e.into_inner());
        self.end_round(ROUND_REFUSED, now, took);
        RoundReport::Refused(error)
    }

    fn end_round(&self, result: &str, now: u64, took: Duration) {
        let m = &self.metrics;
        m.rounds
            .get_or_create(&RoundLabel {
                result: result.into(),
            })
            .inc();
        m.round_duration.set(took.as_secs_f64());
        m.last_round.set(now as f64);
    }

    fn forget_unlisted(&mut self, listed: &BTreeSet<&str>) {
        let gone: Vec<String> = self
            .memory
            .keys()
            .filter(|name| !listed.contains(name.as_str()))
            .cloned()
            .collect();
        for name in gone {
            if let Some(memory) = self.memory.remove(&name) {
                self.remove_series(&name, &memory);
            }
        }
    }

    fn remove_series(&self, name: &str, memory: &NodeMemory) {
        let m = &self.metrics;
        let node = NodeLabel { node: name.into() };
        m.admitted.remove(&memory.verdict);
        m.last_success.remove(&node);
        m.evidence_changed.remove(&node);
        for check in &memory.failed_checks {
            m.check_failures.remove(&CheckLabels {
                node: name.into(),
                check: check.clone(),
            });
        }
    }

    /// Update one node's series; a line for the log when its verdict or evidence changed, or
    /// when it is not admitted in its first round.
    fn record_node(&mut self, r: &NodeResult, now: u64) -> Option<String> {
        let metrics = self.metrics.clone();
        let verdict = verdict_labels(r);
        let evidence = r.verdict.as_ref().map(EvidenceId::of);
        let mut log = Vec::new();
        if !self.memory.contains_key(&r.name) && r.status != NodeStatus::Admitted {
            log.push(verdict.status.clone());
        }
        let memory = self
            .memory
            .entry(r.name.clone())
            .or_insert_with(|| NodeMemory {
                verdict: verdict.clone(),
                evidence: evidence.clone(),
                failed_checks: BTreeSet::new(),
            });
        log.extend(metrics.set_verdict(memory, verdict, r.status == NodeStatus::Admitted, now));
        log.extend(metrics.compare_evidence(memory, evidence));
        metrics.count_failures(memory, r);
        if log.is_empty() {
            return None;
        }
        Some(format!("{}: {} ({})", r.name, log.join("; "), r.reason))
    }
}

/// The per-node updates, each with what it changes in the node's memory.
impl FleetMetrics {
    /// The node's one verdict series (an earlier one with other labels is removed) and, when
    /// admitted, its last-success time.
    fn set_verdict(
        &self,
        memory: &mut NodeMemory,
        verdict: VerdictLabels,
        admitted: bool,
        now: u64,
    ) -> Option<String> {
        let change = (memory.verdict != verdict).then(|| {
            self.admitted.remove(&memory.verdict);
            format!("{} -> {}", memory.verdict.status, verdict.status)
        });
        self.admitted
            .get_or_create(&verdict)
            .set(i64::from(admitted));
        if admitted {
            let node = NodeLabel {
                node: verdict.node.clone(),
            };
            self.last_success.get_or_create(&node).set(now as f64);
        }
        memory.verdict = verdict;
        change
    }

    /// Counts a change against the node's previous evidence; no evidence this round leaves
    /// the previous one to compare the next with.
    fn compare_evidence(
        &self,
        memory: &mut NodeMemory,
        evidence: Option<EvidenceId>,
    ) -> Option<String> {
        let node = NodeLabel {
            node: memory.verdict.node.clone(),
        };
        // Present from the node's first round on, so that a rate over it is 0, not absent.
        let counter = self.evidence_changed.get_or_create_owned(&node);
        let evidence = evidence?;
        let changed = memory
            .evidence
            .replace(evidence.clone())
            .map(|before| before.changes(&evidence))
            .unwrap_or_default();
        if changed.is_empty() {
            return None;
        }
        counter.inc();
        Some(format!("evidence changed: {}", changed.join(", ")))
    }

    fn count_failures(&self, memory: &mut NodeMemory, r: &NodeResult) {
        for check in failed_checks(r) {
            let labels = CheckLabels {
                node: r.name.clone(),
                check,
            };
            self.check_failures.get_or_create(&labels).inc();
            memory.failed_checks.insert(labels.check);
        }
    }
}

fn verdict_labels(r: &NodeResult) -> VerdictLabels {
    let status = match r.status {
        NodeStatus::Admitted => "admitted",
        NodeStatus::Rejected => "rejected",
        NodeStatus::Unreachable => "unreachable",
        NodeStatus::BadEvidence => "bad_evidence",
    };
    VerdictLabels {
        node: r.name.clone(),
        status: status.into(),
        reason: r.reason.chars().take(MAX_REASON_CHARS).collect(),
    }
}

/// The checks a round counts as failed for the node: the verdict's failed checks, `fetch`
/// when no answer came, `evidence` when the answer was not a bundle.
fn failed_checks(r: &NodeResult) -> Vec<String> {
    match (r.status, &r.verdict) {
        (NodeStatus::Admitted, _) => Vec::new(),
        (NodeStatus::Unreachable, _) => vec!["fetch".into()],
        (_, Some(v)) => v.failed().map(|c| c.name.clone()).collect(),
        (_, None) => vec!["evidence".into()],
    }
}

/// How rounds run: the interval between their starts, and `attest fleet`'s own options.
#[derive(Debug, Clone, Copy)]
pub struct WatchOptions {
    /// Time between the starts of two rounds.
    pub interval: Duration,
    /// Nodes queried at once.
    pub concurrency: usize,
    /// Per node, all its tries together.
    pub timeout: Duration,
}

/// Serve the metrics on `listener` and check the fleet every interval until `shutdown`
/// completes. `first` are the inputs read at start (they were refused there if bad); later
/// rounds re-read `sources`. `log` hears of every round.
pub async fn run(
    sources: Sources,
    first: Inputs,
    opts: WatchOptions,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    mut log: impl FnMut(&RoundReport),
) {
    let mut watch = FleetWatch::new(opts.interval);
    let server = tokio::spawn(serve_metrics(listener, watch.metrics()));
    let mut ticks = tokio::time::interval(opts.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut first = Some(first);
    let mut last: Option<Arc<Inputs>> = None;
    tokio::pin!(shutdown);
    loop {
        let next = async {
            ticks.tick().await;
            let inputs = match first.take() {
                Some(inputs) => Ok(Arc::new(inputs)),
                None => sources.reload(last.as_deref()).map(Arc::new),
            };
            if let Ok(inputs) = &inputs {
                last = Some(inputs.clone());
            }
            round(&mut watch, inputs, opts).await
        };
        tokio::select! {
            () = &mut shutdown => break,
            report = next => log(&report),
        }
    }
    server.abort();
}

async fn round(
    watch: &mut FleetWatch,
    inputs: Result<Arc<Inputs>, InputError>,
    opts: WatchOptions,
) -> RoundReport {
    let start = Instant::now();
    let now = unix_now();
    let inputs = match inputs {
        Ok(inputs) => inputs,
        Err(e) => return watch.record_refused(e, now, start.elapsed()),
    };
    let fleet_opts = FleetOptions {
        concurrency: opts.concurrency,
        timeout: opts.timeout,
        now,
    };
    let (policy, chains) = (inputs.policy.clone(), inputs.chains.clone());
    let results = fleet::run(&inputs.nodes, policy, chains, fleet_opts).await;
    watch.record_round(&results, unix_now(), start.elapsed())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `GET /metrics` on every accepted connection, at most [`MAX_CONNECTIONS`] at once.
pub async fn serve_metrics(listener: TcpListener, metrics: Arc<FleetMetrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| answer(req, metrics.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

async fn answer(
    req: Request<Incoming>,
    metrics: Arc<FleetMetrics>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => (StatusCode::OK, CONTENT_TYPE, metrics.encode()),
        (&Method::GET, _) => (StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".into(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse() {
        let s = Duration::from_secs;
        assert_eq!(parse_interval("60s"), Ok(s(60)));
        assert_eq!(parse_interval("5m"), Ok(s(300)));
        assert_eq!(parse_interval("1h"), Ok(s(3600)));
        assert_eq!(parse_interval("1m30s"), Ok(s(90)));
        assert_eq!(parse_interval(" 1500ms "), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_interval("24h"), Ok(MAX_INTERVAL));
    }

    #[test]
    fn bad_intervals_are_refused() {
        for bad in ["60", "s", "5 m", "1.5s", "5d", "-1s", "1m-", "m5"] {
            assert!(
                matches!(parse_interval(bad), Err(IntervalError::Syntax(_))),
                "{bad}"
            );
        }
        assert_eq!(parse_interval(""), Err(IntervalError::Empty));
        for out in ["0s", "999ms", "25h", "99999999999h"] {
            assert!(
                matches!(parse_interval(out), Err(IntervalError::Range(_))),
                "{out}"
            );
        }
    }

    #[test]
    fn first_hex_takes_the_nodes_own_value() {
        let own = "ab".repeat(32);
        let registered = "cd".repeat(32);
        assert_eq!(
            first_hex(&format!("node key {own} != registered {registered}")),
            Some(own.clone())
        );
        assert_eq!(first_hex("bundle 00ff; short"), None);
    }

    #[test]
    fn inputs_are_refused_with_their_reason_and_reloads_keep_the_chain_cache() {
        let dir = tempfile::tempdir().unwrap();
        let sources = Sources {
            nodes: dir.path().join("nodes.toml"),
            policy: dir.path().join("policy.toml"),
            lab_policy: true,
        };
        let entry = "[[node]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n";
        std::fs::write(&sources.policy, "").unwrap();
        std::fs::write(&sources.nodes, entry.repeat(2)).unwrap();
        assert!(matches!(
            sources.load(),
            Err(InputError::DuplicateNode { name, .. }) if name == "a"
        ));
        std::fs::write(&sources.nodes, entry).unwrap();
        let first = sources.load().unwrap();
        let again = sources.reload(Some(&first)).unwrap();
        assert!(Arc::ptr_eq(&first.chains, &again.chains));
        let production = Sources {
            lab_policy: false,
            ..sources
        };
        assert!(matches!(
            production.load(),
            Err(InputError::CannotAdmit { .. })
        ));
    }

    fn result(name: &str, status: NodeStatus, reason: &str) -> NodeResult {
        NodeResult {
            name: name.into(),
            url: String::new(),
            status,
            reason: reason.into(),
            elapsed_ms: 1,
            verdict: None,
        }
    }

    fn with_key(name: &str, key: u8) -> NodeResult {
        let detail = format!("node key {} is the registered one", hex::encode([key; 32]));
        let check = crate::report::Check::pass("binding.node_key", detail);
        NodeResult {
            verdict: Some(Verdict::from_checks(vec![check])),
            ..result(name, NodeStatus::Admitted, "")
        }
    }

    #[test]
    fn evidence_is_compared_with_the_last_evidence_across_rounds_without_any() {
        let mut watch = FleetWatch::new(Duration::from_secs(60));
        let down = || result("a", NodeStatus::Unreachable, "unreachable: refused");
        for (round, r) in [
            with_key("a", 1),
            down(),
            with_key("a", 1),
            down(),
            with_key("a", 2),
        ]
        .iter()
        .enumerate()
        {
            watch.record_round(std::slice::from_ref(r), round as u64, Duration::ZERO);
        }
        let page = watch.metrics().encode();
        assert!(
            page.contains("sovereign_fleet_node_evidence_changed_total{node=\"a\"} 1\n"),
            "{page}"
        );
    }

    #[test]
    fn a_node_has_one_verdict_series_and_leaves_with_its_list_entry() {
        let mut watch = FleetWatch::new(Duration::from_secs(60));
        let down = result("a", NodeStatus::Unreachable, "unreachable: refused");
        watch.record_round(
            &[down, result("b", NodeStatus::Admitted, "")],
            100,
            Duration::ZERO,
        );
        watch.record_round(
            &[result("a", NodeStatus::Admitted, "")],
            160,
            Duration::ZERO,
        );
        let page = watch.metrics().encode();
        assert!(
            page.contains(
                "sovereign_fleet_node_admitted{node=\"a\",status=\"admitted\",reason=\"\"} 1\n"
            ),
            "{page}"
        );
        assert!(!page.contains("status=\"unreachable\""), "{page}");
        assert!(!page.contains("node=\"b\""), "{page}");
        assert!(
            page.contains(
                "sovereign_fleet_node_check_failures_total{node=\"a\",check=\"fetch\"} 1\n"
            )
        );
        assert!(
            page.contains(
                "sovereign_fleet_node_last_success_timestamp_seconds{node=\"a\"} 160.0\n"
            )
        );
        assert!(page.contains("sovereign_fleet_rounds_total{result=\"ok\"} 2\n"));
    }
}
