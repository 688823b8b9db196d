//! Fleet monitoring proven against a real Prometheus (Debian's `prometheus` package): the
//! scrape configuration and alert rules operators use (`node-agent/dashboards/prometheus.yml`
//! and `alerts.yml`, copied unchanged) scrape a small fleet on loopback:
//!
//! * three `node-agent run` processes on probe fixture trees that select three profiles
//!   (`development`, `sovereign-node`, `research-box`), scraping a replica page served here;
//! * the agent's router in this process serving a snapshot collected from recorded H200 NVML
//!   samples (no NVML on this machine: the GPU series come from the recording);
//! * a stopped node (a loopback port nobody listens on).
//!
//! Then every Grafana panel query and every alert expression is evaluated through the HTTP
//! API, failing on any error or warning, on an empty result where the fixtures guarantee data,
//! and on an alert expression that selects other nodes than the fixtures make it select.
//! `promtool check rules` and `promtool test rules` (alerts.test.yml) run as well.

mod common;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::routes::{AppState, Heartbeat, router};
use node_agent::snapshot::Snapshot;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const NEEDS: &str = "needs prometheus and promtool (Debian package prometheus)";

fn dashboards() -> PathBuf {
    manifest_dir().join("dashboards")
}

fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dashboards())
        .output()
        .unwrap_or_else(|e| panic!("promtool not runnable ({e}); {NEEDS}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
#[ignore = "needs promtool and amtool (Debian packages prometheus, prometheus-alertmanager); ./scripts/test runs it where they are installed"]
fn promtool_checks_the_rules_and_their_unit_tests_pass() {
    let check = promtool(&["check", "rules", "alerts.yml"]);
    assert!(check.contains("SUCCESS: 16 rules found"), "{check}");
    let test = promtool(&["test", "rules", "alerts.test.yml"]);
    assert!(test.contains("SUCCESS"), "{test}");

    // Every alert of alerts.yml has a unit test that sees it fire and one that sees it silent.
    let rules = std::fs::read_to_string(dashboards().join("alerts.yml")).unwrap();
    let tests = std::fs::read_to_string(dashboards().join("alerts.test.yml")).unwrap();
    for alert in alert_rules(&rules).keys() {
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

    // The configuration operators are given is one Prometheus accepts, with these rules.
    let dir = prometheus_dir(&[]);
    let config = promtool(&[
        "check",
        "config",
        dir.path().join("prometheus.yml").to_str().unwrap(),
    ]);
    assert!(config.contains("SUCCESS: 1 rule files found"), "{config}");
    // The global Prometheus of the operator guide's "Many subnets".
    promtool(&["check", "config", "prometheus-global.yml"]);

    // Alertmanager's routing: pages to the on-call receiver, cost to the report, the rest
    // to tickets; every severity alerts.yml uses has its route.
    let out = amtool(&["check-config", "alertmanager.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
    for severity in ["page", "warning", "info"] {
        assert!(
            rules.contains(&format!("severity: {severity}")),
            "alerts.yml has no {severity} alert"
        );
    }
    for (labels, receiver) in [
        (
            ["severity=page", "alertname=SovereignNodeNotReady"],
            "on-call",
        ),
        (
            ["severity=warning", "alertname=SovereignNodeGpuHot"],
            "fleet-tickets",
        ),
        (
            ["severity=info", "alertname=SovereignNodeCostAboveBudget"],
            "cost-report",
        ),
    ] {
        let mut args = vec!["config", "routes", "test", "--config.file=alertmanager.yml"];
        args.extend(labels);
        let out = amtool(&args);
        assert_eq!(out.trim(), receiver, "{labels:?}");
    }
}

fn amtool(args: &[&str]) -> String {
    let out = Command::new("amtool")
        .args(args)
        .current_dir(dashboards())
        .output()
        .unwrap_or_else(|e| {
            panic!("amtool not runnable ({e}); needs Debian package prometheus-alertmanager")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "amtool {args:?}:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// alert name -> expression, from alerts.yml (the file's own simple layout: `- alert:` then
/// `expr:` on one line).
fn alert_rules(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("- alert:") {
            name = Some(n.trim().to_string());
        } else if let Some(e) = line.strip_prefix("expr:") {
            let n = name.take().expect("expr: before alert:");
            assert!(
                out.insert(n.clone(), e.trim().to_string()).is_none(),
                "alert {n} twice"
            );
        }
    }
    assert!(name.is_none(), "alert {name:?} without expr");
    out
}

/// (panel title, refId, expression) of every query in the Grafana dashboard.
fn panel_queries(dashboard: &Value) -> Vec<(String, String, String)> {
    fn walk(panels: &Value, out: &mut Vec<(String, String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                out.push((
                    p["title"].as_str().unwrap().to_string(),
                    t["refId"].as_str().unwrap_or("").to_string(),
                    t["expr"].as_str().unwrap().to_string(),
                ));
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// A temporary directory holding prometheus.yml and alerts.yml exactly as shipped, and the
/// targets file `targets/fleet.json` listing `groups` (address, fixture label).
fn prometheus_dir(groups: &[(String, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["prometheus.yml", "alerts.yml"] {
        std::fs::copy(dashboards().join(file), dir.path().join(file)).unwrap();
    }
    std::fs::create_dir(dir.path().join("targets")).unwrap();
    let targets: Vec<Value> = groups
        .iter()
        .map(|(addr, fixture)| serde_json::json!({"targets": [addr], "labels": {"fixture": fixture}}))
        .collect();
    std::fs::write(
        dir.path().join("targets/fleet.json"),
        serde_json::to_string_pretty(&targets).unwrap(),
    )
    .unwrap();
    dir
}

/// A Prometheus server on a loopback port; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    client: Client<HttpConnector, Empty<Bytes>>,
    rt: tokio::runtime::Handle,
}

impl Prometheus {
    fn start(dir: tempfile::TempDir, rt: tokio::runtime::Handle) -> Prometheus {
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("prometheus not runnable ({e}); {NEEDS}"));
        let _guard = rt.enter();
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut p = Prometheus {
            child,
            port,
            dir,
            client,
            rt,
        };
        p.wait("Prometheus ready", Duration::from_secs(60), |p| {
            p.get("/-/ready")
                .map(|(code, _)| code == 200)
                .unwrap_or(false)
        });
        p
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    fn get(&self, path_and_query: &str) -> Result<(u16, String), String> {
        let uri: hyper::Uri = format!("http://127.0.0.1:{}{path_and_query}", self.port)
            .parse()
            .map_err(|e| format!("{e}"))?;
        self.rt.block_on(async {
            let resp = tokio::time::timeout(Duration::from_secs(10), self.client.get(uri))
                .await
                .map_err(|_| "timeout".to_string())?
                .map_err(|e| e.to_string())?;
            let code = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok((code, String::from_utf8_lossy(&body).into_owned()))
        })
    }

    /// The API's `data`, or its error (and warnings) as text.
    fn api(&self, path: &str, params: &[(&str, &str)]) -> Result<Value, String> {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let (code, body) = self.get(&format!("{path}?{query}"))?;
        let v: Value =
            serde_json::from_str(&body).map_err(|e| format!("HTTP {code}: {e}: {body}"))?;
        if v["status"] != "success" {
            return Err(format!("HTTP {code}: {} {}", v["errorType"], v["error"]));
        }
        if let Some(w) = v["warnings"].as_array().filter(|w| !w.is_empty()) {
            return Err(format!("warnings: {w:?}"));
        }
        Ok(v["data"].clone())
    }

    /// An instant query's result vector.
    fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let data = self.api("/api/v1/query", &[("query", expr)])?;
        match data["resultType"].as_str() {
            Some("vector") => Ok(data["result"].as_array().unwrap().clone()),
            other => Err(format!("result type {other:?}, expected vector")),
        }
    }

    fn scalar(&self, expr: &str) -> Option<f64> {
        let r = self.query(expr).ok()?;
        r.first()?["value"][1].as_str()?.parse().ok()
    }

    fn wait(&mut self, what: &str, timeout: Duration, done: impl Fn(&Prometheus) -> bool) {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("prometheus exited ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {timeout:?}; prometheus log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The size of a target's /metrics answer to Prometheus's request headers.
fn page_bytes(prom: &Prometheus, addr: &str) -> usize {
    let uri: hyper::Uri = format!("http://{addr}/metrics").parse().unwrap();
    prom.rt.block_on(async {
        let req = hyper::Request::get(uri)
            .header(
                "accept",
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            )
            .header("accept-encoding", "gzip")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let resp = prom.client.request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text"),
        );
        resp.into_body().collect().await.unwrap().to_bytes().len()
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A snapshot as the agent collects it on the `epyc-9354p-snp-guest` tree with the recorded
/// H200 NVML samples (two cycles 15 s apart; the golden GPU page's inputs). On a thread of
/// its own: the collectors own a tokio runtime.
fn recorded_gpu_snapshot() -> Snapshot {
    std::thread::spawn(|| {
        let clock = Arc::new(ManualClock::new(T0));
        let mut c = fixed_collectors(node("epyc-9354p-snp-guest", "auto"), clock.clone());
        c.gpu = Some(Box::new(
            RecordedGpuSource::from_json(&read_testdata("gpu/h200-nvml-samples.json")).unwrap(),
        ));
        c.pinning_disabled_reason = Some("the profile gives no pool a CPU set".into());
        c.disable("pinning", "the profile gives no pool a CPU set");
        c.disable("cpu_energy", "no RAPL in the fixture");
        let _first = c.collect();
        clock.advance(15.0);
        c.collect()
    })
    .join()
    .unwrap()
}

/// What a query must return with this fleet.
enum Expect {
    /// At least one series: the fixtures guarantee data, for the reason given.
    Data(&'static str),
    /// Exactly the series of these fixtures (by the `fixture` label), for the reason given.
    Fixtures(&'static [&'static str], &'static str),
    /// No series can be guaranteed (the reason says why); the query must still evaluate.
    NoGuarantee(&'static str),
}

/// Panel queries by (title, refId). A query not listed fails the test: whoever adds one
/// states here whether the fixtures guarantee it data.
fn panel_expectation(title: &str, ref_id: &str) -> Option<Expect> {
    use Expect::*;
    Some(match (title, ref_id) {
        ("Nodes ready", "A") => Data("every running agent exports sovereign_node_ready"),
        ("Nodes ready", "B") => Data("count over the same series"),
        ("Crypto selftest failing", _) => Data("`or vector(0)` always yields one sample"),
        ("SEV-SNP active", _) => Data("every agent exports sovereign_sev_snp_active"),
        ("Fleet cost", _) => {
            Data("every agent exports sovereign_cost_eur_per_hour{part=\"total\"}")
        }
        ("Nodes: profile and readiness", _) => {
            Data("every agent exports its profile and readiness")
        }
        ("Finalized height", _) | ("Certification lag (blocks)", _) => {
            Data("the agents scrape the recorded replica pages served by the test")
        }
        ("Checkpoint time per checkpoint", _) | ("NI-DKG time per call", _) => Data(
            "the replica page switches from t0 to t1 between two scrapes, so both counters grow",
        ),
        ("Crypto items by path", _) => {
            Data("every agent exports the selftest's item counters (zero or not)")
        }
        ("CPU fallbacks after GPU failure", _) => NoGuarantee(
            "a fallback needs a GPU failure: no GPU ran here, and the counter has no sample until one happens",
        ),
        ("GPU power", _)
        | ("GPU temperature", _)
        | ("GPU utilisation", _)
        | ("GPU memory used", _) => {
            Data("the recorded H200 samples carry power, temperature, utilisation and memory")
        }
        ("GPU XID and uncorrected ECC errors", "A") => NoGuarantee(
            "Xid counters exist only for Xids seen in the kernel log; the recording saw none",
        ),
        ("GPU XID and uncorrected ECC errors", "B") => {
            Data("the recorded H200 samples carry the volatile ECC counters (0)")
        }
        ("Pinning drift (threads)", _) => NoGuarantee(
            "pinning needs a running replica process and a profile with CPU sets; none here",
        ),
        ("Cost per hour", _) => Data("every agent exports its cost"),
        ("Energy per certified block", _) => Data(
            "the certified height grows between the replica pages, and every agent accounts energy",
        ),
        ("CPU time offloaded to the GPU", _) => {
            Data("every agent exports the offloaded CPU-seconds counter (zero without GPU work)")
        }
        ("Collector scrape duration", _) => Data("every agent times its collectors"),
        _ => return None,
    })
}

/// Alert expressions by alert name: which fixtures the expression selects right now (the
/// alert's `for:` aside). A rule not listed fails the test.
fn alert_expectation(alert: &str) -> Option<Expect> {
    use Expect::*;
    Some(match alert {
        "SovereignNodeAgentDown" => Fixtures(&["stopped"], "nothing listens on its port"),
        "SovereignNodeNotReady" => Fixtures(
            &["sovereign-node", "h200-samples"],
            "the sovereign-node profile requires a usable GPU with CC; a fixture tree has no NVML",
        ),
        "SovereignNodeCryptoSelftestFailed" => Fixtures(
            &[],
            "the auto policies run on the CPU without a GPU, and the selftest passes there",
        ),
        "SovereignNodeSevSnpInactive" => Fixtures(
            &[],
            "only sovereign-node requires SEV-SNP, and its tree has /dev/sev-guest",
        ),
        "SovereignNodeCollectorDown" => Fixtures(
            &["sovereign-node", "research-box"],
            "their profiles expect a GPU, so the gpu collector runs and fails without NVML; the research box's replica does not answer",
        ),
        "SovereignNodeCryptoFallbacks" => Fixtures(&[], "no GPU ran, so nothing fell back"),
        "SovereignNodeGpuXidError" => Fixtures(&[], "the recording saw no Xid"),
        "SovereignNodeGpuUncorrectedEcc" => Fixtures(&[], "the recorded ECC counters stay at 0"),
        "SovereignNodeGpuHot" => Fixtures(&[], "the recorded H200 is at 33 °C"),
        "SovereignNodeGpuThermalThrottle" => {
            Fixtures(&[], "the recorded H200 throttles only for gpu_idle")
        }
        "SovereignNodeGpuCcModeOff" => Fixtures(
            &["h200-samples"],
            "the recorded H200 has CC off, under the sovereign-node profile that requires it",
        ),
        "SovereignNodePinningDrift" => Fixtures(&[], "pinning is off in every agent here"),
        "SovereignNodeReplicaDown" => {
            Fixtures(&["research-box"], "its replica URL is a closed port")
        }
        "SovereignNodeFinalizationStalled" => Fixtures(
            &["h200-samples"],
            "it serves one snapshot, so its height never moves; the agents' replica moved from t0 to t1",
        ),
        "SovereignNodeCertificationLag" => Fixtures(&[], "the recorded pages trail by 1-2 blocks"),
        "SovereignNodeCostAboveBudget" => Fixtures(&[], "every profile's cost is below 1.5 EUR/h"),
        _ => return None,
    })
}

fn fixtures_of(result: &[Value]) -> BTreeSet<String> {
    result
        .iter()
        .map(|s| s["metric"]["fixture"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
#[ignore = "needs prometheus and promtool (Debian package prometheus); ./scripts/test runs it where it is installed"]
fn every_panel_query_and_alert_expression_evaluates_against_the_fleet() {
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // The replica: recorded page t0 until the switch, then t1 (heights and counters grow).
    let switched = Arc::new(AtomicBool::new(false));
    let replica_url = serve_replica(&rt, switched.clone());

    // Three agents on fixture trees; the research box's replica does not answer.
    let with_replica =
        |url: &str| TEST_CONFIG.replace("metrics_url = \"\"", &format!("metrics_url = \"{url}\""));
    let dead_url = format!("http://127.0.0.1:{}/metrics", free_port());
    let mut agents = Vec::new();
    for (fixture, tree, url) in [
        ("development", "ci-2core", &replica_url),
        ("sovereign-node", "epyc-9354p-snp-guest", &replica_url),
        ("research-box", "ryzen-9900x", &dead_url),
    ] {
        let root = fixture_root(tree).display().to_string();
        let agent = Agent::start(&with_replica(url), &["--root", &root], None);
        let (_, status) = agent.get("/v1/status");
        let status: Value = serde_json::from_str(&status).unwrap();
        assert_eq!(
            status["node"]["profile"], fixture,
            "{tree} selects {fixture}"
        );
        agents.push((fixture, agent));
    }

    // The agent's router serving recorded H200 NVML samples.
    let gpu_addr = {
        let state = AppState::new(
            recorded_gpu_snapshot(),
            Arc::new(Heartbeat::new(Duration::from_secs(3600))),
        );
        state.heartbeat.beat();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
            addr
        })
    };

    let mut targets: Vec<(String, &str)> = agents
        .iter()
        .map(|(fixture, a)| (format!("127.0.0.1:{}", a.port), *fixture))
        .collect();
    targets.push((gpu_addr.to_string(), "h200-samples"));
    targets.push((format!("127.0.0.1:{}", free_port()), "stopped"));
    let running = targets.len() - 1;

    let mut prom = Prometheus::start(prometheus_dir(&targets), rt.handle().clone());

    // Every target scraped once (the stopped one as down), then the replica moves on, then
    // every running target scraped again.
    let scraped = |p: &Prometheus| {
        p.scalar("count(up{job=\"sovereign-node-agent\"})") == Some(targets.len() as f64)
    };
    prom.wait(
        "a first scrape of every target",
        Duration::from_secs(60),
        scraped,
    );
    let switch = prom.scalar("vector(time())").unwrap();
    switched.store(true, Ordering::Relaxed);
    let rescraped = |p: &Prometheus| {
        p.scalar("count(sovereign_agent_info)") == Some(running as f64)
            && p.scalar("min(timestamp(sovereign_agent_info))")
                .unwrap_or(0.0)
                > switch + 1.0
    };
    prom.wait(
        "a second scrape after the replica moved",
        Duration::from_secs(60),
        rescraped,
    );

    let mut failures = Vec::new();
    let mut check = |what: String, expr: &str, expect: Option<Expect>| {
        let result = prom.query(expr);
        let summary = match &result {
            Ok(r) => format!("{} series {:?}", r.len(), fixtures_of(r)),
            Err(e) => format!("ERROR {e}"),
        };
        eprintln!("{what}: {expr}\n    -> {summary}");
        let Some(expect) = expect else {
            failures.push(format!(
                "{what}: not listed in this test's expectations ({summary})"
            ));
            return;
        };
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{what}: {expr}: {e}"));
                return;
            }
        };
        match expect {
            Expect::Data(why) if r.is_empty() => {
                failures.push(format!("{what}: {expr}: no series, but {why}"))
            }
            Expect::Fixtures(want, why) => {
                let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
                if fixtures_of(&r) != want {
                    failures.push(format!(
                        "{what}: {expr}: selects {:?}, expected {want:?} ({why})",
                        fixtures_of(&r)
                    ));
                }
            }
            Expect::NoGuarantee(why) if r.is_empty() => {
                eprintln!("    (empty is allowed: {why})")
            }
            _ => {}
        }
    };

    // The dashboard's instance variable, with every instance selected (its allValue).
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(dashboards().join("grafana-fleet.json")).unwrap(),
    )
    .unwrap();
    let variable = &dashboard["templating"]["list"][1];
    assert_eq!(variable["name"], "instance");
    assert_eq!(variable["allValue"], ".*");
    let queries = panel_queries(&dashboard);
    assert!(queries.len() >= 20, "{queries:?}");
    for (title, ref_id, expr) in &queries {
        let expr = expr.replace("$instance", ".*");
        check(
            format!("panel {title:?} {ref_id}"),
            &expr,
            panel_expectation(title, ref_id),
        );
    }
    let instances = prom
        .api(
            "/api/v1/label/instance/values",
            &[("match[]", "sovereign_agent_info")],
        )
        .unwrap();
    assert_eq!(
        instances.as_array().unwrap().len(),
        running,
        "instance variable {instances}"
    );

    let rules = alert_rules(&std::fs::read_to_string(dashboards().join("alerts.yml")).unwrap());
    assert_eq!(rules.len(), 16);
    for (alert, expr) in &rules {
        check(format!("alert {alert}"), expr, alert_expectation(alert));
    }

    // Prometheus itself evaluated every rule, without error.
    prom.wait("every rule evaluated", Duration::from_secs(40), |p| {
        p.api("/api/v1/rules", &[]).is_ok_and(|d| {
            d["groups"][0]["rules"].as_array().is_some_and(|r| {
                r.len() == 16
                    && r.iter()
                        .all(|r| r["lastEvaluation"] != "0001-01-01T00:00:00Z")
            })
        })
    });
    let data = prom.api("/api/v1/rules", &[]).unwrap();
    for r in data["groups"][0]["rules"].as_array().unwrap() {
        if r["health"] != "ok" {
            failures.push(format!(
                "rule {}: {} {}",
                r["name"], r["health"], r["lastError"]
            ));
        }
    }

    // Scrape cost per node, as Prometheus saw it (docs/results/scrape-cost): samples per
    // scrape, and the page's bytes as Prometheus asks for it (OpenMetrics, gzip accepted).
    eprintln!("scrape cost (fixture, samples per scrape, bytes per scrape, scrape seconds):");
    for (addr, fixture) in &targets[..running] {
        let samples = prom
            .scalar(&format!("scrape_samples_scraped{{fixture=\"{fixture}\"}}"))
            .unwrap();
        let seconds = prom
            .scalar(&format!("scrape_duration_seconds{{fixture=\"{fixture}\"}}"))
            .unwrap();
        let bytes = page_bytes(&prom, addr);
        eprintln!("  {fixture}: {samples} samples, {bytes} bytes, {seconds:.4} s");
        // The limits operators are given leave room: at most a tenth of each is used.
        assert!(
            samples <= 200.0,
            "{fixture}: {samples} samples (sample_limit 2000)"
        );
        assert!(
            bytes <= 100_000,
            "{fixture}: {bytes} bytes (body_size_limit 1MB)"
        );
    }

    eprintln!("fleet test took {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}\nprometheus log:\n{}",
        failures.len(),
        failures.join("\n"),
        prom.log()
    );
    drop(prom);
    drop(agents);
}
