//! The probe on fixture trees of real machine shapes (see fixtures/README.md), and the
//! profile selection on what it finds. NVML is absent in every fixture run (it is not
//! under the root); the H200 lab machine's NVML facts recorded on the device are
//! exercised separately.

use hardware_profiles::{
    CpuFeatures, Fact, GpuInventory, MachineFacts, NvmlStatus, ProfileSet, SelectedBy, SevSnpState,
};
use node_agent::probe::{NvmlMode, probe};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn probe_fixture(name: &str) -> MachineFacts {
    probe(&fixture(name), &NvmlMode::absent("fixture tree"))
}

struct Topology {
    vendor: &'static str,
    model_name: &'static str,
    family: u32,
    model: u32,
    online: &'static str,
    cores: u32,
    sockets: u32,
    numa: u32,
    hypervisor: bool,
    mem_kib: u64,
}

#[track_caller]
fn assert_topology(facts: &MachineFacts, t: Topology) {
    let cpu = &facts.cpu;
    assert_eq!(cpu.vendor, Fact::Known(t.vendor.to_string()));
    assert_eq!(cpu.model_name, Fact::Known(t.model_name.to_string()));
    assert_eq!(cpu.family, Fact::Known(t.family));
    assert_eq!(cpu.model, Fact::Known(t.model));
    assert_eq!(
        cpu.online_cpus.known().map(|s| s.to_string()),
        Some(t.online.to_string())
    );
    assert_eq!(cpu.physical_cores, Fact::Known(t.cores));
    assert_eq!(cpu.sockets, Fact::Known(t.sockets));
    assert_eq!(cpu.numa_nodes, Fact::Known(t.numa));
    assert_eq!(cpu.hypervisor, t.hypervisor);
    assert_eq!(facts.memory_total_bytes, Fact::Known(t.mem_kib * 1024));
}

#[test]
fn epyc_9354p_snp_guest() {
    let facts = probe_fixture("epyc-9354p-snp-guest");
    assert_topology(
        &facts,
        Topology {
            vendor: "AuthenticAMD",
            model_name: "AMD EPYC 9354P 32-Core Processor",
            family: 25,
            model: 17,
            online: "0-63",
            cores: 32,
            sockets: 1,
            numa: 1,
            hypervisor: true,
            mem_kib: 263_921_664,
        },
    );
    assert_eq!(
        facts.cpu.features,
        CpuFeatures {
            sha_ni: true,
            adx: true,
            bmi2: true,
            avx2: true,
            avx512f: true,
            avx512ifma: true,
            vaes: true,
        }
    );
    assert_eq!(facts.sev_snp.state, SevSnpState::Guest);
    assert!(facts.sev_snp.guest_device);
    assert_eq!(
        facts.sev_snp.evidence[0], "/dev/sev-guest present",
        "{:?}",
        facts.sev_snp.evidence
    );
    assert_eq!(facts.gpus.pci_nvidia.len(), 1);
    assert_eq!(facts.gpus.pci_nvidia[0].device_id, "0x2bb5");

    // Recognised as the sovereign node by its CPU, memory and the NVIDIA GPU on the bus;
    // the GPU criteria cannot be verified without NVML, and readiness refuses.
    let selection = ProfileSet::embedded()
        .unwrap()
        .select(&facts, None)
        .unwrap();
    assert_eq!(selection.profile.name, "sovereign-node");
    assert_eq!(selection.selected_by, SelectedBy::MostSpecificMatch);
    let explanation = selection.explain();
    assert_eq!(
        explanation[0],
        "selected `sovereign-node` (embedded:sovereign-node.toml): the matching profile with the most criteria (8)"
    );
    assert_eq!(
        explanation[1],
        "  `sovereign-node` not verified: gpu_model: expected `NVIDIA RTX PRO 6000 Blackwell*`, found unverifiable: NVML unavailable (fixture tree) but 1 NVIDIA GPU(s) on the PCI bus (0000:01:00.0 device 0x2bb5)"
    );
    let readiness = selection.readiness(&facts);
    assert!(!readiness.ready);
    let by_requirement = |name: &str| {
        readiness
            .checks
            .iter()
            .find(|c| c.requirement == name)
            .unwrap()
    };
    assert!(by_requirement("sev_snp").satisfied);
    assert!(!by_requirement("gpu").satisfied);
    assert_eq!(
        by_requirement("gpu").detail,
        "GPU required but not usable: no GPU: NVML unavailable: fixture tree; 1 NVIDIA GPU(s) on the PCI bus"
    );
    assert!(!by_requirement("gpu_cc").satisfied);
    assert!(by_requirement("pool_cpus").satisfied);
}

