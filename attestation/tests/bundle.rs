//! Evidence bundles from the test evidence source: binding (nonce, node key, GPU evidence),
//! the test-root rule, GPU checks included under gpu.<i>.*, and the node key file.
// Without `collect` the test source is the only SNP source, so its `let ... else` always matches.
#![cfg_attr(not(feature = "collect"), allow(irrefutable_let_patterns))]

use std::sync::OnceLock;

use attestation::bundle::{Bundle, EvidenceSource, gpu_nonce, verify_bundle};
use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::identity::load_or_create_unsealed_key;
use attestation::nodes::ExpectedNode;
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
        config: attestation::bundle::ConfigBinding::NONE,
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
        config_digest: None,
    };
    rejects(&verify(&bundle, &nonce, &p, &other_key), "binding.node_key");
    let other_chip = ExpectedNode {
        node_public_key: None,
        chip_id: Some(vec![1; 64]),
        config_digest: None,
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
    // Recorded Blackwell evidence (RTX PRO 6000, testdata/nvidia). Its SPDM nonce is the
    // recorder's, so gpu.0's nonce check must fail while its signature and chain pass.
    let dir = env!("CARGO_MANIFEST_DIR");
    let report_hex = std::fs::read_to_string(format!(
        "{dir}/testdata/nvidia/blackwellAttestationReport.txt"
    ))
    .expect("recorded report");
    let chain = std::fs::read(format!(
        "{dir}/testdata/nvidia/blackwell_cert_chain_case1.txt"
    ))
    .expect("recorded chain");
    let gpu = serde_json::json!({
        "device": {"nvml_index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "uuid": "GPU-0", "pci_bus_id": "0000:01:00.0", "architecture": "Blackwell", "driver_version": "595.58.03"},
        "attestation_report": report_hex.trim(),
        "certificate_chain": base64_encode(&chain),
        "cc_state": {"cc_enabled": true, "dev_tools_mode": false, "environment": "prod"}
    });
    let gpus: Vec<attestation::nvidia::GpuEvidence> =
        serde_json::from_value(serde_json::json!([gpu])).expect("GpuEvidence schema");

    // 1. Added after the fact to a bundle collected without it: REPORT_DATA no longer matches.
    let nonce = [0x21; 32];
    let bundle = attester().attest(&nonce).unwrap();
    let mut b = bundle.clone();
    b.gpus = gpus.clone();
    let v = verify(&b, &nonce, &test_policy(), &ExpectedNode::default());
    rejects(&v, "binding.report_data");

    // 2. Bound into REPORT_DATA at collection (as the agent does): the binding holds, the
    //    nvidia checks run under gpu.0.*, and only the GPU nonce fails.
    let SnpSource::Test(signer) = &attester().snp else {
        unreachable!()
    };
    let key = &attester().node_key;
    let public = key.verifying_key().to_bytes();
    let rd = attestation::bundle::report_data(
        &nonce,
        &public,
        &attestation::bundle::gpu_evidence_digest(&gpus),
        &b.config,
    );
    let report = signer.report(rd);
    let mut b = bundle.clone();
    b.gpus = gpus.clone();
    b.snp.report = hex::encode(report.as_bytes());
    use ed25519_dalek::Signer as _;
    b.node_signature = hex::encode(
        key.sign(&attestation::bundle::node_signature_message(
            report.as_bytes(),
        ))
        .to_bytes(),
    );
    let v = verify(&b, &nonce, &test_policy(), &ExpectedNode::default());
    assert_eq!(
        v.check("binding.report_data").unwrap().outcome,
        Outcome::Pass,
        "{}",
        v.to_table()
    );
    assert_eq!(
        v.check("gpu.0.report.signature").map(|c| c.outcome),
        Some(Outcome::Pass),
        "{}",
        v.to_table()
    );
    assert_eq!(
        v.check("gpu.0.cert_chain").map(|c| c.outcome),
        Some(Outcome::Pass),
        "{}",
        v.to_table()
    );
    let failed: Vec<&str> = v.failed().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, vec!["gpu.0.report.nonce"], "{}", v.to_table());
    // Tampering with the unsigned NVML CC state breaks the binding.
    let mut t = b.clone();
    t.gpus[0].cc_state.dev_tools_mode = true;
    rejects(
        &verify(&t, &nonce, &test_policy(), &ExpectedNode::default()),
        "binding.report_data",
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
    let k1 = load_or_create_unsealed_key(&path).unwrap().0;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let k2 = load_or_create_unsealed_key(&path).unwrap().0;
    assert_eq!(k1.verifying_key(), k2.verifying_key());
    std::fs::write(&path, "garbage").unwrap();
    assert!(load_or_create_unsealed_key(&path).is_err());
}

/// Without `/dev/sev-guest` the hardware source is a typed error; in an SEV-SNP guest it
/// gives a bundle whose report parses and carries the nonce's binding (the same test,
/// asserting what each kind of machine must do).
#[cfg(feature = "collect")]
#[test]
fn hardware_source_is_a_typed_error_without_sev_guest_and_evidence_with_it() {
    let a = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
        snp: SnpSource::Hardware {
            vmpl: 0,
            cert_cache: None,
        },
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    };
    if std::path::Path::new("/dev/sev-guest").exists() {
        let bundle = a.attest(&[0x5a; 32]).expect("evidence from /dev/sev-guest");
        let report = attestation::snp::raw::AttestationReport::parse_hex(&bundle.snp.report)
            .expect("the firmware's report parses");
        assert_ne!(
            report.report_data(),
            [0u8; 64],
            "REPORT_DATA binds the nonce"
        );
        return;
    }
    let err = a.attest(&[0; 32]).unwrap_err();
    assert!(
        matches!(
            err,
            attestation::collect::CollectError::NoSevGuestDevice { .. }
        ),
        "{err}"
    );
}

