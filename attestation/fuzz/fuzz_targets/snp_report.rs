#![no_main]
//! Raw report parsing and every SNP check, against a genuine Milan VCEK. One chain verifier
//! for the whole run, so its cache is exercised and the chain's RSA work is done once.
use std::sync::OnceLock;

use attestation::policy::Policy;
use attestation::snp::amd::{ChainVerifier, SuppliedChain, parse_certs};
use attestation::snp_checks::{self, SnpContext};
use libfuzzer_sys::fuzz_target;

const VCEK: &[u8] = include_bytes!("../../testdata/sev/trustee/test-vcek.der");

fn verifier() -> &'static (Policy, ChainVerifier) {
    static V: OnceLock<(Policy, ChainVerifier)> = OnceLock::new();
    V.get_or_init(|| {
        let policy = Policy::default_policy();
        let chains = ChainVerifier::new(policy.trust_store());
        (policy, chains)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut certs) = parse_certs(VCEK) else {
        return;
    };
    let vcek = certs.remove(0);
    let (policy, chains) = verifier();
    let mut checks = Vec::new();
    snp_checks::verify_report(
        data,
        Ok(SuppliedChain::from_certs(vcek, vec![])),
        &SnpContext {
            policy,
            chains,
            now: 1_800_000_000,
        },
        &mut checks,
    );
});
