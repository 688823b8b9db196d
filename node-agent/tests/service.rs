//! The agent's outputs from fixed inputs: the golden /metrics page, the HTTP endpoints
//! through the in-process router, and readiness under the profiles' rules.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use node_agent::collect::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::collect::rapl::RaplReader;
use node_agent::http::{AppState, AttestationService, Heartbeat, router};
use node_agent::nvml_child::NvmlChild;
use node_agent::probe::NvmlMode;
use node_agent::snapshot::Snapshot;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

/// Two collection cycles 15 s apart over fixed inputs; returns the second snapshot.
/// `gpu`: recorded NVML samples (testdata path) or none. Runs on a thread of its own:
/// the collectors own a tokio runtime, which must not be dropped inside an async test.
fn fixed_snapshot(fixture: &str, profile: &str, gpu: Option<&str>) -> Snapshot {
    let (fixture, profile, gpu) = (
        fixture.to_string(),
        profile.to_string(),
        gpu.map(str::to_string),
    );
    std::thread::spawn(move || collect_fixed(&fixture, &profile, gpu.as_deref()))
        .join()
        .unwrap()
}

fn collect_fixed(fixture: &str, profile: &str, gpu: Option<&str>) -> Snapshot {
    let clock = Arc::new(ManualClock::new(T0));
    let mut c = fixed_collectors(node(fixture, profile), clock.clone());
    let sys = tempfile::tempdir().unwrap();
    write_rapl(sys.path(), 1_000_000_000);
    c.rapl = Some(RaplReader::new(sys.path()));
    if let Some(path) = gpu {
        c.gpu = Some(Box::new(
            RecordedGpuSource::from_json(&read_testdata(path)).unwrap(),
        ));
    } else {
        c.disable("gpu", "no NVML in the fixture");
    }
    c.pinning_disabled_reason = Some("the profile gives no pool a CPU set".into());
    c.disable("pinning", "the profile gives no pool a CPU set");
    let _first = c.collect();
    clock.advance(15.0);
    // 1 500 J of package energy in 15 s: 100 W.
    write_rapl(sys.path(), 2_500_000_000);
    c.collect()
}

fn check_golden(name: &str, text: &str) {
    let path = testdata(&format!("golden/{name}"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    if text != want {
        let diff: Vec<String> = text
            .lines()
            .zip(want.lines())
            .filter(|(a, b)| a != b)
            .take(10)
            .map(|(a, b)| format!("got:  {a}\nwant: {b}"))
            .collect();
        panic!(
            "{name} differs from the golden file ({} vs {} lines):\n{}",
            text.lines().count(),
            want.lines().count(),
            diff.join("\n")
        );
    }
    promtool_check(&node_agent::exposition::to_classic_text(text));
}

/// `promtool check metrics` on the page, where promtool is installed (CI: required).
fn promtool_check(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("SOVEREIGN_REQUIRE_PROMTOOL").is_none(),
                "promtool required (SOVEREIGN_REQUIRE_PROMTOOL) but not runnable: {e}"
            );
            eprintln!("SKIP promtool check: promtool not runnable ({e})");
            return;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && report.trim().is_empty(),
        "promtool: {report}"
    );
}

#[test]
fn golden_metrics_development_node() {
    let s = fixed_snapshot("ci-2core", "auto", None);
    assert_eq!(s.node.profile, "development");
    let text = node_agent::exposition::encode(&Arc::new(s));
    // What the page must say, independent of the golden file.
    assert!(text.contains(
        "sovereign_profile_info{profile=\"development\",selection=\"development_default\"} 1"
    ));
    assert!(text.contains("sovereign_replica_finalized_height 481236"));
    assert!(text.contains("sovereign_replica_certification_lag_blocks 1"));
    assert!(text.contains("sovereign_cpu_package_power_watts 100.0"));
    assert!(text.ends_with("# EOF\n"));
    check_golden("metrics-development.txt", &text);
}