#[cfg(feature = "collect")]
fn recorded_gpu(
    index: u32,
    report_file: &str,
    chain_file: &str,
) -> attestation::nvidia::GpuEvidence {
    let dir = env!("CARGO_MANIFEST_DIR");
    let report_hex =
        std::fs::read_to_string(format!("{dir}/testdata/nvidia/{report_file}")).unwrap();
    attestation::nvidia::GpuEvidence {
        device: attestation::nvidia::GpuDevice {
            nvml_index: index,
            name: format!("recorded {report_file}"),
            ..Default::default()
        },
        attestation_report: hex::decode(report_hex.trim()).unwrap(),
        certificate_chain: std::fs::read(format!("{dir}/testdata/nvidia/{chain_file}")).unwrap(),
        cc_state: attestation::nvidia::CcState {
            cc_enabled: true,
            dev_tools_mode: false,
            environment: "prod".into(),
        },
    }
}

/// A test-source bundle whose REPORT_DATA binds `gpus` and `failures` (as the agent does).
#[cfg(feature = "collect")]
fn bound_bundle(
    nonce: &[u8; 32],
    gpus: Vec<attestation::nvidia::GpuEvidence>,
    failures: Vec<attestation::bundle::GpuFailure>,
) -> Bundle {
    use ed25519_dalek::Signer as _;
    let SnpSource::Test(signer) = &attester().snp else {
        unreachable!()
    };
    let key = &attester().node_key;
    let rd = attestation::bundle::report_data(
        nonce,
        &key.verifying_key().to_bytes(),
        &attestation::bundle::gpu_digest(&gpus, &failures),
        &attestation::bundle::ConfigBinding::NONE,
    );
    let report = signer.report(rd);
    let mut b = attester().attest(nonce).unwrap();
    b.gpus = gpus;
    b.gpu_failures = failures;
    b.snp.report = hex::encode(report.as_bytes());
    b.node_signature = hex::encode(
        key.sign(&attestation::bundle::node_signature_message(
            report.as_bytes(),
        ))
        .to_bytes(),
    );
    b
}

