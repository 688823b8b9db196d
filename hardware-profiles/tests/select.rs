//! Selection, explanation and readiness on machine facts given as data (the probe's
//! fixture-based tests live in node-agent/tests/probe_*.rs).

use hardware_profiles::{
    CpuFacts, CpuFeatures, CpuSet, Fact, GpuFacts, GpuInventory, MachineFacts, NvmlStatus,
    PciDevice, Pin, PoolKind, ProfileSet, SelectError, SelectedBy, SevSnpFacts, SevSnpState,
};

fn cpu(vendor: &str, model: &str, cores: u32, threads: u32) -> CpuFacts {
    CpuFacts {
        vendor: Fact::Known(vendor.into()),
        model_name: Fact::Known(model.into()),
        family: Fact::Known(25),
        model: Fact::Known(17),
        online_cpus: Fact::Known((0..threads).collect()),
        physical_cores: Fact::Known(cores),
        sockets: Fact::Known(1),
        numa_nodes: Fact::Known(1),
        hypervisor: true,
        features: CpuFeatures::default(),
        flags: Vec::new(),
    }
}

fn sev(state: SevSnpState) -> SevSnpFacts {
    SevSnpFacts {
        state,
        guest_device: state == SevSnpState::Guest,
        cpuinfo_flag: false,
        kvm_amd_sev_snp: Fact::unknown("absent"),
        evidence: vec![format!("test: {state}")],
    }
}

fn gpu(name: &str, gib: u64, cc_enabled: bool, cc_ready: bool) -> GpuFacts {
    GpuFacts {
        index: 0,
        name: Fact::Known(name.into()),
        uuid: Fact::Known("GPU-test".into()),
        pci_bus_id: Fact::Known("00000000:01:00.0".into()),
        memory_total_bytes: Fact::Known(gib << 30),
        compute_capability: Fact::Known("12.0".into()),
        cc_capable: Fact::Known(true),
        cc_enabled: Fact::Known(cc_enabled),
        cc_dev_tools_mode: Fact::Known(false),
        cc_ready: Fact::Known(cc_ready),
        ecc_enabled: Fact::Known(true),
    }
}

fn with_gpus(gpus: Vec<GpuFacts>) -> GpuInventory {
    GpuInventory {
        nvml: NvmlStatus::Available {
            driver_version: Fact::Known("580.95.05".into()),
        },
        gpus,
        pci_nvidia: Vec::new(),
    }
}

fn sovereign_machine() -> MachineFacts {
    MachineFacts {
        cpu: cpu("AuthenticAMD", "AMD EPYC 9354P 32-Core Processor", 32, 64),
        memory_total_bytes: Fact::Known(251 << 30),
        sev_snp: sev(SevSnpState::Guest),
        gpus: with_gpus(vec![gpu(
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            95,
            true,
            true,
        )]),
    }
}

fn set() -> ProfileSet {
    ProfileSet::embedded().unwrap()
}

#[test]
fn a_healthy_sovereign_node_is_ready() {
    let facts = sovereign_machine();
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "sovereign-node");
    assert_eq!(selection.selected_by, SelectedBy::MostSpecificMatch);
    let readiness = selection.readiness(&facts);
    assert!(readiness.ready, "{:?}", readiness.reasons());
    let requirements: Vec<_> = readiness
        .checks
        .iter()
        .map(|c| c.requirement.as_str())
        .collect();
    assert_eq!(requirements, ["sev_snp", "gpu", "gpu_cc", "pool_cpus"]);
    let explanation = selection.explain().join("\n");
    assert!(explanation.starts_with("selected `sovereign-node` (embedded:sovereign-node.toml): the matching profile with the most criteria (8)"), "{explanation}");
    assert!(
        explanation.contains("`development` is the development default"),
        "{explanation}"
    );
    assert!(explanation.contains("`h200-lab` does not match:\n  cpu_vendor: expected `GenuineIntel`, found `AuthenticAMD`"), "{explanation}");
}

