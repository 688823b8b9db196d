//! Probe of the machine: CPU topology and features (/proc, /sys), memory, SEV-SNP status,
//! NVIDIA GPUs on the PCI bus and through NVML.
//!
//! Every file is read under a root prefix (`/` on a live machine, a fixture tree in tests),
//! and every missing file or failing query becomes a [`Fact::Unknown`] with the reason:
//! the probe never fails and never panics on what it reads.
//!
//! NVML is not under the root: [`NvmlMode::System`] and [`NvmlMode::Child`] query the live
//! driver, so a probe of a fixture tree passes [`NvmlMode::Absent`] with the reason (e.g.
//! "fixture tree").

mod cpu;
mod gpu;
mod memory;
mod sev;

use hardware_profiles::{Fact, MachineFacts};
use std::path::{Path, PathBuf};

pub use cpu::probe_cpu;
pub use gpu::{nvidia_pci_devices, probe_gpus};
pub use memory::probe_memory;
pub use sev::probe_sev_snp;

/// Where GPU facts come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvmlMode {
    /// Load the system's NVML (libnvidia-ml.so.1) in this process and query every GPU.
    System,
    /// Ask a `node-agent nvml` child to do that (the daemon; see [`crate::nvml_child`]).
    Child(crate::nvml_child::NvmlChild),
    /// Do not use NVML; GPUs are reported as unreadable for this reason.
    Absent {
        /// Why NVML is not used, reported for every GPU fact.
        reason: String,
    },
}

impl NvmlMode {
    /// [`NvmlMode::Absent`] for `reason`.
    pub fn absent(reason: impl Into<String>) -> NvmlMode {
        NvmlMode::Absent {
            reason: reason.into(),
        }
    }
}

/// Probes the machine whose /proc, /sys and /dev are under `root`.
pub fn probe(root: &Path, nvml: &NvmlMode) -> MachineFacts {
    MachineFacts {
        cpu: probe_cpu(root),
        memory_total_bytes: probe_memory(root),
        sev_snp: probe_sev_snp(root),
        gpus: probe_gpus(root, nvml),
    }
}

/// `root` joined with an absolute system path.
pub(crate) fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Reads a whole file under `root`; the error names the path.
pub(crate) fn read(root: &Path, path: &str) -> Result<String, String> {
    let full = under(root, path);
    std::fs::read_to_string(&full).map_err(|err| format!("{}: {err}", full.display()))
}

/// A trimmed single-value file parsed with `parse`.
pub(crate) fn read_value<T>(
    root: &Path,
    path: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Fact<T> {
    match read(root, path) {
        Ok(text) => match parse(text.trim()) {
            Some(value) => Fact::Known(value),
            None => Fact::Unknown(format!(
                "{}: unexpected content `{}`",
                under(root, path).display(),
                text.trim()
            )),
        },
        Err(reason) => Fact::Unknown(reason),
    }
}
