//! Replica health over real HTTP: a local server serves the recorded replica pages (and
//! the failure cases), the agent's scraper reads and parses them.

mod common;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use common::read_testdata;
use node_agent::collect::replica::{
    ReplicaScrapeError, ReplicaScraper, not_the_replica, parse_page,
};
use std::time::Duration;

async fn serve() -> std::net::SocketAddr {
    let t0 = read_testdata("replica/metrics-t0.txt");
    let prometheus = read_testdata("replica/prometheus-self.txt");
    let app = Router::new()
        .route("/metrics", get(move || async move { t0 }))
        .route("/prometheus", get(move || async move { prometheus }))
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no") }))
        .route("/other", get(|| async { "# TYPE foo gauge\nfoo 1\n" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn scraper(addr: std::net::SocketAddr, path: &str) -> ReplicaScraper {
    ReplicaScraper::new(&format!("http://{addr}{path}"), Duration::from_millis(500)).unwrap()
}

#[tokio::test]
async fn scrapes_the_recorded_replica_page() {
    let addr = serve().await;
    let h = scraper(addr, "/metrics").scrape().await.unwrap();
    // artifact_pool_consensus_height_stat{pool_type="validated",stat="max",type="finalization"}
    assert_eq!(h.finalized_height, Some(481220.0));
    assert_eq!(h.certified_height, Some(481218.0));
    assert_eq!(h.batch_height, Some(481220.0));
    assert_eq!(h.certification_lag_blocks(), Some(2.0));
    let ops: Vec<&str> = h.checkpoint_ops.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(ops, ["compute_manifest", "create"]);
    assert_eq!(h.checkpoint_ops[1].count, 12.0);
    assert!(
        (h.checkpoint_ops[1].sum_seconds - 8.7561).abs() < 1e-9,
        "{:?}",
        h.checkpoint_ops
    );
    // Only the ni_dkg domain, full scope, successful calls.
    let methods: Vec<&str> = h.ni_dkg_ops.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(
        methods,
        [
            "create_dealing",
            "create_transcript",
            "load_transcript",
            "verify_dealing"
        ]
    );
    assert_eq!(h.ni_dkg_ops[3].count, 52.0);
}

#[tokio::test]
async fn scrape_failures_say_why() {
    let addr = serve().await;
    match scraper(addr, "/missing").scrape().await {
        Err(ReplicaScrapeError::Status { status: 404, .. }) => {}
        other => panic!("{other:?}"),
    }
    match scraper(addr, "/other").scrape().await {
        Err(ReplicaScrapeError::NoReplicaMetrics { .. }) => {}
        other => panic!("{other:?}"),
    }
    match scraper(addr, "/slow").scrape().await {
        Err(ReplicaScrapeError::Timeout { .. }) => {}
        other => panic!("{other:?}"),
    }
    // Nothing listens on port 1.
    match ReplicaScraper::new("http://127.0.0.1:1/metrics", Duration::from_secs(2))
        .unwrap()
        .scrape()
        .await
    {
        Err(ReplicaScrapeError::Http { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ReplicaScraper::new("https://[::1]:9090/metrics", Duration::from_secs(1)),
        Err(ReplicaScrapeError::Url { .. })
    ));
    assert!(matches!(
        ReplicaScraper::new("not a url", Duration::from_secs(1)),
        Err(ReplicaScrapeError::Url { .. })
    ));
}

#[test]
fn parses_the_second_page_and_ignores_garbage() {
    let h = parse_page(&read_testdata("replica/metrics-t1.txt")).unwrap();
    assert_eq!(h.finalized_height, Some(481236.0));
    assert_eq!(h.certification_lag_blocks(), Some(1.0));
    let empty = parse_page("this is not prometheus\n\n").unwrap();
    assert_eq!(empty.finalized_height, None);
    assert_eq!(empty.certification_lag_blocks(), None);
}

/// A Prometheus server's own /metrics (what answers on port 9090 where Prometheus
/// runs) parses, but is not the replica's: the scrape fails and says what the page is.
#[tokio::test]
async fn a_prometheus_servers_own_page_is_not_the_replica() {
    let addr = serve().await;
    let err = scraper(addr, "/prometheus").scrape().await.unwrap_err();
    match &err {
        ReplicaScrapeError::NoReplicaMetrics { found, .. } => {
            assert!(
                found.contains("a Prometheus server's own metrics"),
                "{found}"
            );
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.starts_with("not the replica's metrics: "),
        "{message}"
    );
    assert!(message.contains("/prometheus"), "{message}");
    // The page itself parses: it only lacks every replica family.
    let h = parse_page(&read_testdata("replica/prometheus-self.txt")).unwrap();
    assert_eq!(h.finalized_height, None);
}

#[test]
fn the_replicas_pages_are_the_replicas() {
    for page in ["replica/metrics-t0.txt", "replica/metrics-t1.txt"] {
        assert_eq!(not_the_replica(&read_testdata(page)), None, "{page}");
    }
    // The version gauge alone (a replica that has not finalized anything yet) is enough.
    let fresh = "# TYPE ic_replica_info gauge\n\
                 ic_replica_info{ic_active_version=\"0\",ic_replica_binary_hash=\"na\"} 1\n";
    assert_eq!(not_the_replica(fresh), None);
    assert_eq!(
        not_the_replica("# TYPE foo gauge\nfoo 1\n").as_deref(),
        Some(
            "1 series names (first: foo), none of ic_replica_info, \
             artifact_pool_consensus_height_stat, state_manager_latest_certified_height, \
             consensus_batch_height"
        )
    );
}

/// In a collection cycle: the replica's page makes the replica up; a Prometheus server's
/// page on the replica's address makes it down, and the replica collector's error says why.
#[test]
fn the_collector_calls_only_the_replicas_page_up() {
    use node_agent::clock::ManualClock;
    use node_agent::collect::ReplicaSource;
    use std::sync::Arc;
    let clock = Arc::new(ManualClock::new(common::T0));
    let mut c = common::fixed_collectors(common::node("ci-2core", "auto"), clock.clone());
    c.replica = Some(ReplicaSource::Recorded {
        pages: vec![
            read_testdata("replica/metrics-t0.txt"),
            read_testdata("replica/prometheus-self.txt"),
        ],
        next: 0,
    });
    let first = c.collect();
    assert!(first.replica.up, "{:?}", first.replica);
    assert_eq!(
        first.replica.health.unwrap().finalized_height,
        Some(481220.0)
    );
    clock.advance(15.0);
    let second = c.collect();
    assert!(!second.replica.up);
    assert_eq!(second.replica.health, None);
    let run = second
        .collectors
        .iter()
        .find(|x| x.name == "replica")
        .unwrap();
    assert!(!run.up);
    let error = run.error.as_deref().unwrap();
    assert!(
        error.starts_with(
            "not the replica's metrics: http://[::1]:9090/metrics serves a Prometheus server's own metrics"
        ),
        "{error}"
    );
}

/// The default address is where the IC replica serves its metrics; what answers there is
/// still checked to be the replica (a Prometheus server on the same port is not).
#[tokio::test]
async fn the_default_address_is_the_replicas_and_is_checked() {
    let default = node_agent::settings::ReplicaSettings::default().metrics_url;
    assert_eq!(default, "http://[::1]:9090/metrics");
    assert!(ReplicaScraper::new(&default, Duration::from_secs(1)).is_ok());
    let page = read_testdata("replica/prometheus-self.txt");
    assert!(
        not_the_replica(&page).is_some_and(|w| w.contains("a Prometheus server's own metrics")),
        "a Prometheus self-scrape is not the replica"
    );
}
