//! GPU telemetry, read on the collector's interval (never per request): NVML samples from a
//! `node-agent nvml` child with the Xid counts of the kernel log ([`super::xid`]), or
//! recorded samples.

use super::xid::XidWatcher;
use crate::metric_family::{FamilyWriter, flag, hertz, watts};
use crate::nvml::NvmlSampler;
use crate::nvml_child::NvmlChild;
use crate::snapshot::GpuSample;
use prometheus_client::registry::Unit;
use std::fmt;

/// Where GPU samples come from: NVML on a node, or samples recorded from a real GPU.
pub trait GpuSource: Send {
    /// One sample per GPU; Err when the source as a whole cannot be read.
    fn sample(&mut self) -> Result<Vec<GpuSample>, String>;
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

/// NVML in this process (the `node-agent nvml` child, `sample-gpu`).
impl GpuSource for NvmlSampler {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        NvmlSampler::sample(self)
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

/// The GPU collector's metric families, one sample per GPU and reading.
pub fn encode_metrics(gpus: &[GpuSample], f: &mut FamilyWriter) -> fmt::Result {
    let per_gpu = |get: &dyn Fn(&crate::snapshot::GpuSample) -> Option<f64>| {
        gpus.iter()
            .filter_map(|g| get(g).map(|v| (vec![("gpu", g.index.to_string())], v)))
            .collect::<Vec<_>>()
    };
    f.gauge(
        "sovereign_gpu_info",
        "GPUs NVML reports.",
        None,
        &gpus
            .iter()
            .map(|g| {
                (
                    vec![
                        ("gpu", g.index.to_string()),
                        ("name", g.name.clone()),
                        ("uuid", g.uuid.clone()),
                        ("driver_version", g.driver_version.clone()),
                    ],
                    1.0,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_cc_mode_enabled",
        "Whether NVIDIA confidential-computing mode is on.",
        None,
        &per_gpu(&|g| g.cc_enabled.map(flag)),
    )?;
    f.gauge(
        "sovereign_gpu_power",
        "GPU power draw.",
        Some(watts()),
        &per_gpu(&|g| g.power_watts),
    )?;
    f.counter(
        "sovereign_gpu_energy",
        "GPU energy since the driver loaded (NVML counter).",
        Some(Unit::Joules),
        &per_gpu(&|g| g.energy_joules),
    )?;
    f.gauge(
        "sovereign_gpu_temperature",
        "GPU core temperature.",
        Some(Unit::Celsius),
        &per_gpu(&|g| g.temperature_celsius),
    )?;
    f.gauge(
        "sovereign_gpu_utilization",
        "Fraction of the last sample period the GPU was busy (NVML utilisation).",
        Some(Unit::Other("ratio".to_string())),
        &gpus
            .iter()
            .flat_map(|g| {
                [
                    ("gpu", g.utilization_gpu_ratio),
                    ("memory", g.utilization_memory_ratio),
                ]
                .into_iter()
                .filter_map(|(kind, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("kind", kind.to_string())],
                            v,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_memory_used",
        "GPU memory in use.",
        Some(Unit::Bytes),
        &per_gpu(&|g| g.memory_used_bytes.map(|v| v as f64)),
    )?;
    f.gauge(
        "sovereign_gpu_memory_total",
        "GPU memory installed.",
        Some(Unit::Bytes),
        &per_gpu(&|g| g.memory_total_bytes.map(|v| v as f64)),
    )?;
    f.gauge(
        "sovereign_gpu_clock",
        "Current GPU clocks.",
        Some(hertz()),
        &gpus
            .iter()
            .flat_map(|g| {
                [
                    ("graphics", g.clock_graphics_hertz),
                    ("sm", g.clock_sm_hertz),
                    ("memory", g.clock_memory_hertz),
                ]
                .into_iter()
                .filter_map(|(clock, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("clock", clock.to_string())],
                            v,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_throttle_reason_active",
        "Clock throttle reasons NVML reports as active (absent: none).",
        None,
        &gpus
            .iter()
            .flat_map(|g| {
                g.throttle_reasons_active.iter().map(|r| {
                    (
                        vec![("gpu", g.index.to_string()), ("reason", r.clone())],
                        1.0,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.counter(
        "sovereign_gpu_ecc_errors",
        "ECC memory errors since the driver loaded (NVML volatile counters).",
        None,
        &gpus
            .iter()
            .flat_map(|g| {
                [
                    ("corrected", g.ecc_corrected_errors_total),
                    ("uncorrected", g.ecc_uncorrected_errors_total),
                ]
                .into_iter()
                .filter_map(|(kind, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("type", kind.to_string())],
                            v as f64,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.counter(
        "sovereign_gpu_xid_errors",
        "NVIDIA Xid errors of the GPU in the kernel log since the agent started.",
        None,
        &gpus
            .iter()
            .flat_map(|g| {
                g.xid_errors.iter().map(|(xid, n)| {
                    (
                        vec![("gpu", g.index.to_string()), ("xid", xid.to_string())],
                        *n as f64,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )?;
    Ok(())
}
