//! The agent's HTTP routes. Handlers read the latest snapshot only: nothing here touches
//! NVML, sysfs, /proc or the replica, except `/v1/attestation`, which collects evidence
//! within the limits of [`AttestationGate`]. Bodies sent to clients name no local path and
//! no driver detail: those go to the agent's log. The listeners and their connection limits
//! are in [`crate::listeners`].

use crate::exposition;
use crate::history::History;
use crate::listeners::{HttpLimits, PeerAddr};
use crate::snapshot::Snapshot;
use axum::Router;
use axum::extract::{Extension, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The operator dashboard: one self-contained page, no external resources.
pub const DASHBOARD_HTML: &str = include_str!("dashboard.html");

/// Liveness of the collection thread: when it last completed a cycle.
pub struct Heartbeat {
    origin: Instant,
    last_cycle_ms: AtomicU64,
    /// A cycle older than this means the collectors are stuck.
    stale_after: Duration,
}

impl Heartbeat {
    /// A heartbeat that has not beaten yet, stale once no cycle completed for
    /// `stale_after`.
    pub fn new(stale_after: Duration) -> Heartbeat {
        Heartbeat {
            origin: Instant::now(),
            last_cycle_ms: AtomicU64::new(0),
            stale_after,
        }
    }

    /// Records that a collection cycle completed now.
    pub fn beat(&self) {
        let ms = self.origin.elapsed().as_millis() as u64;
        self.last_cycle_ms.store(ms, Ordering::Relaxed);
    }

    /// Time since the last completed cycle (since creation, before the first).
    pub(crate) fn age(&self) -> Duration {
        let now = self.origin.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_cycle_ms.load(Ordering::Relaxed)))
    }

    /// Ok when the collectors completed a cycle recently.
    pub fn check(&self) -> Result<(), String> {
        let age = self.age();
        if age <= self.stale_after {
            Ok(())
        } else {
            Err(format!(
                "collectors stale: last cycle completed {:.1} s ago (limit {:.1} s)",
                age.as_secs_f64(),
                self.stale_after.as_secs_f64()
            ))
        }
    }
}

/// Where `GET /v1/attestation` gets its evidence.
pub enum AttestationService {
    /// Not set up; the reason is what callers get with a 503.
    Unavailable(String),
    /// Evidence is collected by this attester, within the [`AttestationGate`]'s limits.
    Ready(Arc<attestation::collect::Attester>),
}

/// What /v1/status says about `GET /v1/attestation`: the source, where the node key (and
/// test seed) live and why that directory was chosen, or why the route answers 503.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct AttestationStatus {
    /// "hardware", "test" or "off".
    pub source: String,
    /// The route serves evidence; false: it answers 503 for `reason`.
    pub available: bool,
    /// Why the route answers 503, when it does.
    pub reason: Option<String>,
    /// The directory of the node key and the test seed; `None` when none was chosen.
    pub state_dir: Option<String>,
    /// Why that state directory (configured, systemd StateDirectory=, system default, or
    /// the development profile's user directory and why the system one was not usable).
    pub state_dir_origin: Option<String>,
    /// The unsealed key file (test evidence source only; a sealed key has no file).
    pub node_key: Option<String>,
    /// How the key is held: sealed (derived from the SNP derived key) or an unsealed file.
    pub node_key_kind: Option<String>,
    /// The node's Ed25519 identity public key, hex; `None` when the route is unavailable.
    pub node_public_key: Option<String>,
    /// The test chain's seed file (test evidence source only).
    pub test_seed: Option<String>,
    /// Whether bundles carry GPU evidence (NVML).
    pub gpu_evidence: bool,
}

