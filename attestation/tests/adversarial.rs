//! Adversarial mutation run: genuine AMD SEV-SNP reports and certificates, genuine NVIDIA
//! Hopper and Blackwell reports and chains, and complete evidence bundles from the test
//! source, mutated with a fixed seed (bit flips, byte writes, overwritten runs, truncation,
//! appended, inserted and deleted bytes). For every mutation the verifier must return a
//! verdict (no panic), and whenever it accepts the mutated input as it accepted the original
//! (no check fails that passed before) every signed byte must be the original's: an accepted
//! change can only be one to bytes no signature covers.
//!
//! 10,000 mutations by default; `ADVERSARIAL_MUTATIONS=N` runs N (spread over the same
//! cases in the same proportions).

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use attestation::bundle::{Bundle, verify_bundle};
use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::nodes::ExpectedNode;
use attestation::nvidia::{self, CcState, GpuDevice, GpuEvidence, GpuPolicy};
use attestation::policy::Policy;
use attestation::report::{Check, Outcome, Verdict};
use attestation::snp::amd::{AmdCert, ChainVerifier, SuppliedChain, parse_certs, parse_time};
use attestation::snp::raw::REPORT_SIZE;
use attestation::snp_checks::{self, SnpContext};
use attestation::test_source::TestSigner;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

const SEED: u64 = 0x5eed_0018;
/// Bytes 0x000..0x2A0 of an SNP report are signed by the VCEK.
const SNP_SIGNED: usize = 0x2A0;

