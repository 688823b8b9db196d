//! SEV-SNP status without dmesg (not readable from a fixture tree, nor by an unprivileged
//! agent):
//!
//! - `/dev/sev-guest`: the sev-guest driver registers it only when the kernel runs as an
//!   SNP guest (it talks to the AMD secure processor through the SNP guest-message
//!   protocol). Present: this is an SNP guest. This is the evidence we rely on.
//! - `sev_snp` in /proc/cpuinfo `flags`: on a host, the CPU supports SNP and the kernel
//!   enabled it (the kernel clears the flag when firmware leaves SNP off). Inside a guest
//!   it is not reliable either way (it depends on the guest kernel and the CPUID page), so
//!   it is only reported as evidence, never taken as proof of an SNP guest.
//! - `/sys/module/kvm_amd/parameters/sev_snp` (`Y`/`N`, or `1`/`0` on older kernels):
//!   on a host, whether KVM may launch SNP guests. Code on such a host is not protected.

use super::{read_value, under};
use hardware_profiles::{Fact, SevSnpFacts, SevSnpState};
use std::path::Path;

/// The SEV-SNP observations under `root` and the state they lead to.
pub fn probe_sev_snp(root: &Path) -> SevSnpFacts {
    let guest_device = under(root, "/dev/sev-guest").exists();
    let flags = super::cpu::first_flags(root);
    let cpuinfo_flag = flags.iter().any(|f| f == "sev_snp");
    let hypervisor = flags.iter().any(|f| f == "hypervisor");
    let kvm_amd_sev_snp: Fact<bool> = read_value(
        root,
        "/sys/module/kvm_amd/parameters/sev_snp",
        |text| match text {
            "Y" | "y" | "1" => Some(true),
            "N" | "n" | "0" => Some(false),
            _ => None,
        },
    );

    let mut evidence = Vec::new();
    evidence.push(if guest_device {
        "/dev/sev-guest present".to_string()
    } else {
        "/dev/sev-guest absent".to_string()
    });
    evidence.push(format!(
        "cpuinfo flag sev_snp {}{}",
        if cpuinfo_flag { "set" } else { "not set" },
        if hypervisor {
            " (under a hypervisor)"
        } else {
            ""
        }
    ));
    match &kvm_amd_sev_snp {
        Fact::Known(on) => evidence.push(format!(
            "kvm_amd sev_snp parameter {}",
            if *on { "on" } else { "off" }
        )),
        Fact::Unknown(_) => evidence.push("kvm_amd sev_snp parameter absent".to_string()),
    }

    let state = if guest_device {
        SevSnpState::Guest
    } else if !hypervisor && cpuinfo_flag && kvm_amd_sev_snp == Fact::Known(true) {
        SevSnpState::Host
    } else {
        if hypervisor && cpuinfo_flag {
            evidence.push(
                "sev_snp flag under a hypervisor without /dev/sev-guest: not taken as an SNP guest (is the sev-guest driver loaded?)"
                    .to_string(),
            );
        }
        SevSnpState::Absent
    };
    SevSnpFacts {
        state,
        guest_device,
        cpuinfo_flag,
        kvm_amd_sev_snp,
        evidence,
    }
}
