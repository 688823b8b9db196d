//! GPU telemetry through NVML, read on the collector's interval (never per request), and
//! the Xid counts of the kernel log ([`super::xid`]).

use super::xid::XidWatcher;
use crate::nvml_child::NvmlChild;
use crate::snapshot::GpuSample;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{
    Clock, ClockId, EccCounter, MemoryError, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;

/// Where GPU samples come from: NVML on a node, or samples recorded from a real GPU.
pub trait GpuSource: Send {
    /// One sample per GPU; Err when the source as a whole cannot be read.
    fn sample(&mut self) -> Result<Vec<GpuSample>, String>;
}

/// NVML in this process: what the `node-agent nvml` child and `sample-gpu` use. The daemon
/// itself samples through [`ChildGpuSource`] (see [`crate::nvml_child`] for why).
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
}

/// The daemon's GPU source: each sample from a `node-agent nvml` child, with the Xids of the
/// kernel log attributed by PCI bus id.
pub struct ChildGpuSource {
    child: NvmlChild,
    xid: XidWatcher,
}

impl ChildGpuSource {
    pub fn new(child: NvmlChild, xid: XidWatcher) -> ChildGpuSource {
        ChildGpuSource { child, xid }
    }
}

impl GpuSource for ChildGpuSource {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        let mut gpus = self.child.sample()?;
        let xid_error = self.xid.error();
        for gpu in &mut gpus {
            gpu.xid_errors = match &gpu.pci_bus_id {
                Some(bus) => self.xid.counts_for(bus),
                None => Vec::new(),
            };
            if let Some(e) = &xid_error {
                gpu.unsupported.push(format!("xid errors: {e}"));
            }
        }
        Ok(gpus)
    }
}

impl GpuSource for NvmlSampler {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
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

/// Samples recorded from a real GPU (JSON lines or a JSON array per sample), replayed in
/// order; the last one repeats. For tests and for running the agent on recorded data.
pub struct RecordedGpuSource {
    samples: Vec<Vec<GpuSample>>,
    next: usize,
}

impl RecordedGpuSource {
    /// `text`: a JSON array of samples, each sample an array of GPUs.
    pub fn from_json(text: &str) -> Result<RecordedGpuSource, serde_json::Error> {
        let samples: Vec<Vec<GpuSample>> = serde_json::from_str(text)?;
        Ok(RecordedGpuSource { samples, next: 0 })
    }
}

impl GpuSource for RecordedGpuSource {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        let i = self.next.min(self.samples.len().saturating_sub(1));
        self.next += 1;
        self.samples
            .get(i)
            .cloned()
            .ok_or_else(|| "no recorded GPU samples".to_string())
    }
}
