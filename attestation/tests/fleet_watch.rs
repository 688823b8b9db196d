//! `attest fleet --every`: the binary against local HTTP servers on loopback serving
//! test-source evidence, its metrics scraped; the alert rules under `promtool test rules`;
//! and the verifier's throughput.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::test_source::TestSigner;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;

/// The evidence a test node serves; swapped to change the node's evidence.
type Served = Arc<RwLock<Arc<Attester>>>;

#[derive(serde::Deserialize)]
struct NonceQuery {
    nonce: String,
}

async fn attestation(
    State(served): State<Served>,
    Query(q): Query<NonceQuery>,
) -> Result<Vec<u8>, (StatusCode, String)> {
    let nonce = attestation::bundle::parse_nonce(&q.nonce)
        .ok_or((StatusCode::BAD_REQUEST, "bad nonce".into()))?;
    let attester = served.read().map(|a| a.clone()).unwrap();
    let bundle = attester
        .attest(&nonce)
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    serde_json::to_vec(&bundle).map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// A node agent's evidence endpoint on a free loopback port: its base URL.
fn serve(rt: &tokio::runtime::Runtime, served: Served) -> String {
    let router = axum::Router::new()
        .route("/v1/attestation", get(attestation))
        .with_state(served);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

/// A node serving evidence of the test chain from `seed` under node key `[key; 32]`.
fn attester(seed: [u8; 32], key: u8) -> Arc<Attester> {
    let signer = TestSigner::from_seed(seed).unwrap();
    Arc::new(Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[key; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    })
}

fn node_entry(name: &str, url: &str, signer: &TestSigner, attester: &Attester) -> String {
    format!(
        "[[node]]\nname = \"{name}\"\nurl = \"{url}\"\nchip_id = \"{}\"\nnode_public_key = \"{}\"\n",
        hex::encode(signer.chip_id),
        hex::encode(attester.node_key.verifying_key().to_bytes())
    )
}

/// A lab policy trusting the test chain's ARK (written next to it).
fn write_policy(dir: &Path, signer: &TestSigner) -> PathBuf {
    std::fs::write(dir.join("ark.pem"), signer.ark_pem()).unwrap();
    let path = dir.join("policy.toml");
    std::fs::write(&path, "[trust]\ntest_root_ark = \"ark.pem\"\n").unwrap();
    path
}

/// `attest fleet --every 1s`, its metrics URL read from its first lines; the rest of its
/// standard error is kept draining so that it never blocks on a full pipe.
struct Service {
    child: Child,
    metrics: String,
    log: mpsc::Receiver<String>,
}

impl Service {
    fn start(nodes: &Path, policy: &Path) -> Service {
        let mut child = Command::new(env!("CARGO_BIN_EXE_attest"))
            .args(["fleet", "--nodes"])
            .arg(nodes)
            .arg("--policy")
            .arg(policy)
            .args(["--lab-policy", "--every", "1s", "--timeout-ms", "800"])
            .args(["--metrics-listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run attest");
        let (tx, log) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut seen = Vec::new();
        let metrics = loop {
            let line = log
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("no metrics address ({e}): {seen:?}"));
            if let Some(url) = line.split("metrics on http://").nth(1) {
                break url.trim_end_matches("/metrics").to_string();
            }
            seen.push(line);
        };
        Service {
            child,
            metrics,
            log,
        }
    }

    fn scrape(&self) -> String {
        let mut stream = TcpStream::connect(&self.metrics).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(stream, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut page = String::new();
        stream.read_to_string(&mut page).unwrap();
        assert!(page.starts_with("HTTP/1.0 200"), "{page}");
        assert!(page.contains("application/openmetrics-text"), "{page}");
        page
    }

    /// Scrape until `ready` holds for the page (rounds are 1 s apart).
    fn scrape_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let page = self.scrape();
            if ready(&page) {
                return page;
            }
            assert!(Instant::now() < deadline, "never {what}:\n{page}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_so_far(&self) -> String {
        self.log.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The samples of `name` whose labels include every one of `labels`: (label text, value).
fn samples(page: &str, name: &str, labels: &[(&str, &str)]) -> Vec<(String, f64)> {
    page.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (labels_text, value) = match rest.strip_prefix('{') {
                Some(r) => r.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let all = labels
                .iter()
                .all(|(k, v)| labels_text.contains(&format!("{k}=\"{v}\"")));
            let value: f64 = value.trim().parse().ok()?;
            all.then(|| (labels_text.to_string(), value))
        })
        .collect()
}

fn value(page: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    match samples(page, name, labels).as_slice() {
        [(_, v)] => Some(*v),
        _ => None,
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn fleet_every_serves_verdicts_sees_evidence_change_and_stops_on_sigterm() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let seed = [7; 32];
    let signer = TestSigner::from_seed(seed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &signer);
    let first = attester(seed, 2);
    let served: Served = Arc::new(RwLock::new(first.clone()));
    let url = serve(&rt, served.clone());
    let nodes = dir.path().join("nodes.toml");
    std::fs::write(&nodes, node_entry("n1", &url, &signer, &first)).unwrap();
    let svc = Service::start(&nodes, &policy);
    let n1 = [("node", "n1")];

    // Admitted, just now.
    let page = svc.scrape_until("admitted", |p| {
        value(p, "sovereign_fleet_node_admitted", &n1) == Some(1.0)
    });
    assert_eq!(
        samples(&page, "sovereign_fleet_node_admitted", &n1)[0].0,
        "node=\"n1\",status=\"admitted\",reason=\"\""
    );
    let last = value(
        &page,
        "sovereign_fleet_node_last_success_timestamp_seconds",
        &n1,
    )
    .unwrap();
    assert!((unix_now() - last).abs() < 10.0, "last success {last}");
    assert_eq!(
        value(&page, "sovereign_fleet_node_evidence_changed_total", &n1),
        Some(0.0)
    );
    assert_eq!(
        value(&page, "sovereign_fleet_interval_seconds", &[]),
        Some(1.0)
    );
    assert!(value(&page, "sovereign_fleet_round_duration_seconds", &[]).is_some());

    // A NODES.toml that does not parse: the round is refused, the verdict kept.
    std::fs::write(&nodes, "[[node]]\nname = 1\n").unwrap();
    let page = svc.scrape_until("a refused round", |p| {
        value(
            p,
            "sovereign_fleet_rounds_total",
            &[("result", "input_refused")],
        ) >= Some(1.0)
    });
    assert_eq!(
        value(&page, "sovereign_fleet_node_admitted", &n1),
        Some(1.0)
    );
    std::fs::write(&nodes, node_entry("n1", &url, &signer, &first)).unwrap();

    // The node comes back with another node key: its evidence changed, and it is refused
    // because the key is not the registered one.
    *served.write().unwrap() = attester(seed, 3);
    let page = svc.scrape_until("the evidence change", |p| {
        value(p, "sovereign_fleet_node_evidence_changed_total", &n1) == Some(1.0)
            && value(p, "sovereign_fleet_node_admitted", &n1) == Some(0.0)
    });
    let (labels, _) = &samples(&page, "sovereign_fleet_node_admitted", &n1)[0];
    assert!(
        labels.contains("status=\"rejected\"") && labels.contains("binding.node_key"),
        "{labels}"
    );
    assert!(
        value(
            &page,
            "sovereign_fleet_node_check_failures_total",
            &[("node", "n1"), ("check", "binding.node_key")]
        ) >= Some(1.0),
        "{page}"
    );
    assert!(
        value(&page, "sovereign_fleet_rounds_total", &[("result", "ok")]) >= Some(2.0),
        "{page}"
    );

    // SIGTERM: a clean stop, status 0, within a second.
    let mut svc = svc;
    let pid = svc.child.id() as libc::pid_t;
    // SAFETY: kill(2) takes plain integers and touches no memory of this process; `pid` is
    // the service child this test spawned and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = svc.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "still running 1 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0), "{}", svc.log_so_far());
    let log = svc.log_so_far();
    assert!(log.contains("evidence changed: node key"), "{log}");
    assert!(log.contains("round refused, last verdicts kept"), "{log}");
}

#[test]
fn fleet_every_refuses_bad_input_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes.toml");
    std::fs::write(
        &nodes,
        "[[node]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "").unwrap();
    let attest = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_attest"))
            .args(["fleet", "--nodes", nodes.to_str().unwrap()])
            .args(["--policy", policy.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // An empty policy cannot admit: refused without --lab-policy, as a single check is.
    let (code, err) = attest(&["--every", "1s", "--metrics-listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot admit nodes"), "{err}");
    let (code, err) = attest(&["--lab-policy", "--every", "0s"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("out of range"), "{err}");
    let (code, err) = attest(&["--lab-policy", "--every", "1s", "--json"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = attest(&["--lab-policy", "--metrics-listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--every"), "{err}");
}

fn prometheus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("prometheus")
}

fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(prometheus_dir())
        .output()
        .unwrap_or_else(|e| panic!("promtool not runnable ({e}); needs Debian package prometheus"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
#[ignore = "needs promtool: Prometheus' rule checker and rule unit tests (Debian package prometheus)"]
fn promtool_checks_the_fleet_rules_and_their_unit_tests_pass() {
    let check = promtool(&["check", "rules", "fleet-rules.yml"]);
    assert!(check.contains("SUCCESS"), "{check}");
    let test = promtool(&["test", "rules", "fleet-rules.test.yml"]);
    assert!(test.contains("SUCCESS"), "{test}");

    // Every alert has a unit test that sees it fire and one that sees it silent.
    let rules = std::fs::read_to_string(prometheus_dir().join("fleet-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(prometheus_dir().join("fleet-rules.test.yml")).unwrap();
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(alerts.len() >= 5, "{alerts:?}");
    for alert in alerts {
        let evals: Vec<&str> = tests
            .split("- eval_time:")
            .skip(1)
            .filter(|e| e.contains(&format!("alertname: {alert}\n")))
            .collect();
        assert!(
            evals.iter().any(|e| e.contains("exp_labels")),
            "{alert}: no unit test where it fires"
        );
        assert!(
            evals.iter().any(|e| e.contains("exp_alerts: []")),
            "{alert}: no unit test where it stays silent"
        );
    }
}

/// The verifier's CPU time so far in this process's waited-for children.
fn children_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given.
    let usage = unsafe {
        assert_eq!(
            libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()),
            0
        );
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// How many nodes one `attest fleet` process checks per second: FLEET_NODES (default 50)
/// test-evidence nodes on loopback, FLEET_RUNS (default 5) single checks. The node servers
/// run in this process and share the machine, so the wall-clock rate is a lower bound; the
/// verifier's own CPU time per node gives the rate with the machine to itself.
#[test]
#[ignore = "measurement: run alone with --ignored --nocapture (docs/results/fleet-verifier-throughput)"]
fn fleet_verifier_throughput() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (nodes, runs) = (env("FLEET_NODES", 50), env("FLEET_RUNS", 5));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let seed = [9; 32];
    let signer = TestSigner::from_seed(seed).unwrap();
    let served: Served = Arc::new(RwLock::new(attester(seed, 2)));
    let first = served.read().unwrap().clone();
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &signer);
    let list: String = (0..nodes)
        .map(|i| {
            node_entry(
                &format!("n{i}"),
                &serve(&rt, served.clone()),
                &signer,
                &first,
            )
        })
        .collect();
    let nodes_toml = dir.path().join("nodes.toml");
    std::fs::write(&nodes_toml, list).unwrap();
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for _ in 0..runs {
        let (cpu, start) = (children_cpu(), Instant::now());
        let out = Command::new(env!("CARGO_BIN_EXE_attest"))
            .args(["fleet", "--lab-policy", "--nodes"])
            .arg(&nodes_toml)
            .arg("--policy")
            .arg(&policy)
            .output()
            .unwrap();
        walls.push(start.elapsed());
        cpus.push(children_cpu() - cpu);
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(
            table.contains(&format!("{nodes}/{nodes} nodes admitted")),
            "{table}"
        );
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (wall, cpu) = (median(&mut walls), median(&mut cpus));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu_per_node = cpu.as_secs_f64() / nodes as f64;
    let alone = cores as f64 / cpu_per_node;
    println!(
        "{nodes} nodes, {runs} runs, {cores} cores: median wall {wall:.1?} = {:.0} nodes/s \
         (node servers on the same cores); verifier CPU {:.2} ms/node = {alone:.0} nodes/s \
         on {cores} cores alone; at a 60 s interval: {:.0} (wall) to {:.0} (CPU) nodes",
        nodes as f64 / wall.as_secs_f64(),
        cpu_per_node * 1e3,
        60.0 * nodes as f64 / wall.as_secs_f64(),
        60.0 * alone,
    );
}
