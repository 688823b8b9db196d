//! The Internet Computer's random oracles for NI-DKG, byte for byte: every value has a
//! "unique hash" (SHA-256 of a length-prefixed type domain and the value's encoding),
//! maps hash the sorted pairs of key and value digests, and an oracle hashes its purpose
//! domain followed by the unique hash of its input.
//!
//! A domain is written as one length byte and its UTF-8 bytes (the IC's
//! `DomainSeparationContext`). Points are compressed, scalars 32 bytes big-endian,
//! integers 8 bytes big-endian.
//!
//! A dealing uses five oracle calls: the ciphertext's binary-tree node identity, the
//! chunking proof's first challenge (a ChaCha20 seed for the 8-bit challenges) and second
//! challenge, the sharing proof's instance hash and its challenge.

use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, Scalar};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A unique-hash digest.
pub type UniqueDigest = [u8; 32];

/// The ciphertext's node identity (`extend_tau`).
pub const DOMAIN_CIPHERTEXT_NODE: &str = "ic-fs-encryption/binary-tree-node";
/// The chunking proof's 8-bit challenges `e_ijk`.
pub const DOMAIN_CHUNKING_ORACLE: &str = "ic-zk-proof-of-chunking-chunking";
/// The chunking proof's scalar challenge `x`.
pub const DOMAIN_CHUNKING_CHALLENGE: &str = "ic-zk-proof-of-chunking-challenge";
/// The sharing proof's instance hash `x`.
pub const DOMAIN_SHARING_INSTANCE: &str = "ic-zk-proof-of-sharing-instance";
/// The sharing proof's challenge `x'`.
pub const DOMAIN_SHARING_CHALLENGE: &str = "ic-zk-proof-of-sharing-challenge";
/// The receiver key's proof of possession (its base point and its challenge).
pub const DOMAIN_POP_ENCRYPTION_KEY: &str = "ic-pop-encryption";

const DOMAIN_INT: &str = "ic-random-oracle-integer";
const DOMAIN_STRING: &str = "ic-random-oracle-string";
const DOMAIN_SCALAR: &str = "ic-random-oracle-bls12381-scalar";
const DOMAIN_G1: &str = "ic-random-oracle-bls12381-g1";
const DOMAIN_G2: &str = "ic-random-oracle-bls12381-g2";
const DOMAIN_BYTES: &str = "ic-random-oracle-byte-array";
const DOMAIN_MAP: &str = "ic-random-oracle-map";
const DOMAIN_VECTOR: &str = "ic-random-oracle-vector";

/// The domain's bytes: its length in one byte, then its UTF-8 bytes.
pub fn domain_bytes(domain: &str) -> Vec<u8> {
    let len = u8::try_from(domain.len()).expect("domains are constants below 256 bytes");
    let mut out = Vec::with_capacity(1 + domain.len());
    out.push(len);
    out.extend_from_slice(domain.as_bytes());
    out
}

fn hasher(domain: &str) -> Sha256 {
    let len = u8::try_from(domain.len()).expect("domains are constants below 256 bytes");
    let mut h = Sha256::new();
    h.update([len]);
    h.update(domain.as_bytes());
    h
}

fn digest_of(domain: &str, data: &[u8]) -> UniqueDigest {
    let mut h = hasher(domain);
    h.update(data);
    h.finalize().into()
}

/// Unique hash of an integer (the IC's `usize` and `u64`).
pub fn hash_int(v: u64) -> UniqueDigest {
    digest_of(DOMAIN_INT, &v.to_be_bytes())
}

/// [`hash_int`] of a byte's value, from a table of all 256: the chunking proof's second
/// challenge hashes each of its `32 * 16 n` 8-bit first challenges as an integer, and one
/// SHA-256 each would be most of a verifier's host time outside its batches.
pub fn hash_small_int(v: u8) -> UniqueDigest {
    static TABLE: OnceLock<[UniqueDigest; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|v| hash_int(v as u64)))[usize::from(v)]
}

/// Unique hash of a string.
pub fn hash_string(s: &str) -> UniqueDigest {
    digest_of(DOMAIN_STRING, s.as_bytes())
}

/// Unique hash of a byte array.
pub fn hash_bytes(data: &[u8]) -> UniqueDigest {
    digest_of(DOMAIN_BYTES, data)
}

/// Unique hash of a scalar.
pub fn hash_scalar(s: &Scalar) -> UniqueDigest {
    digest_of(DOMAIN_SCALAR, &crate::encoding::scalar_to_be(s))
}

/// Unique hash of a G1 point.
pub fn hash_g1(p: &G1Affine) -> UniqueDigest {
    digest_of(DOMAIN_G1, &p.to_compressed())
}

/// Unique hash of a G2 point.
pub fn hash_g2(p: &G2Affine) -> UniqueDigest {
    digest_of(DOMAIN_G2, &p.to_compressed())
}

/// Unique hash of a vector, from its items' unique hashes.
pub fn hash_vector<I: IntoIterator<Item = UniqueDigest>>(items: I) -> UniqueDigest {
    let mut h = hasher(DOMAIN_VECTOR);
    for item in items {
        h.update(item);
    }
    h.finalize().into()
}

