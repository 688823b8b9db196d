//! A check whose policy value is absent is never skipped silently: a policy that admits
//! nodes sets the value or waives the check by name, with the reason, and the waivers are
//! what decisions under it are recorded with.

use std::path::Path;

use attestation::policy::Policy;
use attestation::waiver::GAPS;

/// What no waiver replaces: measurements, a TCB minimum, VMPL, two GPUs, a signer.
fn required() -> String {
    format!(
        "[identity]\nmeasurements = [\"{}\"]\n[tcb.milan]\nbootloader = 0\ntee = 0\nsnp = 0\nmicrocode = 0\n[config]\nsigners = [\"{}\"]\n",
        "ab".repeat(48),
        hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&[1; 32])
                .verifying_key()
                .to_bytes()
        )
    )
}

/// The policy: the required values, `[guest_policy]` and `[gpu]` lines, `[tcb]` lines
/// (as dotted keys) and `[waive]` lines.
fn policy(guest: &str, gpu: &str, tcb: &str, waive: &str) -> Result<Policy, String> {
    let text = format!(
        "{tcb}{}[guest_policy]\nvmpl = [0]\n{guest}[gpu]\ncount = 2\n{gpu}[waive]\n{waive}",
        required()
    );
    Policy::from_toml(&text, Path::new("."), Path::new("p.toml")).map_err(|e| e.to_string())
}

fn waive_all_but(keep: &str) -> String {
    GAPS.iter()
        .filter(|g| g.check != keep)
        .map(|g| format!("\"{}\" = \"reason for {}\"\n", g.check, g.check))
        .collect()
}

#[test]
fn every_absent_value_keeps_the_policy_from_admitting_until_set_or_waived() {
    let bare = policy("", "", "", "").unwrap();
    let missing = bare.missing_for_admission().join("; ");
    for gap in GAPS {
        assert!(missing.contains(gap.check), "{}: {missing}", gap.check);
    }
    // Each waived by name, with its reason: nothing lacks, and every waiver is said.
    let waived = policy("", "", "", &waive_all_but("")).unwrap();
    assert!(
        waived.missing_for_admission().is_empty(),
        "{:?}",
        waived.missing_for_admission()
    );
    assert_eq!(waived.waived().len(), GAPS.len());
    assert!(
        waived
            .waived()
            .contains(&"snp.chain.crl: reason for snp.chain.crl".to_string())
    );
    // One left without its waiver: that one, and only that one, is lacking.
    for gap in GAPS {
        let p = policy("", "", "", &waive_all_but(gap.check)).unwrap();
        let missing = p.missing_for_admission();
        assert_eq!(missing.len(), 1, "{}: {missing:?}", gap.check);
        assert!(missing[0].contains(gap.check), "{missing:?}");
        assert!(missing[0].contains(gap.value), "{missing:?}");
    }
}

#[test]
fn setting_the_value_closes_the_gap_and_a_waiver_of_a_set_value_is_refused() {
    let set: &[(&str, &str, &str, &str)] = &[
        ("snp.policy.smt", "allow_smt = false\n", "", ""),
        ("snp.policy.cxl", "allow_cxl = true\n", "", ""),
        (
            "snp.policy.single_socket",
            "require_single_socket = false\n",
            "",
            "",
        ),
        (
            "snp.policy.aes_256_xts",
            "require_aes_256_xts = true\n",
            "",
            "",
        ),
        (
            "snp.policy.rapl_disabled",
            "require_rapl_disabled = false\n",
            "",
            "",
        ),
        (
            "snp.policy.ciphertext_hiding",
            "require_ciphertext_hiding = true\n",
            "",
            "",
        ),
        ("snp.policy.abi", "min_abi = \"1.51\"\n", "", ""),
        ("snp.policy.guest_svn", "min_guest_svn = 1\n", "", ""),
        ("snp.tcb.firmware", "", "", "tcb.min_firmware = \"1.55\"\n"),
        (
            "gpu.driver_version",
            "",
            "driver_versions = [\"595.58.03\"]\n",
            "",
        ),
        (
            "gpu.vbios_version",
            "",
            "vbios_versions = [\"98.02.81.00.01\"]\n",
            "",
        ),
        (
            "gpu.measurements",
            "",
            "measurements = [{ index = 1, values = [\"00\"] }]\n",
            "",
        ),
    ];
    for (check, guest, gpu, tcb) in set {
        let p = policy(guest, gpu, tcb, &waive_all_but(check)).unwrap();
        assert!(
            p.missing_for_admission().is_empty(),
            "{check}: {:?}",
            p.missing_for_admission()
        );
        let err = policy(guest, gpu, tcb, &waive_all_but("")).unwrap_err();
        assert!(
            err.contains(&format!("waive.\"{check}\"")),
            "{check}: {err}"
        );
        assert!(err.contains("remove the waiver"), "{check}: {err}");
    }
    // An empty list compares nothing: still a gap.
    let p = policy(
        "",
        "measurements = []\n",
        "",
        &waive_all_but("gpu.measurements"),
    )
    .unwrap();
    assert!(p.missing_for_admission()[0].contains("gpu.measurements"));
}

#[test]
fn gpu_gaps_apply_only_when_gpus_are_expected_and_waivers_are_checked() {
    let text = format!(
        "{}[guest_policy]\nvmpl = [0]\n[gpu]\ncount = 0\n",
        required()
    );
    let p = Policy::from_toml(&text, Path::new("."), Path::new("p.toml")).unwrap();
    assert!(
        !p.unset.iter().any(|c| c.starts_with("gpu.")),
        "{:?}",
        p.unset
    );
    for (waive, want) in [
        (
            "\"snp.chain.crls\" = \"typo\"\n",
            "not a check that can be waived",
        ),
        ("\"snp.chain.crl\" = \" \"\n", "a waiver needs its reason"),
        (
            "\"snp.identity.measurement\" = \"no\"\n",
            "not a check that can be waived",
        ),
    ] {
        let err = policy("", "", "", waive).unwrap_err();
        assert!(err.contains(want), "{waive}: {err}");
    }
    // The waivers are part of the policy, so of its recorded digest.
    let a = policy("", "", "", &waive_all_but("")).unwrap();
    let b = policy(
        "",
        "",
        "",
        &waive_all_but("").replace("reason for snp.chain.crl", "other"),
    )
    .unwrap();
    assert_ne!(a.sha256, b.sha256);
}
