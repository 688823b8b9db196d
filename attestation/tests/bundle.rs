//! Evidence bundles from the test evidence source: binding (nonce, node key, GPU evidence),
//! the test-root rule, GPU checks included under gpu.<i>.*, and the node key file.

use std::sync::OnceLock;

use attestation::bundle::{Bundle, EvidenceSource, ExpectedNode, gpu_nonce, verify_bundle};
use attestation::collect::{Attester, GpuSource, SnpSource, load_or_create_node_key};
use attestation::policy::Policy;
use attestation::report::{Outcome, Verdict};
use attestation::snp::amd::{ChainVerifier, parse_time};
use attestation::test_source::TestSigner;

fn attester() -> &'static Attester {
    static A: OnceLock<Attester> = OnceLock::new();
    A.get_or_init(|| Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
        snp: SnpSource::Test(Box::new(TestSigner::from_seed([3; 32]).unwrap())),
        gpu: GpuSource::None,
    })
}

fn test_policy() -> Policy {
    let SnpSource::Test(signer) = &attester().snp else {
        unreachable!()
    };
    let mut p = Policy::default_policy();
    p.test_root = Some(signer.authority.anchor());
    p
}

fn now() -> u64 {
    parse_time("2026-11-29T00:00:00Z").unwrap()
}

fn verify(bundle: &Bundle, nonce: &[u8; 32], policy: &Policy, expected: &ExpectedNode) -> Verdict {
    let chains = ChainVerifier::new(policy.trust_store());
    verify_bundle(bundle, nonce, policy, &chains, now(), expected)
}

#[track_caller]
fn rejects(v: &Verdict, check: &str) {
    let c = v
        .check(check)
        .unwrap_or_else(|| panic!("no check {check}\n{}", v.to_table()));
    assert_eq!(c.outcome, Outcome::Fail, "{check}\n{}", v.to_table());
    assert!(!v.admitted);
}

#[test]
fn fresh_test_bundle_is_admitted_only_under_a_policy_trusting_the_test_root() {
    let nonce = [0xAB; 32];
    let bundle = attester().attest(&nonce).unwrap();
    assert_eq!(bundle.source, EvidenceSource::Test);
    // JSON round trip as served.
    let bundle = Bundle::from_json(&serde_json::to_vec(&bundle).unwrap()).unwrap();
    let v = verify(&bundle, &nonce, &test_policy(), &ExpectedNode::default());
    assert!(v.admitted, "{}", v.to_table());
    for name in [
        "binding.nonce",
        "binding.report_data",
        "binding.node_signature",
        "evidence.source",
        "snp.report.signature",
    ] {
        assert_eq!(v.check(name).unwrap().outcome, Outcome::Pass, "{name}");
    }
    // AMD roots only: the test chain is not anchored.
    let v = verify(
        &bundle,
        &nonce,
        &Policy::default_policy(),
        &ExpectedNode::default(),
    );
    rejects(&v, "snp.chain.ark_pinned");
    rejects(&v, "evidence.source");
}

#[test]
fn binding_failures_are_named() {
    let nonce = [0x11; 32];
    let bundle = attester().attest(&nonce).unwrap();
    let p = test_policy();
    let none = ExpectedNode::default();
    // Replayed to a different nonce.
    let v = verify(&bundle, &[0x12; 32], &p, &none);
    rejects(&v, "binding.nonce");
    rejects(&v, "binding.report_data");
    // The bundle's nonce field edited to match: REPORT_DATA still gives it away.
    let mut b = bundle.clone();
    b.nonce = hex::encode([0x12; 32]);
    let v = verify(&b, &[0x12; 32], &p, &none);
    assert_eq!(v.check("binding.nonce").unwrap().outcome, Outcome::Pass);
    rejects(&v, "binding.report_data");
    // Another node key swapped in: REPORT_DATA and the signature both fail.
    let mut b = bundle.clone();
    b.node_public_key = hex::encode(
        ed25519_dalek::SigningKey::from_bytes(&[6; 32])
            .verifying_key()
            .to_bytes(),
    );
    let v = verify(&b, &nonce, &p, &none);
    rejects(&v, "binding.report_data");
    rejects(&v, "binding.node_signature");
    // Signature bytes corrupted.
    let mut b = bundle.clone();
    b.node_signature = "00".repeat(64);
    rejects(&verify(&b, &nonce, &p, &none), "binding.node_signature");
    // Node key not the registered one; chip id not the registered one.
    let other_key = ExpectedNode {
        node_public_key: Some([9; 32]),
        chip_id: None,
    };
    rejects(&verify(&bundle, &nonce, &p, &other_key), "binding.node_key");
    let other_chip = ExpectedNode {
        node_public_key: None,
        chip_id: Some(vec![1; 64]),
    };
    rejects(
        &verify(&bundle, &nonce, &p, &other_chip),
        "identity.node_chip_id",
    );
    // Test evidence relabelled as hardware evidence.
    let mut b = bundle.clone();
    b.source = EvidenceSource::SevSnp;
    rejects(&verify(&b, &nonce, &p, &none), "evidence.source");
    // Policy requires one GPU; the test source has none.
    let mut p1 = test_policy();
    p1.gpu_count = Some(1);
    rejects(&verify(&bundle, &nonce, &p1, &none), "gpu.count");
}