#[test]
fn sovereign_node_without_snp_is_recognised_but_not_ready() {
    let mut facts = sovereign_machine();
    facts.sev_snp = sev(SevSnpState::Absent);
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "sovereign-node");
    let readiness = selection.readiness(&facts);
    assert!(!readiness.ready);
    assert_eq!(
        readiness.reasons(),
        ["SEV-SNP required but absent (test: absent)"]
    );

    facts.sev_snp = sev(SevSnpState::Host);
    let reasons = set()
        .select(&facts, None)
        .unwrap()
        .readiness(&facts)
        .reasons();
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].contains("SNP-capable host, not an SNP guest"),
        "{reasons:?}"
    );
}

#[test]
fn gpu_cc_off_or_not_ready_refuses_ready() {
    let mut facts = sovereign_machine();
    facts.gpus = with_gpus(vec![gpu(
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        95,
        false,
        false,
    )]);
    let selection = set().select(&facts, None).unwrap();
    let readiness = selection.readiness(&facts);
    assert_eq!(
        readiness.reasons(),
        [
            "GPU CC required but GPU 0 is not in production CC mode (cc_enabled false, dev_tools_mode false, ready false)"
        ]
    );

    // CC on but the ready state not set: the GPU itself is unusable.
    facts.gpus = with_gpus(vec![gpu(
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        95,
        true,
        false,
    )]);
    let reasons = set()
        .select(&facts, None)
        .unwrap()
        .readiness(&facts)
        .reasons();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].starts_with("GPU required but not usable: GPU 0: confidential compute is on but the GPUs ready state is not set"), "{reasons:?}");
}

#[test]
fn nvml_broken_with_gpu_on_the_bus_keeps_the_profile_and_refuses_ready() {
    let mut facts = sovereign_machine();
    facts.gpus = GpuInventory::nvml_absent(
        "NVML init failed: a libloading error occurred",
        vec![PciDevice {
            address: "0000:01:00.0".into(),
            device_id: "0x2bb5".into(),
            class: "0x030200".into(),
        }],
    );
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "sovereign-node");
    assert_eq!(selection.unverified.len(), 3);
    assert!(selection.explain().iter().any(|l| l.contains("`sovereign-node` not verified: gpu_model: expected `NVIDIA RTX PRO 6000 Blackwell*`, found unverifiable: NVML unavailable (NVML init failed")));
    let reasons = selection.readiness(&facts).reasons();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0]
            .starts_with("GPU required but not usable: no GPU: NVML unavailable: NVML init failed"),
        "{reasons:?}"
    );
    assert_eq!(reasons[1], "GPU CC required but there is no GPU");
}

#[test]
fn no_gpu_at_all_falls_back_to_the_development_default() {
    let mut facts = sovereign_machine();
    facts.gpus = GpuInventory::nvml_absent("NVML init failed: library not found", Vec::new());
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "development");
    assert_eq!(selection.selected_by, SelectedBy::DevelopmentDefault);
    let explanation = selection.explain();
    assert!(explanation.contains(&"  gpu_model: expected `NVIDIA RTX PRO 6000 Blackwell*`, found no GPU (NVML unavailable: NVML init failed: library not found; no NVIDIA GPU on the PCI bus)".to_string()), "{explanation:#?}");
    assert!(selection.readiness(&facts).ready);
    assert!(!selection.runtime_config(&facts).crypto.wants_gpu());
}