#[cfg(feature = "collect")]
#[test]
fn one_gpu_failing_is_reported_per_gpu_and_the_others_still_verify() {
    use attestation::collect::split_gpus;
    use attestation::nvidia::{CollectError, DeviceCollection};
    // Three GPUs as `nvidia::collect_each` returns them: recorded Hopper evidence at NVML
    // index 0, an NVML failure at index 1, recorded Blackwell evidence at index 2.
    let devices = vec![
        DeviceCollection {
            nvml_index: 0,
            evidence: Ok(recorded_gpu(
                0,
                "hopperAttestationReport.txt",
                "hopper_cert_chain_case1.txt",
            )),
        },
        DeviceCollection {
            nvml_index: 1,
            evidence: Err(CollectError::Nvml {
                call: "nvmlDeviceGetConfComputeGpuAttestationReport",
                gpu: Some(1),
                source: nvml_wrapper::error::NvmlError::GpuLost,
            }),
        },
        DeviceCollection {
            nvml_index: 2,
            evidence: Ok(recorded_gpu(
                2,
                "blackwellAttestationReport.txt",
                "blackwell_cert_chain_case1.txt",
            )),
        },
    ];
    let (gpus, failures) = split_gpus(devices);
    assert_eq!(gpus.len(), 2);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].nvml_index, 1);
    assert!(failures[0].error.contains("GPU 1"), "{}", failures[0].error);

    let nonce = [0x33; 32];
    let b = bound_bundle(&nonce, gpus, failures);
    // As served: JSON round trip keeps the failure list.
    let b = Bundle::from_json(&serde_json::to_vec(&b).unwrap()).unwrap();
    let v = verify(&b, &nonce, &test_policy(), &ExpectedNode::default());
    let outcome = |name: &str| v.check(name).map(|c| c.outcome);
    assert_eq!(
        outcome("binding.report_data"),
        Some(Outcome::Pass),
        "{}",
        v.to_table()
    );
    assert_eq!(
        outcome("gpu.indices"),
        Some(Outcome::Pass),
        "{}",
        v.to_table()
    );
    // The two recorded GPUs are checked under their own NVML index: genuine signatures and
    // chains pass; their SPDM nonces are the recorders', not gpu_nonce(nonce, index).
    for i in [0, 2] {
        for check in ["report.signature", "cert_chain"] {
            assert_eq!(
                outcome(&format!("gpu.{i}.{check}")),
                Some(Outcome::Pass),
                "gpu.{i}.{check}\n{}",
                v.to_table()
            );
        }
    }
    let failed: Vec<&str> = v.failed().map(|c| c.name.as_str()).collect();
    assert_eq!(
        failed,
        vec![
            "gpu.0.report.nonce",
            "gpu.2.report.nonce",
            "gpu.1.collection"
        ],
        "{}",
        v.to_table()
    );
    assert!(
        v.check("gpu.1.collection")
            .unwrap()
            .detail
            .contains("GPU 1")
    );

    // The failure list is bound: dropping it (hiding the failed GPU) breaks REPORT_DATA.
    let mut hidden = b.clone();
    hidden.gpu_failures.clear();
    rejects(
        &verify(&hidden, &nonce, &test_policy(), &ExpectedNode::default()),
        "binding.report_data",
    );
    // One GPU's evidence presented under two indices fails gpu.indices.
    let twice = bound_bundle(
        &nonce,
        vec![
            recorded_gpu(
                0,
                "hopperAttestationReport.txt",
                "hopper_cert_chain_case1.txt",
            ),
            recorded_gpu(
                0,
                "hopperAttestationReport.txt",
                "hopper_cert_chain_case1.txt",
            ),
        ],
        Vec::new(),
    );
    rejects(
        &verify(&twice, &nonce, &test_policy(), &ExpectedNode::default()),
        "gpu.indices",
    );
    // Without failures the digest is the evidence digest (bundles without GPU failures are
    // bound exactly as before).
    assert_eq!(
        attestation::bundle::gpu_digest(&b.gpus, &[]),
        attestation::bundle::gpu_evidence_digest(&b.gpus)
    );
}

#[test]
fn the_configuration_is_bound_and_checked_against_the_pinned_signers_and_the_plan() {
    use attestation::bundle::ConfigBinding;
    let digest = [0xC0; 32];
    let config_key = ed25519_dalek::SigningKey::from_bytes(&[0x33; 32])
        .verifying_key()
        .to_bytes();
    let a = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
        // The chain test_policy() trusts (attester()'s seed).
        snp: SnpSource::Test(Box::new(TestSigner::from_seed([3; 32]).unwrap())),
        gpu: GpuSource::None,
        config: ConfigBinding::from_parts(digest, config_key),
    };
    let nonce = [0x44; 32];
    let bundle = a.attest(&nonce).unwrap();
    let bundle = Bundle::from_json(&serde_json::to_vec(&bundle).unwrap()).unwrap();
    assert_eq!(bundle.config, ConfigBinding::from_parts(digest, config_key));
    let mut p = test_policy();
    p.config_signers = vec![config_key];
    let planned = ExpectedNode {
        config_digest: Some(digest),
        ..ExpectedNode::default()
    };
    let v = verify(&bundle, &nonce, &p, &planned);
    assert!(v.admitted, "{}", v.to_table());
    for name in [
        "config.signer",
        "config.bundle_digest",
        "binding.report_data",
    ] {
        assert_eq!(v.check(name).unwrap().outcome, Outcome::Pass, "{name}");
    }
    // The digest claimed in the evidence changed (another bundle's): REPORT_DATA breaks.
    let mut b = bundle.clone();
    b.config.bundle_digest = [0xC1; 32];
    let v = verify(&b, &nonce, &p, &ExpectedNode::default());
    rejects(&v, "binding.report_data");
    // The signer claimed changed to a pinned one: REPORT_DATA breaks too.
    let mut b = bundle.clone();
    let other = ed25519_dalek::SigningKey::from_bytes(&[0x34; 32])
        .verifying_key()
        .to_bytes();
    b.config.signer = other;
    let mut p2 = test_policy();
    p2.config_signers = vec![other];
    rejects(&verify(&b, &nonce, &p2, &planned), "binding.report_data");
    // Honest evidence, but a signer the policy does not pin.
    rejects(&verify(&bundle, &nonce, &p2, &planned), "config.signer");
    // Honest evidence, but not the plan's bundle.
    let other_plan = ExpectedNode {
        config_digest: Some([0xC2; 32]),
        ..ExpectedNode::default()
    };
    rejects(
        &verify(&bundle, &nonce, &p, &other_plan),
        "config.bundle_digest",
    );
    // A node without a bundle, under a policy that pins signers.
    let unconfigured = attester().attest(&nonce).unwrap();
    assert!(unconfigured.config.is_none());
    rejects(
        &verify(&unconfigured, &nonce, &p, &ExpectedNode::default()),
        "config.signer",
    );
    // Without pins and without a plan the checks are skipped, never passed.
    let v = verify(&bundle, &nonce, &test_policy(), &ExpectedNode::default());
    assert_eq!(v.check("config.signer").unwrap().outcome, Outcome::Skip);
    assert_eq!(
        v.check("config.bundle_digest").unwrap().outcome,
        Outcome::Skip
    );
    // Nothing registered for the node: listed as skipped, not left out.
    assert_eq!(
        v.check("identity.node_chip_id").map(|c| c.outcome),
        Some(Outcome::Skip)
    );
    assert_eq!(v.check("binding.node_key").unwrap().outcome, Outcome::Skip);
}

