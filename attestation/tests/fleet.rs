//! `attest fleet` against local HTTP servers on loopback serving test-source evidence.

use std::sync::Arc;
use std::time::Duration;

use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::fleet::{self, FleetOptions, NodeStatus};
use attestation::nodes::{NodeEntry, NodeList};
use attestation::policy::Policy;
use attestation::snp::amd::{ChainVerifier, parse_time};
use attestation::test_source::TestSigner;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;

#[derive(serde::Deserialize)]
struct NonceQuery {
    nonce: String,
}

async fn attestation(
    State(a): State<Arc<Attester>>,
    Query(q): Query<NonceQuery>,
) -> Result<Vec<u8>, (StatusCode, String)> {
    let nonce = attestation::bundle::parse_nonce(&q.nonce)
        .ok_or((StatusCode::BAD_REQUEST, "bad nonce".into()))?;
    let bundle = a
        .attest(&nonce)
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    serde_json::to_vec(&bundle).map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_reports_every_node_and_survives_dead_ones() {
    let signer = TestSigner::from_seed([1; 32]).unwrap();
    let anchor = signer.authority.anchor();
    let chip_id = hex::encode(signer.chip_id);
    let attester = Arc::new(Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[2; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    });
    let node_key = hex::encode(attester.node_key.verifying_key().to_bytes());
    let good = serve(
        axum::Router::new()
            .route("/v1/attestation", get(attestation))
            .with_state(attester.clone()),
    )
    .await;
    let garbage =
        serve(axum::Router::new().route("/v1/attestation", get(|| async { "not json" }))).await;
    let slow = serve(axum::Router::new().route(
        "/v1/attestation",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }),
    ))
    .await;
    // A port with nothing listening: bind, note, drop.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let entry = |name: &str, url: &str, chip: Option<&str>, key: Option<&str>| NodeEntry {
        name: name.into(),
        url: url.into(),
        chip_id: chip.map(Into::into),
        node_public_key: key.map(Into::into),
        config_digest: None,
    };
    let nodes = NodeList {
        node: vec![
            entry("good-1", &good, Some(&chip_id), Some(&node_key)),
            entry("good-2", &good, None, None),
            entry("wrong-chip", &good, Some(&"00".repeat(64)), None),
            entry("garbage", &garbage, None, None),
            entry("slow", &slow, None, None),
            entry("dead", &dead, None, None),
        ],
    };
    let mut policy = Policy::default_policy();
    policy.test_root = Some(anchor);
    let policy = Arc::new(policy);
    let chains = Arc::new(ChainVerifier::new(policy.trust_store()));
    let opts = FleetOptions {
        concurrency: 4,
        timeout: Duration::from_millis(1500),
        now: parse_time("2026-11-29T00:00:00Z").unwrap(),
    };
    let results = fleet::run(&nodes, policy, chains, opts).await;
    let status: Vec<(&str, NodeStatus)> = results
        .iter()
        .map(|r| (r.name.as_str(), r.status))
        .collect();
    assert_eq!(
        status,
        vec![
            ("good-1", NodeStatus::Admitted),
            ("good-2", NodeStatus::Admitted),
            ("wrong-chip", NodeStatus::Rejected),
            ("garbage", NodeStatus::BadEvidence),
            ("slow", NodeStatus::Unreachable),
            ("dead", NodeStatus::Unreachable),
        ],
        "{}",
        fleet::table(&results)
    );
    assert!(
        results[2].reason.contains("identity.node_chip_id"),
        "{}",
        results[2].reason
    );
    assert!(
        results[4].reason.contains("no answer within"),
        "{}",
        results[4].reason
    );
    let table = fleet::table(&results);
    assert!(table.contains("2/6 nodes admitted"), "{table}");
    // The JSON form serializes.
    assert!(
        serde_json::to_string(&results)
            .unwrap()
            .contains("\"status\":\"unreachable\"")
    );
}

#[test]
fn node_list_rejects_bad_entries() {
    assert!(
        NodeList::parse(
            "[[node]]\nname = \"a\"\nurl = \"http://x\"\nchip_id = \"zz\"\n",
            "t"
        )
        .is_err()
    );
    assert!(
        NodeList::parse(
            "[[node]]\nname = \"a\"\nurl = \"http://x\"\nnode_public_key = \"00\"\n",
            "t"
        )
        .is_err()
    );
    assert!(NodeList::parse("[[node]]\nname = \"a\"\n", "t").is_err());
    assert_eq!(
        NodeList::parse("[[node]]\nname = \"a\"\nurl = \"http://x\"\n", "t")
            .unwrap()
            .node
            .len(),
        1
    );
}
