#![no_main]
//! Evidence bundle JSON and its full verification.
use attestation::bundle::{Bundle, verify_bundle};
use attestation::nodes::ExpectedNode;
use attestation::policy::Policy;
use attestation::snp::amd::ChainVerifier;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = Bundle::from_json(data) {
        let p = Policy::default_policy();
        let _ = verify_bundle(
            &b,
            &[0; 32],
            &p,
            &ChainVerifier::new(p.trust_store()),
            0,
            &ExpectedNode::default(),
        );
    }
});
