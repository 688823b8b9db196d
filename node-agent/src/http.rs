//! The agent's HTTP routes. Handlers read the latest snapshot only: nothing here touches
//! NVML, sysfs, /proc or the replica, except `/v1/attestation`, which collects evidence
//! within the limits of [`AttestationGate`]. Bodies sent to clients name no local path and
//! no driver detail: those go to the agent's log. The listeners and their connection limits
//! are in [`crate::server`].

use crate::exposition;
use crate::history::History;
use crate::server::HttpLimits;
use crate::snapshot::Snapshot;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
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
    pub fn new(stale_after: Duration) -> Heartbeat {
        Heartbeat {
            origin: Instant::now(),
            last_cycle_ms: AtomicU64::new(0),
            stale_after,
        }
    }

    pub fn beat(&self) {
        let ms = self.origin.elapsed().as_millis() as u64;
        self.last_cycle_ms.store(ms, Ordering::Relaxed);
    }

    pub fn age(&self) -> Duration {
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
    Ready(Arc<attestation::collect::Attester>),
}

/// What /v1/status says about `GET /v1/attestation`: the source, where the node key (and
/// test seed) live and why that directory was chosen, or why the route answers 503.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct AttestationStatus {
    /// "hardware", "test" or "off".
    pub source: String,
    pub available: bool,
    /// Why the route answers 503, when it does.
    pub reason: Option<String>,
    pub state_dir: Option<String>,
    /// Why that state directory (configured, systemd StateDirectory=, system default, or
    /// the development profile's user directory and why the system one was not usable).
    pub state_dir_origin: Option<String>,
    /// The unsealed key file (test evidence source only; a sealed key has no file).
    pub node_key: Option<String>,
    /// How the key is held: sealed (derived from the SNP derived key) or an unsealed file.
    pub node_key_kind: Option<String>,
    pub node_public_key: Option<String>,
    pub test_seed: Option<String>,
    /// Whether bundles carry GPU evidence (NVML).
    pub gpu_evidence: bool,
}

/// Bounds on evidence collection: a few at a time, a rate, a deadline. Each collection
/// (an SNP report ioctl, an NVML child) holds a slot until it returns, also past its
/// deadline, so a call stuck in the driver keeps its slot and never multiplies threads.
pub struct AttestationGate {
    slots: Arc<tokio::sync::Semaphore>,
    bucket: Mutex<TokenBucket>,
    timeout: Duration,
}

impl AttestationGate {
    pub fn new(limits: &HttpLimits) -> AttestationGate {
        AttestationGate {
            slots: Arc::new(tokio::sync::Semaphore::new(limits.attestation_concurrency)),
            bucket: Mutex::new(TokenBucket::new(
                limits.attestation_per_second,
                limits.attestation_burst,
            )),
            timeout: limits.attestation_timeout(),
        }
    }
}

/// `rate` starts per second on average, up to `burst` at once.
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

    /// Takes a token, or says how long until the next one.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
        }
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub snapshot: Arc<RwLock<Arc<Snapshot>>>,
    pub heartbeat: Arc<Heartbeat>,
    pub attestation: Arc<AttestationService>,
    pub attestation_status: Arc<AttestationStatus>,
    pub attestation_gate: Arc<AttestationGate>,
    /// The recent history of the key series (`/v1/history`), appended to by `publish`.
    pub history: Arc<RwLock<History>>,
}

impl AppState {
    pub fn new(first: Snapshot, heartbeat: Arc<Heartbeat>) -> AppState {
        let mut history = History::new(crate::config::Config::default().collect_interval_seconds);
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

    pub fn with_attestation_status(mut self, status: AttestationStatus) -> AppState {
        self.attestation_status = Arc::new(status);
        self
    }

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

    pub fn latest(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(|p| p.into_inner()))
    }

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
/// (which names local paths). Served on loopback unless the image settings say otherwise.
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
/// within [`AttestationGate`]: beyond its slots 503, beyond its rate 429, past its deadline
/// or after a failed collection 503, each with `Retry-After`.
async fn attestation_evidence(
    State(state): State<AppState>,
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
    let Ok(slot) = Arc::clone(&gate.slots).try_acquire_owned() else {
        return retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(1),
            "busy: evidence collections in progress",
        );
    };
    let rate = gate
        .bucket
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take(Instant::now());
    if let Err(wait) = rate {
        return retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "too many evidence requests",
        );
    }
    let task = tokio::task::spawn_blocking(move || {
        let _slot = slot;
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
}
