//! Genuine AMD SEV-SNP reports and certificates (testdata/sev/README.md): every check that
//! applies must pass, and the known defects of each vector must fail exactly where expected.

use attestation::policy::Policy;
use attestation::report::{Outcome, Verdict};
use attestation::snp::amd::{
    ChainVerifier, EndorsementExtensions, SuppliedChain, TrustStore, parse_certs, parse_time,
};
use attestation::snp::raw::AttestationReport;
use attestation::snp::tcb::Product;
use attestation::snp::{self, SnpContext};

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
    snp::verify_report(
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
    snp::verify_report(
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
