//! The history ring behind `/v1/history`: what it records, how long it reaches, and that its
//! memory is fixed by its capacity (exact accounting, and the process's RSS growing by that).

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use gpu_crypto::Operation;
use gpu_crypto_api::stats::{Executed, ReasonCount};
use http_body_util::BodyExt;
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::history::{History, MAX_SERIES, MIN_SPACING_SECONDS, SPAN_SECONDS};
use node_agent::routes::{AppState, Heartbeat, router};
use node_agent::snapshot::{GpuSample, Snapshot};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

/// A snapshot of the `epyc-9354p-snp-guest` tree with the recorded H200 NVML sample and the
/// recorded replica page, at T0. On its own thread: the collectors own a tokio runtime.
fn base_snapshot() -> Snapshot {
    std::thread::spawn(|| {
        let clock = Arc::new(ManualClock::new(T0));
        let mut c = fixed_collectors(node("epyc-9354p-snp-guest", "auto"), clock);
        c.gpu = Some(Box::new(
            RecordedGpuSource::from_json(&read_testdata("gpu/h200-nvml-samples.json")).unwrap(),
        ));
        c.disable("pinning", "the profile gives no pool a CPU set");
        c.collect()
    })
    .join()
    .unwrap()
}

fn at(base: &Snapshot, t: f64) -> Snapshot {
    let mut s = base.clone();
    s.taken_at_unix_seconds = t;
    s
}

fn gpus(base: &Snapshot, n: u32) -> Vec<GpuSample> {
    (0..n)
        .map(|i| GpuSample {
            index: i,
            uuid: format!("GPU-{i}"),
            ..base.gpus[0].clone()
        })
        .collect()
}

fn items(s: &mut Snapshot, op: Operation, on: Executed, n: u64) {
    let o = s
        .crypto
        .stats
        .operations
        .iter_mut()
        .find(|o| o.operation == op && o.executed == on)
        .unwrap();
    o.items = n;
}

fn document(h: &History) -> Value {
    serde_json::to_value(h.document()).unwrap()
}

fn series<'a>(doc: &'a Value, name: &str, labels: &[(&str, &str)]) -> &'a Vec<Value> {
    doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][k] == *v))
        .unwrap_or_else(|| panic!("no series {name} {labels:?} in {doc}"))["values"]
        .as_array()
        .unwrap()
}

#[test]
fn ring_reaches_an_hour_at_any_interval() {
    for (interval, capacity, spacing) in [
        (15.0, 241, 15.0),
        (60.0, 61, 60.0),
        (7.0, 516, 7.0),
        (0.2, 3601, 1.0),
        (1.0, 3601, 1.0),
    ] {
        let h = History::new(interval);
        assert_eq!(h.capacity(), capacity, "interval {interval}");
        assert_eq!(h.spacing_seconds(), spacing);
        assert!((h.capacity() - 1) as f64 * h.spacing_seconds() >= SPAN_SECONDS);
        assert!(h.spacing_seconds() >= MIN_SPACING_SECONDS);
    }
}

