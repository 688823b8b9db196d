//! Fetching evidence from a node agent (`GET {url}/v1/attestation?nonce=<64 hex>`), retried
//! within a deadline: `attest fleet` and `provision enroll` both use [`fetch_evidence`].
//!
//! A busy or rate-limited agent answers 429 or 503 with `Retry-After`; the next try waits at
//! least that long (seconds form; a date is ignored), else an exponential backoff with
//! jitter. Every try asks with a fresh random nonce and the caller verifies the answer
//! against the nonce of the try that produced it ([`Evidence::nonce`]): a nonce is never sent
//! twice, so an answer to an earlier try can never pass as fresh. A try that would end past
//! the deadline is not started. Refused connections (nothing listens) and answers other
//! than 429/502/503/504 are not retried: waiting does not change them.

use std::time::Duration;

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::header::RETRY_AFTER;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rand::{Rng as _, RngCore as _};
use thiserror::Error;
use tokio::time::Instant;

/// Largest bundle accepted from a node (a bundle with several GPUs is ~30 KiB).
pub const MAX_BUNDLE_BYTES: usize = 4 << 20;

/// The HTTP client both verifiers use (plain HTTP: the bundle is nonce-bound and
/// hardware-signed, and carries nothing secret).
pub type EvidenceClient = Client<HttpConnector, Empty<Bytes>>;

/// A client whose connection attempts give up after `connect_timeout`.
pub fn evidence_client(connect_timeout: Duration) -> EvidenceClient {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

/// When to try again, and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// All tries together, request and body.
    pub deadline: Duration,
    /// The backoff before the second try; it doubles per try up to `max_backoff`.
    pub first_backoff: Duration,
    /// The longest backoff (a `Retry-After` may ask for longer, within the deadline).
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// Defaults: backoff from 250 ms doubling to 4 s, all within `deadline`.
    pub fn within(deadline: Duration) -> RetryPolicy {
        RetryPolicy {
            deadline,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(4),
        }
    }

    /// The wait after failed try number `tries` (1-based): at least the server's
    /// `Retry-After`, else half the backoff plus up to half again at random, so that
    /// verifiers refused together do not return together.
    pub fn wait(&self, tries: u32, retry_after: Option<Duration>) -> Duration {
        let doublings = tries.saturating_sub(1).min(16);
        let backoff = self
            .first_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff);
        let jitter = rand::thread_rng().gen_range(Duration::ZERO..=backoff / 2);
        match retry_after {
            Some(after) => after + jitter,
            None => backoff / 2 + jitter,
        }
    }
}

/// Why one try got no evidence.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum FetchError {
    /// The node's URL does not parse.
    #[error("bad URL {url:?}: {message}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// The parser's error.
        message: String,
    },
    /// A URL scheme other than http.
    #[error("unsupported URL scheme in {0:?} (http only)")]
    Scheme(String),
    /// No connection (refused, no route, connect timeout).
    #[error("unreachable: {0}")]
    Connect(String),
    /// The connection failed after it was made (closed or reset before the answer).
    #[error("request failed: {0}")]
    Transport(String),
    /// The answer's body could not be read (or exceeds the size limit).
    #[error("reading the answer: {0}")]
    Body(String),
    /// An HTTP status other than 200.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the answer's text.
        body: String,
        /// `Retry-After` in seconds, when the answer had one.
        retry_after: Option<Duration>,
    },
    /// The deadline passed before an answer.
    #[error("no answer within {0:?}")]
    Deadline(Duration),
}

impl FetchError {
    /// Whether a later try may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Transport(_) | FetchError::Body(_) => true,
            FetchError::Status { status, .. } => matches!(
                *status,
                StatusCode::TOO_MANY_REQUESTS
                    | StatusCode::BAD_GATEWAY
                    | StatusCode::SERVICE_UNAVAILABLE
                    | StatusCode::GATEWAY_TIMEOUT
            ),
            _ => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            FetchError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A bundle's bytes and the nonce of the try that fetched them.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The nonce the bundle must answer.
    pub nonce: [u8; 32],
    /// The answer's body: the bundle's JSON, unverified.
    pub body: Bytes,
    /// How many tries it took.
    pub tries: u32,
}

