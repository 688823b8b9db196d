//! Genuine AMD SEV-SNP reports and certificates (testdata/sev/README.md): every check that
//! applies must pass, and the known defects of each vector must fail exactly where expected.

use attestation::policy::Policy;
use attestation::report::{Outcome, Verdict};
use attestation::snp::amd::{
    ChainVerifier, EndorsementExtensions, SuppliedChain, TrustStore, parse_certs, parse_time,
};
use attestation::snp::raw::AttestationReport;
use attestation::snp::tcb::Product;
use attestation::snp_checks::{self, SnpContext};

fn data(path: &str) -> Vec<u8> {
    let full = format!("{}/testdata/sev/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn at(time: &str) -> u64 {
    parse_time(time).expect("test time")
}

/// 2026-11-29: inside every genuine VCEK's validity except the trustee VLEK's.
const NOW: &str = "2026-11-29T00:00:00Z";

fn verify(
    report: &[u8],
    vcek: &str,
    chain_file: Option<&str>,
    policy: &Policy,
    now: u64,
) -> Verdict {
    let vcek = parse_certs(&data(vcek)).expect("vcek").remove(0);
    let others = chain_file
        .map(|f| parse_certs(&data(f)).expect("chain"))
        .unwrap_or_default();
    let chains = ChainVerifier::new(policy.trust_store());
    let mut checks = Vec::new();
    snp_checks::verify_report(
        report,
        Ok(SuppliedChain::from_certs(vcek, others)),
        &SnpContext {
            policy,
            chains: &chains,
            now,
        },
        &mut checks,
    );
    Verdict::from_checks(checks)
}

fn outcome(v: &Verdict, name: &str) -> Outcome {
    v.check(name)
        .unwrap_or_else(|| panic!("no check {name} in\n{}", v.to_table()))
        .outcome
}

fn failed(v: &Verdict) -> Vec<String> {
    v.failed().map(|c| c.name.clone()).collect()
}

const CORE_CHECKS: [&str; 14] = [
    "snp.format.size",
    "snp.format.version",
    "snp.format.signature_algo",
    "snp.format.signing_key",
    "snp.format.reserved_zero",
    "snp.format.policy_bits",
    "snp.chain.ark_pinned",
    "snp.chain.ark_self_signed",
    "snp.chain.ask_signature",
    "snp.chain.vcek_signature",
    "snp.chain.validity",
    "snp.report.signature",
    "snp.cert.tcb",
    "snp.cert.product",
];

#[test]
fn go_sev_guest_report_passes_chain_and_signature_but_fails_debug() {
    let report = data("go-sev-guest/attestation.bin");
    for chain in [None, Some("go-sev-guest/milan.testcer")] {
        let v = verify(
            &report,
            "go-sev-guest/vcek.testcer",
            chain,
            &Policy::default_policy(),
            at(NOW),
        );
        for name in CORE_CHECKS.iter().chain(&[
            "snp.cert.chip_id",
            "snp.cert.key_kind",
            "snp.policy.migration_agent",
        ]) {
            assert_eq!(outcome(&v, name), Outcome::Pass, "{name}\n{}", v.to_table());
        }
        // Policy 0x0B0000: debug allowed. The default policy must reject exactly that.
        assert_eq!(
            failed(&v),
            vec!["snp.policy.debug".to_string()],
            "{}",
            v.to_table()
        );
        assert!(!v.admitted);
        // Allow-lists are skipped without a policy.
        assert_eq!(outcome(&v, "snp.identity.measurement"), Outcome::Skip);
        assert_eq!(outcome(&v, "snp.tcb.reported"), Outcome::Skip);
        // Version 2 carries no CPUID.
        assert_eq!(outcome(&v, "snp.report.cpuid"), Outcome::Skip);
    }
}

#[test]
fn go_sev_guest_check_tool_expectations() {
    // go-sev-guest tools/check/check_test.go: accepts min TCB 2/0/5/68, min firmware 1.49,
    // vmpl 0; rejects one more microcode, firmware 1.50, vmpl 1.
    let report = data("go-sev-guest/attestation.bin");
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &str| {
        let path = dir.path().join("p.toml");
        std::fs::write(&path, extra).unwrap();
        let policy = Policy::load(&path).unwrap();
        verify(&report, "go-sev-guest/vcek.testcer", None, &policy, at(NOW))
    };
    let ok = run(
        "[tcb]\nmin_firmware = \"1.49\"\nmilan = { bootloader = 2, tee = 0, snp = 5, microcode = 68 }\n[guest_policy]\nvmpl = [0]\n",
    );
    for name in [
        "snp.tcb.current",
        "snp.tcb.committed",
        "snp.tcb.reported",
        "snp.tcb.launch",
        "snp.tcb.firmware",
        "snp.policy.vmpl",
    ] {
        assert_eq!(
            outcome(&ok, name),
            Outcome::Pass,
            "{name}\n{}",
            ok.to_table()
        );
    }
    let v = run("[tcb]\nmilan = { bootloader = 2, tee = 0, snp = 5, microcode = 69 }\n");
    for name in [
        "snp.tcb.current",
        "snp.tcb.committed",
        "snp.tcb.reported",
        "snp.tcb.launch",
    ] {
        assert_eq!(outcome(&v, name), Outcome::Fail, "{name}");
    }
    assert_eq!(
        outcome(&run("[tcb]\nmin_firmware = \"1.50\"\n"), "snp.tcb.firmware"),
        Outcome::Fail
    );
    assert_eq!(
        outcome(&run("[guest_policy]\nvmpl = [1]\n"), "snp.policy.vmpl"),
        Outcome::Fail
    );
    let m = "b07af9620f3b839b47996422ddec6058338951d984e312115131ea82705eaf5b6bdf8a9ece31a5a608eb0cf2e4872b01";
    assert_eq!(
        outcome(
            &run(&format!("[identity]\nmeasurements = [\"{m}\"]\n")),
            "snp.identity.measurement"
        ),
        Outcome::Pass
    );
    let chip = "3ac3fe21e13fb0990eb28a802e3fb6a29483a6b0753590c951bdd3b8e53786184ca39e359669a2b76a1936776b564ea464cdce40c05f63c9b610c5068b006b5d";
    assert_eq!(
        outcome(
            &run(&format!("[identity]\nchip_ids = [\"{chip}\"]\n")),
            "snp.identity.chip_id"
        ),
        Outcome::Pass
    );
}

#[test]
fn trustee_vcek_report_is_admitted_by_the_default_policy() {
    let report = data("trustee/test-report.bin");
    let v = verify(
        &report,
        "trustee/test-vcek.der",
        Some("go-sev-guest/ask_ark_milan.pem"),
        &Policy::default_policy(),
        at(NOW),
    );
    assert!(v.admitted, "{}", v.to_table());
    for name in CORE_CHECKS
        .iter()
        .chain(&["snp.cert.chip_id", "snp.policy.debug"])
    {
        assert_eq!(outcome(&v, name), Outcome::Pass, "{name}\n{}", v.to_table());
    }
}

#[test]
fn trustee_vlek_report_verifies_before_its_expiry_and_fails_validity_after() {
    let report = data("trustee/test-vlek-report.bin");
    let before = verify(
        &report,
        "trustee/test-vlek.der",
        Some("go-sev-guest/milanvlek.testcer"),
        &Policy::default_policy(),
        at("2025-06-01T00:00:00Z"),
    );
    assert!(before.admitted, "{}", before.to_table());
    assert_eq!(outcome(&before, "snp.cert.key_kind"), Outcome::Pass);
    assert_eq!(outcome(&before, "snp.format.signing_key"), Outcome::Pass);
    // VLEK: no per-chip hwID to compare.
    assert_eq!(outcome(&before, "snp.cert.chip_id"), Outcome::Skip);
    // Version 3: CPUID family 0x19 model 0x01 = Milan.
    assert_eq!(outcome(&before, "snp.report.cpuid"), Outcome::Pass);
    // The embedded ASVK serves when no chain is supplied.
    let embedded = verify(
        &report,
        "trustee/test-vlek.der",
        None,
        &Policy::default_policy(),
        at("2025-06-01T00:00:00Z"),
    );
    assert!(embedded.admitted, "{}", embedded.to_table());
    let after = verify(
        &report,
        "trustee/test-vlek.der",
        Some("go-sev-guest/milanvlek.testcer"),
        &Policy::default_policy(),
        at(NOW),
    );
    assert_eq!(
        failed(&after),
        vec!["snp.chain.validity".to_string()],
        "{}",
        after.to_table()
    );
}

#[test]
fn sev_crate_milan_report_passes() {
    let text = String::from_utf8(data("sev-crate/report_milan.hex")).unwrap();
    let report = AttestationReport::parse_hex(&text).expect("hex report");
    let v = verify(
        report.as_bytes(),
        "sev-crate/vcek_milan.der",
        Some("sev-crate/cert_chain_milan"),
        &Policy::default_policy(),
        at(NOW),
    );
    for name in CORE_CHECKS.iter().chain(&["snp.cert.chip_id"]) {
        assert_eq!(outcome(&v, name), Outcome::Pass, "{name}\n{}", v.to_table());
    }
}

#[test]
fn genuine_turin_vcek_chains_to_the_turin_ark_with_turin_extensions() {
    let vcek = parse_certs(&data("sev-crate/vcek_turin.der"))
        .unwrap()
        .remove(0);
    let chain = SuppliedChain::from_certs(
        vcek.clone(),
        parse_certs(&data("sev-crate/cert_chain_turin")).unwrap(),
    );
    let result = ChainVerifier::new(TrustStore::amd()).verify(&chain);
    assert!(result.ok(), "{:?}", result.checks);
    assert_eq!(result.product, Some(Product::Turin));
    let ext = EndorsementExtensions::from_cert(&vcek).unwrap();
    assert_eq!(ext.product_name.as_deref(), Some("Turin"));
    assert_eq!(ext.hw_id.as_ref().map(Vec::len), Some(8));
    let tcb = ext.tcb(Product::Turin).expect("Turin SPLs including FMC");
    assert!(tcb.fmc.is_some());
    // The Milan chain does not anchor it.
    let wrong = SuppliedChain::from_certs(
        vcek,
        parse_certs(&data("sev-crate/cert_chain_milan")).unwrap(),
    );
    let r = ChainVerifier::new(TrustStore::amd()).verify(&wrong);
    assert!(!r.ok());
}

#[test]
fn pinned_arks_are_amds_and_match_the_sev_crates_builtins() {
    let store = TrustStore::amd();
    let mut got: Vec<(Product, String)> = store
        .anchors()
        .iter()
        .map(|a| (a.product, a.ark.fingerprint()))
        .collect();
    got.sort_by_key(|(p, _)| p.name());
    assert_eq!(
        got,
        vec![
            (
                Product::Genoa,
                "4c6598d19c18719c5dfd4a7d335f674e5bfe1d8f800cea2cf270c10d103db2f1".into()
            ),
            (
                Product::Milan,
                "69d063b45344d26a2e94e1f4210de49ef555308287d4c174445c95639a540bcd".into()
            ),
            (
                Product::Turin,
                "1f084161a44bb6d93778a904877d4819cafa5d05ef4193b2ded9dd9c73dd3f6a".into()
            ),
        ]
    );
    assert!(store.anchors().iter().all(|a| !a.is_test));
    // Milan carries both the ASK and the ASVK.
    let milan = store
        .anchors()
        .iter()
        .find(|a| a.product == Product::Milan)
        .unwrap();
    assert_eq!(milan.intermediates.len(), 2);
}

#[test]
fn upstream_negatives_fail_the_targeted_check() {
    let policy = Policy::default_policy();
    let base = data("trustee/test-report.bin");
    // +1 on byte 42 (inside the signed part): the signature fails.
    let mut r = base.clone();
    r[42] = r[42].wrapping_add(1);
    let v = verify(&r, "trustee/test-vcek.der", None, &policy, at(NOW));
    assert_eq!(outcome(&v, "snp.report.signature"), Outcome::Fail);
    // +1 on byte 0x180 (reported_tcb bootloader): TCB-vs-certificate fails (and the signature).
    let mut r = base.clone();
    r[0x180] += 1;
    let v = verify(&r, "trustee/test-vcek.der", None, &policy, at(NOW));
    assert_eq!(outcome(&v, "snp.cert.tcb"), Outcome::Fail);
    assert_eq!(outcome(&v, "snp.report.signature"), Outcome::Fail);
    // +1 on byte 42 of the VCEK DER: the ASK signature over the VCEK fails.
    let mut der = data("trustee/test-vcek.der");
    der[42] = der[42].wrapping_add(1);
    let vcek = parse_certs(&der).expect("still DER").remove(0);
    let chains = ChainVerifier::new(policy.trust_store());
    let mut checks = Vec::new();
    snp_checks::verify_report(
        &base,
        Ok(SuppliedChain::from_certs(vcek, vec![])),
        &SnpContext {
            policy: &policy,
            chains: &chains,
            now: at(NOW),
        },
        &mut checks,
    );
    let v = Verdict::from_checks(checks);
    assert_eq!(
        outcome(&v, "snp.chain.vcek_signature"),
        Outcome::Fail,
        "{}",
        v.to_table()
    );
    // The ASVK in place of the ASK for a VCEK.
    let asvk: Vec<_> = parse_certs(&data("go-sev-guest/milanvlek.testcer")).unwrap();
    let vcek = parse_certs(&data("trustee/test-vcek.der"))
        .unwrap()
        .remove(0);
    let mut chain = SuppliedChain::from_certs(vcek, vec![]);
    chain.ask = asvk.into_iter().find(|c| c.subject() != c.issuer());
    let result = ChainVerifier::new(TrustStore::amd()).verify(&chain);
    let c = result
        .checks
        .iter()
        .find(|c| c.name == "snp.chain.vcek_signature")
        .unwrap();
    assert_eq!(c.outcome, Outcome::Fail, "{:?}", result.checks);
}

fn check_detail(checks: &[attestation::report::Check], name: &str) -> (Outcome, String) {
    let c = checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name} in {checks:#?}"));
    (c.outcome, c.detail.clone())
}

/// No pinned root matches: the message says what was compared and what differed, and does
/// not blame a supplied ARK that is AMD's pinned one.
#[test]
fn an_unanchored_chain_says_what_did_not_match() {
    let verifier = ChainVerifier::new(TrustStore::amd());
    let turin_vcek = parse_certs(&data("sev-crate/vcek_turin.der"))
        .unwrap()
        .remove(0);
    // Turin VCEK with the genuine Milan ASK + ARK: the ARK is AMD's Milan ARK, the VCEK's
    // issuer is not among its intermediates.
    let r = verifier.verify(&SuppliedChain::from_certs(
        turin_vcek.clone(),
        parse_certs(&data("sev-crate/cert_chain_milan")).unwrap(),
    ));
    let (outcome, detail) = check_detail(&r.checks, "snp.chain.ark_pinned");
    assert_eq!(outcome, Outcome::Fail);
    assert!(
        detail.starts_with("supplied ARK is the pinned Milan ARK")
            && detail.contains("none of its intermediates (CN=SEV-Milan")
            && detail.contains("issued the VCEK (issuer")
            && detail.contains("SEV-Turin"),
        "{detail}"
    );
    assert!(!detail.contains("is not a pinned"), "{detail}");
    // The Milan ASK it brought is reported as unused, not dropped.
    let (outcome, detail) = check_detail(&r.checks, "snp.chain.supplied_certificates");
    assert_eq!(outcome, Outcome::Fail);
    assert!(detail.contains("SEV-Milan"), "{detail}");

    // The Genoa ARK with a Milan VCEK: the same, naming Genoa.
    let milan_vcek = parse_certs(&data("go-sev-guest/vcek.testcer"))
        .unwrap()
        .remove(0);
    let r = verifier.verify(&SuppliedChain::from_certs(
        milan_vcek.clone(),
        parse_certs(&data("go-sev-guest/ask_ark_genoa.pem")).unwrap(),
    ));
    let (_, detail) = check_detail(&r.checks, "snp.chain.ark_pinned");
    assert!(
        detail.starts_with("supplied ARK is the pinned Genoa ARK"),
        "{detail}"
    );

    // An ARK carrying Milan's name with other bytes: named as such, both digests given.
    let milan = parse_certs(&data("go-sev-guest/ask_ark_milan.pem")).unwrap();
    let ark = milan.iter().find(|c| c.subject() == c.issuer()).unwrap();
    let mut forged = ark.der().to_vec();
    let mid = forged.len() / 2; // inside the RSA-4096 modulus
    forged[mid] ^= 0x01;
    let forged = parse_certs(&forged).unwrap().remove(0);
    let r = verifier.verify(&SuppliedChain::from_certs(milan_vcek.clone(), vec![forged]));
    let (_, detail) = check_detail(&r.checks, "snp.chain.ark_pinned");
    assert!(
        detail.contains("has the name of the pinned Milan ARK") && detail.contains("other bytes"),
        "{detail}"
    );

    // No ARK supplied and no pinned intermediate of that name: the issuer and the pins.
    let r = ChainVerifier::new(attestation::snp::amd::TrustStore::empty())
        .verify(&SuppliedChain::from_certs(milan_vcek, vec![]));
    let (_, detail) = check_detail(&r.checks, "snp.chain.ark_pinned");
    assert!(
        detail.contains("no pinned root has an intermediate named")
            && detail.contains("no root is pinned"),
        "{detail}"
    );
}

/// A supplied certificate the chain does not use (another product's ASK and ARK beside the
/// right ones) fails `snp.chain.supplied_certificates`; byte-identical duplicates do not.
#[test]
fn a_supplied_certificate_that_is_not_used_is_reported() {
    let report = data("go-sev-guest/attestation.bin");
    let policy = Policy::default_policy();
    let milan = parse_certs(&data("go-sev-guest/milan.testcer")).unwrap();
    let genoa = parse_certs(&data("go-sev-guest/ask_ark_genoa.pem")).unwrap();
    let vcek = parse_certs(&data("go-sev-guest/vcek.testcer"))
        .unwrap()
        .remove(0);
    let chains = ChainVerifier::new(policy.trust_store());
    let run = |others: Vec<attestation::snp::amd::AmdCert>| {
        let mut checks = Vec::new();
        snp_checks::verify_report(
            &report,
            Ok(SuppliedChain::from_certs(vcek.clone(), others)),
            &SnpContext {
                policy: &policy,
                chains: &chains,
                now: at(NOW),
            },
            &mut checks,
        );
        Verdict::from_checks(checks)
    };
    // The right chain twice over (cert_chain.pem and ask.pem/ark.pem): nothing unused.
    let v = run([milan.clone(), milan.clone()].concat());
    assert!(
        v.check("snp.chain.supplied_certificates").is_none(),
        "{}",
        v.to_table()
    );
    assert_eq!(failed(&v), vec!["snp.policy.debug".to_string()]);
    // With Genoa's ASK and ARK beside it: the chain still anchors on Milan, and the two
    // unused certificates are named.
    let v = run([milan, genoa].concat());
    assert_eq!(outcome(&v, "snp.chain.ark_pinned"), Outcome::Pass);
    let c = v.check("snp.chain.supplied_certificates").unwrap();
    assert_eq!(c.outcome, Outcome::Fail, "{}", v.to_table());
    assert!(
        c.detail.starts_with("2 supplied certificate(s)")
            && c.detail.contains("SEV-Genoa")
            && c.detail.contains("ARK-Genoa"),
        "{}",
        c.detail
    );
    assert!(!v.admitted);
}

/// `identity.require_no_author_key`: passes only with AUTHOR_KEY_EN clear and an all-zero
/// digest; cannot be combined with `author_key_digests`.
#[test]
fn policy_can_require_the_author_key_to_be_absent() {
    use attestation::snp::raw::ReportBuilder;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, "[identity]\nrequire_no_author_key = true\n").unwrap();
    let policy = Policy::load(&path).unwrap();
    assert!(policy.require_no_author_key);
    // The genuine trustee report has an ID block but no author key.
    let report = data("trustee/test-report.bin");
    let parsed = AttestationReport::parse(&report).unwrap();
    assert!(!parsed.author_key_en());
    let v = verify(&report, "trustee/test-vcek.der", None, &policy, at(NOW));
    let c = v.check("snp.identity.author_key_digest").unwrap();
    assert_eq!(c.outcome, Outcome::Pass, "{}", v.to_table());
    // A report with an author key (flag set, digest non-zero): refused, with both values.
    let mut with_author = ReportBuilder::from_report(&parsed);
    with_author
        .flags(parsed.flags() | 1)
        .author_key_digest([0xAA; 48]);
    let mutated = with_author.build();
    let mut checks = Vec::new();
    let chains = ChainVerifier::new(policy.trust_store());
    let vcek = parse_certs(&data("trustee/test-vcek.der"))
        .unwrap()
        .remove(0);
    snp_checks::verify_report(
        mutated.as_bytes(),
        Ok(SuppliedChain::from_certs(vcek, vec![])),
        &SnpContext {
            policy: &policy,
            chains: &chains,
            now: at(NOW),
        },
        &mut checks,
    );
    let (outcome, detail) = check_detail(&checks, "snp.identity.author_key_digest");
    assert_eq!(outcome, Outcome::Fail);
    assert!(
        detail.contains("requires no author key") && detail.contains("AUTHOR_KEY_EN 1"),
        "{detail}"
    );
    // Both settings at once is a policy error naming the field.
    std::fs::write(
        &path,
        format!(
            "[identity]\nrequire_no_author_key = true\nauthor_key_digests = [\"{}\"]\n",
            "ab".repeat(48)
        ),
    )
    .unwrap();
    let err = Policy::load(&path).unwrap_err();
    assert!(
        err.to_string().contains("identity.require_no_author_key"),
        "{err}"
    );
}

