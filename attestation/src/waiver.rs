//! Checks that a policy value enables, and what a policy must say when it leaves one out.
//!
//! A check whose value is absent would pass by default (no revocation check without a CRL,
//! any GPU firmware without reference measurements, SMT allowed, ...). Such a gap is not
//! silent: a policy that admits nodes either sets the value or waives the check by name in
//! `[waive]`, with the reason (`"snp.chain.crl" = "offline verifier, no CRL distribution"`).
//! A gap neither set nor waived keeps the policy from admitting
//! ([`crate::policy::Policy::missing_for_admission`]); the waivers are part of the policy's
//! digest and are recorded with every decision taken under it.

use std::collections::BTreeMap;

/// One check a policy value enables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The check's name, as in the verdict and in `[waive]`.
    pub check: &'static str,
    /// The policy value that enables it.
    pub value: &'static str,
}

/// Every check that needs its value set or a waiver, in the order they are reported.
pub const GAPS: &[Gap] = &[
    Gap {
        check: "snp.chain.crl",
        value: "trust.crl",
    },
    Gap {
        check: "snp.tcb.firmware",
        value: "tcb.min_firmware",
    },
    Gap {
        check: "snp.policy.abi",
        value: "guest_policy.min_abi",
    },
    Gap {
        check: "snp.policy.guest_svn",
        value: "guest_policy.min_guest_svn",
    },
    Gap {
        check: "snp.policy.smt",
        value: "guest_policy.allow_smt",
    },
    Gap {
        check: "snp.policy.cxl",
        value: "guest_policy.allow_cxl",
    },
    Gap {
        check: "snp.policy.single_socket",
        value: "guest_policy.require_single_socket",
    },
    Gap {
        check: "snp.policy.aes_256_xts",
        value: "guest_policy.require_aes_256_xts",
    },
    Gap {
        check: "snp.policy.rapl_disabled",
        value: "guest_policy.require_rapl_disabled",
    },
    Gap {
        check: "snp.policy.ciphertext_hiding",
        value: "guest_policy.require_ciphertext_hiding",
    },
    Gap {
        check: "config.image_signer",
        value: "identity.release_manifests (for every allowed measurement)",
    },
    Gap {
        check: "gpu.measurements",
        value: "gpu.measurements",
    },
    Gap {
        check: "gpu.driver_version",
        value: "gpu.driver_versions",
    },
    Gap {
        check: "gpu.vbios_version",
        value: "gpu.vbios_versions",
    },
];

/// A `[waive]` entry the policy may not carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidWaiver {
    /// The entry, as `waive."check"`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// `[waive]`, checked: every key a check of [`GAPS`] whose value the policy leaves out
/// (`unset`), every reason non-empty.
pub fn waivers(
    waive: &BTreeMap<String, String>,
    unset: &[&'static str],
) -> Result<BTreeMap<String, String>, InvalidWaiver> {
    for (check, reason) in waive {
        let field = format!("waive.\"{check}\"");
        let Some(gap) = GAPS.iter().find(|g| g.check == check) else {
            let names: Vec<&str> = GAPS.iter().map(|g| g.check).collect();
            return Err(InvalidWaiver {
                field,
                message: format!("not a check that can be waived ({})", names.join(", ")),
            });
        };
        if !unset.contains(&gap.check) {
            return Err(InvalidWaiver {
                field,
                message: format!(
                    "the policy sets {} (or the check does not apply): remove the waiver",
                    gap.value
                ),
            });
        }
        if reason.trim().is_empty() {
            return Err(InvalidWaiver {
                field,
                message: "a waiver needs its reason".into(),
            });
        }
    }
    Ok(waive.clone())
}

/// What a policy lacks for admission among [`GAPS`]: each unset check that is not waived.
pub fn unwaived(unset: &[&'static str], waivers: &BTreeMap<String, String>) -> Vec<String> {
    unset
        .iter()
        .filter(|c| !waivers.contains_key(**c))
        .filter_map(|c| GAPS.iter().find(|g| g.check == *c))
        .map(|g| {
            format!(
                "{} for {} (or its waiver, waive.\"{}\" = \"why\")",
                g.value, g.check, g.check
            )
        })
        .collect()
}
