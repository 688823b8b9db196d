//! AMD SEV-SNP: the raw report, the AMD certificate chain and the TCB. The checks of a
//! report against a policy are [`crate::snp_checks`].

pub mod amd;
pub mod raw;
pub mod tcb;