/// Bounds on evidence collection. Each client (an IPv4 address or an IPv6 /64: one host
/// usually holds a whole /64) has its own token bucket and concurrency in a table of fixed
/// size; all clients together share `attestation_concurrency` slots. The reserved verifier
/// addresses have budgets of their own outside the table and one more slot that only they
/// may take, so at most `attestation_concurrency + 1` collections run at once. Each
/// collection (an SNP report ioctl, an NVML child) holds its slot until it returns, also past
/// its deadline, so a call stuck in the driver keeps its slot and never multiplies threads.
pub struct AttestationGate {
    /// Slots any client may take.
    open_slots: Arc<tokio::sync::Semaphore>,
    /// The slot only reserved addresses may take (none when no address is reserved).
    reserved_slots: Arc<tokio::sync::Semaphore>,
    clients: Mutex<ClientTable>,
    per_client: usize,
    timeout: Duration,
}

/// Why a request for evidence is not served now, and when to come back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    /// Every slot this client may use is taken: 503.
    Busy,
    /// This client has a collection in progress already: 503.
    ClientBusy,
    /// This client's bucket is empty for this long: 429.
    Rate(Duration),
    /// The table is full of clients still within their budget; the first has its full
    /// burst again in this long: 429.
    TableFull(Duration),
}

impl AttestationGate {
    /// A gate with no collection running and every client's bucket full, under `limits`.
    pub(crate) fn new(limits: &HttpLimits) -> AttestationGate {
        let reserved = usize::from(!limits.attestation_reserved_for.is_empty());
        let bucket = TokenBucket::new(limits.attestation_per_second, limits.attestation_burst);
        AttestationGate {
            open_slots: Arc::new(tokio::sync::Semaphore::new(limits.attestation_concurrency)),
            reserved_slots: Arc::new(tokio::sync::Semaphore::new(reserved)),
            clients: Mutex::new(ClientTable::new(
                limits.attestation_max_clients,
                &limits.attestation_reserved_for,
                bucket,
            )),
            per_client: limits.attestation_client_concurrency,
            timeout: limits.attestation_timeout(),
        }
    }

    /// Admits one collection for the client at `peer` (None: an in-process caller, counted
    /// as one client), or says why not. A refused request spends no token.
    pub fn admit(
        self: &Arc<Self>,
        peer: Option<IpAddr>,
        now: Instant,
    ) -> Result<Admission, Refusal> {
        let mut table = self.lock_clients();
        let (key, reserved) = table.classify(peer);
        let client = table.client(key, reserved, now)?;
        if client.in_flight >= self.per_client {
            return Err(Refusal::ClientBusy);
        }
        let slot = self.take_slot(reserved).ok_or(Refusal::Busy)?;
        client.bucket.take(now).map_err(Refusal::Rate)?;
        client.in_flight += 1;
        Ok(Admission {
            _slot: slot,
            gate: Arc::clone(self),
            key,
            reserved,
        })
    }

    /// A reserved address takes the reserved slot first, leaving the open ones to others.
    fn take_slot(&self, reserved: bool) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let reserved_slot = || {
            reserved
                .then(|| Arc::clone(&self.reserved_slots).try_acquire_owned().ok())
                .flatten()
        };
        reserved_slot().or_else(|| Arc::clone(&self.open_slots).try_acquire_owned().ok())
    }

    fn lock_clients(&self) -> std::sync::MutexGuard<'_, ClientTable> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One admitted collection: its slot, and its place in its client's concurrency, both given
/// back when it is dropped (when the collection returns).
pub struct Admission {
    _slot: tokio::sync::OwnedSemaphorePermit,
    gate: Arc<AttestationGate>,
    key: IpAddr,
    reserved: bool,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.gate.lock_clients().finished(self.key, self.reserved);
    }
}

/// One client's budget.
#[derive(Debug, Clone)]
struct ClientBudget {
    bucket: TokenBucket,
    in_flight: usize,
}

