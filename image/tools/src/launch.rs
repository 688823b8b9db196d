//! Expected SEV-SNP launch digest for measured direct boot.

use anyhow::{Context, bail};
use serde::Serialize;
use sev::measurement::snp::{SnpMeasurementArgs, calc_snp_ovmf_hash, snp_calc_launch_digest};
use sev::measurement::vcpu_types::CpuType;
use sev::measurement::vmsa::{GuestFeatures, VMMType};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What the host's VMM launches the guest with.
#[derive(Debug, Clone)]
pub struct LaunchInputs {
    /// OVMF AmdSevX64 firmware (carries the SEV kernel-hashes table).
    pub ovmf: PathBuf,
    /// The kernel image (`-kernel`).
    pub kernel: PathBuf,
    /// The initrd (`-initrd`).
    pub initrd: PathBuf,
    /// The kernel command line exactly as passed to the VMM (`-append`).
    pub cmdline: String,
    /// Number of vCPUs (at least 1): one VMSA is measured per vCPU.
    pub vcpus: u32,
    /// QEMU CPU model name, e.g. `EPYC-v4`.
    pub vcpu_type: String,
    /// SEV_FEATURES of the VMSA (bit 0: SNPActive).
    pub guest_features: u64,
}

/// The digest and every input it was computed from, by hash.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LaunchMeasurement {
    /// 48 bytes, hex: the MEASUREMENT field of a genuine node's attestation report.
    pub launch_digest: String,
    /// As [`LaunchInputs::vcpus`].
    pub vcpus: u32,
    /// As [`LaunchInputs::vcpu_type`].
    pub vcpu_type: String,
    /// [`LaunchInputs::guest_features`] in hex with 0x prefix.
    pub guest_features: String,
    /// The VMM the digest is computed for: always `QEMU`.
    pub vmm_type: &'static str,
    /// SHA-256 (hex) of the OVMF file.
    pub ovmf_sha256: String,
    /// The launch digest after OVMF's pages alone (`sev-snp-measure --snp-ovmf-hash`).
    pub ovmf_gctx_hash: String,
    /// SHA-256 (hex) of the kernel file.
    pub kernel_sha256: String,
    /// SHA-256 (hex) of the initrd file.
    pub initrd_sha256: String,
    /// SHA-256 (hex) of the command line, without a NUL terminator.
    pub cmdline_sha256: String,
}

/// SHA-256 of a file's content, in lowercase hex.
pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Reads a command-line file: its content is the command line; one trailing newline is
/// allowed and dropped (the VMM is given the line without it).
pub fn read_cmdline(path: &Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let line = text.strip_suffix('\n').unwrap_or(&text);
    if line.contains('\n') || line.contains('\0') {
        bail!(
            "{}: the command line must be one line without NUL bytes",
            path.display()
        );
    }
    Ok(line.to_string())
}

/// Computes the expected launch digest (QEMU as VMM).
pub fn measure(inputs: &LaunchInputs) -> anyhow::Result<LaunchMeasurement> {
    let vcpu_type = CpuType::try_from(inputs.vcpu_type.as_str())
        .map_err(|e| anyhow::anyhow!("vCPU type {:?}: {e}", inputs.vcpu_type))?;
    if inputs.vcpus == 0 {
        bail!("vcpus must be at least 1");
    }
    let ovmf_gctx = calc_snp_ovmf_hash(inputs.ovmf.clone())
        .map_err(|e| anyhow::anyhow!("OVMF {}: {e}", inputs.ovmf.display()))?
        .get_hex_ld();
    let digest = snp_calc_launch_digest(SnpMeasurementArgs {
        vcpus: inputs.vcpus,
        vcpu_type,
        ovmf_file: inputs.ovmf.clone(),
        guest_features: GuestFeatures(inputs.guest_features),
        kernel_file: Some(inputs.kernel.clone()),
        initrd_file: Some(inputs.initrd.clone()),
        append: Some(&inputs.cmdline),
        ovmf_hash_str: Some(&ovmf_gctx),
        vmm_type: Some(VMMType::QEMU),
    })
    .map_err(|e| anyhow::anyhow!("launch digest: {e}"))?;
    Ok(LaunchMeasurement {
        launch_digest: digest.get_hex_ld(),
        vcpus: inputs.vcpus,
        vcpu_type: inputs.vcpu_type.clone(),
        guest_features: format!("{:#x}", inputs.guest_features),
        vmm_type: "QEMU",
        ovmf_sha256: sha256_file(&inputs.ovmf)?,
        ovmf_gctx_hash: ovmf_gctx,
        kernel_sha256: sha256_file(&inputs.kernel)?,
        initrd_sha256: sha256_file(&inputs.initrd)?,
        // The kernel-hashes table holds SHA-256 of the command line with its NUL terminator;
        // this field is the plain line's hash, for people comparing files.
        cmdline_sha256: hex::encode(Sha256::digest(inputs.cmdline.as_bytes())),
    })
}
