//! "No panic on any input" for every parser, over arbitrary and mutated bytes (the stable
//! counterpart of the cargo-fuzz targets in fuzz/, which need nightly).

use attestation::bundle::{Bundle, verify_bundle};
use attestation::nodes::{ExpectedNode, NodeList};
use attestation::policy::Policy;
use attestation::snp::amd::{
    AmdCert, ChainVerifier, EndorsementExtensions, SuppliedChain, TrustStore, crl_check,
    parse_certs,
};
use attestation::snp::raw::{AttestationReport, REPORT_SIZE};
use attestation::snp_checks::{self, SnpContext};
use proptest::prelude::*;

fn data(path: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/testdata/sev/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

/// Flip, set or truncate bytes of a genuine input.
fn mutate(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = base.len();
    (
        proptest::collection::vec((0..len, any::<u8>()), 1..8),
        0..=len,
    )
        .prop_map(move |(edits, cut)| {
            let mut b = base.clone();
            for (i, v) in edits {
                if let Some(x) = b.get_mut(i) {
                    *x = v;
                }
            }
            if cut > len / 2 {
                b.truncate(cut);
            }
            b
        })
}

fn exercise_cert(c: &AmdCert) {
    let _ = EndorsementExtensions::from_cert(c);
    let _ = c.rsa_public_key();
    let _ = c.p384_public_key();
    let _ = c.validity_unix();
    let _ = c.tbs_bytes();
    let chain = SuppliedChain::from_certs(c.clone(), vec![]);
    let _ = ChainVerifier::new(TrustStore::amd()).verify(&chain);
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn report_parser_and_checks(bytes in proptest::collection::vec(any::<u8>(), REPORT_SIZE..=REPORT_SIZE)) {
        let r = AttestationReport::parse(&bytes).unwrap();
        let _ = r.signature_rs();
        let _ = r.first_nonzero_reserved();
        let _ = r.cpuid();
        let _ = r.mit_vectors();
        // All checks against a genuine chain.
        let vcek = parse_certs(&data("trustee/test-vcek.der")).unwrap().remove(0);
        let policy = Policy::default_policy();
        let chains = ChainVerifier::new(policy.trust_store());
        let mut checks = Vec::new();
        snp_checks::verify_report(&bytes, Ok(SuppliedChain::from_certs(vcek, vec![])), &SnpContext { policy: &policy, chains: &chains, now: 1_800_000_000 }, &mut checks);
        prop_assert!(checks.iter().any(|c| c.name == "snp.report.signature"));
    }

    #[test]
    fn report_parser_any_length(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = AttestationReport::parse(&bytes);
        let _ = AttestationReport::parse_hex(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_genuine_report(bytes in mutate(data("go-sev-guest/attestation.bin"))) {
        let vcek = parse_certs(&data("go-sev-guest/vcek.testcer")).unwrap().remove(0);
        let policy = Policy::default_policy();
        let chains = ChainVerifier::new(policy.trust_store());
        let mut checks = Vec::new();
        snp_checks::verify_report(&bytes, Ok(SuppliedChain::from_certs(vcek, vec![])), &SnpContext { policy: &policy, chains: &chains, now: 1_800_000_000 }, &mut checks);
    }

    #[test]
    fn certificate_parser_arbitrary(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
        if let Ok(certs) = parse_certs(&bytes) {
            for c in &certs { exercise_cert(c); }
        }
    }

    #[test]
    fn certificate_parser_mutated_vcek(bytes in mutate(data("trustee/test-vcek.der"))) {
        if let Ok(certs) = parse_certs(&bytes) {
            for c in &certs { exercise_cert(c); }
        }
    }

    #[test]
    fn certificate_parser_mutated_turin_vcek(bytes in mutate(data("sev-crate/vcek_turin.der"))) {
        if let Ok(certs) = parse_certs(&bytes) {
            for c in &certs { exercise_cert(c); }
        }
    }

    #[test]
    fn pem_parser_mutated_chain(bytes in mutate(data("go-sev-guest/ask_ark_milan.pem"))) {
        let _ = parse_certs(&bytes);
    }

    #[test]
    fn crl_parser(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let ark = TrustStore::amd().anchors()[0].ark.clone();
        let _ = crl_check(&bytes, &ark, None, 0);
    }

    #[test]
    fn bundle_parser_and_verifier(text in "\\PC{0,400}") {
        if let Ok(b) = Bundle::from_json(text.as_bytes()) {
            let p = Policy::default_policy();
            let _ = verify_bundle(&b, &[0; 32], &p, &ChainVerifier::new(p.trust_store()), 0, &ExpectedNode::default());
        }
    }

    #[test]
    fn bundle_with_arbitrary_fields(report in "[0-9a-f]{0,64}", vcek in "\\PC{0,200}", nonce in "[0-9a-f]{0,70}", key in "[0-9a-f]{0,70}", sig in "[0-9a-f]{0,140}", config in "[0-9a-f]{64}") {
        let json = serde_json::json!({
            "format": attestation::bundle::BUNDLE_FORMAT, "source": "test", "nonce": nonce,
            "node_public_key": key, "node_signature": sig, "gpus": [],
            "config": {"bundle_digest": config, "signer": config},
            "snp": {"report": report, "certificates": {"vcek": vcek, "ask": null, "ark": null, "source": "test"}}
        });
        let b = Bundle::from_json(&serde_json::to_vec(&json).unwrap()).unwrap();
        let p = Policy::default_policy();
        let v = verify_bundle(&b, &[0; 32], &p, &ChainVerifier::new(p.trust_store()), 0, &ExpectedNode::default());
        prop_assert!(!v.admitted);
    }

    #[test]
    fn policy_and_node_list_parsers(text in "\\PC{0,300}") {
        let _ = Policy::from_toml(&text, std::path::Path::new("/nonexistent"), std::path::Path::new("p.toml"));
        let _ = NodeList::parse(&text, "nodes.toml");
    }
}