#[test]
fn ryzen_9900x_research_box() {
    let facts = probe_fixture("ryzen-9900x");
    assert_topology(
        &facts,
        Topology {
            vendor: "AuthenticAMD",
            model_name: "AMD Ryzen 9 9900X 12-Core Processor",
            family: 26,
            model: 68,
            online: "0-23",
            cores: 12,
            sockets: 1,
            numa: 1,
            hypervisor: false,
            mem_kib: 65_011_712,
        },
    );
    assert!(facts.cpu.features.sha_ni && facts.cpu.features.avx512ifma);
    assert_eq!(facts.sev_snp.state, SevSnpState::Absent);
    // The GPU's HDMI audio function (class 0x0403) is not a GPU.
    assert_eq!(facts.gpus.pci_nvidia.len(), 1);

    let selection = ProfileSet::embedded()
        .unwrap()
        .select(&facts, None)
        .unwrap();
    assert_eq!(selection.profile.name, "research-box");
    // GPU preferred: ready, with every path on the CPU, said so.
    let readiness = selection.readiness(&facts);
    assert!(readiness.ready, "{:?}", readiness.reasons());
    let config = selection.runtime_config(&facts);
    assert!(!config.crypto.wants_gpu());
    assert_eq!(
        config.crypto_notes,
        [
            "GPU preferred but not usable (NVML unavailable: fixture tree; 1 NVIDIA GPU(s) on the PCI bus): all crypto paths set to cpu"
        ]
    );
}

#[test]
fn this_ci_machine() {
    let facts = probe_fixture("ci-2core");
    assert_topology(
        &facts,
        Topology {
            vendor: "GenuineIntel",
            model_name: "Intel(R) Xeon(R) Processor",
            family: 6,
            model: 207,
            online: "0-1",
            cores: 2,
            sockets: 1,
            numa: 1,
            hypervisor: true,
            mem_kib: 24_684_084,
        },
    );
    assert!(facts.cpu.features.sha_ni && facts.cpu.features.adx && facts.cpu.features.avx512f);
    assert_eq!(facts.sev_snp.state, SevSnpState::Absent);
    assert!(facts.gpus.pci_nvidia.is_empty());

    let selection = ProfileSet::embedded()
        .unwrap()
        .select(&facts, None)
        .unwrap();
    assert_eq!(selection.profile.name, "development");
    assert_eq!(selection.selected_by, SelectedBy::DevelopmentDefault);
    let explanation = selection.explain();
    assert!(
        explanation.contains(&"`h200-lab` does not match:".to_string()),
        "{explanation:#?}"
    );
    assert!(
        explanation.contains(&"  logical_cpus: expected 16, found 2".to_string()),
        "{explanation:#?}"
    );
    assert!(
        explanation.contains(&"  gpu_model: expected `NVIDIA H200*`, found no GPU (NVML unavailable: fixture tree; no NVIDIA GPU on the PCI bus)".to_string()),
        "{explanation:#?}"
    );
    let readiness = selection.readiness(&facts);
    assert!(readiness.ready);
    assert!(readiness.checks.is_empty());
    assert!(!selection.runtime_config(&facts).crypto.wants_gpu());
}

#[test]
fn nvml_absent_is_reported_with_its_reason() {
    let facts = probe_fixture("ci-2core");
    assert_eq!(
        facts.gpus.nvml,
        NvmlStatus::Absent {
            reason: "fixture tree".into()
        }
    );
    assert!(facts.gpus.gpus.is_empty());
}

#[test]
fn an_empty_root_is_all_unknown_not_a_crash() {
    let empty = tempfile::tempdir().unwrap();
    let facts = probe(empty.path(), &NvmlMode::absent("test"));
    let Fact::Unknown(reason) = &facts.cpu.vendor else {
        panic!("{:?}", facts.cpu.vendor)
    };
    assert!(
        reason.ends_with("proc/cpuinfo: No such file or directory (os error 2)"),
        "{reason}"
    );
    assert!(matches!(facts.cpu.online_cpus, Fact::Unknown(_)));
    assert!(matches!(facts.cpu.physical_cores, Fact::Unknown(_)));
    assert!(matches!(facts.memory_total_bytes, Fact::Unknown(_)));
    assert_eq!(facts.sev_snp.state, SevSnpState::Absent);
    assert_eq!(facts.gpus, GpuInventory::nvml_absent("test", Vec::new()));
    // Nothing known: only the development default matches.
    let selection = ProfileSet::embedded()
        .unwrap()
        .select(&facts, None)
        .unwrap();
    assert_eq!(selection.profile.name, "development");
}

#[test]
fn garbage_files_are_unknown_facts() {
    let root = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let full = root.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    write(
        "proc/cpuinfo",
        "processor : 0\ncpu family : six\n\nprocessor : 1\n",
    );
    write("proc/meminfo", "MemTotal: lots\n");
    write("sys/devices/system/cpu/online", "0-\n");
    write("sys/module/kvm_amd/parameters/sev_snp", "maybe\n");
    let facts = probe(root.path(), &NvmlMode::absent("test"));
    assert_eq!(
        facts.cpu.family,
        Fact::Unknown("/proc/cpuinfo: `cpu family` is `six`".into())
    );
    assert_eq!(
        facts.cpu.vendor,
        Fact::Unknown("/proc/cpuinfo: no `vendor_id` field".into())
    );
    // sysfs online unreadable: the processor ids of /proc/cpuinfo are used.
    assert_eq!(
        facts.cpu.online_cpus.known().map(|s| s.to_string()),
        Some("0-1".into())
    );
    assert!(matches!(facts.cpu.physical_cores, Fact::Unknown(_)));
    assert!(matches!(facts.memory_total_bytes, Fact::Unknown(_)));
    assert!(matches!(facts.sev_snp.kvm_amd_sev_snp, Fact::Unknown(_)));
}

