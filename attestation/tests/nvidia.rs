//! NVIDIA GPU evidence verification against genuine Hopper (H100) and Blackwell
//! (RTX PRO 6000 / GB202) reports and chains (testdata/nvidia/README.md gives their sources).
//! Every check has a test that makes exactly it fail.

use std::time::{Duration, SystemTime};

use attestation::nvidia::certs::{self, ChainError, FwidError};
use attestation::nvidia::spdm::{AttestationReport, ReportError};
use attestation::nvidia::{
    CcState, GpuDevice, GpuEvidence, GpuPolicy, HexBytes, ReferenceMeasurement, verify,
};
use attestation::report::{Check, Outcome};

const HOPPER_NONCE: &str = "931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb";
const HOPPER_COCO_NONCE: &str = "87d8e24ab336adafe228d49e83d745f6dba4ae505372b6a5704820856b343fec";
const BLACKWELL_NONCE: &str = "4cff7f5380ead8fad8ec2c531c110aca4302a88f603792801a8ca29ee151af2e";
const BLACKWELL_COCO_NONCE: &str =
    "d622979b6c3ab8b8e7b30a43f2dc7f553ebbc187536231d531effa496ec03fb5";
const HOPPER_FWID: &str = "f5c384aebb579217a2c66b17ed0f28e6a9b8d639041acd7b4721cec004f7275494ba94bb5cdfdb3055ee051762b1f75d";
const BLACKWELL_FWID: &str = "9b92cc3e53b9265259e1abde163653288c2474fcafd8e5c0fd62ce9c9036fb62723fe3715b50f4ac27c68b62e2fd9240";
/// Measurement index 2 of each genuine report (index 1 is all zero), decoded independently
/// with a Python one-off from the hex files.
const HOPPER_MEASUREMENT_2: &str = "8048dfd18fe229bf16eb9d30cca0f11a24dafe6eb731de1462984645a0b189b77c4e4e17de727a5e19e3d07de51da338";
const BLACKWELL_MEASUREMENT_2: &str = "2da1aa042ca17e870c203658f2ca48d3b392130f00b758ac4d8f6b625573a582f9fe74028201c81137cb17d50255467e";
/// Offset of measurement block 2's value: request 37 + response header 8 + block 1 (4 + 3 +
/// 48) + block 2 headers (4 + 3).
const MEASUREMENT_2_OFFSET: usize = 37 + 8 + 55 + 7;

/// 2027-06-01T00:00:00Z: inside every genuine certificate's window (and the impostor root's).
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_811_808_000)
}

fn testdata(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/nvidia/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Report files are hex text (the Blackwell capture has a trailing newline).
fn report(name: &str) -> Vec<u8> {
    let text = String::from_utf8(testdata(name)).expect("hex text");
    hex::decode(text.trim()).expect("hex")
}

fn nonce(hex_text: &str) -> [u8; 32] {
    hex::decode(hex_text)
        .expect("hex")
        .try_into()
        .expect("32 bytes")
}

/// CC state is not part of the recordings (NVML state at collection time); the tests supply
/// the production state and vary it in the CC/dev-tools negatives.
fn cc_on() -> CcState {
    CcState {
        cc_enabled: true,
        dev_tools_mode: false,
        environment: "prod".into(),
    }
}

fn evidence(report_file: &str, chain_file: &str) -> GpuEvidence {
    GpuEvidence {
        device: GpuDevice::default(),
        attestation_report: report(report_file),
        certificate_chain: testdata(chain_file),
        cc_state: cc_on(),
    }
}

fn hopper() -> GpuEvidence {
    evidence("hopperAttestationReport.txt", "hopper_cert_chain_case1.txt")
}

fn blackwell() -> GpuEvidence {
    evidence(
        "blackwellAttestationReport.txt",
        "blackwell_cert_chain_case1.txt",
    )
}

fn hopper_policy() -> GpuPolicy {
    GpuPolicy {
        driver_versions: vec!["550.90.07".into()],
        vbios_versions: vec!["96.00.9f.00.01".into()],
        measurements: vec![ReferenceMeasurement {
            index: 2,
            values: vec![HexBytes(hex::decode(HOPPER_MEASUREMENT_2).unwrap())],
        }],
    }
}

fn blackwell_policy() -> GpuPolicy {
    GpuPolicy {
        driver_versions: vec!["595.58.03".into()],
        vbios_versions: vec!["98.02.81.00.01".into()],
        measurements: vec![ReferenceMeasurement {
            index: 2,
            values: vec![HexBytes(hex::decode(BLACKWELL_MEASUREMENT_2).unwrap())],
        }],
    }
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {checks:#?}"))
}

fn outcome(checks: &[Check], name: &str) -> Outcome {
    find(checks, name).outcome
}

/// Every check passes except revocation, which is always a skip offline.
fn assert_all_pass(checks: &[Check]) {
    for check in checks {
        let expected = if check.name.ends_with(".cert_chain.revocation") {
            Outcome::Skip
        } else {
            Outcome::Pass
        };
        assert_eq!(check.outcome, expected, "{check:#?}");
    }
}

/// Exactly the named checks fail; all others are as in [`assert_all_pass`].
fn assert_only_fail(checks: &[Check], failing: &[&str]) {
    for check in checks {
        let expected = if failing.contains(&check.name.as_str()) {
            Outcome::Fail
        } else if check.name.ends_with(".cert_chain.revocation") {
            Outcome::Skip
        } else {
            Outcome::Pass
        };
        assert_eq!(check.outcome, expected, "{check:#?}");
    }
    for name in failing {
        find(checks, name);
    }
}

#[test]
fn check_names_are_complete_and_indexed() {
    let checks = verify(&hopper(), &nonce(HOPPER_NONCE), &hopper_policy(), now(), 3);
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "gpu.3.report.parse",
            "gpu.3.report.nonce",
            "gpu.3.report.signature",
            "gpu.3.cert_chain",
            "gpu.3.cert_chain.validity",
            "gpu.3.cert_chain.revocation",
            "gpu.3.fwid",
            "gpu.3.cc_mode",
            "gpu.3.dev_tools_mode",
            "gpu.3.driver_version",
            "gpu.3.vbios_version",
            "gpu.3.measurements",
        ]
    );
}

