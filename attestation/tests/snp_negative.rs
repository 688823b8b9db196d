//! Synthetic negatives: reports and chains from a generated AMD-style key chain (trusted only
//! because each policy here names the test root), each broken in one way, each rejected by the
//! check it targets.

use std::sync::OnceLock;

use attestation::policy::Policy;
use attestation::report::{Outcome, Verdict};
use attestation::snp::amd::{AmdCert, ChainVerifier, SuppliedChain, oid, parse_time};
use attestation::snp::raw::{FirmwareVersion, ReportBuilder};
use attestation::snp::tcb::{Product, TcbParts};
use attestation::snp_checks::{self, SnpContext};
use attestation::test_source::{TestSigner, VcekSpec};

/// The `config` section of a release manifest, as image/build writes it (the public key of
/// RFC 8032's first Ed25519 test vector).
const PINNED_SIGNERS: &str = "\"config\":{\"signers\":[\"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\"]}";

fn signer() -> &'static TestSigner {
    static S: OnceLock<TestSigner> = OnceLock::new();
    S.get_or_init(|| TestSigner::from_seed([7; 32]).expect("test signer"))
}

fn other_signer() -> &'static TestSigner {
    static S: OnceLock<TestSigner> = OnceLock::new();
    S.get_or_init(|| TestSigner::from_seed([9; 32]).expect("test signer"))
}

fn turin_signer() -> &'static TestSigner {
    static S: OnceLock<TestSigner> = OnceLock::new();
    S.get_or_init(|| TestSigner::from_seed_for([11; 32], Product::Turin).expect("test signer"))
}

fn now() -> u64 {
    parse_time("2026-11-29T00:00:00Z").unwrap()
}

/// A policy trusting `s`'s test root, plus the TOML given.
fn policy_for(s: &TestSigner, toml: &str) -> Policy {
    let mut p = Policy::from_toml(
        toml,
        std::path::Path::new("."),
        std::path::Path::new("test.toml"),
    )
    .expect("policy");
    p.test_root = Some(s.authority.anchor());
    p
}

struct Case<'a> {
    signer: &'a TestSigner,
    report: Vec<u8>,
    vcek: AmdCert,
    ask: Option<AmdCert>,
    ark: Option<AmdCert>,
    policy: Policy,
    now: u64,
}