#[test]
fn records_gauges_rates_and_increases() {
    let base = base_snapshot();
    assert_eq!(base.gpus.len(), 1);
    let mut h = History::new(15.0);
    let mut s0 = at(&base, T0);
    items(&mut s0, Operation::Msm, Executed::Gpu, 1_000);
    assert!(h.record(&s0));

    // 15 s later: 3 000 more MSM items on the GPU (200/s), one fallback, two GPU errors,
    // one re-pin, and the replica moved on.
    let mut s1 = at(&base, T0 + 15.0);
    items(&mut s1, Operation::Msm, Executed::Gpu, 4_000);
    s1.crypto.stats.fallbacks = vec![ReasonCount {
        operation: Operation::Msm,
        reason: "launch".into(),
        count: 1,
    }];
    s1.crypto.stats.gpu_errors = vec![ReasonCount {
        operation: Operation::Msm,
        reason: "launch".into(),
        count: 2,
    }];
    s1.pinning.reapplied_total = 1;
    let health = s1.replica.health.as_mut().unwrap();
    health.finalized_height = Some(481_300.0);
    health.certified_height = Some(481_290.0);
    // Too soon: a cycle 5 s after the last point is not a point.
    assert!(!h.record(&at(&base, T0 + 5.0)));
    assert!(h.record(&s1));
    assert_eq!(h.len(), 2);

    let doc = document(&h);
    assert_eq!(doc["schema"], "sovereign-node/history/v1");
    assert_eq!(doc["points"], 2);
    assert_eq!(
        doc["timestamps_unix_seconds"],
        serde_json::json!([T0, T0 + 15.0])
    );
    let msm_gpu = series(
        &doc,
        "crypto_items_per_second",
        &[("operation", "msm"), ("executed", "gpu")],
    );
    // No rate for the first point (no earlier reading), then 3 000 items / 15 s.
    assert_eq!(msm_gpu, &vec![Value::Null, serde_json::json!(200.0)]);
    let msm_cpu = series(
        &doc,
        "crypto_items_per_second",
        &[("operation", "msm"), ("executed", "cpu")],
    );
    assert_eq!(msm_cpu[1], 0.0);
    assert_eq!(series(&doc, "crypto_fallbacks_increase", &[])[1], 1.0);
    assert_eq!(series(&doc, "crypto_gpu_errors_increase", &[])[1], 2.0);
    assert_eq!(series(&doc, "pinning_reapplied_increase", &[])[1], 1.0);
    assert_eq!(series(&doc, "replica_finalized_height", &[])[1], 481_300.0);
    assert_eq!(
        series(&doc, "replica_certification_lag_blocks", &[])[1],
        10.0
    );
    let g = &base.gpus[0];
    assert_eq!(
        series(&doc, "gpu_power_watts", &[("gpu", "0")])[0],
        g.power_watts.unwrap()
    );
    assert_eq!(
        series(&doc, "gpu_temperature_celsius", &[("gpu", "0")])[0],
        g.temperature_celsius.unwrap()
    );
    assert_eq!(
        series(&doc, "gpu_memory_used_bytes", &[("gpu", "0")])[0],
        g.memory_used_bytes.unwrap() as f64
    );
    assert_eq!(
        series(&doc, "gpu_utilization_ratio", &[("gpu", "0")])[0],
        0.0
    );
    assert_eq!(
        series(&doc, "node_power_watts", &[])[0],
        base.cost.power_watts
    );
    assert_eq!(
        series(&doc, "cost_eur_per_hour", &[("part", "total")])[0],
        base.cost.eur_per_hour
    );
    // 25 series without a GPU (9, and a rate per operation and path), 4 per GPU.
    assert_eq!(doc["series"].as_array().unwrap().len(), 25 + 4);
}

#[test]
fn a_wall_clock_step_back_starts_again() {
    let base = base_snapshot();
    let mut h = History::new(15.0);
    for i in 0..5 {
        h.record(&at(&base, T0 + 15.0 * f64::from(i)));
    }
    assert_eq!(h.len(), 5);
    assert!(h.record(&at(&base, T0 - 100.0)));
    assert_eq!(h.len(), 1);
    assert_eq!(document(&h)["clock_steps_back_total"], 1);
}

#[test]
fn a_gpu_that_went_away_leaves_the_window_and_frees_its_series() {
    let base = base_snapshot();
    let mut h = History::new(60.0);
    let point = |k: usize, n: u32| {
        let mut s = at(&base, T0 + 60.0 * k as f64);
        s.gpus = gpus(&base, n);
        s
    };
    // Two points with two GPUs (the rates and increases need the second one).
    h.record(&point(0, 2));
    h.record(&point(1, 2));
    assert_eq!(h.series_count(), 25 + 8);
    // GPU 1 gone: its series stay (with nulls) while it has a value in the window ...
    for k in 2..=h.capacity() {
        h.record(&point(k, 1));
        assert_eq!(h.series_count(), 25 + 8, "point {k}");
    }
    let doc = document(&h);
    let v = series(&doc, "gpu_power_watts", &[("gpu", "1")]);
    assert!(
        v[0].is_number() && v[1..].iter().all(Value::is_null),
        "{v:?}"
    );
    // ... and go once the window has moved past its last value.
    h.record(&point(h.capacity() + 1, 1));
    assert_eq!(h.series_count(), 25 + 4);
}

/// A ring at 15 s filled three times over with `gpus` GPUs.
fn full_ring(base: &Snapshot, n: u32) -> (History, usize) {
    let mut h = History::new(15.0);
    let mut heap_after_first_ring = 0;
    for i in 0..(3 * h.capacity()) {
        let mut s = at(base, T0 + 15.0 * i as f64);
        s.gpus = gpus(base, n);
        items(&mut s, Operation::Sha256, Executed::Cpu, i as u64 * 100);
        assert!(h.record(&s));
        if i + 1 == h.capacity() {
            heap_after_first_ring = h.heap_bytes();
        }
    }
    (h, heap_after_first_ring)
}