#[test]
fn gpu_evidence_is_bound_and_checked_under_gpu_index() {
    // A recorded Blackwell report added after the fact: REPORT_DATA no longer matches, and the
    // nvidia module's checks run under gpu.0.* (its nonce cannot be this verifier's).
    let nonce = [0x21; 32];
    let bundle = attester().attest(&nonce).unwrap();
    let dir = env!("CARGO_MANIFEST_DIR");
    let Ok(report_hex) = std::fs::read_to_string(format!(
        "{dir}/../../shared/testdata/attestation/nvidia/blackwellAttestationReport.txt"
    ))
    .or_else(|_| {
        std::fs::read_to_string(
            "/work/shared/testdata/attestation/nvidia/blackwellAttestationReport.txt",
        )
    }) else {
        eprintln!("skipping: recorded NVIDIA report not found");
        return;
    };
    let chain =
        std::fs::read("/work/shared/testdata/attestation/nvidia/blackwell_cert_chain_case1.txt")
            .unwrap_or_default();
    let gpu = serde_json::json!({
        "device": {"nvml_index": 0, "name": "NVIDIA RTX PRO 6000", "uuid": "GPU-0", "pci_bus_id": "0000:01:00.0", "architecture": "Blackwell", "driver_version": "595.58.03"},
        "attestation_report": report_hex.trim(),
        "certificate_chain": base64_encode(&chain),
        "cc_state": {"cc_enabled": true, "dev_tools_mode": false, "environment": "prod"}
    });
    let mut json = serde_json::to_value(&bundle).unwrap();
    json["gpus"] = serde_json::json!([gpu]);
    let Ok(b) = Bundle::from_json(&serde_json::to_vec(&json).unwrap()) else {
        eprintln!("skipping: GPU evidence schema changed");
        return;
    };
    let v = verify(&b, &nonce, &test_policy(), &ExpectedNode::default());
    rejects(&v, "binding.report_data");
    assert!(
        v.checks.iter().any(|c| c.name.starts_with("gpu.0.")),
        "{}",
        v.to_table()
    );
    assert!(
        v.failed()
            .any(|c| c.name.starts_with("gpu.0.") && c.name.contains("nonce")),
        "{}",
        v.to_table()
    );
    // Per-index nonces differ.
    assert_ne!(gpu_nonce(&nonce, 0), gpu_nonce(&nonce, 1));
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn node_key_is_created_0600_and_reloaded() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.key");
    let k1 = load_or_create_node_key(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let k2 = load_or_create_node_key(&path).unwrap();
    assert_eq!(k1.verifying_key(), k2.verifying_key());
    std::fs::write(&path, "garbage").unwrap();
    assert!(load_or_create_node_key(&path).is_err());
}

#[test]
fn hardware_source_without_sev_guest_is_a_typed_error() {
    if std::path::Path::new("/dev/sev-guest").exists() {
        eprintln!("skipping: this machine has /dev/sev-guest");
        return;
    }
    let a = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
        snp: SnpSource::Hardware {
            vmpl: 0,
            cert_cache: None,
        },
        gpu: GpuSource::None,
    };
    let err = a.attest(&[0; 32]).unwrap_err();
    assert!(
        matches!(
            err,
            attestation::collect::CollectError::NoSevGuestDevice { .. }
        ),
        "{err}"
    );
}