impl<'a> Case<'a> {
    fn new(s: &'a TestSigner) -> Case<'a> {
        Case {
            signer: s,
            report: s.report([0x42; 64]).as_bytes().to_vec(),
            vcek: s.vcek.clone(),
            ask: Some(s.authority.ask.clone()),
            ark: Some(s.authority.ark.clone()),
            policy: policy_for(s, ""),
            now: now(),
        }
    }
    /// A report from the template modified by `f`, re-signed with the VCEK key.
    fn report_with(mut self, f: impl FnOnce(&mut ReportBuilder)) -> Self {
        let mut b = self.signer.template.clone();
        b.report_data([0x42; 64]);
        f(&mut b);
        self.report = self.signer.sign(&mut b).as_bytes().to_vec();
        self
    }
    fn policy(mut self, toml: &str) -> Self {
        self.policy = policy_for(self.signer, toml);
        self
    }
    fn vcek_with(mut self, f: impl FnOnce(&mut VcekSpec)) -> Self {
        let a = &self.signer.authority;
        let mut spec = a.vcek_spec(self.signer.tcb, &self.signer.chip_id);
        f(&mut spec);
        self.vcek = a
            .issue_vcek(self.signer.vcek_signing_key().verifying_key(), &spec, None)
            .expect("vcek");
        self
    }
    fn run(&self) -> Verdict {
        let chains = ChainVerifier::new(self.policy.trust_store());
        let chain = SuppliedChain {
            vcek: self.vcek.clone(),
            ask: self.ask.clone(),
            ark: self.ark.clone(),
            unused: Vec::new(),
        };
        let mut checks = Vec::new();
        snp_checks::verify_report(
            &self.report,
            Ok(chain),
            &SnpContext {
                policy: &self.policy,
                chains: &chains,
                now: self.now,
            },
            &mut checks,
        );
        Verdict::from_checks(checks)
    }
}

#[track_caller]
fn rejects(v: &Verdict, check: &str) {
    let c = v
        .check(check)
        .unwrap_or_else(|| panic!("no check {check}\n{}", v.to_table()));
    assert_eq!(
        c.outcome,
        Outcome::Fail,
        "{check} should fail\n{}",
        v.to_table()
    );
    assert!(!v.admitted);
}

#[track_caller]
fn rejects_only(v: &Verdict, check: &str) {
    rejects(v, check);
    let failed: Vec<&str> = v.failed().map(|c| c.name.as_str()).collect();
    assert_eq!(
        failed,
        vec![check],
        "only {check} should fail\n{}",
        v.to_table()
    );
}

#[test]
fn baseline_is_admitted_only_with_the_test_root_trusted() {
    let v = Case::new(signer()).run();
    assert!(v.admitted, "{}", v.to_table());
    assert_eq!(v.check("snp.report.cpuid").unwrap().outcome, Outcome::Pass);
    let mut c = Case::new(signer());
    c.policy = Policy::default_policy();
    rejects(&c.run(), "snp.chain.ark_pinned");
    // The Turin layout (FMC first, 8-byte hwID) verifies too.
    let v = Case::new(turin_signer()).run();
    assert!(v.admitted, "{}", v.to_table());
}

#[test]
fn format_checks() {
    let s = signer();
    let mut c = Case::new(s);
    c.report.pop();
    rejects_only(&c.run(), "snp.format.size");
    for version in [1, 6] {
        rejects(
            &Case::new(s)
                .report_with(|b| {
                    b.version(version);
                })
                .run(),
            "snp.format.version",
        );
    }
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.signature_algo(2);
            })
            .run(),
        "snp.format.signature_algo",
    );
    rejects(
        &Case::new(s)
            .report_with(|b| {
                b.flags(7 << 2);
            })
            .run(),
        "snp.format.signing_key",
    );
    rejects(
        &Case::new(s)
            .policy("[report]\nsigning_keys = [\"vlek\"]\n")
            .run(),
        "snp.format.signing_key",
    );
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.bytes(0x4C, &[1]);
            })
            .run(),
        "snp.format.reserved_zero",
    );
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.bytes(0x250, &[1]);
            })
            .run(),
        "snp.format.reserved_zero",
    );
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.flags(1 << 5);
            })
            .run(),
        "snp.format.reserved_zero",
    );
    // Bytes after the signed area are reserved too (not signed, so only this check catches them).
    let mut c = Case::new(s);
    c.report[0x400] = 1;
    rejects_only(&c.run(), "snp.format.reserved_zero");
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.policy(0x1_0000);
            })
            .run(),
        "snp.format.policy_bits",
    );
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.policy(0x3_0000 | 1 << 40);
            })
            .run(),
        "snp.format.policy_bits",
    );
}

#[test]
fn chain_checks() {
    let s = signer();
    let o = other_signer();
    // An ARK nobody pinned (another test root) in place of the trusted one.
    let mut c = Case::new(s);
    c.ark = Some(o.authority.ark.clone());
    rejects(&c.run(), "snp.chain.ark_pinned");
    // A pinned ARK whose self-signature is wrong.
    let mut c = Case::new(s);
    let bad_ark = s
        .authority
        .resign(&s.authority.ark, s.authority.ask_key())
        .unwrap();
    let mut anchor = s.authority.anchor();
    anchor.ark = bad_ark.clone();
    c.policy.test_root = Some(anchor);
    c.ark = Some(bad_ark);
    rejects(&c.run(), "snp.chain.ark_self_signed");
    // ASK not signed by the ARK.
    let mut c = Case::new(s);
    c.ask = Some(
        s.authority
            .resign(&s.authority.ask, s.authority.ask_key())
            .unwrap(),
    );
    rejects(&c.run(), "snp.chain.ask_signature");
    // VCEK not signed by the ASK.
    let mut c = Case::new(s);
    c.vcek = s.authority.resign(&s.vcek, s.authority.ark_key()).unwrap();
    rejects_only(&c.run(), "snp.chain.vcek_signature");
    // Expired and not-yet-valid VCEK.
    let expired = Case::new(s).vcek_with(|v| v.not_after = now() - 1);
    rejects_only(&expired.run(), "snp.chain.validity");
    let future = Case::new(s).vcek_with(|v| v.not_before = now() + 3600);
    rejects_only(&future.run(), "snp.chain.validity");
    // A VCEK holding an RSA key.
    rejects(
        &Case::new(s).vcek_with(|v| v.rsa_key_instead = true).run(),
        "snp.chain.vcek_key",
    );
}