/// Unique hash of a vector of G1 points.
pub fn hash_g1_vector(points: &[G1Affine]) -> UniqueDigest {
    hash_vector(points.iter().map(hash_g1))
}

/// Unique hash of a vector of vectors of G1 points.
pub fn hash_g1_matrix(rows: &[Vec<G1Affine>]) -> UniqueDigest {
    hash_vector(rows.iter().map(|row| hash_g1_vector(row)))
}

/// A map of named values: the digests of key and value, hashed in the keys' digest order.
#[derive(Default)]
pub struct HashedMap(BTreeMap<UniqueDigest, UniqueDigest>);

impl HashedMap {
    /// An empty map.
    pub fn new() -> Self {
        HashedMap::default()
    }

    /// Adds `key` with a value's unique hash.
    pub fn with(mut self, key: &str, value: UniqueDigest) -> Self {
        self.0.insert(hash_string(key), value);
        self
    }

    /// The map's unique hash.
    pub fn unique_hash(&self) -> UniqueDigest {
        let mut h = hasher(DOMAIN_MAP);
        for (k, v) in &self.0 {
            h.update(k);
            h.update(v);
        }
        h.finalize().into()
    }
}

/// The oracle of `domain` on an input's unique hash.
pub fn random_oracle(domain: &str, input: &UniqueDigest) -> UniqueDigest {
    digest_of(domain, input)
}

/// The oracle of `domain` as a scalar: ChaCha20 seeded with the oracle's digest, read as
/// MIRACL's `BIG::randomnum` read its generator (512 bits, the bytes' bits in reverse
/// order, reduced modulo the group order).
pub fn random_oracle_to_scalar(domain: &str, input: &UniqueDigest) -> Scalar {
    let mut rng = ChaCha20Rng::from_seed(random_oracle(domain, input));
    // One 32-bit word per byte, as the IC draws them.
    let bytes: [u8; 64] = std::array::from_fn(|_| rng.r#gen::<u8>());
    miracl_scalar(&bytes)
}

/// MIRACL's reduction of 512 generated bits: the first 504 bits, most significant first
/// within each byte, then six more bits shifted in.
fn miracl_scalar(bytes: &[u8; 64]) -> Scalar {
    // Little-endian input of `from_bytes_wide`: the 63 first bytes, reversed in order and
    // in bit order, are the integer MIRACL has after 504 steps.
    let mut wide = [0u8; 64];
    for j in 0..63 {
        wide[j] = bytes[62 - j].reverse_bits();
    }
    let mut v = Scalar::from_bytes_wide(&wide);
    for _ in 0..6 {
        v = v.double();
    }
    v + Scalar::from(u64::from(bytes[63].reverse_bits() >> 2))
}

/// The oracle of `domain` as a G1 point: RFC 9380 hash-to-curve (SHA-256, SSWU) of the
/// input's unique hash, with the domain's bytes as the tag.
pub fn random_oracle_to_g1(domain: &str, input: &UniqueDigest) -> G1Affine {
    let p = <G1Projective as HashToCurve<ExpandMsgXmd<Sha256>>>::hash_to_curve(
        input,
        &domain_bytes(domain),
    );
    G1Affine::from(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_length_prefixed() {
        assert_eq!(domain_bytes("ab"), vec![2, b'a', b'b']);
    }

    #[test]
    fn map_digest_does_not_depend_on_insertion_order() {
        let a = HashedMap::new()
            .with("x", hash_int(1))
            .with("y", hash_int(2));
        let b = HashedMap::new()
            .with("y", hash_int(2))
            .with("x", hash_int(1));
        assert_eq!(a.unique_hash(), b.unique_hash());
        let c = HashedMap::new()
            .with("x", hash_int(2))
            .with("y", hash_int(1));
        assert_ne!(a.unique_hash(), c.unique_hash());
    }

    #[test]
    fn integer_hash_is_sha256_of_domain_and_big_endian_bytes() {
        let mut data = domain_bytes(DOMAIN_INT);
        data.extend_from_slice(&5u64.to_be_bytes());
        let expected: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(hash_int(5), expected);
    }

    #[test]
    fn small_integer_table_is_the_integer_hash() {
        for v in 0..=u8::MAX {
            assert_eq!(hash_small_int(v), hash_int(u64::from(v)), "value {v}");
        }
    }

    #[test]
    fn miracl_scalar_of_low_bits_is_the_shifted_integer() {
        // Only the last byte set: its top six bits, reversed, are the value.
        let mut bytes = [0u8; 64];
        bytes[63] = 0b0010_0000;
        assert_eq!(miracl_scalar(&bytes), Scalar::one());
        // Byte 62's lowest bit is MIRACL's bit 503: the integer 2^6 after the shift.
        let mut bytes = [0u8; 64];
        bytes[62] = 0b1000_0000;
        assert_eq!(miracl_scalar(&bytes), Scalar::from(64u64));
    }
}
