//! The probe on this very machine, NVML included: without NVML (CI) the absence is
//! reported with its reason; the NVML test (ignored unless asked for: it needs NVML and a
//! GPU) checks that the GPU facts are read. Set PROBE_FACTS_OUT=<file> to keep the facts
//! as JSON.

use hardware_profiles::{Fact, NvmlStatus};
use node_agent::probe::{NvmlMode, probe};
use std::path::Path;

#[test]
fn probe_of_this_machine() {
    let facts = probe(Path::new("/"), &NvmlMode::System);
    if let Ok(out) = std::env::var("PROBE_FACTS_OUT") {
        std::fs::write(&out, serde_json::to_string_pretty(&facts).unwrap()).unwrap();
    }
    // Linux always has these.
    assert!(facts.cpu.online_cpus.known().is_some(), "{:?}", facts.cpu);
    assert!(facts.memory_total_bytes.known().is_some());
    match &facts.gpus.nvml {
        NvmlStatus::Absent { reason } => {
            assert!(reason.starts_with("NVML init failed: "), "{reason}");
            assert!(facts.gpus.gpus.is_empty());
            assert!(facts.gpus.absence_reason().is_some());
        }
        NvmlStatus::Available { .. } => assert!(!facts.gpus.gpus.is_empty(), "NVML lists no GPU"),
    }
}

#[test]
#[ignore = "needs NVML and an NVIDIA GPU: reads the GPU facts from the driver"]
fn probe_reads_the_gpus_through_nvml() {
    let facts = probe(Path::new("/"), &NvmlMode::System);
    let NvmlStatus::Available { driver_version } = &facts.gpus.nvml else {
        panic!("this test needs NVML: {:?}", facts.gpus.nvml);
    };
    println!("NVML driver {driver_version}");
    assert!(matches!(driver_version, Fact::Known(_)));
    assert!(!facts.gpus.gpus.is_empty(), "NVML lists no GPU");
    for gpu in &facts.gpus.gpus {
        println!("{gpu:?}");
        assert!(matches!(gpu.name, Fact::Known(_)), "{gpu:?}");
        assert!(
            gpu.memory_total_bytes.known().is_some_and(|b| *b > 1 << 30),
            "{gpu:?}"
        );
    }
    // NVML and sysfs see the same GPUs.
    assert_eq!(facts.gpus.pci_nvidia.len(), facts.gpus.gpus.len());
}