/// The clients the gate tracks: at most `max` in `clients`, plus one entry per reserved
/// address, never evicted. Memory is bounded by `max` whatever the number of addresses.
struct ClientTable {
    max: usize,
    clients: HashMap<IpAddr, ClientBudget>,
    reserved: HashMap<IpAddr, ClientBudget>,
    /// A new client's budget: a full bucket, nothing in flight.
    fresh: ClientBudget,
}

impl ClientTable {
    fn new(max: usize, reserved_for: &[IpAddr], bucket: TokenBucket) -> ClientTable {
        let fresh = ClientBudget {
            bucket,
            in_flight: 0,
        };
        ClientTable {
            max: max.max(1),
            clients: HashMap::new(),
            reserved: reserved_for
                .iter()
                .map(|ip| (canonical(*ip), fresh.clone()))
                .collect(),
            fresh,
        }
    }

    /// The key a peer is budgeted under, and whether it is a reserved address.
    fn classify(&self, peer: Option<IpAddr>) -> (IpAddr, bool) {
        let ip = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), canonical);
        if self.reserved.contains_key(&ip) {
            (ip, true)
        } else {
            (client_key(ip), false)
        }
    }

    /// The budget of `key`, added when new (making room first when the table is full).
    fn client(
        &mut self,
        key: IpAddr,
        reserved: bool,
        now: Instant,
    ) -> Result<&mut ClientBudget, Refusal> {
        if reserved {
            return self.reserved.get_mut(&key).ok_or(Refusal::Busy);
        }
        if !self.clients.contains_key(&key) && self.clients.len() >= self.max {
            self.make_room(now).map_err(Refusal::TableFull)?;
        }
        let mut fresh = self.fresh.clone();
        fresh.bucket.last = now;
        Ok(self.clients.entry(key).or_insert(fresh))
    }

    /// Removes a client whose bucket has refilled and that has nothing in flight: it is
    /// exactly a new client, so forgetting it loses nothing. Evicting any other would hand
    /// it a full bucket on its return, so when there is none, the new client waits; the
    /// error says until when the first client is idle.
    fn make_room(&mut self, now: Instant) -> Result<(), Duration> {
        let idle = self
            .clients
            .iter()
            .filter(|(_, c)| c.in_flight == 0 && c.bucket.until_full(now).is_zero())
            .min_by_key(|(_, c)| c.bucket.last)
            .map(|(key, _)| *key);
        if let Some(key) = idle {
            self.clients.remove(&key);
            return Ok(());
        }
        let soonest = self
            .clients
            .values()
            .filter(|c| c.in_flight == 0)
            .map(|c| c.bucket.until_full(now))
            .min();
        Err(soonest.unwrap_or(Duration::from_secs(1)))
    }

    fn finished(&mut self, key: IpAddr, reserved: bool) {
        let table = if reserved {
            &mut self.reserved
        } else {
            &mut self.clients
        };
        if let Some(c) = table.get_mut(&key) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// The budget key of a (canonical) address: IPv4 as it is, IPv6 by its /64.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        IpAddr::V4(_) => ip,
    }
}

/// `rate` starts per second on average, up to `burst` at once.
#[derive(Debug, Clone)]
struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64, burst: u32) -> TokenBucket {
        TokenBucket {
            rate,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: Instant::now(),
        }
    }

    fn tokens_at(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        (self.tokens + elapsed * self.rate).min(self.burst)
    }

    /// Takes a token, or says how long until the next one.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        self.tokens = self.tokens_at(now);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
        }
    }

    /// How long until the bucket holds its full burst again.
    fn until_full(&self, now: Instant) -> Duration {
        Duration::from_secs_f64((self.burst - self.tokens_at(now)).max(0.0) / self.rate)
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub(crate) snapshot: Arc<RwLock<Arc<Snapshot>>>,
    /// The collection thread's liveness (`/healthz`); `publish` beats it.
    pub heartbeat: Arc<Heartbeat>,
    pub(crate) attestation: Arc<AttestationService>,
    pub(crate) attestation_status: Arc<AttestationStatus>,
    pub(crate) attestation_gate: Arc<AttestationGate>,
    /// The recent history of the key series (`/v1/history`), appended to by `publish`.
    pub history: Arc<RwLock<History>>,
}

