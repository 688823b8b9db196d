//! The agent's HTTP limits under a flood, against a real `node-agent run` process with the
//! test evidence source, on loopback only: 2,000 idle or slow connections (a third send
//! nothing, a third part of a request, a third trickle a byte every 500 ms) and 200
//! concurrent `GET /v1/attestation` requests, while a prober keeps asking `/healthz` and
//! `/metrics` on fresh connections. The agent runs with the common soft descriptor limit
//! of 1,024, so that a server without a connection cap runs out of descriptors.
//!
//! It checks what the limits promise: `/healthz` and `/metrics` answer every time, p99
//! under 100 ms; the agent's peak RSS (VmHWM) stays under 64 MB; every flood connection is
//! closed within the header-read timeout (plus 1 s of scheduling slack); each attestation
//! request gets a bundle, or 429/503 with `Retry-After`, never a hang. The whole run is
//! bounded (about 15 s) and stops by itself. It prints the figures that
//! docs/benchmarks.md cites.

mod common;

use common::{Agent, TEST_CONFIG};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

const FLOOD_CONNECTIONS: usize = 2000;
const ATTESTATION_REQUESTS: usize = 200;
/// The agent's header-read timeout in this test.
const HEADER_TIMEOUT_S: f64 = 3.0;
/// How late a close may be observed past that timeout (accept backlog, scheduling).
const CLOSE_SLACK: Duration = Duration::from_secs(1);
const P99_LIMIT: Duration = Duration::from_millis(100);
const RSS_LIMIT_KB: u64 = 64 * 1024;
/// The agent's soft RLIMIT_NOFILE: the common default.
const AGENT_NOFILE: u64 = 1024;

fn raise_nofile(to: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let want = to.min(hard);
    if soft < want {
        setrlimit(Resource::RLIMIT_NOFILE, want, hard).unwrap();
    }
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        soft >= (FLOOD_CONNECTIONS + ATTESTATION_REQUESTS + 100) as u64,
        "this test needs a hard descriptor limit of at least {} (ulimit -Hn), got {soft}",
        FLOOD_CONNECTIONS + ATTESTATION_REQUESTS + 100
    );
}

