//! The shipped profiles: all valid, all embedded, and translated as intended.

use gpu_crypto_api::policy::{BackendChoice, Fallback};
use hardware_profiles::{GpuRequirement, PoolKind, ProfileSet};
use std::path::Path;

fn profiles_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles")
}

#[test]
fn every_profile_file_validates_and_is_embedded() {
    let from_dir = ProfileSet::load_dir(&profiles_dir()).unwrap();
    let embedded = ProfileSet::embedded().unwrap();
    let names = |set: &ProfileSet| {
        set.profiles()
            .iter()
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&from_dir), names(&embedded));
    assert_eq!(
        names(&embedded),
        [
            "constrained-gpu",
            "cpu-baseline-64",
            "development",
            "h200-lab",
            "qemu-tcg-test",
            "research-box",
            "sovereign-node"
        ]
    );
    for (from_dir, embedded) in from_dir.profiles().iter().zip(embedded.profiles()) {
        assert_eq!(from_dir.crypto, embedded.crypto);
        assert_eq!(from_dir.pools, {
            // Locations differ only by file name.
            let mut pools = embedded.pools.clone();
            for kind in PoolKind::ALL {
                let pool = match kind {
                    PoolKind::Consensus => &mut pools.consensus,
                    PoolKind::Execution => &mut pools.execution,
                    PoolKind::Query => &mut pools.query,
                    PoolKind::Idkg => &mut pools.idkg,
                    PoolKind::Checkpoint => &mut pools.checkpoint,
                    PoolKind::P2pHttp => &mut pools.p2p_http,
                };
                pool.location.file = from_dir.pools.get(kind).location.file.clone();
            }
            pools
        });
    }
    assert_eq!(
        embedded
            .profiles()
            .iter()
            .filter(|p| p.development_default)
            .count(),
        1
    );
}

#[test]
fn sovereign_node_translates_to_the_gpu_policy() {
    let set = ProfileSet::embedded().unwrap();
    let sovereign = set.get("sovereign-node").unwrap();
    let policy = sovereign.crypto_policy();
    assert_eq!(policy.msm.backend, BackendChoice::Auto);
    assert_eq!(policy.msm.gpu_min_batch, 256);
    assert_eq!(policy.sha256.gpu_min_batch, 1024);
    assert_eq!(policy.fallback, Fallback::Never);
    assert!(policy.wants_gpu());
    assert!(sovereign.requirements.sev_snp && sovereign.requirements.gpu_cc);
    assert_eq!(sovereign.requirements.gpu, GpuRequirement::Required);

    let config = sovereign.runtime_config();
    assert_eq!(config.pools[&PoolKind::Execution].threads, 24);
    assert_eq!(
        config.pools[&PoolKind::Execution].cpus,
        (4..28).collect::<Vec<u32>>()
    );
    let json = config.to_json().unwrap();
    assert_eq!(
        hardware_profiles::RuntimeConfig::from_json(&json).unwrap(),
        config
    );
}

#[test]
fn cpu_profiles_never_open_the_gpu() {
    let set = ProfileSet::embedded().unwrap();
    for name in ["development", "cpu-baseline-64"] {
        let profile = set.get(name).unwrap();
        assert!(!profile.crypto_policy().wants_gpu(), "{name}");
        assert_eq!(profile.requirements.gpu, GpuRequirement::Off);
    }
}

#[test]
fn cost_inputs_amortise() {
    let set = ProfileSet::embedded().unwrap();
    let cost = set.get("sovereign-node").unwrap().cost;
    assert!((cost.capex_eur_per_month() - 22000.0 / 48.0).abs() < 1e-9);
    // 900 W for 730.5 h at 0.25 EUR/kWh.
    assert!((cost.power_eur_per_month(900.0) - 0.9 * 730.5 * 0.25).abs() < 1e-9);
}

#[test]
fn a_directory_overrides_embedded_profiles_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let development = ProfileSet::embedded_sources()
        .find(|(file, _)| *file == "development.toml")
        .unwrap()
        .1
        .replace("execution = { threads = 2 }", "execution = { threads = 3 }");
    std::fs::write(dir.path().join("dev.toml"), development).unwrap();
    let set = ProfileSet::embedded_with_overrides(dir.path()).unwrap();
    assert_eq!(set.profiles().len(), 7);
    let dev = set.get("development").unwrap();
    assert_eq!(dev.pools.execution.threads, 3);
    assert!(dev.source.ends_with("dev.toml"), "{}", dev.source);
}