impl AppState {
    /// State serving `first` with `heartbeat`, no evidence source, the default limits and
    /// a history sized for the default collection interval.
    pub fn new(first: Snapshot, heartbeat: Arc<Heartbeat>) -> AppState {
        let mut history =
            History::new(crate::settings::Settings::default().collect_interval_seconds);
        history.record(&first);
        AppState {
            history: Arc::new(RwLock::new(history)),
            snapshot: Arc::new(RwLock::new(Arc::new(first))),
            heartbeat,
            attestation: Arc::new(AttestationService::Unavailable(
                "no evidence source configured".into(),
            )),
            attestation_status: Arc::new(AttestationStatus {
                source: "off".into(),
                reason: Some("no evidence source configured".into()),
                ..AttestationStatus::default()
            }),
            attestation_gate: Arc::new(AttestationGate::new(&HttpLimits::default())),
        }
    }

    /// Evidence collection within `limits` (default: [`HttpLimits::default`]).
    pub fn with_limits(mut self, limits: &HttpLimits) -> AppState {
        self.attestation_gate = Arc::new(AttestationGate::new(limits));
        self
    }

    /// Reports `status` as the attestation route's state in /v1/status.
    pub fn with_attestation_status(mut self, status: AttestationStatus) -> AppState {
        self.attestation_status = Arc::new(status);
        self
    }

    /// Serves `GET /v1/attestation` from `service`.
    pub fn with_attestation(mut self, service: AttestationService) -> AppState {
        self.attestation = Arc::new(service);
        self
    }

    /// Keeps the history in `history` (sized for the agent's collection interval) from
    /// here on, starting with the latest snapshot.
    pub fn with_history(mut self, mut history: History) -> AppState {
        history.record(&self.latest());
        self.history = Arc::new(RwLock::new(history));
        self
    }

    /// The snapshot the handlers serve now.
    pub(crate) fn latest(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Serves `snapshot` from now on, records it in the history and beats the heartbeat.
    pub fn publish(&self, snapshot: Snapshot) {
        self.history
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .record(&snapshot);
        *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(snapshot);
        self.heartbeat.beat();
    }
}

/// The operator listener's routes: everything, including the dashboard and `/v1/status`
/// (which names local paths). Served on loopback unless the agent settings say otherwise.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/v1/status", get(status))
        .route("/v1/history", get(history))
        .route("/v1/attestation", get(attestation_evidence))
        .with_state(state)
}

/// The public listener's routes: what the subnet needs (Prometheus, health checks, the
/// governing body's verifier), nothing that names local state.
pub fn public_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/v1/attestation", get(attestation_evidence))
        .with_state(state)
}

async fn dashboard() -> Html<&'static str> {
    Html(DASHBOARD_HTML)
}

/// OpenMetrics for clients that ask for it (Prometheus does), else the classic text format.
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let body = exposition::encode(&state.latest());
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if openmetrics {
        ([(header::CONTENT_TYPE, exposition::CONTENT_TYPE)], body).into_response()
    } else {
        let classic = exposition::to_classic_text(&body);
        (
            [(header::CONTENT_TYPE, exposition::CLASSIC_CONTENT_TYPE)],
            classic,
        )
            .into_response()
    }
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A 429 or 503 that tells the client when to try again.
fn retry_after(status: StatusCode, wait: Duration, body: &str) -> Response {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response = text(status, format!("{body}\n"));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    response
}

/// The answer to a request the gate did not admit.
fn refused(refusal: Refusal) -> Response {
    let one_second = Duration::from_secs(1);
    match refusal {
        Refusal::Busy => retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            one_second,
            "busy: evidence collections in progress",
        ),
        Refusal::ClientBusy => retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            one_second,
            "busy: an evidence collection for this address is in progress",
        ),
        Refusal::Rate(wait) => retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "too many evidence requests",
        ),
        Refusal::TableFull(wait) => retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "too many clients asking for evidence",
        ),
    }
}