// ---- genuine evidence verifies ----

#[test]
fn genuine_hopper_verifies() {
    let checks = verify(&hopper(), &nonce(HOPPER_NONCE), &hopper_policy(), now(), 0);
    assert_all_pass(&checks);
    assert!(find(&checks, "gpu.0.fwid").detail.contains(HOPPER_FWID));
}

#[test]
fn genuine_blackwell_rtx_pro_6000_verifies() {
    let checks = verify(
        &blackwell(),
        &nonce(BLACKWELL_NONCE),
        &blackwell_policy(),
        now(),
        0,
    );
    assert_all_pass(&checks);
    assert!(find(&checks, "gpu.0.fwid").detail.contains(BLACKWELL_FWID));
    let parse = &find(&checks, "gpu.0.report.parse").detail;
    assert!(
        parse.contains("64 measurement blocks (32 non-zero)"),
        "{parse}"
    );
}

#[test]
fn genuine_hopper_coco_with_padding_byte_verifies_once_the_node_trims_it() {
    // NVML hands this report over with one zero byte after the signature. The verifier
    // refuses any byte after the signature; the node trims NVML's zero padding before it
    // sends the report (`trim_nvml_padding`), and the trimmed report verifies.
    let mut ev = evidence("hopper_coco_report1.txt", "hopper_coco_certs1.txt");
    let policy = GpuPolicy {
        driver_versions: vec!["580.95.05".into()],
        vbios_versions: vec!["96.00.74.00.1a".into()],
        measurements: vec![],
    };
    let checks = verify(&ev, &nonce(HOPPER_COCO_NONCE), &policy, now(), 0);
    let parse = find(&checks, "gpu.0.report.parse");
    assert_eq!(parse.outcome, Outcome::Fail, "{parse:#?}");
    assert!(
        parse.detail.contains("1 bytes after the signature"),
        "{parse:#?}"
    );

    ev.attestation_report = AttestationReport::trim_nvml_padding(&ev.attestation_report)
        .unwrap()
        .to_vec();
    let checks = verify(&ev, &nonce(HOPPER_COCO_NONCE), &policy, now(), 0);
    for check in &checks {
        let expected = match check.name.as_str() {
            "gpu.0.cert_chain.revocation" | "gpu.0.measurements" => Outcome::Skip,
            _ => Outcome::Pass,
        };
        assert_eq!(check.outcome, expected, "{check:#?}");
    }
}

#[test]
fn genuine_blackwell_second_gpu_verifies() {
    let ev = evidence("blackwell_coco_report.txt", "blackwell_coco_certs.txt");
    let policy = GpuPolicy {
        driver_versions: vec!["595.58.03".into()],
        vbios_versions: vec!["98.02.74.00.01".into()],
        measurements: vec![],
    };
    let checks = verify(&ev, &nonce(BLACKWELL_COCO_NONCE), &policy, now(), 0);
    assert_eq!(outcome(&checks, "gpu.0.measurements"), Outcome::Skip);
    for check in checks.iter().filter(|c| c.name != "gpu.0.measurements") {
        let expected = if check.name.ends_with("revocation") {
            Outcome::Skip
        } else {
            Outcome::Pass
        };
        assert_eq!(check.outcome, expected, "{check:#?}");
    }
}

