//! Byte encodings: the dealing (exactly the IC's size, `96t + 848n + 7600` bytes:
//! compressed points, 32-byte big-endian scalars, in the IC's field order) and the
//! self-contained dealing file the CLI reads and writes (context header, receiver keys,
//! dealing).
//!
//! Splitting bytes into per-component point and scalar encodings does no curve
//! arithmetic; the verifier decompresses the gathered lists in one batch each.

use crate::component::Component;
use crate::error::VerifyError;
use crate::params::{MAX_RECEIVERS, NUM_CHUNKS, NUM_ZK_REPETITIONS, dealing_size};
use ic_bls12_381::Scalar;

/// The encoding kind of an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementKind {
    /// 48-byte compressed G1 point.
    G1,
    /// 96-byte compressed G2 point.
    G2,
    /// 32-byte big-endian scalar below the group order.
    Scalar,
}

impl ElementKind {
    /// Encoded size in bytes.
    pub fn size(self) -> usize {
        match self {
            ElementKind::G1 => 48,
            ElementKind::G2 => 96,
            ElementKind::Scalar => 32,
        }
    }
}

/// The dealing's fields in encoding order (the IC's order): kind, component, count.
pub fn dealing_layout(n: usize, t: usize) -> [(ElementKind, Component, usize); 18] {
    use Component::*;
    use ElementKind::{G1, G2};
    let l = NUM_ZK_REPETITIONS;
    [
        (G2, PublicCoefficient, t),
        (G1, CiphertextR, NUM_CHUNKS),
        (G1, CiphertextS, NUM_CHUNKS),
        (G2, CiphertextZ, NUM_CHUNKS),
        (G1, CiphertextChunk, NUM_CHUNKS * n),
        (G1, ChunkingY0, 1),
        (G1, ChunkingB, l),
        (G1, ChunkingC, l),
        (G1, ChunkingD, n + 1),
        (G1, ChunkingY, 1),
        (ElementKind::Scalar, ChunkingZr, n),
        (ElementKind::Scalar, ChunkingZs, l),
        (ElementKind::Scalar, ChunkingZbeta, 1),
        (G1, SharingF, 1),
        (G2, SharingA, 1),
        (G1, SharingY, 1),
        (ElementKind::Scalar, SharingZr, 1),
        (ElementKind::Scalar, SharingZalpha, 1),
    ]
}

/// A dealing and its receivers' keys split into encoded elements, per kind, in layout
/// order (G1: receiver keys first, then the dealing's G1 fields). Decompressing these
/// lists is the verifier's deserialisation phase: `18n + 101` G1 and `t + 17` G2 points.
#[derive(Clone, Debug)]
pub struct EncodedElements {
    /// Number of receivers.
    pub n: usize,
    /// Threshold (number of public coefficients).
    pub t: usize,
    /// Compressed G1 points.
    pub g1: Vec<[u8; 48]>,
    /// Compressed G2 points.
    pub g2: Vec<[u8; 96]>,
    /// Big-endian scalars.
    pub scalars: Vec<[u8; 32]>,
}

impl EncodedElements {
    /// Splits `dealing` (exactly `dealing_size(n, t)` bytes) and the receivers' keys.
    pub fn split(
        receiver_keys: &[[u8; 48]],
        t: usize,
        dealing: &[u8],
    ) -> Result<Self, VerifyError> {
        let n = receiver_keys.len();
        check_shape(n, t)?;
        let expected = dealing_size(n, t);
        if dealing.len() != expected {
            return Err(VerifyError::Length {
                expected,
                actual: dealing.len(),
            });
        }
        let mut out = EncodedElements {
            n,
            t,
            g1: Vec::with_capacity(18 * n + 101),
            g2: Vec::with_capacity(t + 17),
            scalars: Vec::with_capacity(n + 35),
        };
        out.g1.extend_from_slice(receiver_keys);
        let mut rest = dealing;
        for (kind, _, count) in dealing_layout(n, t) {
            for _ in 0..count {
                let (element, tail) = rest.split_at(kind.size());
                rest = tail;
                match kind {
                    ElementKind::G1 => out.g1.push(element.try_into().expect("48 bytes")),
                    ElementKind::G2 => out.g2.push(element.try_into().expect("96 bytes")),
                    ElementKind::Scalar => out.scalars.push(element.try_into().expect("32 bytes")),
                }
            }
        }
        debug_assert!(rest.is_empty());
        Ok(out)
    }

    /// The component and index within it of element `flat` of the `kind` list.
    pub fn locate(&self, kind: ElementKind, flat: usize) -> (Component, usize) {
        let mut offset = 0;
        if kind == ElementKind::G1 {
            if flat < self.n {
                return (Component::ReceiverKey, flat);
            }
            offset = self.n;
        }
        for (k, component, count) in dealing_layout(self.n, self.t) {
            if k != kind {
                continue;
            }
            if flat < offset + count {
                return (component, flat - offset);
            }
            offset += count;
        }
        unreachable!("element {flat} of kind {kind:?} is outside the layout")
    }
}

/// Rejects shapes the protocol does not define before any allocation sized by them.
pub fn check_shape(n: usize, t: usize) -> Result<(), VerifyError> {
    if n == 0 || n > MAX_RECEIVERS || t == 0 || t > n {
        return Err(VerifyError::Shape { n, t });
    }
    Ok(())
}

/// 32-byte big-endian encoding of a scalar.
pub fn scalar_to_be(s: &Scalar) -> [u8; 32] {
    let mut b = s.to_bytes();
    b.reverse();
    b
}