#[test]
fn preferred_gpu_absent_switches_paths_to_cpu_explicitly() {
    let facts = MachineFacts {
        cpu: cpu(
            "AuthenticAMD",
            "AMD Ryzen 9 9900X 12-Core Processor",
            12,
            24,
        ),
        memory_total_bytes: Fact::Known(62 << 30),
        sev_snp: sev(SevSnpState::Absent),
        gpus: GpuInventory::nvml_absent(
            "NVML init failed: driver not loaded",
            vec![PciDevice {
                address: "0000:01:00.0".into(),
                device_id: "0x2bb1".into(),
                class: "0x030000".into(),
            }],
        ),
    };
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "research-box");
    let readiness = selection.readiness(&facts);
    assert!(readiness.ready);
    assert!(
        readiness.checks[0]
            .detail
            .contains("every crypto path runs on the CPU")
    );
    let config = selection.runtime_config(&facts);
    assert!(!config.crypto.wants_gpu());
    assert_eq!(config.crypto_notes.len(), 1);
    assert!(config.crypto_notes[0].starts_with("GPU preferred but not usable"));
    // The profile itself still says auto.
    assert!(selection.profile.crypto_policy().wants_gpu());
}

#[test]
fn most_specific_match_wins_and_ties_go_by_name() {
    // A 64-core machine with 128 threads and a 24 GiB NVIDIA GPU: cpu-baseline-64 matches
    // (3 criteria); a directory adds two equally specific GPU profiles.
    let facts = MachineFacts {
        cpu: cpu("AuthenticAMD", "AMD EPYC 9554 64-Core Processor", 64, 128),
        memory_total_bytes: Fact::Known(500 << 30),
        sev_snp: sev(SevSnpState::Absent),
        gpus: with_gpus(vec![gpu("NVIDIA L4", 22, false, false)]),
    };
    let selection = set().select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "cpu-baseline-64");

    let dir = tempfile::tempdir().unwrap();
    let extra = |name: &str| {
        format!(
            "name = \"{name}\"\ndescription = \"x\"\n[match]\nphysical_cores = {{ min = 64 }}\nlogical_cpus = {{ max = 128 }}\nmemory_gib = {{ min = 1 }}\ngpu_model = \"NVIDIA L4\"\n[require]\ngpu = \"required\"\n[crypto]\nfallback = \"never\"\ndecompress = {{ backend = \"auto\" }}\ndecompress_g2 = {{ backend = \"auto\" }}\nmsm = {{ backend = \"auto\" }}\nmsm_shared_u8 = {{ backend = \"auto\" }}\nmsm_g2 = {{ backend = \"auto\" }}\npairing_products = {{ backend = \"auto\" }}\nbls_verify = {{ backend = \"auto\" }}\ncheckpoint_hashing = {{ backend = \"auto\" }}\n[pools]\nconsensus = {{ threads = 1 }}\nexecution = {{ threads = 1 }}\nquery = {{ threads = 1 }}\nidkg = {{ threads = 1 }}\ncheckpoint = {{ threads = 1 }}\np2p_http = {{ threads = 1 }}\n[cost]\ncapex_eur = 1.0\namortisation_months = 1\npower_price_eur_per_kwh = 0.1\nexpected_watts = 1.0\n"
        )
    };
    std::fs::write(dir.path().join("b.toml"), extra("l4-beta")).unwrap();
    std::fs::write(dir.path().join("a.toml"), extra("l4-alpha")).unwrap();
    let set = ProfileSet::embedded_with_overrides(dir.path()).unwrap();
    let selection = set.select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "l4-alpha");
    let explanation = selection.explain();
    assert!(
        explanation.contains(
            &"`l4-beta` also matches with as many criteria (4); `l4-alpha` comes first by name"
                .to_string()
        ),
        "{explanation:#?}"
    );
    assert!(
        explanation
            .contains(&"`cpu-baseline-64` also matches, with fewer criteria (3 < 4)".to_string()),
        "{explanation:#?}"
    );
}

