//! Scrape latency: a /metrics request through the agent's router with every collector's
//! data present (GPU samples, replica health, RAPL, pinning pools, crypto stats).
//! Target: p99 < 5 ms. Besides criterion's estimate, prints p50/p99/max of 5 000
//! individually timed requests.

#[path = "../tests/common/mod.rs"]
mod common;

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt;
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::collect::rapl::RaplReader;
use node_agent::routes::{AppState, Heartbeat, router};
use node_agent::snapshot::{PinningStatus, PoolPinning};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

fn full_state() -> AppState {
    let clock = Arc::new(ManualClock::new(common::T0));
    let mut c =
        common::fixed_collectors(common::node("epyc-9354p-snp-guest", "auto"), clock.clone());
    let sys = tempfile::tempdir().unwrap();
    common::write_rapl(sys.path(), 1_000_000_000);
    c.rapl = Some(RaplReader::new(sys.path()));
    let gpu = common::testdata("gpu/h200-nvml-samples.json");
    if let Ok(text) = std::fs::read_to_string(&gpu) {
        c.gpu = Some(Box::new(RecordedGpuSource::from_json(&text).unwrap()));
    }
    c.collect();
    clock.advance(15.0);
    common::write_rapl(sys.path(), 2_500_000_000);
    let mut s = c.collect();
    // Pinning as on a production node: six pools.
    s.pinning = PinningStatus {
        enabled: true,
        replica_pid: Some(4242),
        slice_allowed_cpus: Some("2-31".into()),
        pools: [
            "consensus",
            "execution",
            "query",
            "idkg",
            "checkpoint",
            "p2p_http",
        ]
        .iter()
        .enumerate()
        .map(|(i, p)| PoolPinning {
            pool: p.to_string(),
            cpus: format!("{}-{}", 2 + 5 * i, 6 + 5 * i),
            threads: 4,
            drifted_threads: 0,
        })
        .collect(),
        ..PinningStatus::default()
    };
    let hb = Arc::new(Heartbeat::new(Duration::from_secs(3600)));
    let st = AppState::new(s, hb.clone());
    hb.beat();
    st
}

async fn scrape(state: &AppState) -> usize {
    let resp = router(state.clone())
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    resp.into_body().collect().await.unwrap().to_bytes().len()
}

fn bench(c: &mut Criterion) {
    let state = full_state();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bytes = rt.block_on(scrape(&state));
    c.bench_function("metrics_request_all_collectors", |b| {
        b.iter(|| rt.block_on(scrape(&state)))
    });
    c.bench_function("status_request", |b| {
        b.iter(|| {
            rt.block_on(async {
                router(state.clone())
                    .oneshot(Request::get("/v1/status").body(Body::empty()).unwrap())
                    .await
                    .unwrap()
                    .into_body()
                    .collect()
                    .await
                    .unwrap()
            })
        })
    });

    let mut samples: Vec<Duration> = (0..5_000)
        .map(|_| {
            let t = Instant::now();
            rt.block_on(scrape(&state));
            t.elapsed()
        })
        .collect();
    samples.sort();
    let q = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    println!(
        "metrics request ({bytes} bytes): p50 {:?}, p99 {:?}, max {:?} over {} requests (target p99 < 5 ms)",
        q(0.50),
        q(0.99),
        samples[samples.len() - 1],
        samples.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
