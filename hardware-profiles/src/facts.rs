//! What the probe found on a machine. The node agent's probe fills these in; profiles
//! are matched against them. Every fact that could not be established says why
//! ([`Fact::Unknown`]) instead of defaulting to a plausible value.

use crate::cpulist::CpuSet;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A probed value, or the reason it could not be established.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    /// The value the probe read.
    Known(T),
    /// Why the probe could not read it.
    Unknown(String),
}

impl<T> Fact<T> {
    /// An unknown value, with the reason.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Fact::Unknown(reason.into())
    }

    /// The value, when known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(value) => Some(value),
            Fact::Unknown(_) => None,
        }
    }

    /// Applies `f` to a known value; an unknown one keeps its reason.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Fact<U> {
        match self {
            Fact::Known(value) => Fact::Known(f(value)),
            Fact::Unknown(reason) => Fact::Unknown(reason),
        }
    }
}

impl<T, E: fmt::Display> From<Result<T, E>> for Fact<T> {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(value) => Fact::Known(value),
            Err(err) => Fact::Unknown(err.to_string()),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Fact<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fact::Known(value) => value.fmt(f),
            Fact::Unknown(reason) => write!(f, "unknown ({reason})"),
        }
    }
}

/// Everything the profiles are matched against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    /// The processors.
    pub cpu: CpuFacts,
    /// `MemTotal` of /proc/meminfo (usable RAM, below the installed size).
    pub memory_total_bytes: Fact<u64>,
    /// Where the machine stands with SEV-SNP.
    pub sev_snp: SevSnpFacts,
    /// NVML and the GPUs.
    pub gpus: GpuInventory,
}

impl MachineFacts {
    /// `memory_total_bytes` in whole GiB, rounded down (what `memory_gib` criteria see).
    pub fn memory_gib(&self) -> Fact<u64> {
        self.memory_total_bytes.clone().map(|bytes| bytes >> 30)
    }
}

/// The processors, from /proc/cpuinfo and /sys/devices/system/cpu.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFacts {
    /// `vendor_id`: "AuthenticAMD", "GenuineIntel".
    pub vendor: Fact<String>,
    /// `model name` of the first processor.
    pub model_name: Fact<String>,
    /// `cpu family` of the first processor.
    pub family: Fact<u32>,
    /// `model` (the number) of the first processor.
    pub model: Fact<u32>,
    /// Online logical CPUs (/sys/devices/system/cpu/online).
    pub online_cpus: Fact<CpuSet>,
    /// Distinct (package, core) pairs among the online CPUs.
    pub physical_cores: Fact<u32>,
    /// Distinct physical packages among the online CPUs.
    pub sockets: Fact<u32>,
    /// Online NUMA nodes (/sys/devices/system/node/online).
    pub numa_nodes: Fact<u32>,
    /// True when the `hypervisor` CPU flag is set: this is a virtual machine.
    pub hypervisor: bool,
    /// Features the crypto paths care about, from the first processor's flags.
    pub features: CpuFeatures,
    /// All flags of the first processor, sorted.
    pub flags: Vec<String>,
}

impl CpuFacts {
    /// How many CPUs are online (what `logical_cpus` criteria see).
    pub fn logical_cpus(&self) -> Fact<u32> {
        self.online_cpus.clone().map(|set| set.len() as u32)
    }
}

/// CPU flags the crypto paths can use (each true when /proc/cpuinfo lists it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuFeatures {
    /// SHA extensions (`sha_ni`): hardware SHA-256.
    pub sha_ni: bool,
    /// `adx`: add-with-carry instructions for multi-precision arithmetic.
    pub adx: bool,
    /// `bmi2`: `mulx` and friends for multi-precision arithmetic.
    pub bmi2: bool,
    /// `avx2`: 256-bit integer vectors.
    pub avx2: bool,
    /// `avx512f`: AVX-512 foundation.
    pub avx512f: bool,
    /// `avx512ifma`: 52-bit integer fused multiply-add.
    pub avx512ifma: bool,
    /// `vaes`: vector AES.
    pub vaes: bool,
}

/// Where the probe places this machine with respect to AMD SEV-SNP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SevSnpState {
    /// This is a SEV-SNP guest: /dev/sev-guest exists (the sev-guest driver binds only
    /// in an SNP guest) or the guest kernel reports the `sev_snp` flag under a hypervisor.
    Guest,
    /// A host whose KVM may launch SNP guests (kvm_amd `sev_snp` parameter is on). The
    /// code on this host is *not* itself protected.
    Host,
    /// Neither.
    Absent,
}

impl SevSnpState {
    /// The profile's spelling: `guest`, `host` or `absent`.
    pub fn name(self) -> &'static str {
        match self {
            SevSnpState::Guest => "guest",
            SevSnpState::Host => "host",
            SevSnpState::Absent => "absent",
        }
    }
}

impl fmt::Display for SevSnpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the probe saw of SEV-SNP, and its conclusion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SevSnpFacts {
    /// The conclusion drawn from the observations below.
    pub state: SevSnpState,
    /// /dev/sev-guest exists.
    pub guest_device: bool,
    /// `sev_snp` is among the /proc/cpuinfo flags.
    pub cpuinfo_flag: bool,
    /// /sys/module/kvm_amd/parameters/sev_snp (hosts only).
    pub kvm_amd_sev_snp: Fact<bool>,
    /// One line per observation that led to `state`.
    pub evidence: Vec<String>,
}