/// The configuration signer of the tests that load a release manifest.
fn config_signer() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[0x33; 32])
}

#[test]
fn the_bundle_signer_must_be_one_the_image_pins() {
    use attestation::bundle::ConfigBinding;
    use attestation::policy::ImagePins;
    use attestation::snp::raw::AttestationReport;
    let pinned = config_signer().verifying_key().to_bytes();
    let other = ed25519_dalek::SigningKey::from_bytes(&[0x34; 32])
        .verifying_key()
        .to_bytes();
    let nonce = [0x45; 32];
    let signed_by = |signer: [u8; 32]| {
        Attester {
            node_key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
            snp: SnpSource::Test(Box::new(TestSigner::from_seed([3; 32]).unwrap())),
            gpu: GpuSource::None,
            config: ConfigBinding::from_parts([0xC0; 32], signer),
        }
        .attest(&nonce)
        .unwrap()
    };
    let bundle = signed_by(pinned);
    let measurement = AttestationReport::parse_hex(&bundle.snp.report)
        .unwrap()
        .measurement();
    // Both signers are ones the policy accepts: only the image's pins tell them apart.
    let mut p = test_policy();
    p.config_signers = vec![pinned, other];
    p.image_pins = vec![ImagePins {
        measurement: measurement.to_vec(),
        config_signers: vec![pinned],
        manifest: "release-manifest.json".into(),
    }];
    let v = verify(&bundle, &nonce, &p, &ExpectedNode::default());
    assert!(v.admitted, "{}", v.to_table());
    assert_eq!(
        v.check("config.image_signer").unwrap().outcome,
        Outcome::Pass
    );
    let v = verify(&signed_by(other), &nonce, &p, &ExpectedNode::default());
    rejects(&v, "config.image_signer");
    assert!(
        v.check("config.image_signer")
            .unwrap()
            .detail
            .contains("does not pin"),
        "{}",
        v.to_table()
    );
    // The image's pins belong to its measurement only.
    p.image_pins[0].measurement = vec![0xAB; 48];
    let v = verify(&signed_by(other), &nonce, &p, &ExpectedNode::default());
    assert_eq!(
        v.check("config.image_signer").unwrap().outcome,
        Outcome::Skip
    );
}

