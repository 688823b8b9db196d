//! The CPU reference paths: `ic_bls12_381` (the replica's own library) with rayon across
//! cores, and `sha2` (SHA-NI where the CPU has it). Every GPU result is judged against these.

mod bls;
mod decompress;
mod msm;
mod sha256;

pub use bls::bls_verify_batch;
pub use decompress::g1_decompress;
pub use msm::g1_msm_batch;
pub use sha256::sha256_prefixed;
