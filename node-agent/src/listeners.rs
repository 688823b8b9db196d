//! The agent's HTTP/1.1 listeners, bounded against the network: a cap on open connections
//! per listener, a deadline for each request's headers (which also closes idle keep-alive
//! connections), a deadline for each stalled write, limits on header size and count, and no
//! request bodies. At the cap, the connection that has waited longest for its next request
//! headers is closed to make room, so a flood of idle or slow connections cannot lock out
//! a scraper or a verifier; a connection with a request in progress is never closed for
//! that. The image sets the limits ([`HttpLimits`], table `[http]` of the agent settings).

use axum::Router;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

/// Limits of the HTTP listeners (agent settings `[http]`). Security-relevant: only the image
/// sets them, never the node configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpLimits {
    /// Open connections per listener; at the cap the longest-idle connection is closed.
    pub max_connections: usize,
    /// Time a connection has to send the complete headers of a request, from its opening
    /// and again after each response (a keep-alive connection idle this long is closed).
    pub header_read_timeout_seconds: f64,
    /// A response write that makes no progress for this long closes the connection.
    pub write_timeout_seconds: f64,
    /// Bytes of request line and headers; larger requests get 431 and are closed.
    pub max_header_bytes: usize,
    /// Header fields per request.
    pub max_headers: usize,
    /// Evidence collections running at once (`/v1/attestation`), all clients together; more
    /// get 503. The reserved addresses have one slot more, of their own.
    pub attestation_concurrency: usize,
    /// Evidence collections running at once for one client (an IPv4 address or an IPv6 /64);
    /// more get 503.
    pub attestation_client_concurrency: usize,
    /// Evidence collections started per second on average by one client, with bursts of
    /// `attestation_burst`; more get 429.
    pub attestation_per_second: f64,
    /// Evidence collections one client may start at once before its rate applies.
    pub attestation_burst: u32,
    /// Clients whose rate and concurrency the agent tracks at once. A new client finds room
    /// by replacing one that has been quiet long enough to have its full burst again;
    /// while none has, new clients get 429.
    pub attestation_max_clients: usize,
    /// The governing body's verifiers: each of these addresses has its own budget outside
    /// the client table, and they share one slot beyond `attestation_concurrency` that no
    /// other client may take.
    pub attestation_reserved_for: Vec<std::net::IpAddr>,
    /// A collection (SNP report ioctl, NVML child) running longer than this is answered 503;
    /// the NVML child is killed at this deadline.
    pub attestation_timeout_seconds: f64,
    /// Time the listeners give requests in progress after SIGTERM.
    pub shutdown_grace_seconds: f64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 512,
            header_read_timeout_seconds: 10.0,
            write_timeout_seconds: 10.0,
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            attestation_concurrency: 2,
            attestation_client_concurrency: 1,
            attestation_per_second: 2.0,
            attestation_burst: 8,
            attestation_max_clients: 1024,
            attestation_reserved_for: Vec::new(),
            attestation_timeout_seconds: 30.0,
            shutdown_grace_seconds: 5.0,
        }
    }
}

impl HttpLimits {
    /// Checks that every timeout and rate is positive and every count at least its
    /// minimum; the error names the key under `http.`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("http.{name} must be > 0, is {v}"))
            }
        };
        positive(
            "header_read_timeout_seconds",
            self.header_read_timeout_seconds,
        )?;
        positive("write_timeout_seconds", self.write_timeout_seconds)?;
        positive("attestation_per_second", self.attestation_per_second)?;
        positive(
            "attestation_timeout_seconds",
            self.attestation_timeout_seconds,
        )?;
        positive("shutdown_grace_seconds", self.shutdown_grace_seconds)?;
        for (name, v, min) in [
            ("max_connections", self.max_connections, 1),
            ("max_header_bytes", self.max_header_bytes, 1024),
            ("max_headers", self.max_headers, 8),
            ("attestation_concurrency", self.attestation_concurrency, 1),
            (
                "attestation_client_concurrency",
                self.attestation_client_concurrency,
                1,
            ),
            ("attestation_burst", self.attestation_burst as usize, 1),
            ("attestation_max_clients", self.attestation_max_clients, 1),
        ] {
            if v < min {
                return Err(format!("http.{name} must be >= {min}, is {v}"));
            }
        }
        Ok(())
    }

    pub(crate) fn header_read_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_read_timeout_seconds)
    }

    pub(crate) fn write_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.write_timeout_seconds)
    }

    /// `attestation_timeout_seconds` as a [`Duration`].
    pub fn attestation_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.attestation_timeout_seconds)
    }
}

