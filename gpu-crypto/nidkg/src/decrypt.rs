//! A receiver decrypts its share: per chunk, a four-pair multipairing gives
//! `e(g1, g2)^m`, and baby-step giant-step over `[0, 2^16)` (256 baby steps in a table,
//! at most 256 giant steps) recovers `m`. Honest dealers' chunks are always in that
//! range; a chunk outside it is reported, not searched for (the IC's search for a
//! cheating dealer's wider chunks is not provided).

use crate::dealing::{Dealing, ciphertext_identity_hash};
use crate::error::DecryptError;
use crate::keys::ReceiverSecretKey;
use crate::params::{CHUNK_BITS, NUM_CHUNKS};
use ic_bls12_381::{G1Affine, G2Affine, G2Prepared, Gt, Scalar, multi_miller_loop, pairing};
use std::collections::HashMap;
use std::sync::OnceLock;

const BABY_STEPS: u64 = 1 << (CHUNK_BITS / 2);

struct DlogTable {
    baby: HashMap<[u8; 576], u64>,
    giant_step: Gt,
}

fn table() -> &'static DlogTable {
    static TABLE: OnceLock<DlogTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let base = pairing(&G1Affine::generator(), &G2Affine::generator());
        let mut baby = HashMap::with_capacity(BABY_STEPS as usize);
        let mut acc = Gt::identity();
        for i in 0..BABY_STEPS {
            baby.insert(acc.to_bytes(), i);
            acc += base;
        }
        DlogTable {
            baby,
            // acc = base^256 after the loop.
            giant_step: -acc,
        }
    })
}

/// `m` in `[0, 2^16)` with `e(g1, g2)^m == value`, if any.
fn small_dlog(value: &Gt) -> Option<u64> {
    let table = table();
    let mut v = *value;
    for giant in 0..BABY_STEPS {
        if let Some(baby) = table.baby.get(&v.to_bytes()) {
            return Some(giant * BABY_STEPS + baby);
        }
        v += table.giant_step;
    }
    None
}

/// Decrypts receiver `index`'s share of `dealing` (encrypted for `epoch` under
/// `associated_data`) with its secret key.
pub fn decrypt_share(
    key: &ReceiverSecretKey,
    dealing: &Dealing,
    index: usize,
    epoch: u32,
    associated_data: &[u8],
) -> Result<Scalar, DecryptError> {
    let c = &dealing.ciphertext;
    let n = c.cc.len();
    if index >= n {
        return Err(DecryptError::ReceiverIndex { index, n });
    }
    let hash = ciphertext_identity_hash(&c.cc, &c.rr, &c.ss, epoch, associated_data);
    let (a, b, e) = key.decryption_terms(epoch, &hash)?;
    let neg_b = G2Prepared::from(G2Affine::from(-b));
    let neg_e = G2Prepared::from(-e);
    let g2 = G2Prepared::from(G2Affine::generator());
    let shift = Scalar::from(1u64 << CHUNK_BITS);
    let mut share = Scalar::zero();
    for j in 0..NUM_CHUNKS {
        let z = G2Prepared::from(c.zz[j]);
        // e(C_ij, g2) e(R_j, -b) e(a, Z_j) e(S_j, -e) = e(g1, g2)^m_ij.
        let m = multi_miller_loop(&[
            (&c.cc[index][j], &g2),
            (&c.rr[j], &neg_b),
            (&a, &z),
            (&c.ss[j], &neg_e),
        ])
        .final_exponentiation();
        let chunk = small_dlog(&m).ok_or(DecryptError::ChunkOutOfRange { chunk: j })?;
        share = share * shift + Scalar::from(chunk);
    }
    Ok(share)
}
