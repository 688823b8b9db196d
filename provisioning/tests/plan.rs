//! The plan's figures against cases computed by hand (the arithmetic is written out next
//! to each expected value), validation errors with file:line:column, the shipped example,
//! and the bundles it writes (read back by the node agent's own configuration parser).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use provisioning::plan::{ModeFigures, plan};
use provisioning::subnet::{Subnet, SubnetError};

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAs7vcHm8hfrYG4kUmC5oV/QqWuz84bNd1Ex4gS54ukq operator-a@example.org";

/// A GPU profile with small round pools: base = consensus 2 + execution 4 + query 2 +
/// p2p_http 2 = 10; idkg 2; checkpoint 2. Crossovers: decompress 256 points, MSM 256
/// points, BLS 256 signatures, SHA-256 64 chunks. Cost: 12,000 EUR over 48 months, 500 W
/// at 0.25 EUR/kWh.
const TEST_PROFILE: &str = r#"
name = "test-gpu"
description = "hand-checkable test profile"

[match]
cpu_vendor = "GenuineIntel"

[require]
gpu = "preferred"

[crypto]
fallback = "never"
decompress = { backend = "auto", gpu_min_batch = 256 }
decompress_g2 = { backend = "auto" }
msm = { backend = "auto", gpu_min_batch = 256 }
msm_shared_u8 = { backend = "auto" }
msm_g2 = { backend = "auto" }
pairing_products = { backend = "auto" }
bls_verify = { backend = "auto", gpu_min_batch = 256 }
checkpoint_hashing = { backend = "auto", gpu_min_batch = 64 }

[pools]
consensus = { threads = 2 }
execution = { threads = 4 }
query = { threads = 2 }
idkg = { threads = 2 }
checkpoint = { threads = 2 }
p2p_http = { threads = 2 }

[cost]
capex_eur = 12000.0
amortisation_months = 48
power_price_eur_per_kwh = 0.25
expected_watts = 500.0
"#;

fn entry(
    op: &str,
    backend: &str,
    batch: usize,
    per_item: f64,
    threads: usize,
    ppm: Option<usize>,
) -> serde_json::Value {
    let mut e = serde_json::json!({
        "op": op, "backend": backend, "executed_on": backend, "batch": batch,
        "repetitions": 3, "seconds_per_call": per_item * batch as f64,
        "seconds_per_item": per_item, "items_per_second": 1.0 / per_item,
        "threads": threads, "source": "measured",
    });
    if let Some(p) = ppm {
        e["msms"] = (batch / p).into();
        e["points_per_msm"] = p.into();
    }
    e
}

/// Round per-item costs. CPU entries ran on 2 threads.
fn bench_json() -> String {
    let dealing = |backend: &str, executed_on: &str, n: usize, seconds: f64, threads: usize| {
        let mut e = entry("nidkg_verify", backend, 1, seconds, threads, None);
        e["executed_on"] = executed_on.into();
        e["subnet_size"] = n.into();
        e
    };
    let results = vec![
        // One dealing verification on one host thread: the planner's figures.
        dealing("cpu", "cpu", 13, 0.17472, 1),
        // A farther subnet size and an all-thread entry: the planner must pick the
        // one-thread entry at n = 13.
        dealing("cpu", "cpu", 40, 0.9, 1),
        dealing("cpu", "cpu", 13, 0.01, 2),
        // A variant measured beside the default policy (the bench's `offload` rows) is
        // not the figure; listed first, it would win the tie at n = 13.
        {
            let mut e = dealing("gpu", "mixed", 13, 0.0151, 1);
            e["algorithm"] = "offload".into();
            e
        },
        dealing("gpu", "mixed", 13, 0.0422656, 1),
        // A GPU entry that in fact ran on the CPU is no GPU figure.
        dealing("gpu", "cpu", 13, 1e-9, 1),
        entry("sha256_1mib", "cpu", 256, 2e-3, 2, None),
        entry("sha256_1mib", "gpu", 1024, 4e-5, 1, None),
        entry("bls_verify_same_message", "cpu", 16, 5e-4, 2, None),
    ];
    serde_json::json!({
        "schema": "sovereign-node/gpu-crypto-bench/v1", "source": "measured",
        "date_utc": "2026-11-30T00:00:00Z", "command": "test", "quick": false,
        "machine": {"cpu_model": "test CPU", "logical_cpus": 2, "cpu_threads": 2, "gpu_name": "test GPU"},
        "results": results,
    })
    .to_string()
}

