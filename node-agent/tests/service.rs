//! The agent's outputs from fixed inputs: the golden /metrics page, the HTTP endpoints
//! through the in-process router, and readiness under the profiles' rules.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::collect::rapl::RaplReader;
use node_agent::nvml_child::NvmlChild;
use node_agent::probe::NvmlMode;
use node_agent::routes::{AppState, AttestationService, Heartbeat, public_router, router};
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
}

/// `promtool check metrics` accepts the golden pages (which the golden tests hold equal to
/// what the agent serves), in the classic text format Prometheus scrapes.
#[test]
#[ignore = "needs promtool: Prometheus' own metrics-format check"]
fn golden_pages_pass_promtool_check_metrics() {
    for name in ["metrics-development.txt", "metrics-gpu.txt"] {
        let path = testdata(&format!("golden/{name}"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        promtool_check(&node_agent::exposition::to_classic_text(&text));
    }
}

fn promtool_check(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.unwrap_or_else(|e| panic!("this test needs promtool: {e}"));
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
    // Six programs loaded from the kernel cache, as an engine reports them after its start.
    s.crypto.kernel_loads = vec![node_agent::selftest_child::KernelLoadCount {
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
    use attestation::ChainVerifier;
    use attestation::collect::{Attester, GpuSource, SnpSource};
    use attestation::fleet::{self, FleetOptions, NodeStatus};
    use attestation::identity::load_or_create_unsealed_key;
    use attestation::nodes::{NodeEntry, NodeList};
    use attestation::parse_time;
    use attestation::policy::Policy;
    use attestation::test_source::TestSigner;

    let signer = TestSigner::from_seed([7; 32]).unwrap();
    let anchor = signer.authority.anchor();
    let dir = tempfile::tempdir().unwrap();
    let (node_key, _) = load_or_create_unsealed_key(&dir.path().join("node-key.pem")).unwrap();
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
    use node_agent::compose::attestation_service;
    use node_agent::settings::{AttestationSettings, EvidenceSource, GpuEvidence};
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let config = AttestationSettings {
        source: EvidenceSource::Test,
        gpu_evidence: GpuEvidence::None,
        ..AttestationSettings::default()
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
    assert!(
        std::fs::read_to_string(&key_path)
            .unwrap()
            .starts_with("# UNSEALED"),
        "the test source's key file says what it is"
    );
    assert!(
        status
            .node_key_kind
            .as_deref()
            .unwrap()
            .starts_with("UNSEALED file (created)"),
        "{status:?}"
    );
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
    let config = AttestationSettings {
        state_dir: None,
        ..config
    };
    let no_env = |_: &str| None;
    // state_dir() is tested against an unwritable system directory in config.rs; here the
    // route's wiring: a configured key path inside a file cannot be created.
    let config = AttestationSettings {
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

/// The hardware source never touches a key file: it derives the sealed key through
/// /dev/sev-guest (absent here: 503 naming it, and nothing written to the state directory),
/// and a configured key file is refused rather than used.
#[tokio::test]
async fn the_hardware_source_derives_a_sealed_key_and_writes_no_file() {
    use node_agent::compose::attestation_service;
    use node_agent::settings::{AttestationSettings, EvidenceSource, GpuEvidence};
    if std::path::Path::new("/dev/sev-guest").exists() {
        eprintln!(
            "this machine is an SEV-SNP guest: the sealed-key derivation is exercised by attestation's ignored test"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let config = AttestationSettings {
        source: EvidenceSource::Hardware,
        gpu_evidence: GpuEvidence::None,
        state_dir: Some(dir.path().to_owned()),
        ..AttestationSettings::default()
    };
    let no_env = |_: &str| None;
    let (_, status) = attestation_service(
        &config,
        &snap.node.facts,
        &no_env,
        false,
        &NvmlMode::absent("test"),
        ([0; 32], [0; 32]),
    );
    assert_eq!(status.node_key, None, "{status:?}");
    if !std::path::Path::new("/dev/sev-guest").exists() {
        assert!(!status.available);
        let reason = status.reason.as_deref().unwrap();
        assert!(reason.contains("/dev/sev-guest"), "{reason}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let config = AttestationSettings {
        node_key: Some(dir.path().join("planted.pem")),
        ..config
    };
    let (_, status) = attestation_service(
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
            .contains("remove node_key"),
        "{status:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// GPU evidence comes from an NVML child process (never NVML in the daemon): what the child
/// answers reaches /v1/attestation, and a child that fails is a 503 naming the GPU evidence.
#[tokio::test]
async fn gpu_evidence_is_collected_by_the_nvml_child() {
    use node_agent::compose::attestation_service;
    use node_agent::settings::{AttestationSettings, EvidenceSource, GpuEvidence};
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let config = AttestationSettings {
        source: EvidenceSource::Test,
        gpu_evidence: GpuEvidence::Nvml,
        state_dir: Some(dir.path().to_owned()),
        ..AttestationSettings::default()
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
    // The caller learns what failed, not the driver's words (those are logged).
    assert!(
        body.contains("GPU evidence could not be collected"),
        "{body}"
    );
    assert!(!body.contains("NVML is not available"), "{body}");
    let request = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        request,
        format!(r#"{{"request":"evidence","nonce":"{nonce}"}}"#)
    );
}

async fn get_from(app: axum::Router, path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    let resp = app
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

/// The public listener serves what the subnet needs and nothing that names local state.
#[tokio::test]
async fn the_public_routes_leave_out_the_operator_views() {
    let st = state(
        fixed_snapshot("ci-2core", "auto", None),
        Duration::from_secs(60),
        true,
    );
    for path in ["/metrics", "/healthz", "/readyz"] {
        let (code, _, body) = get_from(public_router(st.clone()), path).await;
        assert!(code.is_success(), "{path}: {code} {body}");
    }
    let (code, _, _) = get_from(public_router(st.clone()), "/v1/attestation").await;
    assert_eq!(
        code,
        StatusCode::BAD_REQUEST,
        "the route is there, the nonce is not"
    );
    for path in ["/", "/v1/status"] {
        let (code, _, _) = get_from(public_router(st.clone()), path).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}");
        let (code, _, _) = get_from(router(st.clone()), path).await;
        assert_eq!(code, StatusCode::OK, "{path} on the operator routes");
    }
}

/// Without /dev/sev-guest and without the test source, /v1/status says attestation is not
/// available, as /v1/attestation answers.
#[tokio::test]
async fn status_does_not_promise_hardware_evidence_without_a_guest_device() {
    use node_agent::compose::attestation_service;
    use node_agent::settings::{AttestationSettings, EvidenceSource};
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    assert!(!snap.node.facts.sev_snp.guest_device);
    let config = AttestationSettings {
        source: EvidenceSource::Hardware,
        state_dir: Some(dir.path().to_owned()),
        ..AttestationSettings::default()
    };
    let (service, status) = attestation_service(
        &config,
        &snap.node.facts,
        &|_| None,
        false,
        &NvmlMode::absent("test"),
        ([0; 32], [0; 32]),
    );
    assert!(!status.available, "{status:?}");
    assert!(status.reason.as_deref().unwrap().contains("/dev/sev-guest"));
    let st = state(snap, Duration::from_secs(60), true)
        .with_attestation(service)
        .with_attestation_status(status);
    let (_, _, body) = get(&st, "/v1/status").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["attestation"]["available"], false);
    let nonce = "44".repeat(32);
    let (code, _, body) = get(&st, &format!("/v1/attestation?nonce={nonce}")).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("no SEV-SNP guest device"), "{body}");
    assert!(!body.contains("/dev/"), "no local paths to callers: {body}");
}

/// A collection past its deadline (here an NVML child that hangs) is answered 503 with
/// `Retry-After`, the child is killed at the deadline, and while it holds the only slot
/// further requests get 503 at once; the rate limit answers 429.
#[tokio::test]
async fn attestation_is_bounded_by_slots_a_deadline_and_a_rate() {
    use node_agent::compose::attestation_service;
    use node_agent::listeners::HttpLimits;
    use node_agent::settings::{AttestationSettings, EvidenceSource, GpuEvidence};
    let dir = tempfile::tempdir().unwrap();
    let snap = fixed_snapshot("ci-2core", "auto", None);
    let limits = HttpLimits {
        attestation_concurrency: 1,
        attestation_timeout_seconds: 1.0,
        attestation_per_second: 0.01,
        attestation_burst: 2,
        ..HttpLimits::default()
    };
    let config = AttestationSettings {
        source: EvidenceSource::Test,
        gpu_evidence: GpuEvidence::Nvml,
        state_dir: Some(dir.path().to_owned()),
        ..AttestationSettings::default()
    };
    let pid_file = dir.path().join("child.pid");
    let child = NvmlChild::command(
        "sh",
        &[
            "-c",
            &format!("echo $$ > {}; exec sleep 30", pid_file.display()),
        ],
    )
    .with_evidence_timeout(limits.attestation_timeout());
    let (service, status) = attestation_service(
        &config,
        &snap.node.facts,
        &|_| None,
        false,
        &NvmlMode::Child(child),
        ([0; 32], [0; 32]),
    );
    assert!(status.available, "{status:?}");
    let st = state(snap, Duration::from_secs(60), true)
        .with_limits(&limits)
        .with_attestation(service)
        .with_attestation_status(status);
    let app = router(st);
    let nonce = "55".repeat(32);
    let path = format!("/v1/attestation?nonce={nonce}");
    let started = std::time::Instant::now();
    let first = tokio::spawn({
        let (app, path) = (app.clone(), path.clone());
        async move { get_from(app, &path).await }
    });
    // While the first holds the only slot: 503 at once, with Retry-After.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, headers, body) = get_from(app.clone(), &path).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(headers["retry-after"], "1");
    let (code, headers, body) = first.await.unwrap();
    let took = started.elapsed();
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(headers.contains_key("retry-after"), "{headers:?}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // The hung child was killed at its deadline (it would sleep 30 s).
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the NVML child {pid} is still running"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The burst of 2 is spent (one by the first request, one now); the third is 429.
    let _ = get_from(app.clone(), &path).await;
    // (Its slot is free once its child is killed, a moment after the answer.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, headers, _) = get_from(app.clone(), &path).await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait >= 1, "{wait}");
}
