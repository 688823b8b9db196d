//! Attestation for sovereign-node: evidence collected on the node (SEV-SNP report,
//! AMD certificate chain, NVIDIA GPU CC reports, node key) and the governing body's
//! verifier, which reports every check by name with pass, fail or skip.

pub mod nvidia;
pub mod report;