fn subnet_text(dealings_per_block: u64) -> String {
    let mut s = format!(
        r#"[subnet]
name = "hand"
block_time_seconds = 0.5
dkg_interval_length = 99
dkg_dealings_per_block = {dealings_per_block}
dkg_transcripts_per_interval = 2
state_size_gib = 1.0
checkpoint_hash_target_seconds = 10.0
verifier_endpoint = "https://verifier.example.org"
profiles_dir = "profiles"

[network]
ipv6_prefix = "2001:db8::/64"
ipv6_gateway = "2001:db8::1"
dns = ["2001:db8::53"]

[benchmarks]
test-gpu = "bench.json"

[[operator]]
name = "op"
ssh_keys = ["{KEY}"]
"#
    );
    for i in 1..=13 {
        s.push_str(&format!(
            "\n[[node]]\nname = \"n{i}\"\nprofile = \"test-gpu\"\noperator = \"op\"\nipv6_address = \"2001:db8::{:x}\"\n",
            i + 16
        ));
    }
    s
}

fn setup(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("profiles")).unwrap();
    std::fs::write(dir.path().join("profiles/test-gpu.toml"), TEST_PROFILE).unwrap();
    std::fs::write(dir.path().join("bench.json"), bench_json()).unwrap();
    let path = dir.path().join("subnet.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-12),
        "{what}: got {got}, computed by hand {want}"
    );
}

fn modes(dealings_per_block: u64) -> (ModeFigures, ModeFigures, provisioning::plan::Plan) {
    let (_dir, path) = setup(&subnet_text(dealings_per_block));
    let subnet = Subnet::load(&path, &BTreeMap::new()).unwrap();
    let p = plan(&subnet).unwrap();
    assert_eq!(p.n, 13);
    assert_eq!(p.profiles.len(), 1);
    let prof = &p.profiles[0];
    (
        prof.without_gpu.clone(),
        prof.with_gpu.clone().expect("GPU figures"),
        p,
    )
}