#[test]
fn crl_check() {
    let s = signer();
    let a = &s.authority;
    let with_crl = |crl: Vec<u8>| {
        let mut c = Case::new(s);
        c.policy.crl = Some(crl);
        c.run()
    };
    let clean = with_crl(a.crl(&[], now() + 86_400).unwrap());
    assert_eq!(
        clean.check("snp.chain.crl").unwrap().outcome,
        Outcome::Pass,
        "{}",
        clean.to_table()
    );
    let ask_serial = a
        .ask
        .cert()
        .tbs_certificate
        .serial_number
        .as_bytes()
        .to_vec();
    rejects_only(
        &with_crl(a.crl(&[&ask_serial], now() + 86_400).unwrap()),
        "snp.chain.crl",
    );
    rejects_only(&with_crl(a.crl(&[], now() - 1).unwrap()), "snp.chain.crl");
    // Signed by someone else's ARK.
    rejects_only(
        &with_crl(other_signer().authority.crl(&[], now() + 86_400).unwrap()),
        "snp.chain.crl",
    );
    rejects_only(&with_crl(b"not a crl".to_vec()), "snp.chain.crl");
}

#[test]
fn report_signature_checks() {
    let s = signer();
    // Signed by a key that is not the VCEK's.
    let mut b = s.template.clone();
    b.report_data([0x42; 64]);
    let report = s.sign_with(&mut b, other_signer().vcek_signing_key());
    let mut c = Case::new(s);
    c.report = report.as_bytes().to_vec();
    rejects_only(&c.run(), "snp.report.signature");
    // A signed byte changed after signing.
    let mut c = Case::new(s);
    c.report[0x90] ^= 1;
    rejects_only(&c.run(), "snp.report.signature");
    // R with bytes above the P-384 width.
    let mut c = Case::new(s);
    c.report[0x2A0 + 60] = 1;
    rejects_only(&c.run(), "snp.report.signature");
}

#[test]
fn report_versus_certificate_checks() {
    let s = signer();
    rejects(
        &Case::new(s)
            .report_with(|b| {
                b.flags(1 << 2);
            })
            .run(),
        "snp.cert.key_kind",
    );
    let t = s.tcb;
    rejects_only(
        &Case::new(s)
            .vcek_with(|v| v.tcb.bootloader = t.bootloader + 1)
            .run(),
        "snp.cert.tcb",
    );
    rejects_only(
        &Case::new(s).vcek_with(|v| v.include_ucode = false).run(),
        "snp.cert.tcb",
    );
    rejects_only(
        &Case::new(s).vcek_with(|v| v.include_snp = false).run(),
        "snp.cert.tcb",
    );
    let mut other_chip = s.chip_id;
    other_chip[0] ^= 1;
    rejects_only(
        &Case::new(s)
            .vcek_with(|v| v.hw_id = Some(other_chip.to_vec()))
            .run(),
        "snp.cert.chip_id",
    );
    rejects_only(
        &Case::new(s).vcek_with(|v| v.hw_id = None).run(),
        "snp.cert.chip_id",
    );
    rejects_only(
        &Case::new(s)
            .vcek_with(|v| v.product_name = Some("Genoa".into()))
            .run(),
        "snp.cert.product",
    );
    rejects_only(
        &Case::new(s).vcek_with(|v| v.product_name = None).run(),
        "snp.cert.product",
    );
    // Malformed and duplicated AMD extensions.
    rejects(
        &Case::new(s)
            .vcek_with(|v| v.extra_extensions.push((oid::TEE_SPL, b"abc".to_vec())))
            .run(),
        "snp.cert.extensions",
    );
    rejects(
        &Case::new(s)
            .vcek_with(|v| v.extra_extensions.push((oid::HW_ID, vec![0; 64])))
            .run(),
        "snp.cert.extensions",
    );
    // CPUID of a Turin part under a Milan chain.
    rejects_only(
        &Case::new(s)
            .report_with(|b| {
                b.cpuid(0x1A, 0x02, 0);
            })
            .run(),
        "snp.report.cpuid",
    );
    // Turin: missing FMC SPL, and a hwID of Milan length.
    let tu = turin_signer();
    rejects_only(
        &Case::new(tu).vcek_with(|v| v.include_fmc = false).run(),
        "snp.cert.tcb",
    );
    rejects_only(
        &Case::new(tu).vcek_with(|v| v.tcb.fmc = Some(9)).run(),
        "snp.cert.tcb",
    );
    rejects_only(
        &Case::new(tu)
            .vcek_with(|v| v.hw_id = Some(vec![1; 64]))
            .run(),
        "snp.cert.chip_id",
    );
}