async fn write_all(s: &TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        s.writable().await?;
        match s.try_write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Some bytes, or 0 at the end of the stream.
async fn read_some(s: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        s.readable().await?;
        match s.try_read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

/// `GET path` on a fresh connection; (status, headers+body) or an error within 5 s.
async fn get(port: u16, path: &str) -> Result<(u16, String), String> {
    let request = async {
        let s = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        write_all(&s, request.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match read_some(&s, &mut buf).await {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        let raw = String::from_utf8_lossy(&raw).to_string();
        let status = raw
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no status line in {raw:?}"))?;
        Ok((status, raw))
    };
    tokio::time::timeout(Duration::from_secs(5), request)
        .await
        .unwrap_or_else(|_| Err("no answer within 5 s".into()))
}

/// `GET path` on a fresh connection with blocking sockets; the status, or an error within 5 s.
fn blocking_get(port: u16, path: &str) -> Result<u16, String> {
    use std::io::{Read as _, Write as _};
    let timeout = Duration::from_secs(5);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.set_write_timeout(Some(timeout)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
    let raw = String::from_utf8_lossy(&raw);
    raw.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {raw:?}"))
}

/// Opens a flood connection, behaves as `kind` says, and returns how long after opening the
/// agent closed it (None: still open at `give_up`).
async fn flood_connection(port: u16, kind: usize, give_up: Instant) -> Option<Duration> {
    let s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let opened = Instant::now();
    let mut buf = [0u8; 1024];
    let partial = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    if kind == 1 && write_all(&s, partial).await.is_err() {
        return Some(opened.elapsed());
    }
    let mut sent = 0;
    loop {
        let tick = tokio::time::sleep(Duration::from_millis(500));
        tokio::select! {
            r = read_some(&s, &mut buf) => match r {
                // Closed (EOF or reset), or the agent answered something: it must close anyway.
                Ok(0) | Err(_) => return Some(opened.elapsed()),
                Ok(_) => continue,
            },
            _ = tick => {
                if Instant::now() >= give_up {
                    return None;
                }
                if kind == 2 {
                    let byte = [partial[sent % partial.len()]];
                    sent += 1;
                    if write_all(&s, &byte).await.is_err() {
                        return Some(opened.elapsed());
                    }
                }
            }
        }
    }
}

fn vm_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// The `p` quantile of `sorted` (nearest rank); `Duration::MAX` for none.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::MAX;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_hold_under_a_flood_of_idle_connections_and_attestation_requests() {
    raise_nofile(8192);
    let config = format!(
        "{TEST_CONFIG}\n[attestation]\nsource = \"test\"\ngpu_evidence = \"none\"\n\
         [http]\nheader_read_timeout_seconds = {HEADER_TIMEOUT_S}\n"
    );
    let agent = tokio::task::spawn_blocking(move || {
        Agent::start_with(&config, &[], None, |command| {
            use std::os::unix::process::CommandExt as _;
            // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    nix::sys::resource::setrlimit(
                        nix::sys::resource::Resource::RLIMIT_NOFILE,
                        AGENT_NOFILE,
                        AGENT_NOFILE,
                    )
                    .map_err(std::io::Error::from)
                });
            }
        })
    })
    .await
    .unwrap();
    let port = agent.port;
    let pid = agent.child.id();
    // Healthy first: the collectors' first cycles may be slow on a loaded machine.
    let healthy_by = Instant::now() + Duration::from_secs(60);
    loop {
        match get(port, "/healthz").await {
            Ok((200, _)) => break,
            other => assert!(
                Instant::now() < healthy_by,
                "the agent never became healthy: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss_before = vm_kb(pid, "VmRSS:");

    let flood_started = Instant::now();
    let give_up = flood_started
        + Duration::from_secs_f64(HEADER_TIMEOUT_S)
        + CLOSE_SLACK
        + Duration::from_secs(4);
    let flood: Vec<_> = (0..FLOOD_CONNECTIONS)
        .map(|i| tokio::spawn(flood_connection(port, i % 3, give_up)))
        .collect();

    let attestations: Vec<_> = (0..ATTESTATION_REQUESTS)
        .map(|i| {
            let nonce = format!("{:064x}", i + 1);
            tokio::spawn(async move { get(port, &format!("/v1/attestation?nonce={nonce}")).await })
        })
        .collect();

    // The prober: /healthz and /metrics in turn, each on a fresh connection, for the length
    // of the flood; a failure or a timeout is a failed request.
    let probing = Arc::new(AtomicBool::new(true));
    // On a thread of its own with blocking sockets, so that its timings are the agent's and
    // not this process's scheduler, busy with the flood's 2,200 tasks.
    let prober = std::thread::spawn({
        let probing = probing.clone();
        move || {
            let mut health = Vec::new();
            let mut metrics = Vec::new();
            let mut failures = Vec::new();
            let mut i = 0u64;
            while probing.load(Ordering::Relaxed) {
                let path = if i.is_multiple_of(2) {
                    "/healthz"
                } else {
                    "/metrics"
                };
                i += 1;
                let t = Instant::now();
                match blocking_get(port, path) {
                    Ok(200) => {
                        let took = t.elapsed();
                        if path == "/healthz" {
                            health.push(took)
                        } else {
                            metrics.push(took)
                        }
                    }
                    Ok(code) => failures.push(format!("{path}: {code}")),
                    Err(e) => failures.push(format!("{path}: {e}")),
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            (health, metrics, failures)
        }
    });
    let sampler = tokio::spawn({
        let probing = probing.clone();
        async move {
            let mut peak = 0;
            while probing.load(Ordering::Relaxed) {
                peak = peak.max(vm_kb(pid, "VmRSS:"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            peak
        }
    });

    let mut attestation_codes = std::collections::BTreeMap::<u16, usize>::new();
    let mut attestation_errors = Vec::new();
    for a in attestations {
        match a.await.unwrap() {
            Ok((code, raw)) => {
                *attestation_codes.entry(code).or_default() += 1;
                match code {
                    200 => {
                        let body = raw.split_once("\r\n\r\n").unwrap().1;
                        attestation::bundle::Bundle::from_json(body.as_bytes())
                            .unwrap_or_else(|e| panic!("a 200 without a bundle: {e}"));
                    }
                    429 | 503 => assert!(
                        raw.to_ascii_lowercase().contains("\r\nretry-after: "),
                        "{code} without Retry-After: {raw}"
                    ),
                    _ => attestation_errors.push(format!("{code}: {raw}")),
                }
            }
            Err(e) => attestation_errors.push(e),
        }
    }
    let attestation_done = flood_started.elapsed();

    let mut close_times = Vec::new();
    let mut still_open = 0;
    for f in flood {
        match f.await.unwrap() {
            Some(t) => close_times.push(t),
            None => still_open += 1,
        }
    }
    probing.store(false, Ordering::Relaxed);
    let (mut health, mut metrics, failures) = prober.join().unwrap();
    let peak_sampled = sampler.await.unwrap();
    // The kernel's high-water mark, or a sampled VmRSS above it (its counters lag a little).
    let hwm = vm_kb(pid, "VmHWM:");
    let peak_rss = hwm.max(peak_sampled);
    let (code, _) = get(port, "/healthz").await.unwrap();
    assert_eq!(code, 200, "the agent stopped answering after the flood");

    health.sort();
    metrics.sort();
    close_times.sort();
    let max_close = close_times.last().copied().unwrap_or_default();
    let limit = Duration::from_secs_f64(HEADER_TIMEOUT_S) + CLOSE_SLACK;
    let late = close_times.iter().filter(|t| **t > limit).count();
    println!(
        "flood: {FLOOD_CONNECTIONS} connections, {ATTESTATION_REQUESTS} attestation requests, \
         header-read timeout {HEADER_TIMEOUT_S} s, agent RLIMIT_NOFILE {AGENT_NOFILE}"
    );
    println!(
        "/healthz: {} answers, p50 {:?}, p99 {:?}, max {:?}",
        health.len(),
        percentile(&health, 0.5),
        percentile(&health, 0.99),
        percentile(&health, 1.0)
    );
    println!(
        "/metrics: {} answers, p50 {:?}, p99 {:?}, max {:?}",
        metrics.len(),
        percentile(&metrics, 0.5),
        percentile(&metrics, 0.99),
        percentile(&metrics, 1.0)
    );
    println!("prober failures: {}", failures.len());
    println!("agent RSS: {rss_before} kB before, peak sampled {peak_sampled} kB, VmHWM {hwm} kB");
    println!(
        "flood connections closed by the agent: {} (median {:?} after opening, max {:?}), \
         {late} later than {limit:?}, {still_open} still open",
        close_times.len(),
        percentile(&close_times, 0.5),
        max_close
    );
    println!("attestation answers: {attestation_codes:?}, all in {attestation_done:?}");

    assert!(failures.is_empty(), "prober failures: {failures:?}");
    assert!(
        health.len() >= 20 && metrics.len() >= 20,
        "too few probes: {} /healthz, {} /metrics",
        health.len(),
        metrics.len()
    );
    assert!(percentile(&health, 0.99) < P99_LIMIT, "/healthz p99");
    assert!(percentile(&metrics, 0.99) < P99_LIMIT, "/metrics p99");
    assert!(peak_rss < RSS_LIMIT_KB, "agent peak RSS {peak_rss} kB");
    assert_eq!(still_open, 0, "flood connections never closed");
    assert_eq!(late, 0, "flood connections closed later than {limit:?}");
    assert!(attestation_errors.is_empty(), "{attestation_errors:?}");
    assert!(
        attestation_codes.get(&200).copied().unwrap_or(0) >= 1,
        "no attestation succeeded: {attestation_codes:?}"
    );
    assert!(
        attestation_codes.get(&429).copied().unwrap_or(0)
            + attestation_codes.get(&503).copied().unwrap_or(0)
            >= 1,
        "200 concurrent requests and none was limited: {attestation_codes:?}"
    );
}