#[test]
fn figures_match_the_hand_computed_case() {
    // n = 13: one dealing verification costs 0.17472 host thread-s on the CPU and
    // 0.0422656 GPU-assisted (the one-thread entries at n = 13). Block time 0.5 s,
    // 5 dealings per block, interval (99 + 1) * 0.5 = 50 s.
    let (cpu, gpu, p) = modes(5);

    assert_eq!(cpu.dealing.on, "cpu");
    assert_eq!(cpu.dealing.measured_subnet_size, 13);
    close(
        cpu.dealing.host_thread_seconds,
        0.17472,
        "thread-s per dealing",
    );
    // Per block with the idkg pool (2 threads): 5 * 0.17472 / 2 = 0.4368 s <= 0.5 s.
    close(cpu.dkg.seconds_per_block, 0.4368, "DKG s per block");
    assert!(cpu.dkg.keeps_up);
    // floor(0.5 / (0.17472 / 2)) = floor(5.7234...) = 5.
    assert_eq!(cpu.dkg.max_dealings_per_block, 5);
    // Burst: ceil(5 * 0.17472 / 0.5) = ceil(1.7472) = 2.
    assert_eq!(cpu.dkg.burst_threads, 2);
    // Steady: 2 transcripts * 13 dealings * 0.17472 / 50 s = 0.0908544.
    close(cpu.dkg.steady_threads, 0.0908544, "DKG steady threads");
    // Checkpoint: 1 GiB = 1024 chunks; 1024 * 2e-3 * 2 = 4.096 thread-s; / 2 threads = 2.048 s.
    assert_eq!(cpu.checkpoint.chunks, 1024);
    close(
        cpu.checkpoint.cpu_thread_seconds,
        4.096,
        "checkpoint thread-s",
    );
    close(cpu.checkpoint.seconds, 2.048, "checkpoint s");
    assert!(cpu.checkpoint.meets_target);
    // ceil(4.096 / 10) = 1; steady 4.096 / 50 = 0.08192.
    assert_eq!(cpu.checkpoint.burst_threads, 1);
    close(
        cpu.checkpoint.steady_threads,
        0.08192,
        "checkpoint steady threads",
    );
    // Consensus: 4 * 13 = 52 shares * 5e-4 * 2 threads = 0.052 thread-s per 0.5 s = 0.104.
    close(
        cpu.consensus_signature_threads.unwrap(),
        0.104,
        "consensus threads",
    );
    // Steady 10 + 0.0908544 + 0.08192 = 10.1727744; burst 10 + 2 + 1 = 13.
    close(cpu.steady_threads, 10.1727744, "steady threads");
    assert_eq!(cpu.burst_threads, 13);

    // With GPU: the GPU-assisted entry (the one that ran wholly on the CPU is ignored);
    // 1,024 chunks go to the GPU; 13 signatures stay on the CPU.
    assert_eq!(gpu.dealing.on, "gpu-assisted");
    close(gpu.dealing.host_thread_seconds, 0.0422656, "host thread-s");
    assert_eq!(gpu.checkpoint.on, "gpu");
    // Per dealing 0.0422656 / 2 = 0.0211328; per block * 5 = 0.105664.
    close(gpu.dkg.seconds_per_block, 0.105664, "DKG s per block");
    // floor(0.5 / 0.0211328) = floor(23.66...) = 23.
    assert_eq!(gpu.dkg.max_dealings_per_block, 23);
    // ceil(5 * 0.0422656 / 0.5) = ceil(0.422656) = 1; steady 26 * 0.0422656 / 50 = 0.021978112.
    assert_eq!(gpu.dkg.burst_threads, 1);
    close(gpu.dkg.steady_threads, 0.021978112, "DKG steady threads");
    // Checkpoint on the GPU: 1024 * 4e-5 = 0.04096 s; ceil(0.04096 / 10) = 1; steady 0.0008192.
    close(gpu.checkpoint.gpu_seconds, 0.04096, "checkpoint GPU s");
    close(gpu.checkpoint.seconds, 0.04096, "checkpoint s");
    assert_eq!(gpu.checkpoint.burst_threads, 1);
    close(
        gpu.checkpoint.steady_threads,
        0.0008192,
        "checkpoint steady",
    );
    // Steady 10 + 0.021978112 + 0.0008192 = 10.022797312; burst 10 + 1 + 1 = 12.
    close(gpu.steady_threads, 10.022797312, "steady threads");
    assert_eq!(gpu.burst_threads, 12);

    // Cost: 12000 / 48 = 250 EUR/month; 500 W * 730.5 h * 0.25 EUR/kWh / 1000 = 91.3125.
    let c = &p.profiles[0].cost;
    close(c.capex_eur_per_month, 250.0, "amortisation");
    close(c.power_eur_per_month, 91.3125, "power");
    close(c.total_eur_per_month, 341.3125, "monthly");
    // 13 nodes: 156,000 EUR capex, 13 * 341.3125 = 4437.0625 EUR/month.
    close(p.cost.capex_eur, 156_000.0, "subnet capex");
    close(p.cost.eur_per_month, 4437.0625, "subnet monthly");

    // Every figure names the benchmark entry it came from: the one-thread dealing entries
    // at n = 13 (not n = 40, not the all-thread one).
    let from = &p.profiles[0].figures_from;
    let dealing_entries: Vec<_> = from.iter().filter(|f| f.op == "nidkg_verify").collect();
    assert_eq!(dealing_entries.len(), 2, "{dealing_entries:?}");
    assert!(
        dealing_entries
            .iter()
            .all(|f| f.subnet_size == Some(13) && f.threads == 1)
    );
}