#[test]
fn guest_policy_checks() {
    let s = signer();
    let base = 0x3_0000u64 | (1 << 8) | 55;
    let with_bits = |bits: u64, toml: &str| {
        Case::new(s)
            .policy(toml)
            .report_with(|b| {
                b.policy(base | bits);
            })
            .run()
    };
    rejects_only(&with_bits(1 << 19, ""), "snp.policy.debug");
    rejects_only(&with_bits(1 << 18, ""), "snp.policy.migration_agent");
    rejects_only(
        &with_bits(0, "[guest_policy]\nallow_smt = false\n"),
        "snp.policy.smt",
    );
    assert!(
        Case::new(s)
            .policy("[guest_policy]\nallow_smt = false\n")
            .report_with(|b| {
                b.policy(base & !(1 << 16));
            })
            .run()
            .admitted
    );
    rejects_only(
        &with_bits(0, "[guest_policy]\nrequire_single_socket = true\n"),
        "snp.policy.single_socket",
    );
    rejects_only(
        &with_bits(1 << 21, "[guest_policy]\nallow_cxl = false\n"),
        "snp.policy.cxl",
    );
    rejects_only(
        &with_bits(0, "[guest_policy]\nrequire_aes_256_xts = true\n"),
        "snp.policy.aes_256_xts",
    );
    rejects_only(
        &with_bits(0, "[guest_policy]\nrequire_rapl_disabled = true\n"),
        "snp.policy.rapl_disabled",
    );
    rejects_only(
        &with_bits(0, "[guest_policy]\nrequire_ciphertext_hiding = true\n"),
        "snp.policy.ciphertext_hiding",
    );
    assert!(with_bits(1 << 20 | 1 << 22 | 1 << 23 | 1 << 24, "[guest_policy]\nrequire_single_socket = true\nrequire_aes_256_xts = true\nrequire_rapl_disabled = true\nrequire_ciphertext_hiding = true\n").admitted);
    // The guest demands ABI 1.55; a policy wanting at least 1.56 rejects it.
    rejects_only(
        &with_bits(0, "[guest_policy]\nmin_abi = \"1.56\"\n"),
        "snp.policy.abi",
    );
    assert!(with_bits(0, "[guest_policy]\nmin_abi = \"1.55\"\n").admitted);
    rejects_only(
        &Case::new(s)
            .policy("[guest_policy]\nvmpl = [0]\n")
            .report_with(|b| {
                b.vmpl(2);
            })
            .run(),
        "snp.policy.vmpl",
    );
    rejects_only(
        &with_bits(0, "[guest_policy]\nmin_guest_svn = 2\n"),
        "snp.policy.guest_svn",
    );
}