/// No evidence within the deadline: the last try's error and nonce.
#[derive(Debug, Clone, Error)]
#[error("{error}{}", if *tries > 1 { format!(" (after {tries} tries)") } else { String::new() })]
pub struct FetchFailed {
    /// The last try's error.
    pub error: FetchError,
    /// The last try's nonce.
    pub nonce: [u8; 32],
    /// How many tries were made.
    pub tries: u32,
}

/// Fetches evidence from the agent at `url`, each try with a fresh nonce, retrying transient
/// failures as [`RetryPolicy`] says.
pub async fn fetch_evidence(
    client: &EvidenceClient,
    url: &str,
    policy: &RetryPolicy,
) -> Result<Evidence, FetchFailed> {
    let deadline = Instant::now() + policy.deadline;
    let mut tries = 0;
    loop {
        tries += 1;
        let nonce = fresh_nonce();
        let left = deadline.saturating_duration_since(Instant::now());
        let error = match tokio::time::timeout(left, fetch_once(client, url, &nonce)).await {
            Ok(Ok(body)) => return Ok(Evidence { nonce, body, tries }),
            Ok(Err(e)) => e,
            Err(_) => FetchError::Deadline(policy.deadline),
        };
        let failed = FetchFailed {
            error,
            nonce,
            tries,
        };
        if !failed.error.is_transient() {
            return Err(failed);
        }
        let wait = policy.wait(tries, failed.error.retry_after());
        if Instant::now() + wait >= deadline {
            return Err(failed);
        }
        tokio::time::sleep(wait).await;
    }
}

fn fresh_nonce() -> [u8; 32] {
    let mut nonce = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    nonce
}

/// One `GET /v1/attestation?nonce=` and its whole answer.
pub async fn fetch_once(
    client: &EvidenceClient,
    url: &str,
    nonce: &[u8; 32],
) -> Result<Bytes, FetchError> {
    let uri = evidence_uri(url, nonce)?;
    let response = client.get(uri).await.map_err(|e| {
        if e.is_connect() {
            FetchError::Connect(e.to_string())
        } else {
            FetchError::Transport(e.to_string())
        }
    })?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(retry_after_seconds);
    let body = Limited::new(response.into_body(), MAX_BUNDLE_BYTES)
        .collect()
        .await
        .map_err(|e| FetchError::Body(e.to_string()))?
        .to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(body.get(..200).unwrap_or(&body));
        return Err(FetchError::Status {
            status,
            body: text.trim().to_string(),
            retry_after,
        });
    }
    Ok(body)
}

