//! NVML in this process: the GPU inventory of the probe and the telemetry samples. The
//! `node-agent nvml` child, `node-agent check` and `sample-gpu` call it; the daemon never
//! does (see [`crate::nvml_child`] for why).

use crate::snapshot::GpuSample;
use hardware_profiles::{Fact, GpuFacts, GpuInventory, NvmlStatus, PciDevice};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{
    Clock, ClockId, EccCounter, MemoryError, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::ConfidentialComputeGpuCapabilities;

/// Every GPU's facts through NVML, with `pci_nvidia` (the PCI bus as sysfs lists it).
pub fn inventory(pci_nvidia: Vec<PciDevice>) -> GpuInventory {
    match Nvml::init() {
        Ok(nvml) => nvml_inventory(&nvml, pci_nvidia),
        Err(err) => GpuInventory::nvml_absent(format!("NVML init failed: {err}"), pci_nvidia),
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

/// One telemetry sample of every GPU through NVML in this process. The daemon samples
/// through a `node-agent nvml` child instead (see [`crate::nvml_child`] for why).
pub struct NvmlSampler {
    nvml: Nvml,
}

impl NvmlSampler {
    /// Loads libnvidia-ml.
    pub fn open() -> Result<NvmlSampler, NvmlError> {
        Ok(NvmlSampler {
            nvml: Nvml::init()?,
        })
    }

    /// One sample per GPU; Err when NVML as a whole cannot be read.
    pub fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        let nvml = &self.nvml;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        let driver_version = nvml.sys_driver_version().unwrap_or_default();
        let mut out = Vec::new();
        for index in 0..count {
            let d = nvml
                .device_by_index(index)
                .map_err(|e| format!("GPU {index}: {e}"))?;
            let mut s = GpuSample {
                index,
                driver_version: driver_version.clone(),
                ..GpuSample::default()
            };
            let mut unsupported = Vec::new();
            fn get<T>(
                what: &str,
                r: Result<T, NvmlError>,
                unsupported: &mut Vec<String>,
            ) -> Option<T> {
                r.map_err(|e| unsupported.push(format!("{what}: {e}"))).ok()
            }
            let u = &mut unsupported;
            s.name = get("name", d.name(), u).unwrap_or_default();
            s.uuid = get("uuid", d.uuid(), u).unwrap_or_default();
            s.pci_bus_id = get("pci bus id", d.pci_info(), u).map(|p| p.bus_id);
            s.power_watts = get("power", d.power_usage(), u).map(|mw| f64::from(mw) / 1e3);
            s.energy_joules =
                get("energy", d.total_energy_consumption(), u).map(|mj| mj as f64 / 1e3);
            s.temperature_celsius =
                get("temperature", d.temperature(TemperatureSensor::Gpu), u).map(f64::from);
            if let Some(util) = get("utilization", d.utilization_rates(), u) {
                s.utilization_gpu_ratio = Some(f64::from(util.gpu) / 100.0);
                s.utilization_memory_ratio = Some(f64::from(util.memory) / 100.0);
            }
            if let Some(mem) = get("memory", d.memory_info(), u) {
                s.memory_used_bytes = Some(mem.used);
                s.memory_total_bytes = Some(mem.total);
            }
            let mhz = |v: u32| f64::from(v) * 1e6;
            s.clock_graphics_hertz = get(
                "clock graphics",
                d.clock(Clock::Graphics, ClockId::Current),
                u,
            )
            .map(mhz);
            s.clock_sm_hertz = get("clock sm", d.clock(Clock::SM, ClockId::Current), u).map(mhz);
            s.clock_memory_hertz =
                get("clock memory", d.clock(Clock::Memory, ClockId::Current), u).map(mhz);
            if let Some(reasons) = get("throttle reasons", d.current_throttle_reasons(), u) {
                s.throttle_reasons_active = reasons
                    .iter_names()
                    .map(|(name, _)| name.to_ascii_lowercase())
                    .collect();
            }
            s.ecc_corrected_errors_total = get(
                "ecc corrected",
                d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
                u,
            );
            s.ecc_uncorrected_errors_total = get(
                "ecc uncorrected",
                d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
                u,
            );
            s.cc_enabled = get("cc mode", d.is_cc_enabled(), u);
            s.unsupported = unsupported;
            out.push(s);
        }
        Ok(out)
    }
}
