//! `attest fleet` over 1,000 node entries served by real `node-agent` processes on loopback.
//!
//! Starts `AGENTS` (default 4) agents, the binary Cargo built for this bench, each with the
//! test evidence source (one shared test seed, so that one test root admits them all, each
//! agent with its own node key), replica scrape and pinning off, on a free loopback port read
//! from its "serving on" log line. The 1,000 entries point at them in turn; every iteration
//! runs the fleet verifier's code (`attestation::fleet::run`: fresh nonce per entry, HTTP
//! fetch, full bundle verification) and requires every entry to be admitted. Afterwards it
//! prints each agent's RSS (VmRSS, VmHWM) and CPU time from /proc.
//!
//! Run: `cargo bench -p node-agent --bench fleet` (env AGENTS, CONCURRENCY to vary).

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use attestation::ChainVerifier;
use attestation::fleet::{self, FleetOptions, NodeStatus};
use attestation::nodes::{NodeEntry, NodeList};
use attestation::policy::Policy;
use attestation::test_source::TestSigner;
use criterion::{Criterion, criterion_group, criterion_main};

const NODES: usize = 1000;

/// The agent processes; killed when dropped.
struct Agents(Vec<(Child, String)>);

impl Drop for Agents {
    fn drop(&mut self) {
        for (child, _) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_agent(dir: &Path, seed: &Path, k: usize) -> (Child, String) {
    let state = dir.join(format!("agent-{k}"));
    std::fs::create_dir_all(&state).unwrap();
    let config = state.join("agent.toml");
    // The bench measures the verifier over many nodes, not one agent's attestation limits:
    // those are lifted here (the defaults allow 2 per second per node).
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\n\
             [replica]\nmetrics_url = \"\"\n\
             [pinning]\nenabled = false\n\
             [attestation]\nsource = \"test\"\nstate_dir = \"{}\"\ntest_seed = \"{}\"\ngpu_evidence = \"none\"\n\
             [http]\nattestation_concurrency = 64\nattestation_per_second = 1e6\nattestation_burst = 1000000\n",
            state.display(),
            seed.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_node-agent"))
        .args(["run", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info")
        .env_remove("NOTIFY_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting node-agent");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("node-agent exited before serving")
            .unwrap();
        if let Some(rest) = line.split("serving on ").nth(1) {
            let addr = rest.split(';').next().unwrap().trim();
            break format!("http://{addr}");
        }
    };
    // Keep draining its log so the pipe never fills.
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

fn proc_status(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
            .unwrap_or_else(|| "?".into())
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name: utime is field 14, stime 15 (1-based).
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { nix::libc::sysconf(nix::libc::_SC_CLK_TCK) } as f64;
    format!(
        "VmRSS {} kB, VmHWM {} kB, CPU {:.2} s",
        field("VmRSS:"),
        field("VmHWM:"),
        (ticks(11) + ticks(12)) / hz
    )
}

fn fleet_of_agents(c: &mut Criterion) {
    let agents_n: usize = std::env::var("AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let concurrency: usize = std::env::var("CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().unwrap();
    let seed_path = dir.path().join("test-evidence-seed");
    let seed = TestSigner::load_or_create_seed(&seed_path).unwrap();
    let signer = TestSigner::from_seed(seed).unwrap();
    let agents = Agents(
        (0..agents_n)
            .map(|k| start_agent(dir.path(), &seed_path, k))
            .collect(),
    );
    let nodes = NodeList {
        node: (0..NODES)
            .map(|i| NodeEntry {
                name: format!("node-{i}"),
                url: agents.0[i % agents.0.len()].1.clone(),
                chip_id: None,
                node_public_key: None,
                config_digest: None,
            })
            .collect(),
    };
    let mut policy = Policy::default_policy();
    policy.test_root = Some(signer.authority.anchor());
    let policy = Arc::new(policy);
    let chains = Arc::new(ChainVerifier::new(policy.trust_store()));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let opts = FleetOptions {
        concurrency,
        timeout: Duration::from_secs(30),
        now,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("fleet");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    g.bench_function(
        format!("fleet_{NODES}_entries_{agents_n}_node_agent_processes"),
        |b| {
            b.iter(|| {
                let results =
                    runtime.block_on(fleet::run(&nodes, policy.clone(), chains.clone(), opts));
                let admitted = results
                    .iter()
                    .filter(|r| r.status == NodeStatus::Admitted)
                    .count();
                assert_eq!(admitted, NODES, "{}", fleet::table(&results));
                admitted
            })
        },
    );
    g.finish();
    for (k, (child, url)) in agents.0.iter().enumerate() {
        eprintln!("agent {k} ({url}): {}", proc_status(child.id()));
    }
}

criterion_group!(benches, fleet_of_agents);
criterion_main!(benches);