fn evidence_uri(url: &str, nonce: &[u8; 32]) -> Result<hyper::Uri, FetchError> {
    let uri: hyper::Uri = format!(
        "{}/v1/attestation?nonce={}",
        url.trim_end_matches('/'),
        hex::encode(nonce)
    )
    .parse()
    .map_err(|e: hyper::http::uri::InvalidUri| FetchError::BadUrl {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    if uri.scheme_str() != Some("http") {
        return Err(FetchError::Scheme(url.to_string()));
    }
    Ok(uri)
}

/// `Retry-After` in its seconds form (RFC 9110 10.2.3); the date form is not used by the
/// agent and falls back to the backoff.
pub fn retry_after_seconds(value: &str) -> Option<Duration> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .map(|s| Duration::from_secs(u64::from(s)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::{Query, State};
    use axum::http::HeaderMap;
    use axum::response::IntoResponse;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// What the test server saw: each request's nonce and when it came.
    #[derive(Default)]
    struct Seen {
        nonces: Vec<String>,
        at: Vec<std::time::Instant>,
    }

    /// A real HTTP server on loopback that refuses the first `refusals` requests with
    /// `status` and `Retry-After: retry_after`, then answers "bundle".
    async fn serve(
        refusals: usize,
        status: StatusCode,
        retry_after: &'static str,
    ) -> (String, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let handler = move |State(seen): State<Arc<Mutex<Seen>>>,
                            Query(q): Query<HashMap<String, String>>| async move {
            let mut s = seen.lock().unwrap();
            s.nonces.push(q.get("nonce").cloned().unwrap_or_default());
            s.at.push(std::time::Instant::now());
            if s.nonces.len() <= refusals {
                let mut headers = HeaderMap::new();
                headers.insert(RETRY_AFTER, retry_after.parse().unwrap());
                (status, headers, "busy").into_response()
            } else {
                "bundle".into_response()
            }
        };
        let app = axum::Router::new()
            .route("/v1/attestation", axum::routing::get(handler))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}"), seen)
    }

    fn fast(deadline: Duration) -> RetryPolicy {
        RetryPolicy {
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(80),
            ..RetryPolicy::within(deadline)
        }
    }

    #[tokio::test]
    async fn retry_after_is_honoured_and_every_try_has_a_fresh_nonce() {
        let (url, seen) = serve(2, StatusCode::TOO_MANY_REQUESTS, "1").await;
        let client = evidence_client(Duration::from_secs(1));
        let got = fetch_evidence(&client, &url, &fast(Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(got.body, "bundle");
        assert_eq!(got.tries, 3);
        let seen = seen.lock().unwrap();
        let distinct: std::collections::HashSet<_> = seen.nonces.iter().collect();
        assert_eq!(
            distinct.len(),
            3,
            "a nonce was sent twice: {:?}",
            seen.nonces
        );
        assert_eq!(
            seen.nonces[2],
            hex::encode(got.nonce),
            "the answered try's nonce"
        );
        for pair in seen.at.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
        }
    }

    #[tokio::test]
    async fn the_deadline_ends_the_tries_and_a_later_retry_after_is_not_waited_for() {
        // 503 without Retry-After: backoff tries until the deadline.
        let (url, seen) = serve(usize::MAX, StatusCode::SERVICE_UNAVAILABLE, "x").await;
        let client = evidence_client(Duration::from_secs(1));
        let started = std::time::Instant::now();
        let failed = fetch_evidence(&client, &url, &fast(Duration::from_millis(600)))
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_millis(700), "{took:?}");
        assert!(failed.tries >= 3, "{failed}");
        assert_eq!(seen.lock().unwrap().nonces.len() as u32, failed.tries);
        assert_eq!(
            seen.lock().unwrap().nonces.last().unwrap(),
            &hex::encode(failed.nonce)
        );
        assert!(
            matches!(failed.error, FetchError::Status { status, .. } if status == 503),
            "{failed}"
        );
        // Retry-After beyond the deadline: one try, no waiting.
        let (url, seen) = serve(usize::MAX, StatusCode::TOO_MANY_REQUESTS, "30").await;
        let started = std::time::Instant::now();
        let failed = fetch_evidence(&client, &url, &fast(Duration::from_secs(2)))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!((failed.tries, seen.lock().unwrap().nonces.len()), (1, 1));
    }

    #[tokio::test]
    async fn refused_connections_and_client_errors_are_not_retried() {
        let (url, seen) = serve(usize::MAX, StatusCode::BAD_REQUEST, "1").await;
        let client = evidence_client(Duration::from_secs(1));
        let failed = fetch_evidence(&client, &url, &fast(Duration::from_secs(5)))
            .await
            .unwrap_err();
        assert_eq!((failed.tries, seen.lock().unwrap().nonces.len()), (1, 1));
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let failed = fetch_evidence(&client, &dead, &fast(Duration::from_secs(5)))
            .await
            .unwrap_err();
        assert!(matches!(failed.error, FetchError::Connect(_)), "{failed}");
        assert_eq!(failed.tries, 1);
    }

    #[test]
    fn waits_grow_with_jitter_and_never_undercut_retry_after() {
        let p = RetryPolicy::within(Duration::from_secs(30));
        for tries in 1..20 {
            let w = p.wait(tries, None);
            let backoff = (p.first_backoff * 2u32.pow((tries - 1).min(16))).min(p.max_backoff);
            assert!(w >= backoff / 2 && w <= backoff, "try {tries}: {w:?}");
            assert!(p.wait(tries, Some(Duration::from_secs(2))) >= Duration::from_secs(2));
        }
        assert_eq!(retry_after_seconds(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
