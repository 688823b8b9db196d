//! The random oracles of the protocol: an unambiguous, domain-separated encoding of the
//! inputs (every item labelled and length-prefixed), hashed with SHA-256 or mapped to a
//! scalar with RFC 9380's hash-to-field (expand_message_xmd with SHA-256).
//!
//! A dealing uses five oracle calls, in this order: the ciphertext identity
//! ([`DOMAIN_CIPHERTEXT_IDENTITY`]), the chunking proof's first challenge (a ChaCha20 seed
//! from which the 8-bit challenges are drawn) and second challenge, the sharing proof's
//! instance hash and its challenge.

use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToField};
use ic_bls12_381::{G1Affine, G2Affine, Scalar};
use sha2::{Digest, Sha256};

/// Binds the forward-secure ciphertext to its chunks, randomizers, epoch and context.
pub const DOMAIN_CIPHERTEXT_IDENTITY: &[u8] = b"sovereign-node-nidkg-v1/ciphertext-identity";
/// The chunking proof's 8-bit challenges `e_ijk`.
pub const DOMAIN_CHUNKING_FIRST: &[u8] = b"sovereign-node-nidkg-v1/chunking-first-challenge";
/// The chunking proof's scalar challenge `x`.
pub const DOMAIN_CHUNKING_SECOND: &[u8] = b"sovereign-node-nidkg-v1/chunking-second-challenge";
/// The sharing proof's instance hash `x`.
pub const DOMAIN_SHARING_INSTANCE: &[u8] = b"sovereign-node-nidkg-v1/sharing-instance";
/// The sharing proof's challenge `x'`.
pub const DOMAIN_SHARING_CHALLENGE: &[u8] = b"sovereign-node-nidkg-v1/sharing-challenge";
/// The receiver key's proof of possession.
pub const DOMAIN_KEY_POP: &[u8] = b"sovereign-node-nidkg-v1/receiver-key-pop";

/// Accumulates labelled items for one oracle call.
pub struct Transcript {
    domain: &'static [u8],
    buf: Vec<u8>,
}

impl Transcript {
    /// A transcript for the oracle named by `domain`.
    pub fn new(domain: &'static [u8]) -> Self {
        let mut buf = Vec::with_capacity(4096);
        put_len_prefixed(&mut buf, domain);
        Transcript { domain, buf }
    }

    fn item(&mut self, label: &str, len: usize) {
        put_len_prefixed(&mut self.buf, label.as_bytes());
        self.buf.extend_from_slice(&(len as u64).to_be_bytes());
    }

    /// Appends raw bytes.
    pub fn bytes(&mut self, label: &str, data: &[u8]) -> &mut Self {
        self.item(label, data.len());
        self.buf.extend_from_slice(data);
        self
    }

    /// Appends a number.
    pub fn u64(&mut self, label: &str, v: u64) -> &mut Self {
        self.bytes(label, &v.to_be_bytes())
    }

    /// Appends G1 points in their compressed encoding.
    pub fn g1s(&mut self, label: &str, points: &[G1Affine]) -> &mut Self {
        self.item(label, points.len() * 48);
        for p in points {
            self.buf.extend_from_slice(&p.to_compressed());
        }
        self
    }

    /// Appends G2 points in their compressed encoding.
    pub fn g2s(&mut self, label: &str, points: &[G2Affine]) -> &mut Self {
        self.item(label, points.len() * 96);
        for p in points {
            self.buf.extend_from_slice(&p.to_compressed());
        }
        self
    }

    /// Appends scalars (32 bytes big-endian each).
    pub fn scalars(&mut self, label: &str, scalars: &[Scalar]) -> &mut Self {
        self.item(label, scalars.len() * 32);
        for s in scalars {
            self.buf
                .extend_from_slice(&crate::encoding::scalar_to_be(s));
        }
        self
    }

    /// SHA-256 of the transcript.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(&self.buf).into()
    }

    /// A uniformly distributed scalar (RFC 9380 hash_to_field with the domain as DST).
    pub fn scalar(&self) -> Scalar {
        let mut out = [Scalar::zero(); 1];
        <Scalar as HashToField>::hash_to_field::<ExpandMsgXmd<Sha256>>(
            &self.buf,
            self.domain,
            &mut out,
        );
        out[0]
    }
}

fn put_len_prefixed(buf: &mut Vec<u8>, data: &[u8]) {
    buf.extend_from_slice(&(data.len() as u64).to_be_bytes());
    buf.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_lengths_separate_items() {
        let a = Transcript::new(DOMAIN_KEY_POP)
            .bytes("a", b"xy")
            .bytes("b", b"z")
            .digest();
        let b = Transcript::new(DOMAIN_KEY_POP)
            .bytes("a", b"x")
            .bytes("b", b"yz")
            .digest();
        assert_ne!(a, b);
        let c = Transcript::new(DOMAIN_SHARING_INSTANCE)
            .bytes("a", b"xy")
            .bytes("b", b"z")
            .digest();
        assert_ne!(a, c);
    }
}
