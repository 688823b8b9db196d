//! Shared by the integration tests: fixture nodes, collectors with fixed inputs, and a
//! real agent process observed through its sd_notify socket.
#![allow(dead_code)]

use hardware_profiles::ProfileSet;
use node_agent::assessment::NodeAssessment;
use node_agent::clock::ManualClock;
use node_agent::collect::{Collectors, ReplicaSource};
use node_agent::cost::{CostParams, CostTracker};
use node_agent::probe::{NvmlMode, probe};
use node_agent::settings::CostSettings;
use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// 2025-11-30T00:00:00Z: the fixed clock of the golden output.
pub(crate) const T0: f64 = 1_764_460_800.0;

pub(crate) fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A probe fixture tree of the profiles helper (node-agent/tests/fixtures/<name>).
pub(crate) fn fixture_root(name: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures").join(name)
}

pub(crate) fn testdata(path: &str) -> PathBuf {
    manifest_dir().join("testdata").join(path)
}

pub(crate) fn read_testdata(path: &str) -> String {
    std::fs::read_to_string(testdata(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The node as the agent assesses it from a fixture tree (no NVML behind a fixture).
pub(crate) fn node(fixture: &str, profile: &str) -> NodeAssessment {
    let root = fixture_root(fixture);
    let facts = probe(&root, &NvmlMode::absent("fixture tree"));
    let profiles = ProfileSet::embedded().unwrap();
    let image = node_agent::assessment::ImageStatus::read(&root);
    node_agent::assessment::assess(facts, &profiles, profile, image).unwrap()
}

/// Collectors with fixed inputs: manual clock, the node's crypto policy with every
/// operation on the CPU (no machine-dependent GPU state) after its selftest, the two
/// replica pages replayed in order. GPU, RAPL and pinning are left to the caller.
pub(crate) fn fixed_collectors(node: NodeAssessment, clock: Arc<ManualClock>) -> Collectors {
    let mut policy = node.runtime.crypto;
    for op in gpu_crypto::Operation::ALL {
        policy.operation_mut(op).backend = gpu_crypto::BackendChoice::Cpu;
    }
    let crypto = node_agent::selftest_child::outcome(
        &policy,
        node_agent::selftest_child::run_selftest(policy),
    );
    assert!(crypto.selftest.passed, "{:?}", crypto.selftest.checks);
    let config = CostSettings::default();
    let cost = CostTracker::new(CostParams::new(&node.cost, &config));
    let mut c = Collectors::new(
        clock,
        node,
        crypto,
        cost,
        config.cpu_seconds_per_item.clone(),
    )
    .unwrap();
    c.replica = Some(ReplicaSource::Recorded {
        pages: vec![
            read_testdata("replica/metrics-t0.txt"),
            read_testdata("replica/metrics-t1.txt"),
        ],
        next: 0,
    });
    c.replica_url = "http://[::1]:9090/metrics".to_string();
    c
}

/// Writes a RAPL package zone with `energy_uj` under `root`.
pub(crate) fn write_rapl(root: &Path, energy_uj: u64) {
    let zone = root.join("sys/class/powercap/intel-rapl:0");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    std::fs::write(zone.join("energy_uj"), format!("{energy_uj}\n")).unwrap();
    std::fs::write(zone.join("max_energy_range_uj"), "262143328850\n").unwrap();
}

/// A `node-agent run` process with its notify socket.
pub(crate) struct Agent {
    pub child: Child,
    pub socket: UnixDatagram,
    pub port: u16,
    pub messages: Vec<String>,
    dir: tempfile::TempDir,
}

impl Agent {
    /// The agent's scratch directory (its state and runtime directory).
    pub(crate) fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Starts the agent on a free port with a config (TOML text) and extra arguments,
    /// as systemd would (NOTIFY_SOCKET, WATCHDOG_USEC), and waits for READY=1.
    pub(crate) fn start(config: &str, args: &[&str], watchdog_usec: Option<u64>) -> Agent {
        Agent::start_with(config, args, watchdog_usec, |_| {})
    }

    /// [`Agent::start`], with `customize` applied to the command last.
    pub(crate) fn start_with(
        config: &str,
        args: &[&str],
        watchdog_usec: Option<u64>,
        customize: impl FnOnce(&mut Command),
    ) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let socket_path = dir.path().join("notify.sock");
        let socket = UnixDatagram::bind(&socket_path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let config_path = dir.path().join("agent.toml");
        std::fs::write(&config_path, config).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_node-agent"));
        cmd.arg("run")
            .arg("--config")
            .arg(&config_path)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("NOTIFY_SOCKET", &socket_path)
            // As systemd's StateDirectory= and RuntimeDirectory= would: the node key and
            // the replica's runtime configuration go to the scratch directory.
            .env("STATE_DIRECTORY", dir.path())
            .env("RUNTIME_DIRECTORY", dir.path())
            .env_remove("WATCHDOG_PID")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        match watchdog_usec {
            Some(us) => cmd.env("WATCHDOG_USEC", us.to_string()),
            None => cmd.env_remove("WATCHDOG_USEC"),
        };
        customize(&mut cmd);
        let child = cmd.spawn().unwrap();
        let mut agent = Agent {
            child,
            socket,
            port: 0,
            messages: Vec::new(),
            dir,
        };
        let ready = agent.wait_for("READY=1", Duration::from_secs(120));
        let status = ready
            .lines()
            .find_map(|l| l.strip_prefix("STATUS=serving on "))
            .unwrap_or_else(|| panic!("no serving status in {ready:?}"));
        let addr = status.split(';').next().unwrap();
        agent.port = addr.rsplit(':').next().unwrap().parse().unwrap();
        agent
    }

    /// The next notify datagram containing `needle` (all datagrams are kept in `messages`).
    pub(crate) fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 4096];
        while Instant::now() < deadline {
            if let Ok(n) = self.socket.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).to_string();
                self.messages.push(msg.clone());
                if msg.contains(needle) {
                    return msg;
                }
                continue;
            }
            // Nothing queued: only now can an exited agent send nothing more.
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "agent exited ({status}) before {needle:?}; got {:?}",
                    self.messages
                );
            }
        }
        panic!("no {needle:?} within {timeout:?}; got {:?}", self.messages);
    }

    /// A plain HTTP/1.1 GET; returns (status code, body).
    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        http_get(self.port, path)
    }

    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "agent did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn http_get(port: u16, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Agent configuration for tests: fast collection, no replica, no pinning.
pub(crate) const TEST_CONFIG: &str = r#"
collect_interval_seconds = 0.2
stale_after_intervals = 25
[replica]
metrics_url = ""
[pinning]
enabled = false
"#;

/// Serves the recorded replica pages (testdata/replica/metrics-t0.txt until `moved` is set,
/// metrics-t1.txt after: heights and counters grow) on loopback; returns the page's URL.
pub(crate) fn serve_replica(rt: &tokio::runtime::Runtime, moved: Arc<AtomicBool>) -> String {
    let t0 = read_testdata("replica/metrics-t0.txt");
    let t1 = read_testdata("replica/metrics-t1.txt");
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let page = if moved.load(Ordering::Relaxed) {
                t1.clone()
            } else {
                t0.clone()
            };
            async move { page }
        }),
    );
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/metrics")
    })
}
