//! Build-time tools of the node image (`image/build`):
//!
//! * [`launch`]: the SEV-SNP launch digest a genuine node reports for measured direct boot
//!   (OVMF AmdSevX64 + kernel + initrd + command line), computed with the `sev` crate's
//!   measurement module.
//! * [`kernels`]: the CUDA kernels compiled to cubins for each GPU architecture, written in
//!   gpu-crypto's own on-disk cache format so that a node never compiles kernels at boot.

#![warn(missing_docs)]

pub mod kernels;
pub mod launch;
