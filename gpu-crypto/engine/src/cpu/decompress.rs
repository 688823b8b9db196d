//! Compressed point decoding with `ic_bls12_381`'s exact accept set and a reason for
//! every rejection (the precedence documented on [`DecodeError`]).
//!
//! `ic_bls12_381` only says "rejected"; the reason is found by checking, in order, the
//! things its `from_compressed_unchecked` checks (flags, `x < p`, square root) and then
//! the subgroup. The square root and the subgroup test are `ic_bls12_381`'s own code,
//! so the accepted points are bit-identical to the replica's.

use gpu_crypto_api::DecodeError;
use ic_bls12_381::{G1Affine, G2Affine};
use rayon::prelude::*;

/// The base-field modulus p, big-endian (the byte order of the encodings).
pub const P_BYTES: [u8; 48] = [
    0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6, 0x43, 0x4b, 0xac, 0xd7,
    0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf, 0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24,
    0x1e, 0xab, 0xff, 0xfe, 0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab,
];

const COMPRESSION_FLAG: u8 = 0b1000_0000;
const INFINITY_FLAG: u8 = 0b0100_0000;
const SORT_FLAG: u8 = 0b0010_0000;
const FLAG_MASK: u8 = COMPRESSION_FLAG | INFINITY_FLAG | SORT_FLAG;

/// Below this many points one thread decodes them all (a decode is ~0.1 ms; rayon's
/// hand-off would cost more than it saves).
const PARALLEL_MIN_POINTS: usize = 16;

/// Whether a big-endian 48-byte field element is `>= p`. Equal-length big-endian byte
/// strings compare like the integers they encode.
fn is_non_canonical(fe: &[u8; 48]) -> bool {
    fe.as_slice() >= P_BYTES.as_slice()
}

/// The checks both groups share, up to (not including) the square root: flags, then
/// infinity, then canonical coordinates. `Ok(true)`: a valid identity encoding;
/// `Ok(false)`: go on and recover the point.
fn check_flags_and_coordinates(flags: u8, coordinates: &[&[u8; 48]]) -> Result<bool, DecodeError> {
    if flags & COMPRESSION_FLAG == 0 {
        return Err(DecodeError::NotCompressed);
    }
    if flags & INFINITY_FLAG != 0 {
        let stray_bits =
            flags & SORT_FLAG != 0 || coordinates.iter().any(|c| c.iter().any(|&b| b != 0));
        return if stray_bits {
            Err(DecodeError::BadInfinity)
        } else {
            Ok(true)
        };
    }
    if coordinates.iter().any(|c| is_non_canonical(c)) {
        return Err(DecodeError::NonCanonical);
    }
    Ok(false)
}

/// Decodes one 48-byte compressed G1 point; `Ok` exactly when
/// `G1Affine::from_compressed` returns a point, and then the same point.
pub fn g1_decompress_one(bytes: &[u8; 48]) -> Result<G1Affine, DecodeError> {
    let mut x = *bytes;
    x[0] &= !FLAG_MASK;
    if check_flags_and_coordinates(bytes[0], &[&x])? {
        return Ok(G1Affine::identity());
    }
    // Flags and x are valid here, so the only way left to fail is a missing square root.
    let point: Option<G1Affine> = G1Affine::from_compressed_unchecked(bytes).into();
    let point = point.ok_or(DecodeError::NotOnCurve)?;
    if bool::from(point.is_torsion_free()) {
        Ok(point)
    } else {
        Err(DecodeError::NotInSubgroup)
    }
}

/// Decodes one 96-byte compressed G2 point (BLS public keys); `Ok` exactly when
/// `G2Affine::from_compressed` returns a point. Bytes 0..48 hold x.c1 (with the flags),
/// bytes 48..96 hold x.c0; either coordinate `>= p` is `NonCanonical`.
pub fn g2_decompress_one(bytes: &[u8; 96]) -> Result<G2Affine, DecodeError> {
    let mut c1 = [0u8; 48];
    let mut c0 = [0u8; 48];
    c1.copy_from_slice(&bytes[..48]);
    c0.copy_from_slice(&bytes[48..]);
    c1[0] &= !FLAG_MASK;
    if check_flags_and_coordinates(bytes[0], &[&c1, &c0])? {
        return Ok(G2Affine::identity());
    }
    let point: Option<G2Affine> = G2Affine::from_compressed_unchecked(bytes).into();
    let point = point.ok_or(DecodeError::NotOnCurve)?;
    if bool::from(point.is_torsion_free()) {
        Ok(point)
    } else {
        Err(DecodeError::NotInSubgroup)
    }
}

/// Decodes a batch of compressed G1 points, one result per input, across all cores
/// for large batches.
pub fn g1_decompress(points: &[[u8; 48]]) -> Vec<Result<G1Affine, DecodeError>> {
    if points.len() < PARALLEL_MIN_POINTS {
        points.iter().map(g1_decompress_one).collect()
    } else {
        points
            .par_iter()
            .with_min_len(PARALLEL_MIN_POINTS / 2)
            .map(g1_decompress_one)
            .collect()
    }
}

/// Decodes a batch of compressed G2 points, one result per input, across all cores from
/// two points on, one point per task: a G2 decode takes about 0.5 ms on one core (square
/// root in Fp2 and the subgroup test), so rayon's hand-off pays for itself at any size and
/// a batch of a dealing's 22-31 points spreads over every thread.
pub fn g2_decompress(points: &[[u8; 96]]) -> Vec<Result<G2Affine, DecodeError>> {
    if points.len() < 2 {
        points.iter().map(g2_decompress_one).collect()
    } else {
        points.par_iter().map(g2_decompress_one).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_bytes_is_the_modulus() {
        // y(G) + y(-G) = p exactly, for canonical y coordinates of any point not of order 2.
        let g = G1Affine::generator().to_uncompressed();
        let neg_g = (-G1Affine::generator()).to_uncompressed();
        let mut sum = [0u8; 48];
        let mut carry = 0u16;
        for i in (0..48).rev() {
            let s = u16::from(g[48 + i]) + u16::from(neg_g[48 + i]) + carry;
            sum[i] = s as u8;
            carry = s >> 8;
        }
        assert_eq!(carry, 0);
        assert_eq!(sum, P_BYTES);
        let mut p_minus_one = P_BYTES;
        p_minus_one[47] -= 1;
        assert!(!is_non_canonical(&p_minus_one));
        assert!(is_non_canonical(&P_BYTES));
    }
}