#[test]
fn empty_policy_skips_reference_checks_only() {
    let checks = verify(
        &blackwell(),
        &nonce(BLACKWELL_NONCE),
        &GpuPolicy::default(),
        now(),
        0,
    );
    for name in [
        "gpu.0.driver_version",
        "gpu.0.vbios_version",
        "gpu.0.measurements",
    ] {
        assert_eq!(outcome(&checks, name), Outcome::Skip, "{name}");
    }
    for name in [
        "gpu.0.report.parse",
        "gpu.0.report.nonce",
        "gpu.0.report.signature",
        "gpu.0.cert_chain",
        "gpu.0.cert_chain.validity",
        "gpu.0.fwid",
        "gpu.0.cc_mode",
        "gpu.0.dev_tools_mode",
    ] {
        assert_eq!(outcome(&checks, name), Outcome::Pass, "{name}");
    }
}

// ---- each check rejected by the change it targets ----

#[test]
fn flipped_signature_byte_fails_signature_only() {
    for (mut ev, n, policy) in [
        (hopper(), HOPPER_NONCE, hopper_policy()),
        (blackwell(), BLACKWELL_NONCE, blackwell_policy()),
    ] {
        let last = ev.attestation_report.len() - 10;
        ev.attestation_report[last] ^= 0x01;
        let checks = verify(&ev, &nonce(n), &policy, now(), 0);
        assert_only_fail(&checks, &["gpu.0.report.signature"]);
    }
}

#[test]
fn flipped_nonce_byte_in_report_fails_nonce_and_signature() {
    let mut ev = blackwell();
    ev.attestation_report[4] ^= 0x80;
    let checks = verify(&ev, &nonce(BLACKWELL_NONCE), &blackwell_policy(), now(), 0);
    assert_only_fail(&checks, &["gpu.0.report.nonce", "gpu.0.report.signature"]);
}

#[test]
fn wrong_expected_nonce_fails_nonce_only() {
    let mut wrong = nonce(HOPPER_NONCE);
    wrong[31] ^= 1;
    let checks = verify(&hopper(), &wrong, &hopper_policy(), now(), 0);
    assert_only_fail(&checks, &["gpu.0.report.nonce"]);
    // And a Hopper nonce against the Blackwell report.
    let checks = verify(
        &blackwell(),
        &nonce(HOPPER_NONCE),
        &blackwell_policy(),
        now(),
        0,
    );
    assert_only_fail(&checks, &["gpu.0.report.nonce"]);
}

#[test]
fn flipped_measurement_byte_fails_signature_and_reference_measurement() {
    for (mut ev, n, policy, reference) in [
        (
            hopper(),
            HOPPER_NONCE,
            hopper_policy(),
            HOPPER_MEASUREMENT_2,
        ),
        (
            blackwell(),
            BLACKWELL_NONCE,
            blackwell_policy(),
            BLACKWELL_MEASUREMENT_2,
        ),
    ] {
        assert_eq!(
            hex::encode(&ev.attestation_report[MEASUREMENT_2_OFFSET..MEASUREMENT_2_OFFSET + 48]),
            reference
        );
        ev.attestation_report[MEASUREMENT_2_OFFSET + 5] ^= 0x04;
        let checks = verify(&ev, &nonce(n), &policy, now(), 0);
        assert_only_fail(&checks, &["gpu.0.report.signature", "gpu.0.measurements"]);
        let detail = &find(&checks, "gpu.0.measurements").detail;
        assert!(detail.contains("index 2"), "{detail}");
        assert!(detail.contains("signature did not verify"), "{detail}");
    }
}

#[test]
fn reference_measurement_mismatch_fails_measurements_only() {
    let mut policy = blackwell_policy();
    policy.measurements[0].values[0].0[0] ^= 0xff;
    let checks = verify(&blackwell(), &nonce(BLACKWELL_NONCE), &policy, now(), 0);
    assert_only_fail(&checks, &["gpu.0.measurements"]);

    // An index the report lacks fails too.
    let mut policy = blackwell_policy();
    policy.measurements.push(ReferenceMeasurement {
        index: 65,
        values: vec![HexBytes(vec![0; 48])],
    });
    let checks = verify(&blackwell(), &nonce(BLACKWELL_NONCE), &policy, now(), 0);
    assert_only_fail(&checks, &["gpu.0.measurements"]);
    assert!(
        find(&checks, "gpu.0.measurements")
            .detail
            .contains("index 65: absent")
    );

    // Alternatives: any listed value is accepted.
    let mut policy = blackwell_policy();
    policy.measurements[0]
        .values
        .insert(0, HexBytes(vec![1; 48]));
    let checks = verify(&blackwell(), &nonce(BLACKWELL_NONCE), &policy, now(), 0);
    assert_all_pass(&checks);
}