#[test]
fn golden_metrics_gpu_node() {
    let path = "gpu/h200-nvml-samples.json";
    if !testdata(path).exists() {
        panic!("missing recorded NVML samples {path}");
    }
    let mut s = fixed_snapshot("epyc-9354p-snp-guest", "auto", Some(path));
    assert!(!s.gpus.is_empty());
    // As the H200's engine loaded its programs from the cache in testdata/gpu/h200-check-session4.txt
    // (six then; the small-batch decompression and hash programs came later).
    s.crypto.kernel_loads = vec![node_agent::crypto::KernelLoadCount {
        outcome: "cache".into(),
        reason: String::new(),
        count: 6,
    }];
    let text = node_agent::exposition::encode(&Arc::new(s));
    assert!(text.contains("sovereign_gpu_power_watts{gpu=\"0\"}"));
    assert!(text.contains("sovereign_crypto_kernel_loads_total{outcome=\"cache\",reason=\"\"} 6"));
    assert!(text.contains("sovereign_gpu_energy_joules_total{gpu=\"0\"}"));
    check_golden("metrics-gpu.txt", &text);
}

fn state(s: Snapshot, stale_after: Duration, beat: bool) -> AppState {
    let hb = Arc::new(Heartbeat::new(stale_after));
    let st = AppState::new(s, hb.clone());
    if beat {
        hb.beat();
    }
    st
}

async fn get(state: &AppState, path: &str) -> (StatusCode, String, String) {
    get_accept(state, path, "*/*").await
}

async fn get_accept(state: &AppState, path: &str, accept: &str) -> (StatusCode, String, String) {
    let resp = router(state.clone())
        .oneshot(
            Request::get(path)
                .header("accept", accept)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = resp.status();
    let ctype = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ctype, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn endpoints_of_a_ready_development_node() {
    let s = fixed_snapshot("ci-2core", "auto", None);
    let expected_metrics = node_agent::exposition::encode(&Arc::new(s.clone()));
    let st = state(s, Duration::from_secs(60), true);

    // What Prometheus sends: OpenMetrics preferred.
    let prometheus_accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (code, ctype, body) = get_accept(&st, "/metrics", prometheus_accept).await;
    assert_eq!(code, StatusCode::OK);
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert_eq!(body, expected_metrics);
    // Anyone else (curl, promtool): the classic text format.
    let (code, ctype, body) = get(&st, "/metrics").await;
    assert_eq!(code, StatusCode::OK);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    assert_eq!(
        body,
        node_agent::exposition::to_classic_text(&expected_metrics)
    );
    assert!(body.contains("# TYPE sovereign_crypto_calls_total counter\n"));
    assert!(!body.contains("# EOF"));

    let (code, _, body) = get(&st, "/healthz").await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, "ok\n"));

    let (code, _, body) = get(&st, "/readyz").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body, "ready: profile development\n");

    let (code, ctype, body) = get(&st, "/v1/status").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(ctype, "application/json");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["node"]["profile"], "development");
    assert_eq!(v["ready"], true);
    assert_eq!(v["healthy"], true);
    assert_eq!(v["replica"]["health"]["certified_height"], 481235.0);
    assert_eq!(v["crypto"]["selftest"]["passed"], true);
    assert!(
        v["node"]["explanation"][0]
            .as_str()
            .unwrap()
            .contains("development")
    );
    assert_eq!(v["disabled_collectors"][0]["name"], "gpu");

    let (code, ctype, body) = get(&st, "/").await;
    assert_eq!(code, StatusCode::OK);
    assert!(ctype.starts_with("text/html"));
    assert!(body.contains("id=\"profile-name\""));
    assert!(
        !body.contains("http://") && !body.contains("https://"),
        "dashboard must be self-contained"
    );

    let (code, _, _) = get(&st, "/nope").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn healthz_fails_when_collectors_are_stale() {
    let s = fixed_snapshot("ci-2core", "auto", None);
    let st = state(s, Duration::from_millis(20), true);
    let (code, _, _) = get(&st, "/healthz").await;
    assert_eq!(code, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(60)).await;
    let (code, _, body) = get(&st, "/healthz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.starts_with("collectors stale"), "{body}");
    let (_, _, body) = get(&st, "/v1/status").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["healthy"], false);
}