/// What a caller is told about a failed collection: the kind of failure, never a local path
/// or a driver message (those are logged).
pub fn public_reason(error: &attestation::collect::CollectError) -> &'static str {
    use attestation::collect::CollectError as E;
    match error {
        E::NoSevGuestDevice { .. } => "this node has no SEV-SNP guest device",
        E::SevGuestOpen { .. } | E::Firmware(_) => "the SEV-SNP firmware gave no report",
        E::NoVcek(_) | E::Certificate { .. } => "the VCEK certificate is not available",
        E::Gpu(_) | E::GpuProcess(_) => "GPU evidence could not be collected",
        E::Identity(_) => "the node identity key is unusable",
        E::TestSource(_) => "the test evidence source failed",
    }
}

/// `GET /v1/attestation?nonce=<64 hex>`: a fresh evidence bundle bound to the nonce
/// (docs/attestation.md). Collection blocks (ioctl, NVML), so it runs off the async workers,
/// within [`AttestationGate`], per client address ([`PeerAddr`]): beyond the slots 503,
/// beyond the client's rate 429, past the deadline or after a failed collection 503, each
/// with `Retry-After`.
async fn attestation_evidence(
    State(state): State<AppState>,
    peer: Option<Extension<PeerAddr>>,
    RawQuery(query): RawQuery,
) -> Response {
    let nonce = query
        .as_deref()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("nonce=")))
        .and_then(attestation::bundle::parse_nonce);
    let Some(nonce) = nonce else {
        return text(
            StatusCode::BAD_REQUEST,
            "expected ?nonce=<64 hex digits>\n".into(),
        );
    };
    let attester = match state.attestation.as_ref() {
        AttestationService::Ready(a) => Arc::clone(a),
        AttestationService::Unavailable(reason) => {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("attestation unavailable: {reason}\n"),
            );
        }
    };
    let gate = &state.attestation_gate;
    let admission = match gate.admit(peer.map(|Extension(PeerAddr(a))| a.ip()), Instant::now()) {
        Ok(admission) => admission,
        Err(refusal) => return refused(refusal),
    };
    let task = tokio::task::spawn_blocking(move || {
        let _admission = admission;
        attester.attest(&nonce)
    });
    match tokio::time::timeout(gate.timeout, task).await {
        Ok(Ok(Ok(bundle))) => match serde_json::to_vec(&bundle) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => {
                tracing::error!(error = %e, "cannot encode the evidence bundle");
                text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot encode the bundle\n".into(),
                )
            }
        },
        Ok(Ok(Err(e))) => {
            tracing::warn!(error = %e, "attestation evidence could not be collected");
            // A collection that failed (an NVML child past its own deadline among them)
            // may succeed later: the caller is told when to retry, as for the gate's 503s.
            retry_after(
                StatusCode::SERVICE_UNAVAILABLE,
                gate.timeout,
                &format!(
                    "cannot collect evidence: {} (details in the node's log)",
                    public_reason(&e)
                ),
            )
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "the evidence task failed");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the evidence task failed\n".into(),
            )
        }
        Err(_) => {
            tracing::warn!(
                timeout_s = gate.timeout.as_secs_f64(),
                "evidence collection passed its deadline; it keeps its slot until it returns"
            );
            retry_after(
                StatusCode::SERVICE_UNAVAILABLE,
                gate.timeout,
                "evidence collection timed out",
            )
        }
    }
}

async fn healthz(State(state): State<AppState>) -> Response {
    match state.heartbeat.check() {
        Ok(()) => text(StatusCode::OK, "ok\n".into()),
        Err(reason) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")),
    }
}