fn h200_topology() -> Topology {
    Topology {
        vendor: "GenuineIntel",
        model_name: "Intel(R) Xeon(R) Processor",
        family: 6,
        model: 207,
        online: "0-15",
        cores: 16,
        sockets: 1,
        numa: 1,
        hypervisor: true,
        mem_kib: 131_981_020,
    }
}

#[test]
fn h200_lab_vm_without_nvml() {
    let facts = probe_fixture("h200-lab");
    assert_topology(&facts, h200_topology());
    assert!(facts.cpu.features.sha_ni && facts.cpu.features.adx && facts.cpu.features.avx512f);
    assert_eq!(facts.sev_snp.state, SevSnpState::Absent);
    assert_eq!(facts.gpus.pci_nvidia.len(), 1);
    assert_eq!(facts.gpus.pci_nvidia[0].device_id, "0x2335");

    // Recognised by its CPU shape and the H200 on the bus, but the GPU is required.
    let selection = ProfileSet::embedded()
        .unwrap()
        .select(&facts, None)
        .unwrap();
    assert_eq!(selection.profile.name, "h200-lab");
    assert_eq!(selection.unverified.len(), 2);
    let readiness = selection.readiness(&facts);
    assert!(!readiness.ready);
    assert_eq!(
        readiness.reasons(),
        [
            "GPU required but not usable: no GPU: NVML unavailable: fixture tree; 1 NVIDIA GPU(s) on the PCI bus"
        ]
    );
}

/// NVML facts recorded on the H200 lab machine in the same run that captured the tree
/// (fixtures/README.md): real data, not a stand-in for NVML.
fn recorded_h200_facts() -> MachineFacts {
    serde_json::from_str(include_str!("fixtures/h200-lab-facts.json")).unwrap()
}

#[test]
fn h200_lab_with_its_recorded_nvml_facts_is_ready() {
    let recorded = recorded_h200_facts();
    let probed = probe_fixture("h200-lab");
    // The tree and the facts come from one run: everything but NVML agrees.
    assert_eq!(probed.cpu, recorded.cpu);
    assert_eq!(probed.memory_total_bytes, recorded.memory_total_bytes);
    assert_eq!(probed.sev_snp.state, recorded.sev_snp.state);
    assert_eq!(probed.gpus.pci_nvidia, recorded.gpus.pci_nvidia);

    let gpu = &recorded.gpus.gpus[0];
    assert_eq!(gpu.name, Fact::Known("NVIDIA H200".into()));
    assert_eq!(gpu.memory_total_bytes, Fact::Known(143_771 << 20));
    assert_eq!(gpu.compute_capability, Fact::Known("9.0".into()));
    // CC-capable, CC off, so not in the ready state; ECC on.
    assert_eq!(gpu.cc_capable, Fact::Known(true));
    assert_eq!(gpu.cc_enabled, Fact::Known(false));
    assert_eq!(gpu.cc_ready, Fact::Known(false));
    assert_eq!(gpu.ecc_enabled, Fact::Known(true));

    let facts = MachineFacts {
        gpus: recorded.gpus.clone(),
        ..probed
    };
    let set = ProfileSet::embedded().unwrap();
    let selection = set.select(&facts, None).unwrap();
    assert_eq!(selection.profile.name, "h200-lab");
    assert!(selection.unverified.is_empty());
    assert_eq!(
        selection.explain()[0],
        "selected `h200-lab` (embedded:h200-lab.toml): the matching profile with the most criteria (6)"
    );
    let readiness = selection.readiness(&facts);
    assert!(readiness.ready, "{:?}", readiness.reasons());
    assert_eq!(readiness.checks[0].detail, "GPU 0 usable: NVIDIA H200");
    let config = selection.runtime_config(&facts);
    assert!(config.crypto.wants_gpu());
    assert!(config.crypto_notes.is_empty());

    // The same machine pinned as a sovereign node: refused without force, and with force
    // not ready (no SEV-SNP, CC off, CPU sets beyond its 16 CPUs).
    let pin = |force| hardware_profiles::Pin {
        name: "sovereign-node",
        force,
    };
    assert!(set.select(&facts, Some(pin(false))).is_err());
    let forced = set.select(&facts, Some(pin(true))).unwrap();
    assert_eq!(forced.selected_by, SelectedBy::ForcedPin);
    let reasons = forced.readiness(&facts).reasons();
    assert_eq!(reasons.len(), 3, "{reasons:#?}");
    assert!(reasons[0].starts_with("SEV-SNP required but absent"));
    assert_eq!(
        reasons[1],
        "GPU CC required but GPU 0 is not in production CC mode (cc_enabled false, dev_tools_mode false, ready false)"
    );
    assert!(reasons[2].starts_with("pools.execution.cpus `4-27`"));
}
