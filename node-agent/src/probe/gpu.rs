//! NVIDIA GPUs: on the PCI bus (sysfs, works without a driver) and through NVML.

use super::{NvmlMode, under};
use hardware_profiles::{GpuInventory, PciDevice};
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

/// The NVIDIA GPUs: the PCI devices under `root` and, through `mode`, each GPU's facts
/// from NVML (unknown, with the reason, where NVML is absent or fails).
pub fn probe_gpus(root: &Path, mode: &NvmlMode) -> GpuInventory {
    let pci_nvidia = nvidia_pci_devices(root);
    match mode {
        NvmlMode::Absent { reason } => GpuInventory::nvml_absent(reason.clone(), pci_nvidia),
        NvmlMode::System => crate::nvml::inventory(pci_nvidia),
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
