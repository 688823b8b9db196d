#![no_main]
//! DER/PEM certificate parsing, AMD extensions, keys and chain verification.
use attestation::snp::amd::{
    ChainVerifier, EndorsementExtensions, SuppliedChain, TrustStore, parse_certs,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(certs) = parse_certs(data) {
        for c in &certs {
            let _ = EndorsementExtensions::from_cert(c);
            let _ = c.rsa_public_key();
            let _ = c.p384_public_key();
            let _ = ChainVerifier::new(TrustStore::amd())
                .verify(&SuppliedChain::from_certs(c.clone(), vec![]));
        }
    }
});
