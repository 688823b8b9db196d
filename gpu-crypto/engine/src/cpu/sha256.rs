//! `SHA-256(prefix || chunk)` per chunk with the `sha2` crate.
//!
//! On x86_64, `sha2` 0.10 detects SHA-NI at run time (`cpufeatures`) and uses it without
//! any feature flag; its `asm` feature only swaps the non-SHA-NI fallback for a C-compiled
//! assembly body, so it is left off (EPYC hosts have SHA-NI, and CI needs no C toolchain).

use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// Below this many bytes in the whole batch, hashing on one thread beats handing work to
/// rayon (about 50 µs of SHA-NI work against a few µs of task overhead).
const PARALLEL_MIN_TOTAL_BYTES: usize = 128 * 1024;

/// `SHA-256(prefix || chunk)` for every chunk, in input order.
pub fn sha256_prefixed(prefix: &[u8], chunks: &[&[u8]]) -> Vec<[u8; 32]> {
    // The prefix is absorbed once; each chunk continues from a clone of that state.
    let prefixed = Sha256::new_with_prefix(prefix);
    let hash_one = |chunk: &&[u8]| -> [u8; 32] {
        let mut hasher = prefixed.clone();
        hasher.update(chunk);
        hasher.finalize().into()
    };
    let total_bytes: usize = chunks.iter().map(|c| c.len()).sum();
    if chunks.len() > 1 && total_bytes >= PARALLEL_MIN_TOTAL_BYTES {
        chunks.par_iter().map(hash_one).collect()
    } else {
        chunks.iter().map(hash_one).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_one_shot_on_both_paths() {
        let prefix = b"\x0eic-state-chunk";
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + 3) as u8).collect();
        // 3 small chunks take the sequential path, the 5 large ones the parallel path.
        for chunks in [
            vec![&data[..0], &data[..1], &data[..64]],
            vec![
                &data[..],
                &data[1..],
                &data[..65_536],
                &data[7..70_000],
                &data[..0],
            ],
        ] {
            let got = sha256_prefixed(prefix, &chunks);
            let want: Vec<[u8; 32]> = chunks
                .iter()
                .map(|c| Sha256::digest([&prefix[..], c].concat()).into())
                .collect();
            assert_eq!(got, want);
        }
    }
}