#[test]
fn a_genuine_milan_report_under_a_genoa_only_tcb_minimum_is_refused() {
    let report = data("go-sev-guest/attestation.bin");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "[tcb]\ngenoa = { bootloader = 0, tee = 0, snp = 0, microcode = 0 }\n",
    )
    .unwrap();
    let policy = Policy::load(&path).unwrap();
    assert_eq!(
        policy.tcb_minimum_for(Product::Milan).unwrap_err(),
        attestation::policy::TcbMinimumError::ProductNotListed {
            product: Product::Milan,
            section: "milan",
            listed: vec![Product::Genoa],
        }
    );
    let v = verify(&report, "go-sev-guest/vcek.testcer", None, &policy, at(NOW));
    // The chain anchors at AMD's Milan root: the product is known, and unlisted.
    assert_eq!(outcome(&v, "snp.cert.product"), Outcome::Pass);
    for name in [
        "snp.tcb.current",
        "snp.tcb.committed",
        "snp.tcb.reported",
        "snp.tcb.launch",
    ] {
        let c = v.check(name).unwrap();
        assert_eq!(c.outcome, Outcome::Fail, "{name}\n{}", v.to_table());
        assert!(
            c.detail.contains("no Milan TCB minimum (tcb.milan)"),
            "{}",
            c.detail
        );
    }
    assert!(!v.admitted);
}