fn total() -> usize {
    std::env::var("ADVERSARIAL_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// `share` per mille of the total.
fn share(per_mille: usize) -> usize {
    (total() * per_mille / 1000).max(1)
}

fn data(path: &str) -> Vec<u8> {
    let full = format!("{}/testdata/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// One to four edits; never returns the input unchanged.
fn mutate(rng: &mut ChaCha20Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let len = b.len();
        let at = if len == 0 { 0 } else { rng.gen_range(0..len) };
        match rng.gen_range(0..8) {
            0 | 1 => {
                if let Some(x) = b.get_mut(at) {
                    *x ^= 1 << rng.gen_range(0..8);
                }
            }
            2 => {
                if let Some(x) = b.get_mut(at) {
                    *x = rng.r#gen();
                }
            }
            3 => {
                let n = rng.gen_range(1..=16).min(len - at.min(len));
                for x in b.iter_mut().skip(at).take(n) {
                    *x = rng.r#gen();
                }
            }
            4 => b.truncate(at),
            5 => {
                for _ in 0..rng.gen_range(1..=16) {
                    b.push(rng.r#gen());
                }
            }
            6 => b.insert(at.min(len), rng.r#gen()),
            _ => {
                if at < len {
                    b.remove(at);
                }
            }
        }
    }
    if b == base {
        match b.first_mut() {
            Some(x) => *x ^= 0x80,
            None => b.push(0),
        }
    }
    b
}

fn failed_names(checks: &[Check]) -> BTreeSet<String> {
    checks
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .map(|c| c.name.clone())
        .collect()
}

/// Accepted as the original was: nothing fails that did not fail for the original.
fn accepted_like(original: &BTreeSet<String>, checks: &[Check]) -> bool {
    failed_names(checks).is_subset(original)
}

fn tbs(cert: &AmdCert) -> Vec<u8> {
    cert.tbs_bytes().to_vec()
}

// ---- AMD SEV-SNP: genuine reports and certificates ----

struct SnpCase {
    name: &'static str,
    report: Vec<u8>,
    vcek: Vec<u8>,
    chain: Vec<u8>,
    now: u64,
}

fn snp_cases() -> Vec<SnpCase> {
    vec![
        SnpCase {
            name: "go-sev-guest Milan",
            report: data("sev/go-sev-guest/attestation.bin"),
            vcek: data("sev/go-sev-guest/vcek.testcer"),
            chain: data("sev/go-sev-guest/milan.testcer"),
            now: parse_time("2026-11-29T00:00:00Z").unwrap(),
        },
        SnpCase {
            name: "trustee",
            report: data("sev/trustee/test-report.bin"),
            vcek: data("sev/trustee/test-vcek.der"),
            chain: Vec::new(),
            now: parse_time("2026-11-29T00:00:00Z").unwrap(),
        },
    ]
}

fn verify_snp(
    report: &[u8],
    vcek: &[u8],
    chain: &[u8],
    chains: &ChainVerifier,
    policy: &Policy,
    now: u64,
) -> Vec<Check> {
    let vcek = parse_certs(vcek)
        .map_err(|e| e.to_string())
        .and_then(|mut c| {
            if c.is_empty() {
                Err("no certificate".into())
            } else {
                Ok(c.remove(0))
            }
        });
    let others = parse_certs(chain).unwrap_or_default();
    let mut checks = Vec::new();
    snp_checks::verify_report(
        report,
        vcek.map(|v| SuppliedChain::from_certs(v, others)),
        &SnpContext {
            policy,
            chains,
            now,
        },
        &mut checks,
    );
    checks
}

#[test]
fn mutated_snp_reports_and_amd_certificates_never_pass_with_a_changed_signed_byte() {
    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let policy = Policy::default_policy();
    let chains = ChainVerifier::new(policy.trust_store());
    let (mut runs, mut accepted) = (0usize, 0usize);
    for case in snp_cases() {
        let original = verify_snp(
            &case.report,
            &case.vcek,
            &case.chain,
            &chains,
            &policy,
            case.now,
        );
        let baseline = failed_names(&original);
        // The originals verify up to their known defects (docs: testdata/sev/README.md).
        assert!(
            original
                .iter()
                .any(|c| c.name == "snp.report.signature" && c.outcome == Outcome::Pass),
            "{}: {original:#?}",
            case.name
        );
        let vcek = parse_certs(&case.vcek).unwrap().remove(0);
        // Reports.
        for _ in 0..share(180) {
            let m = mutate(&mut rng, &case.report);
            let checks = verify_snp(&m, &case.vcek, &case.chain, &chains, &policy, case.now);
            runs += 1;
            if accepted_like(&baseline, &checks) {
                accepted += 1;
                assert_eq!(
                    m.len(),
                    REPORT_SIZE,
                    "{}: accepted a {}-byte report",
                    case.name,
                    m.len()
                );
                assert_eq!(
                    m[..SNP_SIGNED],
                    case.report[..SNP_SIGNED],
                    "{}: accepted a change to the signed part of the report",
                    case.name
                );
            }
        }
        // The VCEK.
        for _ in 0..share(60) {
            let m = mutate(&mut rng, &case.vcek);
            let checks = verify_snp(&case.report, &m, &case.chain, &chains, &policy, case.now);
            runs += 1;
            if accepted_like(&baseline, &checks) {
                accepted += 1;
                let parsed = parse_certs(&m).unwrap().remove(0);
                assert_eq!(
                    tbs(&parsed),
                    tbs(&vcek),
                    "{}: accepted a changed VCEK",
                    case.name
                );
            }
        }
        // The ASK/ARK chain, where the case has one.
        if !case.chain.is_empty() {
            let originals = parse_certs(&case.chain).unwrap();
            for _ in 0..share(60) {
                let m = mutate(&mut rng, &case.chain);
                let checks = verify_snp(&case.report, &case.vcek, &m, &chains, &policy, case.now);
                runs += 1;
                if accepted_like(&baseline, &checks) {
                    accepted += 1;
                    // Whatever was accepted is the genuine chain's signed content (or absent:
                    // the pinned ASK/ARK then stand in).
                    for c in parse_certs(&m).unwrap_or_default() {
                        assert!(
                            originals.iter().any(|o| tbs(o) == tbs(&c)),
                            "{}: accepted a changed chain certificate {}",
                            case.name,
                            c.subject()
                        );
                    }
                }
            }
        }
    }
    eprintln!("SNP: {runs} mutations, {accepted} accepted (all with the signed bytes unchanged)");
}

// ---- NVIDIA: genuine Hopper and Blackwell reports and chains ----

fn hex_file(path: &str) -> Vec<u8> {
    hex::decode(String::from_utf8(data(path)).unwrap().trim()).unwrap()
}

fn gpu_evidence(report: &str, chain: &str) -> GpuEvidence {
    GpuEvidence {
        device: GpuDevice::default(),
        attestation_report: hex_file(report),
        certificate_chain: data(chain),
        cc_state: CcState {
            cc_enabled: true,
            dev_tools_mode: false,
            environment: "prod".into(),
        },
    }
}

fn nonce(text: &str) -> [u8; 32] {
    hex::decode(text).unwrap().try_into().unwrap()
}

#[test]
fn mutated_gpu_reports_and_chains_never_pass_with_a_changed_signed_byte() {
    let mut rng = ChaCha20Rng::seed_from_u64(SEED ^ 1);
    // 2027-06-01: inside every genuine certificate's window.
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_811_808_000);
    let cases = [
        (
            "Hopper",
            gpu_evidence(
                "nvidia/hopperAttestationReport.txt",
                "nvidia/hopper_cert_chain_case1.txt",
            ),
            nonce("931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb"),
        ),
        (
            "Blackwell",
            gpu_evidence(
                "nvidia/blackwellAttestationReport.txt",
                "nvidia/blackwell_cert_chain_case1.txt",
            ),
            nonce("4cff7f5380ead8fad8ec2c531c110aca4302a88f603792801a8ca29ee151af2e"),
        ),
    ];
    let policy = GpuPolicy::default();
    let (mut runs, mut accepted) = (0usize, 0usize);
    for (name, genuine, n) in &cases {
        let original = nvidia::verify(genuine, n, &policy, now, 0);
        let baseline = failed_names(&original);
        assert!(
            original
                .iter()
                .any(|c| c.name == "gpu.0.report.signature" && c.outcome == Outcome::Pass),
            "{name}: {original:#?}"
        );
        let signed_len = nvidia::spdm::AttestationReport::parse(&genuine.attestation_report)
            .unwrap()
            .signed_len;
        let chain_tbs = |pem: &[u8]| -> Vec<Vec<u8>> {
            nvidia::certs::parse_pem_chain(pem)
                .unwrap_or_default()
                .iter()
                .map(|c| der::Encode::to_der(&c.tbs_certificate).unwrap())
                .collect()
        };
        let original_tbs = chain_tbs(&genuine.certificate_chain);
        for _ in 0..share(140) {
            let mut ev = genuine.clone();
            ev.attestation_report = mutate(&mut rng, &genuine.attestation_report);
            let checks = nvidia::verify(&ev, n, &policy, now, 0);
            runs += 1;
            if accepted_like(&baseline, &checks) {
                accepted += 1;
                assert_eq!(
                    ev.attestation_report, genuine.attestation_report,
                    "{name}: accepted a changed GPU report (signed span {signed_len} bytes + signature, nothing after it)"
                );
            }
        }
        for _ in 0..share(40) {
            let mut ev = genuine.clone();
            ev.certificate_chain = mutate(&mut rng, &genuine.certificate_chain);
            let checks = nvidia::verify(&ev, n, &policy, now, 0);
            runs += 1;
            if accepted_like(&baseline, &checks) {
                accepted += 1;
                assert_eq!(
                    chain_tbs(&ev.certificate_chain),
                    original_tbs,
                    "{name}: accepted a changed certificate chain"
                );
            }
        }
    }
    eprintln!("GPU: {runs} mutations, {accepted} accepted (all with the signed bytes unchanged)");
}

// ---- complete bundles from the test source ----

#[test]
fn mutated_bundles_are_never_admitted_with_a_changed_signed_field() {
    let mut rng = ChaCha20Rng::seed_from_u64(SEED ^ 2);
    let signer = TestSigner::from_seed([9; 32]).unwrap();
    let mut policy = Policy::default_policy();
    policy.test_root = Some(signer.authority.anchor());
    let attester = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[4; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    };
    let n = [0x5a; 32];
    let genuine = attester.attest(&n).unwrap();
    let chains = ChainVerifier::new(policy.trust_store());
    let now = parse_time("2026-11-29T00:00:00Z").unwrap();
    let verify = |b: &Bundle| -> Verdict {
        verify_bundle(b, &n, &policy, &chains, now, &ExpectedNode::default())
    };
    assert!(verify(&genuine).admitted, "{}", verify(&genuine).to_table());
    let report = hex::decode(&genuine.snp.report).unwrap();
    let vcek_der = parse_certs(genuine.snp.certificates.vcek.as_bytes())
        .unwrap()
        .remove(0);
    let same_signed = |b: &Bundle| {
        let r = hex::decode(&b.snp.report).unwrap_or_default();
        r.len() == REPORT_SIZE
            && r[..SNP_SIGNED] == report[..SNP_SIGNED]
            && b.node_public_key == genuine.node_public_key
            && b.nonce == genuine.nonce
            && parse_certs(b.snp.certificates.vcek.as_bytes())
                .ok()
                .and_then(|c| c.into_iter().next())
                .is_some_and(|c| tbs(&c) == tbs(&vcek_der))
    };
    let (mut runs, mut admitted) = (0usize, 0usize);
    let json = serde_json::to_vec(&genuine).unwrap();
    for i in 0..share(100) {
        let mut b = genuine.clone();
        match i % 5 {
            0 => b.snp.report = hex::encode(mutate(&mut rng, &report)),
            1 => {
                let sig = hex::decode(&genuine.node_signature).unwrap();
                b.node_signature = hex::encode(mutate(&mut rng, &sig));
            }
            2 => {
                let key = hex::decode(&genuine.node_public_key).unwrap();
                b.node_public_key = hex::encode(mutate(&mut rng, &key));
            }
            3 => {
                let pem = attestation::bundle::to_pem(&mutate(&mut rng, vcek_der.der()));
                b.snp.certificates.vcek = pem;
            }
            _ => {
                // The served JSON itself.
                let m = mutate(&mut rng, &json);
                match Bundle::from_json(&m) {
                    Ok(parsed) => b = parsed,
                    Err(_) => {
                        runs += 1;
                        continue;
                    }
                }
            }
        }
        runs += 1;
        let v = verify(&b);
        if v.admitted {
            admitted += 1;
            assert!(
                same_signed(&b),
                "admitted a bundle with a changed signed field:\n{}",
                v.to_table()
            );
            assert_eq!(
                b.node_signature, genuine.node_signature,
                "admitted another signature"
            );
        }
    }
    eprintln!(
        "bundles: {runs} mutations, {admitted} admitted (all with the signed fields unchanged)"
    );
}
