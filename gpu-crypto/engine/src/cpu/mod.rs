//! The CPU reference paths: `ic_bls12_381` (the replica's own library) with rayon across
//! cores, blst's Pippenger for MSMs, and `sha2` (SHA-NI where the CPU has it). Every GPU
//! result is judged against these.

mod bls;
mod blst_convert;
mod decompress;
mod msm;
mod pairing;
mod sha256;

pub use bls::{bls_verify_batch, hash_message_to_g1, verify_one};
pub use decompress::{P_BYTES, g1_decompress, g1_decompress_one, g2_decompress, g2_decompress_one};
pub use msm::{
    g1_msm_batch, g1_msm_naive, g1_msm_shared_u8, g1_recombine_chunks, g2_msm_batch, g2_msm_naive,
};
pub use pairing::pairing_products_are_identity;
pub use sha256::sha256_prefixed;