#[test]
fn driver_and_vbios_not_in_policy_fail_their_checks() {
    let mut policy = blackwell_policy();
    policy.driver_versions = vec!["580.95.05".into()];
    let checks = verify(&blackwell(), &nonce(BLACKWELL_NONCE), &policy, now(), 0);
    assert_only_fail(&checks, &["gpu.0.driver_version"]);

    let mut policy = blackwell_policy();
    policy.vbios_versions = vec!["98.02.81.00.02".into()];
    let checks = verify(&blackwell(), &nonce(BLACKWELL_NONCE), &policy, now(), 0);
    assert_only_fail(&checks, &["gpu.0.vbios_version"]);
}

/// The impostor root has the real root's subject but its own key (generated with openssl for
/// this test; see testdata README).
fn with_root_replaced(chain: &[u8], root_pem: &[u8]) -> Vec<u8> {
    let certs = certs::parse_pem_chain(chain).unwrap();
    let mut out = Vec::new();
    for cert in &certs[..certs.len() - 1] {
        use der::EncodePem;
        out.extend_from_slice(cert.to_pem(der::pem::LineEnding::LF).unwrap().as_bytes());
    }
    out.extend_from_slice(root_pem);
    out
}

#[test]
fn chain_with_wrong_root_fails_cert_chain() {
    let impostor = testdata("impostor_device_root.pem");
    for (mut ev, n, policy) in [
        (hopper(), HOPPER_NONCE, hopper_policy()),
        (blackwell(), BLACKWELL_NONCE, blackwell_policy()),
    ] {
        ev.certificate_chain = with_root_replaced(&ev.certificate_chain, &impostor);
        let checks = verify(&ev, &nonce(n), &policy, now(), 0);
        assert_only_fail(&checks, &["gpu.0.cert_chain"]);
        let detail = &find(&checks, "gpu.0.cert_chain").detail;
        assert!(
            detail.contains("not the pinned NVIDIA Device Identity CA"),
            "{detail}"
        );
    }
}

#[test]
fn wrong_pinned_root_fails_chain_verification() {
    // Same chain, verified against the impostor as if it were pinned: the real root's
    // signature on the Identity CA does not verify under it.
    let chain = certs::parse_pem_chain(&testdata("hopper_cert_chain_case1.txt")).unwrap();
    let impostor = certs::parse_pem_chain(&testdata("impostor_device_root.pem")).unwrap();
    let mut with_impostor = chain.clone();
    *with_impostor.last_mut().unwrap() = impostor[0].clone();
    let err = certs::verify_chain(&with_impostor, &impostor[0]).unwrap_err();
    assert!(
        matches!(err, ChainError::Signature { position: 3, .. }),
        "{err}"
    );
}

#[test]
fn certificates_outside_their_validity_fail_validity_only() {
    // Before the GB20X leaf's notBefore (2023-06-20) and before the root's (2021-11-05).
    let early = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000); // 2020-09-13
    let checks = verify(
        &blackwell(),
        &nonce(BLACKWELL_NONCE),
        &blackwell_policy(),
        early,
        0,
    );
    assert_only_fail(&checks, &["gpu.0.cert_chain.validity"]);
    assert!(
        find(&checks, "gpu.0.cert_chain.validity")
            .detail
            .contains("not yet valid")
    );

    // After 9999-12-31T23:59:59Z, every certificate's notAfter.
    let late = SystemTime::UNIX_EPOCH + Duration::from_secs(253_402_300_800);
    let checks = verify(&hopper(), &nonce(HOPPER_NONCE), &hopper_policy(), late, 0);
    assert_only_fail(&checks, &["gpu.0.cert_chain.validity"]);
    assert!(
        find(&checks, "gpu.0.cert_chain.validity")
            .detail
            .contains("expired")
    );

    // One second before the end is still valid.
    let last = SystemTime::UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    let checks = verify(&hopper(), &nonce(HOPPER_NONCE), &hopper_policy(), last, 0);
    assert_all_pass(&checks);
}

/// Offset of the FWID value (opaque type 20) inside the raw report.
fn fwid_offset(raw: &[u8]) -> usize {
    let report = AttestationReport::parse(raw).unwrap();
    let fwid = report.fwid().unwrap();
    raw.windows(fwid.len()).position(|w| w == fwid).unwrap()
}