#[test]
fn a_policy_lacking_what_admission_needs_says_what() {
    let p = Policy::from_toml(
        "",
        std::path::Path::new("."),
        std::path::Path::new("p.toml"),
    )
    .unwrap();
    let missing = p.missing_for_admission().join("; ");
    for what in [
        "measurement allow-list",
        "TCB minimum",
        "guest_policy.vmpl",
        "gpu.count",
        "config.signers",
    ] {
        assert!(missing.contains(what), "{missing}");
    }
    assert!(!missing.contains("test root"), "{missing}");
    let complete = format!(
        "[identity]\nmeasurements = [\"{}\"]\n[tcb.milan]\nbootloader = 0\ntee = 0\nsnp = 0\nmicrocode = 0\n[guest_policy]\nvmpl = [0]\nallow_smt = true\nallow_cxl = true\nrequire_single_socket = false\nrequire_aes_256_xts = false\nrequire_rapl_disabled = false\nrequire_ciphertext_hiding = false\n[waive]\n\"snp.chain.crl\" = \"offline\"\n\"snp.tcb.firmware\" = \"test\"\n\"snp.policy.abi\" = \"test\"\n\"snp.policy.guest_svn\" = \"test\"\n\"config.image_signer\" = \"no manifest\"\n[gpu]\ncount = 0\n[config]\nsigners = [\"{}\"]\n",
        "ab".repeat(48),
        hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&[1; 32])
                .verifying_key()
                .to_bytes()
        )
    );
    let p = Policy::from_toml(
        &complete,
        std::path::Path::new("."),
        std::path::Path::new("p.toml"),
    )
    .unwrap();
    assert!(
        p.missing_for_admission().is_empty(),
        "{:?}",
        p.missing_for_admission()
    );
    // The same policy naming a test root is a lab policy, and says exactly that.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ark.pem"),
        TestSigner::from_seed([3; 32]).unwrap().ark_pem(),
    )
    .unwrap();
    let lab = Policy::from_toml(
        &format!("{complete}[trust]\ntest_root_ark = \"ark.pem\"\n"),
        dir.path(),
        std::path::Path::new("p.toml"),
    )
    .unwrap();
    let missing = lab.missing_for_admission();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].contains("trust.test_root_ark"), "{missing:?}");
    let bad = "[config]\nsigners = [\"00\"]\n";
    let err = Policy::from_toml(
        bad,
        std::path::Path::new("."),
        std::path::Path::new("p.toml"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("config.signers[0]"), "{err}");
}

#[test]
fn the_policy_digest_covers_every_file_the_policy_refers_to() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f);
    let manifest = |m: &str| {
        format!(
            "{{\"sev_snp\": {{\"launch_digest\": \"{m}\"}}, \"config\": {{\"signers\": [\"{}\"]}}}}",
            hex::encode(config_signer().verifying_key().to_bytes())
        )
    };
    std::fs::write(d("release-manifest.json"), manifest(&"ab".repeat(48))).unwrap();
    std::fs::write(
        d("nodes.toml"),
        format!(
            "[[node]]\nname = \"n\"\nurl = \"http://x\"\nchip_id = \"{}\"\n",
            "11".repeat(64)
        ),
    )
    .unwrap();
    std::fs::write(
        d("ark.pem"),
        TestSigner::from_seed([3; 32]).unwrap().ark_pem(),
    )
    .unwrap();
    std::fs::write(d("amd.crl"), b"crl bytes").unwrap();
    let text = "[identity]\nrelease_manifests = [\"release-manifest.json\"]\nregistered_nodes = \"nodes.toml\"\n[trust]\ntest_root_ark = \"ark.pem\"\ncrl = \"amd.crl\"\n";
    std::fs::write(d("policy.toml"), text).unwrap();
    let load = || Policy::load(&d("policy.toml")).unwrap();
    let first = load();
    let fields: Vec<&str> = first
        .referenced_files
        .iter()
        .map(|f| f.field.as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "identity.release_manifests[0]",
            "identity.registered_nodes",
            "trust.test_root_ark",
            "trust.crl"
        ]
    );
    let base = first.sha256;
    use sha2::Digest as _;
    assert_ne!(base, <[u8; 32]>::from(sha2::Sha256::digest(text)));
    assert_eq!(load().sha256, base, "the digest is deterministic");
    // Each referenced file changes the digest while the TOML stays the same.
    let changes: [(&str, Vec<u8>); 4] = [
        (
            "release-manifest.json",
            manifest(&"cd".repeat(48)).into_bytes(),
        ),
        (
            "nodes.toml",
            format!(
                "[[node]]\nname = \"n\"\nurl = \"http://x\"\nchip_id = \"{}\"\n",
                "22".repeat(64)
            )
            .into_bytes(),
        ),
        (
            "ark.pem",
            TestSigner::from_seed([4; 32])
                .unwrap()
                .ark_pem()
                .into_bytes(),
        ),
        ("amd.crl", b"other crl bytes".to_vec()),
    ];
    for (file, bytes) in changes {
        let before = std::fs::read(d(file)).unwrap();
        std::fs::write(d(file), &bytes).unwrap();
        assert_ne!(load().sha256, base, "{file} is not covered");
        std::fs::write(d(file), before).unwrap();
        assert_eq!(load().sha256, base);
    }
}