/// A GPU-assisted dealing whose benchmark measured the process CPU time: the latency
/// figures keep the wall time, the thread counts take the CPU time (the host thread waits
/// for the device without using its core).
#[test]
fn thread_counts_use_the_measured_host_cpu_time() {
    let (dir, path) = setup(&subnet_text(5));
    let mut bench: serde_json::Value = serde_json::from_str(&bench_json()).unwrap();
    for e in bench["results"].as_array_mut().unwrap() {
        if e["op"] == "nidkg_verify" && e["executed_on"] == "mixed" {
            e["host_cpu_seconds_per_call"] = 0.01.into();
        }
    }
    std::fs::write(dir.path().join("bench.json"), bench.to_string()).unwrap();
    let subnet = Subnet::load(&path, &BTreeMap::new()).unwrap();
    let p = plan(&subnet).unwrap();
    let gpu = p.profiles[0].with_gpu.clone().expect("GPU figures");
    close(gpu.dealing.host_thread_seconds, 0.0422656, "host thread-s");
    close(gpu.dealing.host_cpu_seconds.unwrap(), 0.01, "host CPU s");
    // Latency as before: 5 * 0.0422656 / 2 = 0.105664 s per block.
    close(gpu.dkg.seconds_per_block, 0.105664, "DKG s per block");
    // Cores: ceil(5 * 0.01 / 0.5) = 1; steady 26 * 0.01 / 50 = 0.0052.
    assert_eq!(gpu.dkg.burst_threads, 1);
    close(gpu.dkg.steady_threads, 0.0052, "DKG steady threads");
    // The CPU entry has no CPU time: its thread counts keep the wall time.
    let cpu = &p.profiles[0].without_gpu;
    assert_eq!(cpu.dealing.host_cpu_seconds, None);
    close(cpu.dkg.steady_threads, 0.0908544, "CPU DKG steady threads");
    // What the GPU frees: a round's 26 dealings * (0.17472 - 0.01) s = 4.28272 s of host
    // CPU; burst 13 - 12 = 1 thread (the checkpoint's); steady 0.0908544 - 0.0052 +
    // 0.08192 - 0.0008192 = 0.1667552.
    let frees = p.profiles[0].gpu_frees.as_ref().expect("with-GPU figures");
    close(
        frees.host_cpu_seconds_per_dkg_round,
        4.28272,
        "host CPU per round",
    );
    assert_eq!(
        frees.burst_threads,
        cpu.burst_threads as i64 - gpu.burst_threads as i64
    );
    close(
        frees.steady_threads,
        cpu.steady_threads - gpu.steady_threads,
        "steady threads freed",
    );
}

#[test]
fn the_cpu_falls_behind_at_six_dealings_per_block_and_the_gpu_does_not() {
    // 6 * 0.17472 / 2 = 0.52416 s > 0.5 s; with the GPU 6 * 0.0211328 = 0.1267968 s.
    let (cpu, gpu, _) = modes(6);
    close(cpu.dkg.seconds_per_block, 0.52416, "CPU");
    assert!(!cpu.dkg.keeps_up);
    close(gpu.dkg.seconds_per_block, 0.1267968, "GPU");
    assert!(gpu.dkg.keeps_up);
    // ceil(6 * 0.17472 / 0.5) = ceil(2.09664) = 3.
    assert_eq!(cpu.dkg.burst_threads, 3);
}