/// Connections the kernel queues for a listener before the agent accepts them. Deeper
/// than tokio's default (1,024), so that a burst of connections past the cap does not drop
/// a scraper's SYN (a retransmission costs it a second); the kernel caps it at
/// `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `addr` with [`LISTEN_BACKLOG`].
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The listener addresses the boot parameters set (`sn.operator_listen=ADDR`,
/// `sn.public_listen=ADDR`): set by the image, like the agent settings file, which they
/// override. A malformed value is an error, never ignored.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BootListeners {
    /// `sn.operator_listen=`: the operator listener's address; `None`: the settings'.
    pub operator: Option<std::net::SocketAddr>,
    /// `sn.public_listen=`: the public listener's address; `None`: the settings'.
    pub public: Option<std::net::SocketAddr>,
}

impl BootListeners {
    /// Reads both parameters from a command line; Err names the malformed word.
    pub fn parse(cmdline: &str) -> Result<BootListeners, String> {
        let mut found = BootListeners::default();
        for word in cmdline.split_whitespace() {
            let (slot, value) = if let Some(v) = word.strip_prefix("sn.operator_listen=") {
                (&mut found.operator, v)
            } else if let Some(v) = word.strip_prefix("sn.public_listen=") {
                (&mut found.public, v)
            } else {
                continue;
            };
            let addr = value
                .parse()
                .map_err(|e| format!("kernel command line {word:?}: {e}"))?;
            *slot = Some(addr);
        }
        Ok(found)
    }
}

/// One open connection as the listener tracks it.
struct Tracked {
    /// Requests whose handler is running.
    busy: AtomicUsize,
    /// Milliseconds since the listener started at which the connection last became idle
    /// (opened, or finished a request).
    idle_since_ms: AtomicU64,
    /// Told to close (evicted at the cap).
    close: Notify,
}

/// The open connections of one listener.
struct Connections {
    origin: Instant,
    open: Mutex<HashMap<u64, Arc<Tracked>>>,
    next_id: AtomicU64,
}

impl Connections {
    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn insert(&self) -> (u64, Arc<Tracked>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tracked = Arc::new(Tracked {
            busy: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(self.now_ms()),
            close: Notify::new(),
        });
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::clone(&tracked));
        (id, tracked)
    }

    fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Makes room for one more connection when `cap` are open: closes the one idle longest.
    fn make_room(&self, cap: usize) -> Room {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() < cap {
            return Room::Free;
        }
        let oldest = open
            .iter()
            .filter(|(_, t)| t.busy.load(Ordering::Relaxed) == 0)
            .min_by_key(|(_, t)| t.idle_since_ms.load(Ordering::Relaxed))
            .map(|(id, _)| *id);
        match oldest.and_then(|id| open.remove(&id)) {
            Some(evicted) => {
                evicted.close.notify_one();
                Room::Evicted
            }
            None => Room::AllBusy,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Room {
    Free,
    /// The longest-idle connection was told to close.
    Evicted,
    /// Every open connection has a request in progress.
    AllBusy,
}

/// Counts of what a listener refused or closed (logged at shutdown and in periodic warnings).
#[derive(Default)]
struct Refusals {
    evicted: AtomicU64,
    refused_all_busy: AtomicU64,
}

/// A TCP listener serving `router` within `limits` until `shutdown` turns true.
pub(crate) struct Listener {
    /// What the listener serves, in words ("operator", "public").
    pub(crate) role: &'static str,
    pub(crate) listener: TcpListener,
    pub(crate) router: Router,
    pub(crate) limits: HttpLimits,
}

impl Listener {
    /// Accepts and serves until `shutdown` becomes true, then gives requests in progress
    /// `shutdown_grace_seconds` to finish.
    pub(crate) async fn serve(self, mut shutdown: watch::Receiver<bool>) {
        let Listener {
            role,
            listener,
            router,
            limits,
        } = self;
        let connections = Arc::new(Connections {
            origin: Instant::now(),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        });
        let mut admission = Admission {
            role,
            cap: limits.max_connections,
            refusals: Refusals::default(),
            last_warning: None,
        };
        let builder = Arc::new(http1_builder(&limits));
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = stopped(&mut shutdown) => break,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or memory: wait for connections to close rather than spin.
                    tracing::warn!(listener = role, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if !admission.admit(&connections) {
                drop(stream);
                continue;
            }
            let _ = stream.set_nodelay(true);
            // Counted from here, before its task first runs: the cap holds however far the
            // accept loop runs ahead of the connection tasks.
            let (id, tracked) = connections.insert();
            tokio::spawn(serve_connection(
                (stream, peer),
                (id, tracked),
                router.clone(),
                Arc::clone(&builder),
                Arc::clone(&connections),
                limits.write_timeout(),
                shutdown.clone(),
            ));
        }
        drop(listener);
        drain(&connections, limits.shutdown_grace_seconds).await;
        let refusals = &admission.refusals;
        tracing::info!(
            listener = role,
            left_open = connections.len(),
            evicted = refusals.evicted.load(Ordering::Relaxed),
            refused = refusals.refused_all_busy.load(Ordering::Relaxed),
            "listener stopped"
        );
    }
}

/// The HTTP/1 connection settings of `limits`: header timeout and sizes, keep-alive.
fn http1_builder(limits: &HttpLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout())
        .max_header_size(limits.max_header_bytes)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers)
        .keep_alive(true);
    builder
}