#[test]
fn fwid_mismatch_fails_fwid() {
    for (mut ev, n, policy) in [
        (hopper(), HOPPER_NONCE, hopper_policy()),
        (blackwell(), BLACKWELL_NONCE, blackwell_policy()),
    ] {
        let at = fwid_offset(&ev.attestation_report);
        ev.attestation_report[at + 47] ^= 0x01;
        let checks = verify(&ev, &nonce(n), &policy, now(), 0);
        // The FWID is signed, so the signature fails as well.
        assert_only_fail(&checks, &["gpu.0.fwid", "gpu.0.report.signature"]);
        assert!(find(&checks, "gpu.0.fwid").detail.contains("FWID mismatch"));
    }
}

#[test]
fn fwid_from_signing_certificates() {
    let leaf = |file: &str| certs::parse_pem_chain(&testdata(file)).unwrap().remove(0);
    assert_eq!(
        hex::encode(certs::leaf_fwid(&leaf("hopper_signing_cert.pem")).unwrap()),
        HOPPER_FWID
    );
    assert_eq!(
        hex::encode(certs::leaf_fwid(&leaf("blackwell_signing_cert.pem")).unwrap()),
        BLACKWELL_FWID
    );
    // A CA certificate (GSP BROM, the head of hopper case 4) carries no FWID.
    assert_eq!(
        certs::leaf_fwid(&leaf("hopper_cert_chain_case4.txt")),
        Err(FwidError::Missing)
    );
    // TR-1551's negative: the Blackwell leaf's FWID is not all-zero.
    assert_ne!(
        certs::leaf_fwid(&leaf("blackwell_cert_chain_case1.txt")).unwrap(),
        vec![0u8; 48]
    );
}

#[test]
fn dev_tools_mode_on_fails_dev_tools_only() {
    let mut ev = blackwell();
    ev.cc_state.dev_tools_mode = true;
    let checks = verify(&ev, &nonce(BLACKWELL_NONCE), &blackwell_policy(), now(), 0);
    assert_only_fail(&checks, &["gpu.0.dev_tools_mode"]);
}

#[test]
fn cc_off_fails_cc_mode_only() {
    let mut ev = blackwell();
    ev.cc_state.cc_enabled = false;
    let checks = verify(&ev, &nonce(BLACKWELL_NONCE), &blackwell_policy(), now(), 0);
    assert_only_fail(&checks, &["gpu.0.cc_mode"]);
}

#[test]
fn report_with_another_gpus_chain_fails_signature_and_fwid() {
    // Hopper CI report with the first H100's chain: different device key and FWID.
    let ev = evidence("hopper_coco_report1.txt", "hopper_cert_chain_case1.txt");
    let checks = verify(
        &ev,
        &nonce(HOPPER_COCO_NONCE),
        &GpuPolicy::default(),
        now(),
        0,
    );
    assert_eq!(outcome(&checks, "gpu.0.report.signature"), Outcome::Fail);
    assert_eq!(outcome(&checks, "gpu.0.fwid"), Outcome::Fail);
    assert_eq!(outcome(&checks, "gpu.0.cert_chain"), Outcome::Pass);

    // Both Blackwell reports carry the same FWID, but the device keys differ.
    for (report_file, chain_file, n) in [
        (
            "blackwellAttestationReport.txt",
            "blackwell_coco_certs.txt",
            BLACKWELL_NONCE,
        ),
        (
            "blackwell_coco_report.txt",
            "blackwell_cert_chain_case1.txt",
            BLACKWELL_COCO_NONCE,
        ),
    ] {
        let checks = verify(
            &evidence(report_file, chain_file),
            &nonce(n),
            &GpuPolicy::default(),
            now(),
            0,
        );
        assert_eq!(
            outcome(&checks, "gpu.0.report.signature"),
            Outcome::Fail,
            "{report_file}"
        );
        assert_eq!(
            outcome(&checks, "gpu.0.fwid"),
            Outcome::Pass,
            "{report_file}"
        );
        assert_eq!(
            outcome(&checks, "gpu.0.cert_chain"),
            Outcome::Pass,
            "{report_file}"
        );
    }
}

// ---- trustee's certificate-chain cases ----

fn chain_result(file: &str) -> Result<String, ChainError> {
    let chain = certs::parse_pem_chain(&testdata(file)).unwrap();
    certs::verify_chain(&chain, &certs::pinned_root().unwrap())
}

