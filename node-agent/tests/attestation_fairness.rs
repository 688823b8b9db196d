//! The governing body keeps getting evidence while one client floods `/v1/attestation`,
//! against a real `node-agent run` process with the test evidence source, on loopback: one
//! keep-alive connection from 127.0.0.1 asks 100 times a second, while two verifiers ask once
//! a second each on fresh connections, one from 127.0.0.2 (an ordinary client) and one from
//! 127.0.0.3 (configured in `attestation_reserved_for`). Each verifier must get a bundle for
//! at least 95% of its requests; the flooder is held to its own rate. About 15 s.

mod common;

use common::{Agent, TEST_CONFIG};
use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;

const RUN: Duration = Duration::from_secs(15);
const FLOOD_PERIOD: Duration = Duration::from_millis(10);
const VERIFIER_PERIOD: Duration = Duration::from_secs(1);
/// The agent's default per-client limits.
const PER_SECOND: f64 = 2.0;
const BURST: f64 = 8.0;

/// A blocking connection to the agent's port from the loopback address `from` (tokio's
/// socket binds the source address; the exchange itself is plain blocking I/O, so that its
/// timing is the agent's and not this process's scheduler).
fn connect(runtime: &Handle, from: &str, port: u16) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))?;
    let stream = runtime
        .block_on(socket.connect(SocketAddr::from(([127, 0, 0, 1], port))))?
        .into_std()?;
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(stream)
}

/// Sends one GET and reads its answer: (status, headers, body).
fn exchange(
    conn: &mut BufReader<TcpStream>,
    path: &str,
    close: bool,
) -> std::io::Result<(u16, String, Vec<u8>)> {
    let connection = if close { "close" } else { "keep-alive" };
    // One write: a request in pieces would wait for delayed ACKs (Nagle).
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {connection}\r\n\r\n");
    conn.get_mut().write_all(request.as_bytes())?;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    conn.read_exact(&mut body)?;
    Ok((status, head.to_ascii_lowercase(), body))
}

fn nonce_path(i: u64, who: u64) -> String {
    format!("/v1/attestation?nonce={:032x}{:032x}", who, i + 1)
}

/// Sleeps until `next`, then moves it on by `period`.
fn pace(next: &mut Instant, period: Duration) {
    if let Some(wait) = next.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
    *next += period;
}

/// 100 requests a second on one keep-alive connection (reconnecting if the agent closes
/// it) until `end`; the count of each status (0: no answer).
fn flood(runtime: Handle, port: u16, end: Instant) -> BTreeMap<u16, usize> {
    let mut codes = BTreeMap::new();
    let mut next = Instant::now();
    let mut conn = None;
    let mut i = 0;
    while Instant::now() < end {
        pace(&mut next, FLOOD_PERIOD);
        if conn.is_none() {
            conn = connect(&runtime, "127.0.0.1", port)
                .ok()
                .map(BufReader::new);
        }
        let Some(c) = conn.as_mut() else { continue };
        i += 1;
        match exchange(c, &nonce_path(i, 1), false) {
            Ok((code, _, _)) => *codes.entry(code).or_default() += 1,
            Err(_) => {
                *codes.entry(0).or_default() += 1;
                conn = None;
            }
        }
    }
    codes
}

/// One request a second from `from`, each on a fresh connection, until `end`; each answer
/// as "200" (a bundle) or what came instead.
fn verifier(runtime: Handle, port: u16, from: &'static str, who: u64, end: Instant) -> Vec<String> {
    let mut answers = Vec::new();
    let mut next = Instant::now();
    let mut i = 0;
    while Instant::now() < end {
        pace(&mut next, VERIFIER_PERIOD);
        i += 1;
        let answer = connect(&runtime, from, port)
            .and_then(|s| exchange(&mut BufReader::new(s), &nonce_path(i, who), true));
        let answer = match answer {
            Ok((200, _, body)) => match attestation::bundle::Bundle::from_json(&body) {
                Ok(_) => "200".to_string(),
                Err(e) => format!("200 without a bundle: {e}"),
            },
            Ok((code, head, _)) => format!("{code} ({head:?})"),
            Err(e) => format!("error: {e}"),
        };
        answers.push(answer);
    }
    answers
}

fn share_ok(answers: &[String]) -> f64 {
    let ok = answers.iter().filter(|a| *a == "200").count();
    ok as f64 / answers.len().max(1) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifiers_get_evidence_while_one_client_floods() {
    let config = format!(
        "{TEST_CONFIG}\n[attestation]\nsource = \"test\"\ngpu_evidence = \"none\"\n\
         [http]\nattestation_reserved_for = [\"127.0.0.3\"]\n"
    );
    let agent = tokio::task::spawn_blocking(move || Agent::start(&config, &[], None))
        .await
        .unwrap();
    let port = agent.port;
    // Evidence is served at all before the flood starts (the first bundle creates the key).
    let (code, _) = tokio::task::spawn_blocking(move || {
        common::http_get(port, &format!("/v1/attestation?nonce={}", "ab".repeat(32)))
    })
    .await
    .unwrap();
    assert_eq!(code, 200);

    let started = Instant::now();
    let end = started + RUN;
    let rt = Handle::current();
    let flooder = tokio::task::spawn_blocking({
        let rt = rt.clone();
        move || flood(rt, port, end)
    });
    let ordinary = tokio::task::spawn_blocking({
        let rt = rt.clone();
        move || verifier(rt, port, "127.0.0.2", 2, end)
    });
    let reserved = tokio::task::spawn_blocking(move || verifier(rt, port, "127.0.0.3", 3, end));
    let flood_codes = flooder.await.unwrap();
    let ordinary = ordinary.await.unwrap();
    let reserved = reserved.await.unwrap();
    let took = started.elapsed().as_secs_f64();

    let flood_total: usize = flood_codes.values().sum();
    let flood_ok = flood_codes.get(&200).copied().unwrap_or(0);
    println!(
        "flood from 127.0.0.1: {flood_total} requests in {took:.1} s ({:.0}/s): {flood_codes:?}",
        flood_total as f64 / took
    );
    for (who, answers) in [
        ("127.0.0.2", &ordinary),
        ("127.0.0.3 (reserved)", &reserved),
    ] {
        println!(
            "verifier {who}: {} requests, {:.0}% bundles; other answers: {:?}",
            answers.len(),
            100.0 * share_ok(answers),
            answers.iter().filter(|a| *a != "200").collect::<Vec<_>>()
        );
    }

    // The flood really ran, and the flooder got its own rate, no more.
    assert!(
        flood_total as f64 >= 0.7 * took / FLOOD_PERIOD.as_secs_f64(),
        "the flood ran at {flood_total} requests in {took:.1} s"
    );
    assert!(
        flood_ok as f64 <= PER_SECOND * took + BURST + 1.0,
        "the flooder got {flood_ok} bundles in {took:.1} s"
    );
    for answers in [&ordinary, &reserved] {
        assert!(answers.len() >= 10, "{answers:?}");
        assert!(share_ok(answers) >= 0.95, "{answers:?}");
    }
}
