//! GPU telemetry, read on the collector's interval (never per request): NVML samples from a
//! `node-agent nvml` child with the Xid counts of the kernel log ([`super::xid`]), or
//! recorded samples.

use super::xid::XidWatcher;
use crate::nvml::NvmlSampler;
use crate::nvml_child::NvmlChild;
use crate::snapshot::GpuSample;

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