#[test]
fn chain_case1_full_chains_verify() {
    for file in [
        "hopper_cert_chain_case1.txt",
        "hopper_coco_certs1.txt",
        "blackwell_cert_chain_case1.txt",
        "blackwell_coco_certs.txt",
    ] {
        let detail = chain_result(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(detail.starts_with("5 certificates"), "{detail}");
    }
}

#[test]
fn chain_case2_root_only_is_too_short() {
    // trustee: "Certificate chain must have at least the root CA and signing certificates".
    for file in [
        "hopper_cert_chain_case2.txt",
        "blackwell_cert_chain_case2.txt",
    ] {
        assert_eq!(
            chain_result(file),
            Err(ChainError::TooShort { count: 1 }),
            "{file}"
        );
        let checks = verify(
            &evidence("hopperAttestationReport.txt", file),
            &nonce(HOPPER_NONCE),
            &GpuPolicy::default(),
            now(),
            0,
        );
        assert_eq!(outcome(&checks, "gpu.0.cert_chain"), Outcome::Fail);
        // The root did not sign the report and carries no FWID.
        assert_eq!(outcome(&checks, "gpu.0.report.signature"), Outcome::Fail);
        assert_eq!(outcome(&checks, "gpu.0.fwid"), Outcome::Fail);
    }
}

#[test]
fn chain_case3_missing_provisioner_ica_fails() {
    // trustee: "Report certificate chain failed to verify". Here: GSP BROM names the
    // Provisioner ICA as issuer, but the next certificate is the Identity CA.
    for (file, report_file, n) in [
        (
            "hopper_cert_chain_case3.txt",
            "hopperAttestationReport.txt",
            HOPPER_NONCE,
        ),
        (
            "blackwell_cert_chain_case3.txt",
            "blackwellAttestationReport.txt",
            BLACKWELL_NONCE,
        ),
    ] {
        let err = chain_result(file).unwrap_err();
        assert!(
            matches!(err, ChainError::IssuerMismatch { position: 1, .. }),
            "{file}: {err}"
        );
        let checks = verify(
            &evidence(report_file, file),
            &nonce(n),
            &GpuPolicy::default(),
            now(),
            0,
        );
        // The leaf is intact: the report signature and FWID still check out; only the chain fails.
        assert_eq!(outcome(&checks, "gpu.0.cert_chain"), Outcome::Fail);
        assert_eq!(outcome(&checks, "gpu.0.report.signature"), Outcome::Pass);
        assert_eq!(outcome(&checks, "gpu.0.fwid"), Outcome::Pass);
    }
}

#[test]
fn chain_case4_missing_leaf_fails() {
    // trustee: "FwId oid not found in the NVIDIA signing certificate". openssl alone accepts
    // this chain; the verifier must insist on the FWID-bearing signing leaf.
    let err = chain_result("hopper_cert_chain_case4.txt").unwrap_err();
    assert!(matches!(err, ChainError::LeafUsage { .. }), "{err}");
    let checks = verify(
        &evidence("hopperAttestationReport.txt", "hopper_cert_chain_case4.txt"),
        &nonce(HOPPER_NONCE),
        &hopper_policy(),
        now(),
        0,
    );
    assert_only_fail(
        &checks,
        &["gpu.0.cert_chain", "gpu.0.fwid", "gpu.0.report.signature"],
    );
    assert!(
        find(&checks, "gpu.0.fwid")
            .detail
            .contains("FWID extension")
    );
}

#[test]
fn signing_certificate_alone_verifies_signature_but_not_chain() {
    for (report_file, cert, n) in [
        (
            "hopperAttestationReport.txt",
            "hopper_signing_cert.pem",
            HOPPER_NONCE,
        ),
        (
            "blackwellAttestationReport.txt",
            "blackwell_signing_cert.pem",
            BLACKWELL_NONCE,
        ),
    ] {
        let checks = verify(
            &evidence(report_file, cert),
            &nonce(n),
            &GpuPolicy::default(),
            now(),
            0,
        );
        assert_eq!(
            outcome(&checks, "gpu.0.report.signature"),
            Outcome::Pass,
            "{report_file}"
        );
        assert_eq!(
            outcome(&checks, "gpu.0.fwid"),
            Outcome::Pass,
            "{report_file}"
        );
        assert_eq!(
            outcome(&checks, "gpu.0.cert_chain"),
            Outcome::Fail,
            "{report_file}"
        );
    }
}

// ---- parsing ----

#[test]
fn parsed_fields_match_independent_decoding() {
    let raw = report("blackwellAttestationReport.txt");
    let parsed = AttestationReport::parse(&raw).unwrap();
    assert_eq!(raw.len(), 4140);
    assert_eq!(parsed.signed_len, 4140 - 96);
    assert_eq!(parsed.request.nonce, nonce(BLACKWELL_NONCE));
    assert_eq!((parsed.request.param1, parsed.request.param2), (0x01, 0xff));
    assert_eq!(parsed.response.blocks.len(), 64);
    assert_eq!(
        parsed
            .response
            .blocks
            .iter()
            .map(|b| b.index)
            .collect::<Vec<_>>(),
        (1..=64).collect::<Vec<u8>>()
    );
    assert_eq!(parsed.driver_version(), Some(Ok("595.58.03".into())));
    assert_eq!(parsed.vbios_version(), Some(Ok("98.02.81.00.01".into())));
    assert_eq!(hex::encode(parsed.fwid().unwrap()), BLACKWELL_FWID);
    let mut types: Vec<u16> = parsed
        .response
        .opaque
        .iter()
        .map(|f| f.field_type)
        .collect();
    types.sort_unstable();
    assert_eq!(
        types,
        [
            3, 4, 6, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 33, 34, 35, 36
        ]
    );

    let hopper = AttestationReport::parse(&report("hopperAttestationReport.txt")).unwrap();
    assert_eq!(hopper.vbios_version(), Some(Ok("96.00.9f.00.01".into())));
    assert_eq!(hopper.driver_version(), Some(Ok("550.90.07".into())));
    assert_eq!(hopper.signed_len, 4117 - 96);
}

#[test]
fn every_truncation_is_a_parse_error() {
    let raw = report("blackwellAttestationReport.txt");
    for len in 0..raw.len() {
        let err = AttestationReport::parse(&raw[..len]).unwrap_err();
        assert!(matches!(err, ReportError::Truncated { .. }), "{len}: {err}");
    }
}

#[test]
fn truncated_report_fails_every_report_check() {
    let mut ev = hopper();
    ev.attestation_report.truncate(2000);
    let checks = verify(&ev, &nonce(HOPPER_NONCE), &hopper_policy(), now(), 0);
    for name in [
        "gpu.0.report.parse",
        "gpu.0.report.nonce",
        "gpu.0.report.signature",
        "gpu.0.fwid",
        "gpu.0.driver_version",
        "gpu.0.vbios_version",
        "gpu.0.measurements",
    ] {
        assert_eq!(outcome(&checks, name), Outcome::Fail, "{name}");
    }
    // Chain checks do not depend on the report.
    assert_eq!(outcome(&checks, "gpu.0.cert_chain"), Outcome::Pass);
}

#[test]
fn any_byte_after_the_signature_is_refused_and_nvml_padding_is_trimmed_on_the_node() {
    let genuine = report("hopperAttestationReport.txt");
    AttestationReport::parse(&genuine).unwrap();
    // Evidence ends at the signature: a zero byte after it is refused as well as any other.
    for tail in [&[0u8][..], &[0, 7], &[7]] {
        let mut raw = genuine.clone();
        raw.extend_from_slice(tail);
        assert_eq!(
            AttestationReport::parse(&raw),
            Err(ReportError::TrailingData { count: tail.len() }),
            "{tail:?}"
        );
    }
    // The node trims NVML's zero padding (a real H100 returned 1 byte) before sending...
    let mut padded = genuine.clone();
    padded.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        AttestationReport::trim_nvml_padding(&padded).unwrap(),
        genuine.as_slice()
    );
    assert_eq!(
        AttestationReport::trim_nvml_padding(&genuine).unwrap(),
        genuine.as_slice()
    );
    // ...but never non-zero data.
    padded.push(1);
    assert_eq!(
        AttestationReport::trim_nvml_padding(&padded),
        Err(ReportError::TrailingNonZero { count: 4 })
    );
    // Through the verifier: the report check fails and names the trailing bytes.
    let mut ev = hopper();
    ev.attestation_report.push(0);
    let checks = verify(&ev, &nonce(HOPPER_NONCE), &hopper_policy(), now(), 0);
    assert_eq!(outcome(&checks, "gpu.0.report.parse"), Outcome::Fail);
    let detail = &find(&checks, "gpu.0.report.parse").detail;
    assert!(detail.contains("1 bytes after the signature"), "{detail}");
}