#[test]
fn memory_is_fixed_by_the_capacity() {
    let base = base_snapshot();
    let (h, heap_after_first_ring) = full_ring(&base, 2);
    assert_eq!(h.bytes_per_series(), 241 * 8);
    assert_eq!(h.len(), h.capacity());
    assert_eq!(h.series_count(), 25 + 8);
    // No growth once the ring is full: new points overwrite the oldest slots.
    assert_eq!(h.heap_bytes(), heap_after_first_ring);
    // Each GPU series costs its values plus its one label ("gpu" = a one-digit index).
    let (cpu_only, _) = full_ring(&base, 0);
    assert_eq!(cpu_only.series_count(), 25);
    let per_gpu_series = h.bytes_per_series() + std::mem::size_of::<(&str, String)>() + 1;
    assert_eq!(h.heap_bytes() - cpu_only.heap_bytes(), 8 * per_gpu_series);
    // And the whole never passes the bound of MAX_SERIES full series plus label strings.
    assert!(h.heap_bytes() <= h.heap_bytes_bound_without_labels() + 25 * 64);
    eprintln!(
        "15 s interval, {} points: {} bytes per series; ring with 2 GPUs ({} series) {} bytes, without GPU {} bytes",
        h.capacity(),
        h.bytes_per_series(),
        h.series_count(),
        h.heap_bytes(),
        cpu_only.heap_bytes()
    );
    // The oldest point is 3600 s before the newest.
    let doc = document(&h);
    let ts = doc["timestamps_unix_seconds"].as_array().unwrap();
    assert_eq!(ts.len(), 241);
    assert_eq!(
        ts[240].as_f64().unwrap() - ts[0].as_f64().unwrap(),
        SPAN_SECONDS
    );
    assert_eq!(doc["heap_bytes"], h.heap_bytes());
}

#[test]
fn series_beyond_the_limit_are_refused_and_counted() {
    let base = base_snapshot();
    let mut h = History::new(15.0);
    let mut s = at(&base, T0);
    s.gpus = gpus(&base, 30);
    h.record(&s);
    assert_eq!(h.series_count(), MAX_SERIES);
    let doc = document(&h);
    // 25 + 120 wanted, 96 kept; the 16 crypto rates and the 3 increases have no value at
    // the first point.
    assert_eq!(doc["series_refused_total"], 25 + 120 - 16 - 3 - MAX_SERIES);
}

/// VmRSS of this process, bytes.
fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    kb * 1024
}

#[test]
fn rss_grows_by_the_accounted_bytes() {
    // Full rings at the finest spacing (3 601 points) with 2 GPUs: 25 series of 28.8 kB.
    let base = base_snapshot();
    let mut s0 = at(&base, T0);
    s0.gpus = gpus(&base, 2);
    let mut s1 = s0.clone();
    s1.taken_at_unix_seconds += 1.0;
    let before = rss_bytes();
    let mut rings = Vec::new();
    for _ in 0..40 {
        let mut h = History::new(1.0);
        h.record(&s0);
        h.record(&s1);
        rings.push(h);
    }
    let grown = rss_bytes().saturating_sub(before);
    let accounted: usize = rings.iter().map(History::heap_bytes).sum();
    assert_eq!(rings[0].series_count(), 25 + 8);
    eprintln!(
        "40 rings: accounted {accounted} bytes ({} per ring), RSS grew {grown} bytes",
        accounted / 40
    );
    // Allocator and page rounding aside, the process grew by what the rings account for
    // (other tests of this binary may run at the same time: a generous upper bound).
    assert!(
        grown as f64 >= accounted as f64 * 0.9,
        "grew {grown}, accounted {accounted}"
    );
    assert!(
        grown as f64 <= accounted as f64 * 1.5,
        "grew {grown}, accounted {accounted}"
    );
}

#[tokio::test]
async fn served_as_json_by_the_router() {
    let base = tokio::task::spawn_blocking(base_snapshot).await.unwrap();
    let state = AppState::new(
        at(&base, T0),
        Arc::new(Heartbeat::new(Duration::from_secs(60))),
    )
    .with_history(History::new(15.0));
    for i in 1..4 {
        state.publish(at(&base, T0 + 15.0 * f64::from(i)));
    }
    let resp = router(state)
        .oneshot(Request::get("/v1/history").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["points"], 4);
    assert_eq!(doc["capacity"], 241);
    assert_eq!(doc["collect_interval_seconds"], 15.0);
    for s in doc["series"].as_array().unwrap() {
        assert_eq!(s["values"].as_array().unwrap().len(), 4, "{s}");
        assert!(s["unit"].is_string() && s["name"].is_string() && s["labels"].is_object());
    }
}
