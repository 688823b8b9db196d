//! Report verification throughput with a cached AMD chain, and a fleet of 1,000 node entries
//! against in-process servers. Run: `cargo bench -p attestation --bench verify`; the
//! `snp_cpu` group measures the bench thread's CPU time (the "per core" figure). The fleet
//! against real `node-agent` processes is `cargo bench -p node-agent --bench fleet`.

use std::sync::Arc;
use std::time::Duration;

use attestation::bundle::verify_bundle;
use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::fleet::{self, FleetOptions, NodeStatus};
use attestation::nodes::{ExpectedNode, NodeEntry, NodeList};
use attestation::policy::Policy;
use attestation::snp::amd::{ChainVerifier, SuppliedChain, parse_certs};
use attestation::snp_checks::{self, SnpContext};
use attestation::test_source::TestSigner;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn data(path: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/testdata/sev/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

const NOW: u64 = 1_796_000_000; // 2026-11

/// The genuine trustee report, its VCEK with the Milan ASK/ARK, and the default policy.
fn cached_chain_fixture() -> (Vec<u8>, SuppliedChain, Policy) {
    let vcek = parse_certs(&data("trustee/test-vcek.der"))
        .unwrap()
        .remove(0);
    let chain = SuppliedChain::from_certs(
        vcek,
        parse_certs(&data("go-sev-guest/ask_ark_milan.pem")).unwrap(),
    );
    (
        data("trustee/test-report.bin"),
        chain,
        Policy::default_policy(),
    )
}

fn report_verification(c: &mut Criterion) {
    let (report, chain, policy) = cached_chain_fixture();
    let chains = ChainVerifier::new(policy.trust_store());
    let ctx = SnpContext {
        policy: &policy,
        chains: &chains,
        now: NOW,
    };
    // Warm the chain cache once; every iteration then does the full report verification:
    // parse, format, cached chain lookup, ECDSA P-384 signature, cert, policy, TCB, identity.
    let mut checks = Vec::new();
    snp_checks::verify_report(&report, Ok(chain.clone()), &ctx, &mut checks);
    assert!(
        checks
            .iter()
            .all(|c| c.outcome != attestation::report::Outcome::Fail)
    );
    let mut g = c.benchmark_group("snp");
    g.throughput(Throughput::Elements(1));
    g.bench_function("verify_report_cached_chain", |b| {
        b.iter(|| {
            let mut checks = Vec::with_capacity(48);
            snp_checks::verify_report(&report, Ok(chain.clone()), &ctx, &mut checks);
            checks
        })
    });
    g.bench_function("verify_chain_uncached", |b| {
        b.iter(|| ChainVerifier::new(policy.trust_store()).verify(&chain))
    });
    // A whole test-source bundle (SNP + node signature + binding), cached chain.
    let signer = TestSigner::from_seed([4; 32]).unwrap();
    let mut tp = Policy::default_policy();
    tp.test_root = Some(signer.authority.anchor());
    let attester = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[1; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    };
    let nonce = [3; 32];
    let bundle = attester.attest(&nonce).unwrap();
    let tchains = ChainVerifier::new(tp.trust_store());
    assert!(
        verify_bundle(
            &bundle,
            &nonce,
            &tp,
            &tchains,
            NOW,
            &ExpectedNode::default()
        )
        .admitted
    );
    g.bench_function("verify_bundle_cached_chain", |b| {
        b.iter(|| {
            verify_bundle(
                &bundle,
                &nonce,
                &tp,
                &tchains,
                NOW,
                &ExpectedNode::default(),
            )
        })
    });
    g.finish();
}

fn fleet_1000(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let signer = TestSigner::from_seed([5; 32]).unwrap();
    let mut policy = Policy::default_policy();
    policy.test_root = Some(signer.authority.anchor());
    let attester = Arc::new(Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[2; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    });
    // Four local agents; 1,000 node entries spread over them.
    let urls: Vec<String> = runtime.block_on(async {
        let mut urls = Vec::new();
        for _ in 0..4 {
            let a = attester.clone();
            let router = axum::Router::new().route(
                "/v1/attestation",
                axum::routing::get(
                    move |q: axum::extract::Query<std::collections::HashMap<String, String>>| {
                        let a = a.clone();
                        async move {
                            let nonce = q
                                .get("nonce")
                                .and_then(|n| attestation::bundle::parse_nonce(n))
                                .unwrap_or([0; 32]);
                            let b = tokio::task::spawn_blocking(move || a.attest(&nonce))
                                .await
                                .unwrap()
                                .unwrap();
                            serde_json::to_vec(&b).unwrap()
                        }
                    },
                ),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            urls.push(format!("http://{}", listener.local_addr().unwrap()));
            tokio::spawn(async move { axum::serve(listener, router).await });
        }
        urls
    });
    let nodes = NodeList {
        node: (0..1000)
            .map(|i| NodeEntry {
                name: format!("node-{i}"),
                url: urls[i % urls.len()].clone(),
                chip_id: None,
                node_public_key: None,
                config_digest: None,
            })
            .collect(),
    };
    let policy = Arc::new(policy);
    let chains = Arc::new(ChainVerifier::new(policy.trust_store()));
    let opts = FleetOptions {
        concurrency: 64,
        timeout: Duration::from_secs(10),
        now: NOW,
    };
    let mut g = c.benchmark_group("fleet");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("fleet_1000_nodes_4_servers", |b| {
        b.iter(|| {
            let results =
                runtime.block_on(fleet::run(&nodes, policy.clone(), chains.clone(), opts));
            assert!(
                results.iter().all(|r| r.status == NodeStatus::Admitted),
                "{}",
                fleet::table(&results)
            );
            results.len()
        })
    });
    g.finish();
}

/// CPU time of the benchmarking thread (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, exact to
/// the nanosecond, unlike /proc's schedstat, which advances only at scheduler ticks), so
/// "per core" figures hold on a machine shared with other work, where wall time does not.
struct ThreadCpuTime;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct NsFormatter;

impl criterion::measurement::ValueFormatter for NsFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "ns (thread CPU)"
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        if let Throughput::Elements(n) = throughput {
            for v in values.iter_mut() {
                *v = *n as f64 * 1e9 / *v;
            }
        }
        "elem per CPU-second"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl criterion::measurement::Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn criterion::measurement::ValueFormatter {
        &NsFormatter
    }
}

fn report_verification_cpu(c: &mut Criterion<ThreadCpuTime>) {
    let (report, chain, policy) = cached_chain_fixture();
    let chains = ChainVerifier::new(policy.trust_store());
    let ctx = SnpContext {
        policy: &policy,
        chains: &chains,
        now: NOW,
    };
    let mut checks = Vec::new();
    snp_checks::verify_report(&report, Ok(chain.clone()), &ctx, &mut checks);
    let mut g = c.benchmark_group("snp_cpu");
    g.throughput(Throughput::Elements(1));
    g.bench_function("verify_report_cached_chain", |b| {
        b.iter(|| {
            let mut checks = Vec::with_capacity(48);
            snp_checks::verify_report(&report, Ok(chain.clone()), &ctx, &mut checks);
            checks
        })
    });
    // The ECDSA P-384 report signature check alone (AWS-LC), to attribute the cost, and the
    // same verification with RustCrypto's p384 for comparison.
    let vcek = parse_certs(&data("trustee/test-vcek.der"))
        .unwrap()
        .remove(0);
    let key = vcek.report_key().unwrap();
    let parsed = attestation::snp::raw::AttestationReport::parse(&report).unwrap();
    assert_eq!(
        attestation::snp::amd::report_signature_check(&parsed, &key).outcome,
        attestation::report::Outcome::Pass
    );
    g.bench_function("report_signature_only_aws_lc", |b| {
        b.iter(|| attestation::snp::amd::report_signature_check(&parsed, &key))
    });
    let p384_key = vcek.p384_public_key().unwrap();
    let (r, s) = parsed.signature_rs().unwrap();
    let sig = p384::ecdsa::Signature::from_scalars(r, s).unwrap();
    g.bench_function("report_signature_only_rustcrypto_p384", |b| {
        b.iter(|| {
            use p384::ecdsa::signature::Verifier as _;
            p384_key.verify(parsed.signed_bytes(), &sig).is_ok()
        })
    });
    g.finish();
}

criterion_group!(benches, report_verification, fleet_1000);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = report_verification_cpu
}
criterion_main!(benches, cpu_benches);