/// Decodes a 32-byte big-endian scalar; `None` unless it is below the group order.
pub fn scalar_from_be(bytes: &[u8; 32]) -> Option<Scalar> {
    let mut le = *bytes;
    le.reverse();
    Option::from(Scalar::from_bytes(&le))
}

/// Magic of a dealing file.
pub const FILE_MAGIC: &[u8; 8] = b"SNNIDKG1";
/// Largest associated-data field a dealing file may carry.
pub const MAX_ASSOCIATED_DATA: usize = 4096;

/// A dealing file: the IC's dealing bytes with the context a verifier needs. Layout:
/// magic (8 bytes), then big-endian u32 `n`, `t`, `epoch`, associated-data length; the
/// associated data (the dealer index, 4 bytes big-endian, for the IC's dealings); `n`
/// compressed receiver keys (48 bytes each); the dealing in the IC's CBOR encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DealingFile {
    /// Epoch the dealing is encrypted for.
    pub epoch: u32,
    /// Context bound into the ciphertext (e.g. the DKG id).
    pub associated_data: Vec<u8>,
    /// The receivers' public keys, compressed, in receiver order.
    pub receiver_keys: Vec<[u8; 48]>,
    /// Threshold.
    pub t: usize,
    /// The dealing in the IC's CBOR encoding ([`crate::ic_cbor`]).
    pub dealing: Vec<u8>,
}

const HEADER_LEN: usize = 8 + 16;

impl DealingFile {
    /// Serialises the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.receiver_keys.len();
        let mut out = Vec::with_capacity(
            HEADER_LEN + self.associated_data.len() + 48 * n + self.dealing.len(),
        );
        out.extend_from_slice(FILE_MAGIC);
        for v in [n, self.t, self.epoch as usize, self.associated_data.len()] {
            out.extend_from_slice(&(v as u32).to_be_bytes());
        }
        out.extend_from_slice(&self.associated_data);
        for k in &self.receiver_keys {
            out.extend_from_slice(k);
        }
        out.extend_from_slice(&self.dealing);
        out
    }

    /// Parses a file; checks the magic, the shape and that the length is exact.
    pub fn parse(bytes: &[u8]) -> Result<Self, VerifyError> {
        if bytes.len() < HEADER_LEN {
            return Err(VerifyError::Header("shorter than the 24-byte header"));
        }
        if &bytes[..8] != FILE_MAGIC {
            return Err(VerifyError::Header("not a dealing file (bad magic)"));
        }
        let word = |i: usize| {
            let at = 8 + 4 * i;
            u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
        };
        let (n, t, epoch, ad_len) = (word(0), word(1), word(2) as u32, word(3));
        check_shape(n, t)?;
        if ad_len > MAX_ASSOCIATED_DATA {
            return Err(VerifyError::Header(
                "associated data longer than 4096 bytes",
            ));
        }
        // The dealing itself is at least its elements' bytes (CBOR adds framing).
        let expected = HEADER_LEN + ad_len + 48 * n + dealing_size(n, t);
        if bytes.len() < expected {
            return Err(VerifyError::Length {
                expected,
                actual: bytes.len(),
            });
        }
        let mut rest = &bytes[HEADER_LEN..];
        let associated_data = rest[..ad_len].to_vec();
        rest = &rest[ad_len..];
        let receiver_keys = rest[..48 * n]
            .chunks_exact(48)
            .map(|c| c.try_into().expect("48 bytes"))
            .collect();
        let dealing = rest[48 * n..].to_vec();
        Ok(DealingFile {
            epoch,
            associated_data,
            receiver_keys,
            t,
            dealing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_sums_to_the_ics_size_and_point_counts() {
        for (n, t) in [(13, 5), (13, 9), (28, 19), (40, 27), (1, 1)] {
            let layout = dealing_layout(n, t);
            let bytes: usize = layout.iter().map(|(k, _, c)| k.size() * c).sum();
            assert_eq!(bytes, dealing_size(n, t));
            let g1: usize = layout
                .iter()
                .filter(|l| l.0 == ElementKind::G1)
                .map(|l| l.2)
                .sum();
            let g2: usize = layout
                .iter()
                .filter(|l| l.0 == ElementKind::G2)
                .map(|l| l.2)
                .sum();
            // Receiver keys add n to the dealing's own G1 points.
            assert_eq!(g1 + n, 18 * n + 101);
            assert_eq!(g2, t + 17);
        }
    }

    #[test]
    fn locate_maps_flat_indices_back() {
        let keys = vec![[0u8; 48]; 13];
        let e = EncodedElements::split(&keys, 9, &vec![0u8; dealing_size(13, 9)]).unwrap();
        assert_eq!(e.locate(ElementKind::G1, 0), (Component::ReceiverKey, 0));
        assert_eq!(e.locate(ElementKind::G1, 13), (Component::CiphertextR, 0));
        assert_eq!(
            e.locate(ElementKind::G1, 13 + 32 + 5),
            (Component::CiphertextChunk, 5)
        );
        assert_eq!(e.locate(ElementKind::G2, 9), (Component::CiphertextZ, 0));
        assert_eq!(e.locate(ElementKind::G2, 25), (Component::SharingA, 0));
        assert_eq!(
            e.locate(ElementKind::Scalar, 13),
            (Component::ChunkingZs, 0)
        );
        assert_eq!(e.g1.len(), 18 * 13 + 101);
    }

    #[test]
    fn scalar_encoding_is_big_endian() {
        let b = scalar_to_be(&Scalar::from(0x0102u64));
        assert_eq!(&b[30..], &[1, 2]);
        assert_eq!(scalar_from_be(&b), Some(Scalar::from(0x0102u64)));
        assert_eq!(scalar_from_be(&[0xff; 32]), None);
    }
}