#[test]
fn tcb_checks_compare_each_field() {
    let s = signer();
    let t = s.tcb;
    let min = format!(
        "[tcb]\nmilan = {{ bootloader = {}, tee = {}, snp = {}, microcode = {} }}\n",
        t.bootloader, t.tee, t.snp, t.microcode
    );
    assert!(Case::new(s).policy(&min).run().admitted);
    // Lower bootloader hidden behind a much higher microcode: numerically larger, still rejected.
    let sneaky = TcbParts {
        bootloader: t.bootloader - 1,
        microcode: 255,
        ..t
    };
    assert!(sneaky.encode(Product::Milan) > t.encode(Product::Milan));
    let raw = sneaky.encode(Product::Milan);
    rejects_only(
        &Case::new(s)
            .policy(&min)
            .report_with(|b| {
                b.current_tcb(raw);
            })
            .run(),
        "snp.tcb.current",
    );
    rejects_only(
        &Case::new(s)
            .policy(&min)
            .report_with(|b| {
                b.committed_tcb(raw);
            })
            .run(),
        "snp.tcb.committed",
    );
    rejects_only(
        &Case::new(s)
            .policy(&min)
            .report_with(|b| {
                b.launch_tcb(raw);
            })
            .run(),
        "snp.tcb.launch",
    );
    // Reported TCB below the minimum, with a VCEK issued for that TCB (so the cert check holds).
    let c = Case::new(s)
        .policy(&min)
        .report_with(|b| {
            b.reported_tcb(raw);
        })
        .vcek_with(|v| v.tcb = sneaky);
    rejects_only(&c.run(), "snp.tcb.reported");
    // Reserved bytes of the TCB layout set.
    rejects_only(
        &Case::new(s)
            .policy(&min)
            .report_with(|b| {
                b.current_tcb(t.encode(Product::Milan) | 1 << 16);
            })
            .run(),
        "snp.tcb.current",
    );
    rejects_only(
        &Case::new(s)
            .policy("[tcb]\nmin_firmware = \"1.56\"\n")
            .run(),
        "snp.tcb.firmware",
    );
    rejects_only(
        &Case::new(s)
            .policy("[tcb]\nmin_firmware = \"1.55.30\"\n")
            .run(),
        "snp.tcb.firmware",
    );
    let old = FirmwareVersion {
        major: 1,
        minor: 51,
        build: 0,
    };
    rejects_only(
        &Case::new(s)
            .policy("[tcb]\nmin_firmware = \"1.55\"\n")
            .report_with(|b| {
                b.committed_firmware(old);
            })
            .run(),
        "snp.tcb.firmware",
    );
    // Turin minimum with FMC.
    let tu = turin_signer();
    let tt = tu.tcb;
    let tmin = format!(
        "[tcb]\nturin = {{ fmc = {}, bootloader = {}, tee = {}, snp = {}, microcode = {} }}\n",
        tt.fmc.unwrap_or(0) + 1,
        tt.bootloader,
        tt.tee,
        tt.snp,
        tt.microcode
    );
    rejects(&Case::new(tu).policy(&tmin).run(), "snp.tcb.current");
}