fn errors_of(text: &str) -> Vec<String> {
    let (_dir, path) = setup(text);
    match Subnet::load(&path, &BTreeMap::new()) {
        Ok(_) => panic!("accepted an invalid subnet"),
        Err(SubnetError::Invalid(list)) => list
            .iter()
            .map(|e| {
                let mut s = e.to_string();
                // Drop the temporary directory: "subnet.toml:LINE:COL: reason".
                if let Some(i) = s.find("subnet.toml") {
                    s = s[i..].to_string();
                }
                s
            })
            .collect(),
        Err(e) => panic!("{e}"),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn invalid_values_are_reported_with_their_line_and_all_at_once() {
    let good = subnet_text(1);
    let bad = good
        .replace(
            "ipv6_address = \"2001:db8::18\"",
            "ipv6_address = \"2001:db9::18\"",
        )
        .replace("name = \"n5\"", "name = \"n4\"")
        .replace("block_time_seconds = 0.5", "block_time_seconds = -1.0")
        .replacen(
            "profile = \"test-gpu\"\noperator = \"op\"\nipv6_address = \"2001:db8::1a\"",
            "profile = \"no-such\"\noperator = \"op\"\nipv6_address = \"2001:db8::1a\"",
            1,
        )
        .replacen(
            "operator = \"op\"\nipv6_address = \"2001:db8::1b\"",
            "operator = \"nobody\"\nipv6_address = \"2001:db8::1b\"",
            1,
        );
    let errors = errors_of(&bad);
    let expect = |needle: &str, reason: &str| {
        let line = line_of(&bad, needle);
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(&format!("subnet.toml:{line}:")) && e.contains(reason)),
            "no error at line {line} saying {reason:?}: {errors:#?}"
        );
    };
    expect("2001:db9::18", "is not in 2001:db8::/64");
    expect("block_time_seconds = -1.0", "outside (0, 600]");
    expect("profile = \"no-such\"", "no hardware profile \"no-such\"");
    expect("operator = \"nobody\"", "no [[operator]] named \"nobody\"");
    // The second n4 (where n5 was) is the duplicate.
    let second = bad.match_indices("name = \"n4\"").nth(1).unwrap().0;
    let line = bad[..second].matches('\n').count() + 1;
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("subnet.toml:{line}:")) && e.contains("defined twice")),
        "{errors:#?}"
    );
    assert_eq!(errors.len(), 5, "{errors:#?}");
}

#[test]
fn syntax_unknown_keys_and_bad_keys_point_at_the_line() {
    let good = subnet_text(1);
    let typo = good.replace("state_size_gib", "state_size_gb");
    let errors = errors_of(&typo);
    let line = line_of(&typo, "state_size_gb");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("subnet.toml:{line}:"))
                && e.contains("unknown field `state_size_gb`")),
        "{errors:?}"
    );
    // The field it stands for is then missing from its table.
    assert!(
        errors.iter().any(
            |e| e.starts_with("subnet.toml:1:") && e.contains("missing field `state_size_gib`")
        ),
        "{errors:?}"
    );

    let bad_key = good.replace(
        "ssh_keys = [\"ssh-ed25519 AAAAC3",
        "ssh_keys = [\"ssh-ed25519 AAAAC4",
    );
    let errors = errors_of(&bad_key);
    let line = line_of(&bad_key, "AAAAC4");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("subnet.toml:{line}:"))
                && e.contains("not an OpenSSH public key")),
        "{errors:?}"
    );

    let no_bench = good.replace("test-gpu = \"bench.json\"", "");
    let errors = errors_of(&no_bench);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no benchmark for profile \"test-gpu\"")),
        "{errors:?}"
    );
}