#[test]
fn pinned_root_is_nvidias_device_identity_ca() {
    assert_eq!(
        certs::NVIDIA_DEVICE_ROOT_PEM,
        testdata("verifier_device_root.pem").as_slice()
    );
    let root = certs::pinned_root().unwrap();
    assert_eq!(
        certs::fingerprint(&root),
        "102bf659d5419614c9d8e6aecebc80454eb26b1df6a769ac720b9a690b167b48"
    );
}

#[test]
fn garbage_chain_is_a_chain_failure_not_a_panic() {
    for chain in [
        &b""[..],
        b"\n",
        b"-----END CERTIFICATE-----",
        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        b"not pem at all",
    ] {
        let mut ev = hopper();
        ev.certificate_chain = chain.to_vec();
        let checks = verify(&ev, &nonce(HOPPER_NONCE), &hopper_policy(), now(), 0);
        for name in [
            "gpu.0.cert_chain",
            "gpu.0.report.signature",
            "gpu.0.fwid",
            "gpu.0.cert_chain.validity",
        ] {
            assert_eq!(
                outcome(&checks, name),
                Outcome::Fail,
                "{name} for {chain:?}"
            );
        }
    }
}

// ---- serde: the bundle's JSON and the policy's TOML ----

#[test]
fn evidence_json_round_trips_with_hex_and_base64() {
    let ev = blackwell();
    let json = serde_json::to_value(&ev).unwrap();
    assert_eq!(
        json["attestation_report"].as_str().unwrap(),
        String::from_utf8(testdata("blackwellAttestationReport.txt"))
            .unwrap()
            .trim()
    );
    assert!(
        json["certificate_chain"]
            .as_str()
            .unwrap()
            .starts_with("LS0tLS1CRUdJTi")
    ); // "-----BEGIN"
    assert_eq!(json["cc_state"]["dev_tools_mode"], false);
    let back: GpuEvidence = serde_json::from_value(json).unwrap();
    assert_eq!(back, ev);
}

