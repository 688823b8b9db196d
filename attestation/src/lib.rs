//! Attestation for sovereign-node: evidence collected on the node (SEV-SNP report,
//! AMD certificate chain, NVIDIA GPU CC reports, node key) and the governing body's
//! verifier, which reports every check by name with pass, fail or skip.
//!
//! * [`snp`]: raw SEV-SNP report parsing, the AMD chain, the TCB.
//! * [`snp_checks`]: the report's checks against a policy.
//! * [`bundle`]: the evidence bundle served at `GET /v1/attestation?nonce=`, REPORT_DATA binding,
//!   and [`bundle::verify_bundle`].
//! * [`collect`]: evidence collection on the node (`/dev/sev-guest`, NVML).
//! * [`identity`]: the node's Ed25519 key: sealed (SNP derived key) or an unsealed test key.
//! * [`test_source`]: a test evidence source with a generated AMD-style key chain.
//! * [`nodes`]: the registered nodes (NODES.toml) and what a verifier expects of each.
//! * [`fleet`]: fetching and verifying evidence from many node agents.
//! * [`fleet_watch`]: `attest fleet --every`: the fleet check every interval, as metrics.
//! * [`waiver`]: the checks a policy value enables, and `[waive]` for those it leaves out.
//! * [`retry`]: one evidence request, retried within a deadline with a fresh nonce per try.
//!
//! The types a verifier and the node agent use (the bundle and its verification, the
//! policy, the verdict, the node list, the chain verifier) are re-exported at the root.

#![warn(missing_docs)]

pub mod bundle;
pub mod collect;
pub mod fleet;
pub mod fleet_watch;
pub mod identity;
pub mod nodes;
pub mod nvidia;
pub mod policy;
pub mod report;
pub mod retry;
pub mod snp;
pub mod snp_checks;
pub mod test_source;
pub mod waiver;

// What most callers need, at the crate root (the modules keep the detail).
pub use bundle::{Bundle, BundleError, ConfigBinding, verify_bundle};
pub use fleet::{FleetOptions, NodeResult, NodeStatus};
pub use nodes::{ExpectedNode, NodeList};
pub use policy::{Policy, PolicyError, ReleaseManifest};
pub use report::{Check, Outcome, Verdict};
pub use snp::amd::{ChainVerifier, fmt_unix, parse_time};