#[test]
fn identity_checks() {
    let s = signer();
    let m = hex::encode(attestation::test_source::test_measurement());
    assert!(
        Case::new(s)
            .policy(&format!("[identity]\nmeasurements = [\"{m}\"]\n"))
            .run()
            .admitted
    );
    rejects_only(
        &Case::new(s)
            .policy(&format!(
                "[identity]\nmeasurements = [\"{}\"]\n",
                "ab".repeat(48)
            ))
            .run(),
        "snp.identity.measurement",
    );
    // From a release manifest.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("release-manifest.json"),
        format!(
            "{{\"schema\":\"sovereign-node/release-manifest/v1\",\"sev_snp\":{{\"launch_digest\":\"{}\"}},{PINNED_SIGNERS}}}",
            "cd".repeat(48)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "[identity]\nrelease_manifests = [\"release-manifest.json\"]\n",
    )
    .unwrap();
    let mut c = Case::new(s);
    c.policy = Policy::load(&dir.path().join("policy.toml")).unwrap();
    c.policy.test_root = Some(s.authority.anchor());
    let v = c.run();
    rejects_only(&v, "snp.identity.measurement");
    assert!(
        v.check("snp.identity.measurement")
            .unwrap()
            .detail
            .contains("not among 1 allowed")
    );
    std::fs::write(
        dir.path().join("release-manifest.json"),
        format!("{{\"sev_snp\":{{\"launch_digest\":\"{m}\",\"vcpus\":8}},{PINNED_SIGNERS}}}"),
    )
    .unwrap();
    let mut c = Case::new(s);
    c.policy = Policy::load(&dir.path().join("policy.toml")).unwrap();
    c.policy.test_root = Some(s.authority.anchor());
    let v = c.run();
    assert!(
        v.admitted
            && v.check("snp.identity.measurement")
                .unwrap()
                .detail
                .contains("manifest"),
        "{}",
        v.to_table()
    );

    rejects_only(
        &Case::new(s)
            .policy(&format!(
                "[identity]\nhost_data = \"{}\"\n",
                "11".repeat(32)
            ))
            .run(),
        "snp.identity.host_data",
    );
    assert!(
        Case::new(s)
            .policy(&format!(
                "[identity]\nhost_data = \"{}\"\n",
                "11".repeat(32)
            ))
            .report_with(|b| {
                b.host_data([0x11; 32]);
            })
            .run()
            .admitted
    );
    rejects_only(
        &Case::new(s)
            .policy(&format!(
                "[identity]\nid_key_digests = [\"{}\"]\n",
                "22".repeat(48)
            ))
            .run(),
        "snp.identity.id_key_digest",
    );
    // Author key pinned but AUTHOR_KEY_EN clear; and set but different.
    let author = format!(
        "[identity]\nauthor_key_digests = [\"{}\"]\n",
        "33".repeat(48)
    );
    rejects_only(
        &Case::new(s)
            .policy(&author)
            .report_with(|b| {
                b.author_key_digest([0x33; 48]);
            })
            .run(),
        "snp.identity.author_key_digest",
    );
    rejects_only(
        &Case::new(s)
            .policy(&author)
            .report_with(|b| {
                b.flags(1).author_key_digest([0x34; 48]);
            })
            .run(),
        "snp.identity.author_key_digest",
    );
    assert!(
        Case::new(s)
            .policy(&author)
            .report_with(|b| {
                b.flags(1).author_key_digest([0x33; 48]);
            })
            .run()
            .admitted
    );
    rejects_only(
        &Case::new(s)
            .policy(&format!(
                "[identity]\nfamily_id = \"{}\"\n",
                "44".repeat(16)
            ))
            .run(),
        "snp.identity.family_id",
    );
    rejects_only(
        &Case::new(s)
            .policy(&format!("[identity]\nimage_id = \"{}\"\n", "55".repeat(16)))
            .run(),
        "snp.identity.image_id",
    );
    rejects_only(
        &Case::new(s)
            .policy(&format!(
                "[identity]\nchip_ids = [\"{}\"]\n",
                "66".repeat(64)
            ))
            .run(),
        "snp.identity.chip_id",
    );
    assert!(
        Case::new(s)
            .policy(&format!(
                "[identity]\nchip_ids = [\"{}\"]\n",
                hex::encode(s.chip_id)
            ))
            .run()
            .admitted
    );
    // Registered-node list file.
    std::fs::write(
        dir.path().join("nodes.toml"),
        format!(
            "[[node]]\nname = \"n1\"\nurl = \"http://127.0.0.1:1\"\nchip_id = \"{}\"\n",
            "77".repeat(64)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("p2.toml"),
        "[identity]\nregistered_nodes = \"nodes.toml\"\n",
    )
    .unwrap();
    let mut c = Case::new(s);
    c.policy = Policy::load(&dir.path().join("p2.toml")).unwrap();
    c.policy.test_root = Some(s.authority.anchor());
    rejects_only(&c.run(), "snp.identity.chip_id");
}