#[test]
fn policy_toml_gpu_section() {
    #[derive(serde::Deserialize)]
    struct Doc {
        gpu: GpuPolicy,
    }
    let doc: Doc = toml::from_str(&format!(
        r#"
        [gpu]
        driver_versions = ["595.58.03"]
        vbios_versions = ["98.02.81.00.01"]
        [[gpu.measurements]]
        index = 2
        values = ["{BLACKWELL_MEASUREMENT_2}"]
        "#
    ))
    .unwrap();
    assert_eq!(doc.gpu, blackwell_policy());
    assert!(
        toml::from_str::<Doc>("[gpu]\nmeasurements = [{ index = 2, values = [\"zz\"] }]").is_err()
    );
    assert!(toml::from_str::<Doc>("[gpu]\ndriver_version = \"x\"").is_err());
}

// ---- collection through NVML (real hardware where present) ----

/// Collection answers with a typed error where it cannot collect (no NVML on CI: the
/// `NvmlUnavailable` error), and with evidence that verifies where it can.
#[cfg(feature = "collect")]
#[test]
fn collect_gives_typed_error_or_verifiable_evidence() {
    use attestation::nvidia::{CollectError, collect};
    let fresh: [u8; 32] = std::array::from_fn(|i| i as u8 ^ 0x5a);
    match collect(&fresh) {
        Err(CollectError::NvmlUnavailable(e)) => {
            eprintln!("no NVML on this machine: NvmlUnavailable ({e})");
        }
        Err(e @ (CollectError::NotCcCapable | CollectError::CcDisabled | CollectError::NoGpu)) => {
            eprintln!("NVML present, no CC evidence to collect: {e}");
        }
        Err(e) => panic!("unexpected NVML failure: {e}"),
        Ok(gpus) => {
            assert!(!gpus.is_empty());
            for (i, gpu) in gpus.iter().enumerate() {
                let checks = verify(gpu, &fresh, &GpuPolicy::default(), SystemTime::now(), i);
                for name in [
                    "report.parse",
                    "report.nonce",
                    "report.signature",
                    "cert_chain",
                    "fwid",
                ] {
                    let check = find(&checks, &format!("gpu.{i}.{name}"));
                    assert_eq!(check.outcome, Outcome::Pass, "{check:#?}");
                }
                eprintln!("collected and verified GPU {i}: {:?}", gpu.device);
            }
        }
    }
}

/// On a CC-capable GPU in CC mode, collection returns real evidence that verifies against
/// the nonce it was taken over.
#[cfg(feature = "collect")]
#[test]
#[ignore = "needs NVML and an NVIDIA GPU in confidential-computing mode: collects real evidence"]
fn collect_on_a_cc_gpu_gives_verifiable_evidence() {
    use attestation::nvidia::collect;
    let fresh: [u8; 32] = std::array::from_fn(|i| i as u8 ^ 0xa5);
    let gpus = collect(&fresh).unwrap_or_else(|e| panic!("this test needs a CC-mode GPU: {e}"));
    assert!(!gpus.is_empty());
    for (i, gpu) in gpus.iter().enumerate() {
        let checks = verify(gpu, &fresh, &GpuPolicy::default(), SystemTime::now(), i);
        for name in [
            "report.parse",
            "report.nonce",
            "report.signature",
            "cert_chain",
            "fwid",
        ] {
            let check = find(&checks, &format!("gpu.{i}.{name}"));
            assert_eq!(check.outcome, Outcome::Pass, "{check:#?}");
        }
    }
}
