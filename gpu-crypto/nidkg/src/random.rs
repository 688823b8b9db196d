//! Random scalars for dealing creation, key generation and tests.

use ic_bls12_381::Scalar;
use rand::{CryptoRng, RngCore};

/// A uniformly random scalar (512 random bits reduced modulo the group order).
pub fn random_scalar<R: RngCore + CryptoRng>(rng: &mut R) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    Scalar::from_bytes_wide(&wide)
}