async fn readyz(State(state): State<AppState>) -> Response {
    let s = state.latest();
    let mut reasons = s.node.reasons();
    if !s.crypto.selftest.passed {
        reasons.push("crypto selftest failed".to_string());
    }
    if reasons.is_empty() {
        text(
            StatusCode::OK,
            format!("ready: profile {}\n", s.node.profile),
        )
    } else {
        let mut body = format!("not ready: profile {}\n", s.node.profile);
        for r in reasons {
            body.push_str(&format!("- {r}\n"));
        }
        text(StatusCode::SERVICE_UNAVAILABLE, body)
    }
}

#[derive(Serialize)]
struct StatusBody<'a> {
    healthy: bool,
    health_detail: Option<String>,
    ready: bool,
    not_ready_reasons: Vec<String>,
    attestation: &'a AttestationStatus,
    #[serde(flatten)]
    snapshot: &'a Snapshot,
}

/// `GET /v1/history`: the ring as JSON, encoded under the read lock (the collection
/// thread waits for at most one encoding).
async fn history(State(state): State<AppState>) -> Response {
    let encoded = {
        let history = state.history.read().unwrap_or_else(|p| p.into_inner());
        serde_json::to_string(&history.document())
    };
    match encoded {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("history encoding: {e}\n"),
        ),
    }
}

