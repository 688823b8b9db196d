//! NVIDIA GPUs: on the PCI bus (sysfs, works without a driver) and through NVML.

use super::{NvmlMode, under};
use hardware_profiles::{Fact, GpuFacts, GpuInventory, NvmlStatus, PciDevice};
use nvml_wrapper::Nvml;
use nvml_wrapper::structs::device::ConfidentialComputeGpuCapabilities;
use std::path::Path;

const NVIDIA_VENDOR_ID: &str = "0x10de";

/// NVIDIA display (class 0x0300 VGA, 0x0302 3D controller, ...) devices under
/// /sys/bus/pci/devices, sorted by address. A missing directory is an empty list.
pub fn nvidia_pci_devices(root: &Path) -> Vec<PciDevice> {
    let dir = under(root, "/sys/bus/pci/devices");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let read = |path: &Path, name: &str| {
        std::fs::read_to_string(path.join(name))
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let mut devices: Vec<PciDevice> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let class = read(&path, "class");
            (read(&path, "vendor") == NVIDIA_VENDOR_ID && class.starts_with("0x03")).then(|| {
                PciDevice {
                    address: entry.file_name().to_string_lossy().into_owned(),
                    device_id: read(&path, "device"),
                    class,
                }
            })
        })
        .collect();
    devices.sort_by(|a, b| a.address.cmp(&b.address));
    devices
}

pub fn probe_gpus(root: &Path, mode: &NvmlMode) -> GpuInventory {
    let pci_nvidia = nvidia_pci_devices(root);
    match mode {
        NvmlMode::Absent { reason } => GpuInventory::nvml_absent(reason.clone(), pci_nvidia),
        NvmlMode::System => match Nvml::init() {
            Ok(nvml) => nvml_inventory(&nvml, pci_nvidia),
            Err(err) => GpuInventory::nvml_absent(format!("NVML init failed: {err}"), pci_nvidia),
        },
        // The child's PCI list is of the same root ("/"); this process's is kept.
        NvmlMode::Child(child) => match child.probe() {
            Ok(inventory) => GpuInventory {
                pci_nvidia,
                ..inventory
            },
            Err(reason) => GpuInventory::nvml_absent(reason, pci_nvidia),
        },
    }
}

fn nvml_inventory(nvml: &Nvml, pci_nvidia: Vec<PciDevice>) -> GpuInventory {
    let count = match nvml.device_count() {
        Ok(count) => count,
        Err(err) => {
            return GpuInventory::nvml_absent(
                format!("NVML device count failed: {err}"),
                pci_nvidia,
            );
        }
    };
    GpuInventory {
        nvml: NvmlStatus::Available {
            driver_version: nvml.sys_driver_version().into(),
        },
        gpus: (0..count).map(|index| gpu_facts(nvml, index)).collect(),
        pci_nvidia,
    }
}

fn gpu_facts(nvml: &Nvml, index: u32) -> GpuFacts {
    let device = match nvml.device_by_index(index) {
        Ok(device) => device,
        Err(err) => {
            let reason = format!("NVML device {index}: {err}");
            let unknown = || Fact::Unknown(reason.clone());
            return GpuFacts {
                index,
                name: unknown(),
                uuid: unknown(),
                pci_bus_id: unknown(),
                memory_total_bytes: Fact::Unknown(reason.clone()),
                compute_capability: unknown(),
                cc_capable: Fact::Unknown(reason.clone()),
                cc_enabled: Fact::Unknown(reason.clone()),
                cc_dev_tools_mode: Fact::Unknown(reason.clone()),
                cc_ready: Fact::Unknown(reason.clone()),
                ecc_enabled: Fact::Unknown(reason.clone()),
            };
        }
    };
    GpuFacts {
        index,
        name: device.name().into(),
        uuid: device.uuid().into(),
        pci_bus_id: Fact::from(device.pci_info()).map(|pci| pci.bus_id),
        memory_total_bytes: Fact::from(device.memory_info()).map(|m| m.total),
        compute_capability: Fact::from(device.cuda_compute_capability())
            .map(|cc| format!("{}.{}", cc.major, cc.minor)),
        cc_capable: Fact::from(device.get_confidential_compute_capabilities())
            .map(|caps| caps.gpus_caps == ConfidentialComputeGpuCapabilities::Capable),
        cc_enabled: device.is_cc_enabled().into(),
        cc_dev_tools_mode: device.is_cc_dev_mode_enabled().into(),
        cc_ready: device.get_confidential_compute_state().into(),
        ecc_enabled: Fact::from(device.is_ecc_enabled()).map(|ecc| ecc.currently_enabled),
    }
}