#[tokio::test]
async fn readyz_fails_when_a_required_capability_is_missing() {
    // The production profile forced onto the 2-core CI machine: no SEV-SNP, no GPU.
    let s = fixed_snapshot("ci-2core", "sovereign-node!", None);
    assert_eq!(s.node.selection, "forced_pin");
    assert!(!s.node.ready);
    let failed: Vec<&str> = s
        .node
        .readiness
        .iter()
        .filter(|c| !c.satisfied)
        .map(|c| c.requirement.as_str())
        .collect();
    assert!(!failed.is_empty());
    let metrics = node_agent::exposition::encode(&Arc::new(s.clone()));
    assert!(metrics.contains("sovereign_node_ready 0"));
    let st = state(s.clone(), Duration::from_secs(60), true);
    let (code, _, body) = get(&st, "/readyz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body.starts_with("not ready: profile sovereign-node\n"),
        "{body}"
    );
    for reason in s.node.reasons() {
        assert!(body.contains(&reason), "{body} lacks {reason}");
    }
    let (_, _, body) = get(&st, "/v1/status").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ready"], false);
    assert!(!v["not_ready_reasons"].as_array().unwrap().is_empty());
    assert!(!v["node"]["mismatches"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn readyz_fails_when_the_selftest_failed() {
    let mut s = fixed_snapshot("ci-2core", "auto", None);
    s.crypto.selftest.passed = false;
    let st = state(s, Duration::from_secs(60), true);
    let (code, _, body) = get(&st, "/readyz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("crypto selftest failed"), "{body}");
}

/// The agent's own router on loopback serves evidence that the governing body's fleet
/// verifier admits only under a policy that trusts the test root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attestation_route_serves_evidence_the_fleet_verifier_checks() {
    use attestation::collect::{Attester, GpuSource, SnpSource, load_or_create_node_key};
    use attestation::fleet::{self, FleetOptions, NodeEntry, NodeList, NodeStatus};
    use attestation::policy::Policy;
    use attestation::snp::amd::{ChainVerifier, parse_time};
    use attestation::test_source::TestSigner;

    let signer = TestSigner::from_seed([7; 32]).unwrap();
    let anchor = signer.authority.anchor();
    let dir = tempfile::tempdir().unwrap();
    let node_key = load_or_create_node_key(&dir.path().join("node-key.pem")).unwrap();
    let st = state(
        fixed_snapshot("ci-2core", "auto", None),
        Duration::from_secs(60),
        true,
    )
    .with_attestation(AttestationService::Ready(Arc::new(Attester {
        node_key,
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    })));

    assert_eq!(get(&st, "/v1/attestation").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(
        get(&st, "/v1/attestation?nonce=00ff").await.0,
        StatusCode::BAD_REQUEST
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = router(st);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let nodes = NodeList {
        node: vec![NodeEntry {
            name: "agent".into(),
            url,
            chip_id: None,
            node_public_key: None,
            config_digest: None,
        }],
    };
    let verify = |policy: Policy| {
        let policy = Arc::new(policy);
        let chains = Arc::new(ChainVerifier::new(policy.trust_store()));
        let opts = FleetOptions {
            concurrency: 1,
            timeout: Duration::from_secs(30),
            now: parse_time("2026-11-29T00:00:00Z").unwrap(),
        };
        fleet::run(&nodes, policy, chains, opts)
    };
    let mut trusting = Policy::default_policy();
    trusting.test_root = Some(anchor);
    let admitted = verify(trusting).await;
    assert_eq!(
        admitted[0].status,
        NodeStatus::Admitted,
        "{}",
        fleet::table(&admitted)
    );
    let rejected = verify(Policy::default_policy()).await;
    assert_eq!(
        rejected[0].status,
        NodeStatus::Rejected,
        "{}",
        fleet::table(&rejected)
    );
}

#[tokio::test]
async fn attestation_route_without_a_source_is_503_with_the_reason() {
    let st = state(
        fixed_snapshot("ci-2core", "auto", None),
        Duration::from_secs(60),
        true,
    )
    .with_attestation(AttestationService::Unavailable(
        "disabled in the configuration".into(),
    ));
    let nonce = "11".repeat(32);
    let (status, _, body) = get(&st, &format!("/v1/attestation?nonce={nonce}")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("disabled in the configuration"), "{body}");
}

/// The node key's directory is chosen explicitly (here: systemd's StateDirectory=) and
/// /v1/status says which one and why; the route then serves evidence signed by that key.
#[tokio::test]
async fn status_reports_the_attestation_state_directory_and_why() {
    use node_agent::config::{AttestationConfig, EvidenceSource, GpuEvidence};
    use node_agent::service::attestation_service;
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let config = AttestationConfig {
        source: EvidenceSource::Test,
        gpu_evidence: GpuEvidence::None,
        ..AttestationConfig::default()
    };
    let sd = dir.path().to_owned();
    let env = move |name: &str| (name == "STATE_DIRECTORY").then(|| sd.clone().into_os_string());
    let (service, status) = attestation_service(
        &config,
        &snap.node.facts,
        &env,
        false,
        &NvmlMode::absent("test"),
        ([0; 32], [0; 32]),
    );
    assert!(status.available, "{status:?}");
    let key_path = dir.path().join("node-key.pem");
    assert_eq!(status.node_key, Some(key_path.display().to_string()));
    assert!(key_path.exists());
    assert!(dir.path().join("test-evidence-seed").exists());

    let st = state(snap.clone(), Duration::from_secs(60), true)
        .with_attestation(service)
        .with_attestation_status(status);
    let (code, _, body) = get(&st, "/v1/status").await;
    assert_eq!(code, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let a = &v["attestation"];
    assert_eq!(a["source"], "test");
    assert_eq!(a["available"], true);
    assert_eq!(a["state_dir"], dir.path().display().to_string());
    assert!(
        a["state_dir_origin"]
            .as_str()
            .unwrap()
            .contains("StateDirectory"),
        "{a}"
    );
    assert_eq!(a["node_public_key"].as_str().unwrap().len(), 64, "{a}");
    let nonce = "22".repeat(32);
    let (code, _, body) = get(&st, &format!("/v1/attestation?nonce={nonce}")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let bundle = attestation::bundle::Bundle::from_json(body.as_bytes()).unwrap();
    assert_eq!(
        Some(bundle.node_public_key.clone()),
        a["node_public_key"].as_str().map(String::from)
    );

    // A production profile without any writable state directory: 503 with what was tried,
    // and /v1/status says so.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let config = AttestationConfig {
        state_dir: None,
        ..config
    };
    let no_env = |_: &str| None;
    // state_dir() is tested against an unwritable system directory in config.rs; here the
    // route's wiring: a configured key path inside a file cannot be created.
    let config = AttestationConfig {
        node_key: Some(blocked.join("node-key.pem")),
        test_seed: Some(dir.path().join("test-evidence-seed")),
        ..config
    };
    let (service, status) = attestation_service(
        &config,
        &snap.node.facts,
        &no_env,
        false,
        &NvmlMode::absent("test"),
        ([0; 32], [0; 32]),
    );
    assert!(!status.available);
    assert!(
        status
            .reason
            .as_deref()
            .unwrap()
            .contains("node identity key"),
        "{status:?}"
    );
    let st = state(snap, Duration::from_secs(60), true)
        .with_attestation(service)
        .with_attestation_status(status);
    let (code, _, body) = get(&st, &format!("/v1/attestation?nonce={nonce}")).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("node identity key"), "{body}");
    let (_, _, body) = get(&st, "/v1/status").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["attestation"]["available"], false);
}

/// GPU evidence comes from an NVML child process (never NVML in the daemon): what the child
/// answers reaches /v1/attestation, and a child that fails is a 503 naming the GPU evidence.
#[tokio::test]
async fn gpu_evidence_is_collected_by_the_nvml_child() {
    use node_agent::config::{AttestationConfig, EvidenceSource, GpuEvidence};
    use node_agent::service::attestation_service;
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let config = AttestationConfig {
        source: EvidenceSource::Test,
        gpu_evidence: GpuEvidence::Nvml,
        state_dir: Some(dir.path().to_owned()),
        ..AttestationConfig::default()
    };
    let seen = dir.path().join("request.json");
    let child = NvmlChild::command(
        "sh",
        &[
            "-c",
            &format!(
                "cat > {}; printf '%s' '{{\"answer\":\"failed\",\"reason\":\"NVML is not available (no NVIDIA driver)\"}}'",
                seen.display()
            ),
        ],
    );
    let no_env = |_: &str| None;
    let (service, status) = attestation_service(
        &config,
        &snap.node.facts,
        &no_env,
        false,
        &NvmlMode::Child(child),
        ([0; 32], [0; 32]),
    );
    assert!(status.available && status.gpu_evidence, "{status:?}");
    let st = state(snap, Duration::from_secs(60), true)
        .with_attestation(service)
        .with_attestation_status(status);
    let nonce = "33".repeat(32);
    let (code, _, body) = get(&st, &format!("/v1/attestation?nonce={nonce}")).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("GPU evidence: NVML is not available (no NVIDIA driver)"),
        "{body}"
    );
    let request = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        request,
        format!(r#"{{"request":"evidence","nonce":"{nonce}"}}"#)
    );
}
