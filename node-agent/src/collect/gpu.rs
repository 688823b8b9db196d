//! GPU telemetry, read on the collector's interval (never per request): NVML samples from a
//! `node-agent nvml` child with the Xid counts of the kernel log ([`super::xid`]), or
//! recorded samples.

use super::xid::XidWatcher;
use super::{Collector, Reading};
use crate::clock::Clock;
use crate::metric_family::{FamilyWriter, Labels, flag, hertz, watts};
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

/// The GPU collector (`gpu`): one sample of its source per pass.
impl Collector for Box<dyn GpuSource> {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn collect(&mut self, _clock: &dyn Clock) -> Result<Reading, String> {
        self.sample().map(Reading::Gpus)
    }
}

/// The daemon's GPU source: each sample from a `node-agent nvml` child, with the Xids of the
/// kernel log attributed by PCI bus id.
pub struct ChildGpuSource {
    child: NvmlChild,
    xid: XidWatcher,
}

impl ChildGpuSource {
    pub(crate) fn new(child: NvmlChild, xid: XidWatcher) -> ChildGpuSource {
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

/// Samples of a family: label set and value.
type Samples = Vec<(Labels, f64)>;

/// The GPU collector's metric families, one sample per GPU and reading.
pub fn encode_metrics(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    encode_identity(gpus, families)?;
    encode_power(gpus, families)?;
    encode_load(gpus, families)?;
    encode_clocks(gpus, families)?;
    encode_errors(gpus, families)
}

/// One sample per GPU where `reading` has a value, labelled with the GPU's index.
fn per_gpu(gpus: &[GpuSample], reading: impl Fn(&GpuSample) -> Option<f64>) -> Samples {
    gpus.iter()
        .filter_map(|gpu| reading(gpu).map(|value| (vec![("gpu", gpu.index.to_string())], value)))
        .collect()
}

/// One sample per GPU and kind of reading that has a value, labelled with the GPU's index
/// and the kind under `label`.
fn per_gpu_and_kind<const N: usize>(
    gpus: &[GpuSample],
    label: &'static str,
    readings: impl Fn(&GpuSample) -> [(&'static str, Option<f64>); N],
) -> Samples {
    gpus.iter()
        .flat_map(|gpu| {
            readings(gpu).into_iter().filter_map(move |(kind, value)| {
                value.map(|value| {
                    (
                        vec![("gpu", gpu.index.to_string()), (label, kind.to_string())],
                        value,
                    )
                })
            })
        })
        .collect()
}

/// What each GPU is and whether confidential-computing mode is on.
fn encode_identity(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_gpu_info",
        "GPUs NVML reports.",
        None,
        &gpus
            .iter()
            .map(|gpu| {
                (
                    vec![
                        ("gpu", gpu.index.to_string()),
                        ("name", gpu.name.clone()),
                        ("uuid", gpu.uuid.clone()),
                        ("driver_version", gpu.driver_version.clone()),
                    ],
                    1.0,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_gpu_cc_mode_enabled",
        "Whether NVIDIA confidential-computing mode is on.",
        None,
        &per_gpu(gpus, |gpu| gpu.cc_enabled.map(flag)),
    )
}

/// Power draw, energy and temperature.
fn encode_power(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_gpu_power",
        "GPU power draw.",
        Some(watts()),
        &per_gpu(gpus, |gpu| gpu.power_watts),
    )?;
    families.counter(
        "sovereign_gpu_energy",
        "GPU energy since the driver loaded (NVML counter).",
        Some(Unit::Joules),
        &per_gpu(gpus, |gpu| gpu.energy_joules),
    )?;
    families.gauge(
        "sovereign_gpu_temperature",
        "GPU core temperature.",
        Some(Unit::Celsius),
        &per_gpu(gpus, |gpu| gpu.temperature_celsius),
    )
}

/// Utilisation and memory use.
fn encode_load(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_gpu_utilization",
        "Fraction of the last sample period the GPU was busy (NVML utilisation).",
        Some(Unit::Other("ratio".to_string())),
        &per_gpu_and_kind(gpus, "kind", |gpu| {
            [
                ("gpu", gpu.utilization_gpu_ratio),
                ("memory", gpu.utilization_memory_ratio),
            ]
        }),
    )?;
    families.gauge(
        "sovereign_gpu_memory_used",
        "GPU memory in use.",
        Some(Unit::Bytes),
        &per_gpu(gpus, |gpu| gpu.memory_used_bytes.map(|bytes| bytes as f64)),
    )?;
    families.gauge(
        "sovereign_gpu_memory_total",
        "GPU memory installed.",
        Some(Unit::Bytes),
        &per_gpu(gpus, |gpu| gpu.memory_total_bytes.map(|bytes| bytes as f64)),
    )
}

/// Current clocks and the active throttle reasons.
fn encode_clocks(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_gpu_clock",
        "Current GPU clocks.",
        Some(hertz()),
        &per_gpu_and_kind(gpus, "clock", |gpu| {
            [
                ("graphics", gpu.clock_graphics_hertz),
                ("sm", gpu.clock_sm_hertz),
                ("memory", gpu.clock_memory_hertz),
            ]
        }),
    )?;
    families.gauge(
        "sovereign_gpu_throttle_reason_active",
        "Clock throttle reasons NVML reports as active (absent: none).",
        None,
        &gpus
            .iter()
            .flat_map(|gpu| {
                gpu.throttle_reasons_active.iter().map(|reason| {
                    (
                        vec![("gpu", gpu.index.to_string()), ("reason", reason.clone())],
                        1.0,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )
}

/// ECC memory errors and the Xids of the kernel log.
fn encode_errors(gpus: &[GpuSample], families: &mut FamilyWriter) -> fmt::Result {
    families.counter(
        "sovereign_gpu_ecc_errors",
        "ECC memory errors since the driver loaded (NVML volatile counters).",
        None,
        &per_gpu_and_kind(gpus, "type", |gpu| {
            [
                (
                    "corrected",
                    gpu.ecc_corrected_errors_total.map(|n| n as f64),
                ),
                (
                    "uncorrected",
                    gpu.ecc_uncorrected_errors_total.map(|n| n as f64),
                ),
            ]
        }),
    )?;
    families.counter(
        "sovereign_gpu_xid_errors",
        "NVIDIA Xid errors of the GPU in the kernel log since the agent started.",
        None,
        &gpus
            .iter()
            .flat_map(|gpu| {
                gpu.xid_errors.iter().map(|(xid, count)| {
                    (
                        vec![("gpu", gpu.index.to_string()), ("xid", xid.to_string())],
                        *count as f64,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )
}