/// NVML and the GPUs it sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInventory {
    /// Whether NVML could be loaded and initialised.
    pub nvml: NvmlStatus,
    /// The GPUs NVML lists (empty without NVML).
    pub gpus: Vec<GpuFacts>,
    /// NVIDIA display/3D controllers on the PCI bus (/sys/bus/pci/devices), seen with or
    /// without a driver: tells "GPU present, NVML broken" from "no GPU".
    pub pci_nvidia: Vec<PciDevice>,
}

/// One PCI device, as /sys/bus/pci/devices shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// e.g. "0000:01:00.0".
    pub address: String,
    /// PCI device id, e.g. "0x2335".
    pub device_id: String,
    /// PCI class, e.g. "0x030200" (3D controller).
    pub class: String,
}

impl GpuInventory {
    /// No NVML: no GPU can be seen, for the given reason.
    pub fn nvml_absent(reason: impl Into<String>, pci_nvidia: Vec<PciDevice>) -> Self {
        GpuInventory {
            nvml: NvmlStatus::Absent {
                reason: reason.into(),
            },
            gpus: Vec::new(),
            pci_nvidia,
        }
    }

    /// NVML is unavailable but NVIDIA GPUs are on the PCI bus: GPU facts cannot be read.
    pub fn unreadable(&self) -> Option<String> {
        match &self.nvml {
            NvmlStatus::Absent { reason } if !self.pci_nvidia.is_empty() => Some(format!(
                "NVML unavailable ({reason}) but {} NVIDIA GPU(s) on the PCI bus ({})",
                self.pci_nvidia.len(),
                self.pci_nvidia
                    .iter()
                    .map(|d| format!("{} device {}", d.address, d.device_id))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        }
    }

    /// Why no GPU is listed, when none is.
    pub fn absence_reason(&self) -> Option<String> {
        if !self.gpus.is_empty() {
            return None;
        }
        let pci = match self.pci_nvidia.len() {
            0 => "no NVIDIA GPU on the PCI bus".to_string(),
            n => format!("{n} NVIDIA GPU(s) on the PCI bus"),
        };
        Some(match &self.nvml {
            NvmlStatus::Absent { reason } => format!("NVML unavailable: {reason}; {pci}"),
            NvmlStatus::Available { .. } => format!("NVML reports no GPU; {pci}"),
        })
    }
}

/// Whether NVML is usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum NvmlStatus {
    /// NVML initialised; its GPU list is authoritative.
    Available {
        /// Kernel driver version, e.g. "580.95.05". The CUDA driver API version is not
        /// probed here: asking NVML for it loads libcuda.so into the caller, and the
        /// daemon keeps CUDA out of its address space (the GPU selftest child reports it).
        driver_version: Fact<String>,
    },
    /// NVML could not be loaded or initialised.
    Absent {
        /// Why.
        reason: String,
    },
}

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// NVML device index.
    pub index: u32,
    /// e.g. "NVIDIA H200", "NVIDIA RTX PRO 6000 Blackwell Server Edition".
    pub name: Fact<String>,
    /// NVML's UUID, `GPU-...`.
    pub uuid: Fact<String>,
    /// PCI address, e.g. "00000000:01:00.0".
    pub pci_bus_id: Fact<String>,
    /// Total device memory in bytes.
    pub memory_total_bytes: Fact<u64>,
    /// CUDA compute capability, "major.minor".
    pub compute_capability: Fact<String>,
    /// The system's GPUs can run in confidential-compute mode.
    pub cc_capable: Fact<bool>,
    /// Confidential-compute mode is on.
    pub cc_enabled: Fact<bool>,
    /// CC developer-tools mode (debuggable, not for production).
    pub cc_dev_tools_mode: Fact<bool>,
    /// CC GPUs ready state: accepting work (only meaningful with CC on).
    pub cc_ready: Fact<bool>,
    /// ECC memory is on (current mode).
    pub ecc_enabled: Fact<bool>,
}

impl GpuFacts {
    /// `memory_total_bytes` in whole GiB, rounded down (what `gpu_memory_gib` sees).
    pub fn memory_gib(&self) -> Fact<u64> {
        self.memory_total_bytes.clone().map(|bytes| bytes >> 30)
    }

    /// Whether the replica can hand this GPU work, and if not, why.
    pub fn usable(&self) -> Result<(), String> {
        if let Fact::Unknown(reason) = &self.memory_total_bytes {
            return Err(format!("GPU {}: memory unreadable ({reason})", self.index));
        }
        match (&self.cc_enabled, &self.cc_ready) {
            (Fact::Known(true), Fact::Known(false)) => Err(format!(
                "GPU {}: confidential compute is on but the GPUs ready state is not set (not accepting work)",
                self.index
            )),
            (Fact::Known(true), Fact::Unknown(reason)) => Err(format!(
                "GPU {}: confidential compute is on but its ready state is unknown ({reason})",
                self.index
            )),
            _ => Ok(()),
        }
    }
}
