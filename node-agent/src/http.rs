//! The agent's HTTP endpoint. Handlers read the latest snapshot only: nothing here
//! touches NVML, sysfs, /proc or the replica.

use crate::exposition;
use crate::snapshot::Snapshot;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
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

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub snapshot: Arc<RwLock<Arc<Snapshot>>>,
    pub heartbeat: Arc<Heartbeat>,
    pub attestation: Arc<AttestationService>,
    pub attestation_status: Arc<AttestationStatus>,
}

impl AppState {
    pub fn new(first: Snapshot, heartbeat: Arc<Heartbeat>) -> AppState {
        AppState {
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
        }
    }

    pub fn with_attestation_status(mut self, status: AttestationStatus) -> AppState {
        self.attestation_status = Arc::new(status);
        self
    }

    pub fn with_attestation(mut self, service: AttestationService) -> AppState {
        self.attestation = Arc::new(service);
        self
    }

    pub fn latest(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn publish(&self, snapshot: Snapshot) {
        *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(snapshot);
        self.heartbeat.beat();
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/v1/status", get(status))
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

/// `GET /v1/attestation?nonce=<64 hex>`: a fresh evidence bundle bound to the nonce
/// (docs/attestation.md). Collection blocks (ioctl, NVML), so it runs off the async workers.
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
    match tokio::task::spawn_blocking(move || attester.attest(&nonce)).await {
        Ok(Ok(bundle)) => match serde_json::to_vec(&bundle) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot encode the bundle: {e}\n"),
            ),
        },
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "attestation evidence could not be collected");
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("cannot collect evidence: {e}\n"),
            )
        }
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("evidence task failed: {e}\n"),
        ),
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
