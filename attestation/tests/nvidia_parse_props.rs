//! Parsing and verification never panic, whatever the bytes (proptest over random input,
//! truncations and mutations of a genuine Blackwell report and chain).

use std::time::{Duration, SystemTime};

use attestation::nvidia::spdm::AttestationReport;
use attestation::nvidia::{CcState, GpuDevice, GpuEvidence, GpuPolicy, certs, verify};
use proptest::prelude::*;

fn testdata(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/nvidia/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn genuine_report() -> Vec<u8> {
    let text = String::from_utf8(testdata("blackwellAttestationReport.txt")).unwrap();
    hex::decode(text.trim()).unwrap()
}

fn evidence(report: Vec<u8>, chain: Vec<u8>) -> GpuEvidence {
    GpuEvidence {
        device: GpuDevice::default(),
        attestation_report: report,
        certificate_chain: chain,
        cc_state: CcState {
            cc_enabled: true,
            dev_tools_mode: false,
            environment: "prod".into(),
        },
    }
}

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_811_808_000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let _ = AttestationReport::parse(&bytes);
    }

    /// Random bytes behind a valid request and response header reach the inner parsers.
    #[test]
    fn parse_random_body(
        blocks in any::<u8>(),
        record_len in 0u32..0x1_0000,
        body in proptest::collection::vec(any::<u8>(), 0..5000),
    ) {
        let mut bytes = vec![0x11, 0xe0, 0x01, 0xff];
        bytes.extend_from_slice(&[0u8; 33]);
        bytes.extend_from_slice(&[0x11, 0x60, 0, 0, blocks]);
        bytes.extend_from_slice(&record_len.to_le_bytes()[..3]);
        bytes.extend_from_slice(&body);
        let _ = AttestationReport::parse(&bytes);
    }
}

proptest! {
    // Each case runs a full verification (three ECDSA P-384 verifications): fewer cases.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn mutated_genuine_report_never_panics_and_never_passes_signature(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
        truncate in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let original = genuine_report();
        let mut report = original.clone();
        for (at, xor) in &edits {
            let i = at.index(report.len());
            report[i] ^= xor;
        }
        if let Some(at) = truncate {
            report.truncate(at.index(report.len()));
        }
        let checks = verify(
            &evidence(report.clone(), testdata("blackwell_cert_chain_case1.txt")),
            &[0u8; 32],
            &GpuPolicy::default(),
            now(),
            0,
        );
        let signature = checks.iter().find(|c| c.name == "gpu.0.report.signature").unwrap();
        // Any change inside the signed span or the signature must break the signature.
        let parsed = AttestationReport::parse(&report);
        let changed_covered = match &parsed {
            Ok(p) => report[..p.signed_len + 96] != original[..p.signed_len + 96],
            Err(_) => true,
        };
        if changed_covered {
            prop_assert_ne!(signature.outcome, attestation::report::Outcome::Pass);
        }
    }

    #[test]
    fn pem_chain_parse_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let _ = certs::parse_pem_chain(&bytes);
    }

    #[test]
    fn mutated_chain_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let mut chain = testdata("blackwell_cert_chain_case1.txt");
        for (at, xor) in &edits {
            let i = at.index(chain.len());
            chain[i] ^= xor;
        }
        let _ = verify(&evidence(genuine_report(), chain), &[0u8; 32], &GpuPolicy::default(), now(), 0);
    }
}