async fn status(State(state): State<AppState>) -> Response {
    let s = state.latest();
    let health = state.heartbeat.check();
    let mut reasons = s.node.reasons();
    if !s.crypto.selftest.passed {
        reasons.push("crypto selftest failed".to_string());
    }
    let body = StatusBody {
        healthy: health.is_ok(),
        health_detail: health.err(),
        ready: reasons.is_empty(),
        not_ready_reasons: reasons,
        attestation: &state.attestation_status,
        snapshot: &s,
    };
    match serde_json::to_string(&body) {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("status encoding: {e}\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_bucket_allows_a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(2.0, 3);
        b.last = t0;
        for _ in 0..3 {
            b.take(t0).unwrap();
        }
        let wait = b.take(t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        b.take(t0 + Duration::from_millis(500)).unwrap();
        assert!(b.take(t0 + Duration::from_millis(500)).is_err());
        // A long pause refills to the burst, not beyond.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            b.take(later).unwrap();
        }
        assert!(b.take(later).is_err());
    }

    fn gate(limits: HttpLimits) -> Arc<AttestationGate> {
        Arc::new(AttestationGate::new(&limits))
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn each_client_has_its_own_rate_and_concurrency() {
        let g = gate(HttpLimits {
            attestation_concurrency: 8,
            attestation_per_second: 1.0,
            attestation_burst: 2,
            ..HttpLimits::default()
        });
        let t0 = Instant::now();
        let first = g.admit(ip("10.0.0.1"), t0).unwrap();
        let refused = g.admit(ip("10.0.0.1"), t0).err();
        assert_eq!(
            refused,
            Some(Refusal::ClientBusy),
            "one at a time per client"
        );
        drop(first);
        drop(g.admit(ip("10.0.0.1"), t0).unwrap());
        assert!(matches!(g.admit(ip("10.0.0.1"), t0), Err(Refusal::Rate(_))));
        // Another address is not affected by the first one's spent bucket.
        drop(g.admit(ip("10.0.0.2"), t0).unwrap());
    }

    #[test]
    fn the_client_table_stays_bounded_and_evicts_only_clients_with_a_full_bucket() {
        let g = gate(HttpLimits {
            attestation_concurrency: 8,
            attestation_per_second: 1.0,
            attestation_burst: 2,
            attestation_max_clients: 2,
            ..HttpLimits::default()
        });
        let t0 = Instant::now();
        // a: bucket empty; b: one token left.
        drop(g.admit(ip("10.0.0.1"), t0).unwrap());
        drop(g.admit(ip("10.0.0.1"), t0).unwrap());
        drop(g.admit(ip("10.0.0.2"), t0).unwrap());
        // Full, and nobody idle: the new client waits until b is full again (1 s).
        match g.admit(ip("10.0.0.3"), t0) {
            Err(Refusal::TableFull(wait)) => {
                assert!((wait.as_secs_f64() - 1.0).abs() < 1e-6, "{wait:?}")
            }
            other => panic!("{:?}", other.err()),
        }
        // After 1 s b is as good as new and makes room; a (one token) stays, spent as it was.
        let t1 = t0 + Duration::from_secs(1);
        drop(g.admit(ip("10.0.0.3"), t1).unwrap());
        {
            let table = g.lock_clients();
            assert_eq!(table.clients.len(), 2);
            assert!(
                table
                    .clients
                    .contains_key(&"10.0.0.1".parse::<IpAddr>().unwrap())
            );
            assert!(
                !table
                    .clients
                    .contains_key(&"10.0.0.2".parse::<IpAddr>().unwrap())
            );
        }
        drop(g.admit(ip("10.0.0.1"), t1).unwrap());
        assert!(matches!(g.admit(ip("10.0.0.1"), t1), Err(Refusal::Rate(_))));
        // A client with a collection in flight is never evicted, however old.
        let t9 = t0 + Duration::from_secs(9);
        let held = g.admit(ip("10.0.0.1"), t9).unwrap();
        drop(g.admit(ip("10.0.0.4"), t9).unwrap());
        let table = g.lock_clients();
        assert!(
            table
                .clients
                .contains_key(&"10.0.0.1".parse::<IpAddr>().unwrap())
        );
        drop(table);
        drop(held);
        // Many addresses over time: never more entries than the bound.
        for i in 0..1000u32 {
            let t = t0 + Duration::from_secs(20 + u64::from(i) * 2);
            let _ = g.admit(Some(IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + i))), t);
            assert!(g.lock_clients().clients.len() <= 2);
        }
    }

    #[test]
    fn reserved_verifiers_keep_a_slot_and_a_budget_when_everything_else_is_taken() {
        let g = gate(HttpLimits {
            attestation_concurrency: 1,
            attestation_max_clients: 1,
            attestation_reserved_for: vec!["10.0.0.5".parse().unwrap()],
            ..HttpLimits::default()
        });
        let t0 = Instant::now();
        // One client holds the only open slot and the only table entry.
        let flood = g.admit(ip("10.0.0.1"), t0).unwrap();
        assert!(matches!(
            g.admit(ip("10.0.0.2"), t0),
            Err(Refusal::TableFull(_))
        ));
        // The verifier still gets in, on the reserved slot, and its IPv4-mapped form too.
        let verifier = g.admit(ip("10.0.0.5"), t0).unwrap();
        assert_eq!(
            g.admit(ip("::ffff:10.0.0.5"), t0).err(),
            Some(Refusal::ClientBusy)
        );
        drop(verifier);
        drop(g.admit(ip("::ffff:10.0.0.5"), t0).unwrap());
        assert_eq!(g.lock_clients().clients.len(), 1, "not in the table");
        drop(flood);
        // Others never take the reserved slot: with the open one busy, they get 503.
        let g = gate(HttpLimits {
            attestation_concurrency: 1,
            attestation_reserved_for: vec!["10.0.0.5".parse().unwrap()],
            ..HttpLimits::default()
        });
        let _held = g.admit(ip("10.0.0.1"), t0).unwrap();
        assert_eq!(g.admit(ip("10.0.0.2"), t0).err(), Some(Refusal::Busy));
    }

    #[test]
    fn ipv6_clients_are_budgeted_by_their_64() {
        let table = ClientTable::new(4, &[], TokenBucket::new(1.0, 1));
        let key = |a: &str| table.classify(ip(a)).0;
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(
            key("::ffff:192.0.2.1"),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(table.classify(None).0, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    }
}