#[test]
fn benchmark_overrides_replace_the_file_entry() {
    let (dir, path) = setup(&subnet_text(5));
    // Same figures, CPU entries only: no with-GPU figures, and the plan says why.
    let cpu_only: serde_json::Value = serde_json::from_str(&bench_json()).unwrap();
    let mut cpu_only = cpu_only;
    let results: Vec<serde_json::Value> = cpu_only["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["backend"] == "cpu")
        .cloned()
        .collect();
    cpu_only["results"] = results.into();
    let file = dir.path().join("cpu-only.json");
    std::fs::write(&file, cpu_only.to_string()).unwrap();
    let overrides = BTreeMap::from([("test-gpu".to_string(), file)]);
    let subnet = Subnet::load(&path, &overrides).unwrap();
    let p = plan(&subnet).unwrap();
    assert!(p.profiles[0].with_gpu.is_none());
    assert!(
        p.profiles[0]
            .with_gpu_unavailable
            .as_deref()
            .unwrap()
            .contains("no GPU figures")
    );
    assert_eq!(p.profiles[0].without_gpu.burst_threads, 13);
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml")
}

#[test]
fn the_shipped_example_plans_13_nodes_and_writes_bundles_the_agent_accepts() {
    let subnet = Subnet::load(&example(), &BTreeMap::new()).unwrap();
    assert_eq!(subnet.n(), 13);
    let p = plan(&subnet).unwrap();
    assert_eq!(p.profiles.len(), 1);
    let prof = &p.profiles[0];
    assert_eq!(prof.profile, "sovereign-node");
    assert_eq!(prof.nodes, 13);
    assert!(prof.bench.starts_with("measured"), "{}", prof.bench);
    let text = provisioning::plan::render(&p);
    assert!(
        text.contains("with GPU:") && text.contains("without GPU:"),
        "{text}"
    );

    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let bundles = provisioning::plan::bundles(&subnet, &p, &key).unwrap();
    assert_eq!(bundles.len(), 13);
    let out = tempfile::tempdir().unwrap();
    for b in &bundles {
        let dir = out.path().join(&b.node().name);
        b.write_dir(&dir).unwrap();
        let back = sn_config::Bundle::load_dir(&dir, &[key.verifying_key().to_bytes()]).unwrap();
        assert_eq!(&back, b);
        // The node's side: the archive applied by the agent's apply-config code, read by
        // the agent's configuration loader.
        let part = out.path().join(format!("{}.part", b.node().name));
        std::fs::write(&part, b.archive().unwrap()).unwrap();
        let applied = out.path().join(format!("{}.applied", b.node().name));
        sn_config::apply::apply(&part, &applied, &[key.verifying_key().to_bytes()]).unwrap();
        let seen = node_agent::node_config::NodeConfiguration::load(&applied);
        assert!(seen.ok(), "{:?}", seen.view);
        assert_eq!(seen.view.node.as_deref(), Some(b.node().name.as_str()));
        assert_eq!(seen.view.subnet.as_deref(), Some("sovereign-eu-1"));
        assert_eq!(seen.view.profile.as_deref(), Some("sovereign-node"));
        assert_eq!(seen.binding(), (b.digest(), key.verifying_key().to_bytes()));
        // The plan's GPU figures reach the node in its signed node.toml.
        let frees = prof.gpu_frees.as_ref().unwrap();
        let offload = seen.node.as_ref().and_then(|n| n.offload.as_ref()).unwrap();
        assert_eq!(offload.benchmark, prof.bench);
        assert_eq!(offload.dkg_round_dealings, 26);
        assert_eq!(
            offload.host_cpu_seconds_per_dkg_round,
            frees.host_cpu_seconds_per_dkg_round
        );
        assert!(offload.host_cpu_seconds_per_dkg_round > 0.0);
        assert_eq!(offload.burst_threads_freed, frees.burst_threads);
        assert_eq!(offload.steady_threads_freed, frees.steady_threads);
        assert!(b.node().network.ipv6_address.starts_with("2001:db8:5e1::"));
    }
    // Deterministic archives: the same bundle gives the same bytes.
    assert_eq!(bundles[0].archive().unwrap(), bundles[0].archive().unwrap());
}

#[test]
fn the_shipped_benchmark_files_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let doc = provisioning::bench::BenchFile::load(&path).unwrap();
            assert!(!doc.results.is_empty(), "{}", path.display());
            n += 1;
        }
    }
    assert!(
        n >= 2,
        "expected the measured CPU file and the measured H200 file"
    );
}
