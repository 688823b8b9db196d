#![no_main]
//! POLICY.toml and NODES.toml parsing.
use attestation::nodes::NodeList;
use attestation::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Policy::from_toml(
            text,
            std::path::Path::new("/nonexistent"),
            std::path::Path::new("p.toml"),
        );
        let _ = NodeList::parse(text, "nodes.toml");
    }
});