/// Waits up to `grace_seconds` for the open connections to finish.
async fn drain(connections: &Connections, grace_seconds: f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(grace_seconds);
    while connections.len() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The connection cap of one listener: makes room for each accepted connection, counts
/// what it evicts or refuses, and warns about it at most once a minute.
struct Admission {
    role: &'static str,
    cap: usize,
    refusals: Refusals,
    last_warning: Option<Instant>,
}

impl Admission {
    /// Makes room for one more connection; false when every open one is busy, so the new
    /// one is to be closed.
    fn admit(&mut self, connections: &Connections) -> bool {
        let room = connections.make_room(self.cap);
        match room {
            Room::Free => return true,
            Room::Evicted => {
                self.refusals.evicted.fetch_add(1, Ordering::Relaxed);
            }
            Room::AllBusy => {
                self.refusals
                    .refused_all_busy
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        if self
            .last_warning
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
        {
            self.last_warning = Some(Instant::now());
            tracing::warn!(
                listener = self.role,
                cap = self.cap,
                evicted = self.refusals.evicted.load(Ordering::Relaxed),
                refused = self.refusals.refused_all_busy.load(Ordering::Relaxed),
                "connection cap reached: closing the longest-idle connections"
            );
        }
        room != Room::AllBusy
    }
}

async fn serve_connection(
    (stream, peer): (TcpStream, SocketAddr),
    (id, tracked): (u64, Arc<Tracked>),
    router: Router,
    builder: Arc<hyper::server::conn::http1::Builder>,
    connections: Arc<Connections>,
    write_timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let service = {
        let tracked = Arc::clone(&tracked);
        let connections = Arc::clone(&connections);
        hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(PeerAddr(peer));
            let router = router.clone();
            let guard = Busy::enter(Arc::clone(&tracked), Arc::clone(&connections));
            async move {
                let _guard = guard;
                Ok::<_, std::convert::Infallible>(handle(router, request).await)
            }
        })
    };
    let io = TokioIo::new(WriteDeadline::new(stream, write_timeout));
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let closed = tokio::select! {
        result = connection.as_mut() => Some(result),
        () = tracked.close.notified() => None,
        () = stopped(&mut shutdown) => {
            connection.as_mut().graceful_shutdown();
            Some(connection.as_mut().await)
        }
    };
    if let Some(Err(e)) = closed {
        tracing::debug!(error = %e, "connection closed with an error");
    }
    connections.remove(id);
}

/// The address a request came from, as the listener accepted its connection (a request
/// extension: handlers that budget per client read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// Resolves once `shutdown` is true (or its sender is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Marks a connection busy while one of its requests is handled.
struct Busy {
    tracked: Arc<Tracked>,
    connections: Arc<Connections>,
}

impl Busy {
    fn enter(tracked: Arc<Tracked>, connections: Arc<Connections>) -> Busy {
        tracked.busy.fetch_add(1, Ordering::Relaxed);
        Busy {
            tracked,
            connections,
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.tracked
            .idle_since_ms
            .store(self.connections.now_ms(), Ordering::Relaxed);
        self.tracked.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// No route takes a request body: one that announces a body is refused before routing, and
/// the connection is closed (its body is never read).
async fn handle(router: Router, request: Request<Incoming>) -> Response<axum::body::Body> {
    use tower::ServiceExt as _;
    let announces_body = request.headers().contains_key(header::TRANSFER_ENCODING)
        || request
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if announces_body {
        let mut response =
            Response::new(axum::body::Body::from("request bodies are not accepted\n"));
        *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    match router.oneshot(request.map(axum::body::Body::new)).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A stream whose writes fail with `TimedOut` when they make no progress for `timeout`
/// (a client that stops reading its response cannot hold the connection).
struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// `poll` is one write-side operation of the inner stream.
    fn deadline<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>>
    where
        S: Unpin,
    {
        match poll(Pin::new(&mut self.inner), cx) {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let sleep = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not read the response",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.deadline(cx, |s, cx| s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.deadline(cx, |s, cx| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.deadline(cx, |s, cx| s.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.deadline(cx, |s, cx| s.poll_shutdown(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        HttpLimits::default().validate().unwrap();
        let bad = HttpLimits {
            header_read_timeout_seconds: 0.0,
            ..HttpLimits::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .contains("http.header_read_timeout_seconds")
        );
        let bad = HttpLimits {
            max_connections: 0,
            ..HttpLimits::default()
        };
        assert!(bad.validate().unwrap_err().contains("http.max_connections"));
    }

    #[test]
    fn reserved_verifiers_are_addresses_and_anything_else_is_refused() {
        let limits: HttpLimits =
            toml::from_str("attestation_reserved_for = [\"10.0.0.5\", \"2001:db8::7\"]").unwrap();
        assert_eq!(
            limits.attestation_reserved_for,
            [
                "10.0.0.5".parse::<std::net::IpAddr>().unwrap(),
                "2001:db8::7".parse().unwrap()
            ]
        );
        limits.validate().unwrap();
        for bad in ["10.0.0.0/24", "verifier.example", "10.0.0.256"] {
            let text = format!("attestation_reserved_for = [\"{bad}\"]");
            assert!(
                toml::from_str::<HttpLimits>(&text).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn listeners_from_the_kernel_command_line() {
        let c = BootListeners::parse(
            "console=ttyS0 sn.evidence=test sn.operator_listen=127.0.0.1:9419 \
             sn.public_listen=[::]:9420 quiet",
        )
        .unwrap();
        assert_eq!(c.operator, Some("127.0.0.1:9419".parse().unwrap()));
        assert_eq!(c.public, Some("[::]:9420".parse().unwrap()));
        assert_eq!(
            BootListeners::parse("root=/dev/vda").unwrap(),
            BootListeners::default()
        );
        let err = BootListeners::parse("sn.public_listen=0.0.0.0").unwrap_err();
        assert!(err.contains("sn.public_listen=0.0.0.0"), "{err}");
    }

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room_and_busy_ones_never_do() {
        let c = Connections {
            origin: Instant::now(),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        };
        let (_, first) = c.insert();
        let (_, second) = c.insert();
        first.idle_since_ms.store(5, Ordering::Relaxed);
        second.idle_since_ms.store(1, Ordering::Relaxed);
        assert_eq!(
            c.make_room(3),
            Room::Free,
            "below the cap nothing is closed"
        );
        assert_eq!(c.len(), 2);
        // At the cap of 2: the second (idle since 1 ms) goes, and is told to close.
        assert_eq!(c.make_room(2), Room::Evicted);
        assert_eq!(c.len(), 1);
        let told = second.close.notified();
        tokio_test_ready(told);
        // Both open ones busy: nothing can be closed.
        first.busy.store(1, Ordering::Relaxed);
        let (_, third) = c.insert();
        third.busy.store(1, Ordering::Relaxed);
        assert_eq!(c.make_room(2), Room::AllBusy);
        assert_eq!(c.len(), 2);
    }

    /// A `Notify::notified()` future resolves at once when a permit was stored.
    fn tokio_test_ready(f: impl Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(100), f)
                .await
                .expect("the evicted connection was told to close");
        });
    }
}