#[test]
fn pins() {
    let facts = sovereign_machine();
    let set = set();
    let pinned = set
        .select(
            &facts,
            Some(Pin {
                name: "development",
                force: false,
            }),
        )
        .unwrap();
    assert_eq!(pinned.selected_by, SelectedBy::Pinned);

    match set.select(
        &facts,
        Some(Pin {
            name: "h200-lab",
            force: false,
        }),
    ) {
        Err(SelectError::PinMismatch { name, mismatches }) => {
            assert_eq!(name, "h200-lab");
            let criteria: Vec<_> = mismatches.iter().map(|m| m.criterion.as_str()).collect();
            assert_eq!(
                criteria,
                [
                    "cpu_vendor",
                    "cpu_model",
                    "logical_cpus",
                    "gpu_model",
                    "gpu_memory_gib"
                ]
            );
        }
        other => panic!("expected a pin mismatch, got {other:?}"),
    }

    let forced = set
        .select(
            &facts,
            Some(Pin {
                name: "h200-lab",
                force: true,
            }),
        )
        .unwrap();
    assert_eq!(forced.selected_by, SelectedBy::ForcedPin);
    assert_eq!(forced.mismatches.len(), 5);
    assert!(
        forced.explain()[0]
            .contains("WITH FORCE although it does not match this machine (5 mismatches)")
    );
    assert!(forced.explain()[1].contains(
        "`h200-lab` mismatch: cpu_vendor: expected `GenuineIntel`, found `AuthenticAMD`"
    ));

    let unknown = set
        .select(
            &facts,
            Some(Pin {
                name: "nope",
                force: true,
            }),
        )
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .starts_with("pinned profile `nope` does not exist (profiles: constrained-gpu, "),
        "{unknown}"
    );
}

#[test]
fn forced_pin_with_cpus_the_machine_lacks_is_not_ready() {
    // The sovereign profile pins CPUs up to 55; force it onto a 16-CPU machine.
    let mut facts = sovereign_machine();
    facts.cpu.online_cpus = Fact::Known("0-15".parse::<CpuSet>().unwrap());
    let selection = set()
        .select(
            &facts,
            Some(Pin {
                name: "sovereign-node",
                force: true,
            }),
        )
        .unwrap();
    assert!(
        selection
            .mismatches
            .iter()
            .any(|m| m.criterion == "pools.execution.cpus"
                && m.expected == "CPUs 4-27 online (embedded:sovereign-node.toml:46:36)"
                && m.found == "online CPUs 0-15"),
        "{:#?}",
        selection.mismatches
    );
    let readiness = selection.readiness(&facts);
    assert!(!readiness.ready);
    let pool_check = readiness
        .checks
        .iter()
        .find(|c| c.requirement == "pool_cpus")
        .unwrap();
    assert!(pool_check.detail.contains("pools.execution.cpus `4-27` (embedded:sovereign-node.toml:46:36) names CPUs 16-27 that are not online (online: 0-15)"), "{}", pool_check.detail);
}

#[test]
fn no_default_and_no_match_is_an_error() {
    let sources = ProfileSet::embedded_sources()
        .filter(|(file, _)| *file != "development.toml")
        .map(|(f, t)| (f.to_string(), t.to_string()));
    let set = ProfileSet::from_sources(sources).unwrap();
    let mut facts = sovereign_machine();
    facts.cpu = cpu("GenuineIntel", "Intel(R) Core(TM) i5", 2, 4);
    match set.select(&facts, None) {
        // Every shipped profile but the development one, each with its reason.
        Err(SelectError::NoMatch { rejected }) => {
            assert_eq!(rejected.len(), ProfileSet::embedded_sources().count() - 1)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn runtime_config_is_written_atomically() {
    let facts = sovereign_machine();
    let selection = set().select(&facts, None).unwrap();
    let config = selection.runtime_config(&facts);
    assert!(config.crypto_notes.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runtime.json");
    std::fs::write(&path, "old").unwrap();
    config.write_atomic(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        hardware_profiles::RuntimeConfig::from_json(&text).unwrap(),
        config
    );
    assert!(
        text.contains("\"p2p_http\": {\n      \"threads\": 16,"),
        "{text}"
    );
    // Only the target is left: the temporary file was renamed, not copied.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert_eq!(config.pools[&PoolKind::Consensus].cpus, [0, 1, 2, 3]);
}
