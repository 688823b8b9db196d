//! The batch operations, and the inputs that carry no curve types: the IC's two BLS
//! signature schemes and one BLS item as bytes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The batch operations the engine offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// G1 decompression with the subgroup check (48-byte points).
    Decompress,
    /// G2 decompression with the subgroup check (96-byte points).
    DecompressG2,
    /// G1 MSMs with full scalars, one or many per call.
    Msm,
    /// G1 MSMs over one set of shared bases with 8-bit scalars (NI-DKG's chunking proof).
    MsmSharedU8,
    /// G2 MSMs with full scalars over points of the prime-order subgroup (NI-DKG's
    /// sharing proof and combined integrity check).
    MsmG2,
    /// Products of pairings compared with the identity of GT (NI-DKG's ciphertext
    /// integrity).
    PairingProducts,
    /// BLS signature verification of [`BlsItem`]s, either scheme.
    BlsVerify,
    /// SHA-256 of chunks, each prefixed with a [`crate::DomainSeparator`].
    Sha256,
}

impl Operation {
    /// Every operation, in declaration order.
    pub const ALL: [Operation; 8] = [
        Operation::Decompress,
        Operation::DecompressG2,
        Operation::Msm,
        Operation::MsmSharedU8,
        Operation::MsmG2,
        Operation::PairingProducts,
        Operation::BlsVerify,
        Operation::Sha256,
    ];

    /// The snake_case name used in policies, metrics and reports.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Decompress => "decompress",
            Operation::DecompressG2 => "decompress_g2",
            Operation::Msm => "msm",
            Operation::MsmSharedU8 => "msm_shared_u8",
            Operation::MsmG2 => "msm_g2",
            Operation::PairingProducts => "pairing_products",
            Operation::BlsVerify => "bls_verify",
            Operation::Sha256 => "sha256",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One BLS signature to verify: signature in G1 (48 bytes compressed), public key in
/// G2 (96 bytes compressed), and the message, hashed to G1 as the IC does for `scheme`.
#[derive(Debug, Clone, Copy)]
pub struct BlsItem<'a> {
    /// Compressed G1 signature.
    pub signature: &'a [u8; 48],
    /// Compressed G2 public key.
    pub public_key: &'a [u8; 96],
    /// The signed message, unhashed.
    pub message: &'a [u8],
    /// Which scheme's tag hashes the message.
    pub scheme: BlsScheme,
}

/// The IC's two BLS12-381 signature schemes (signatures in G1, public keys in G2).
/// They differ only in the domain separation tag of the message hash to G1
/// (RFC 9380 `BLS12381G1_XMD:SHA-256_SSWU_RO_`); decoding and verification are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlsScheme {
    /// Threshold signatures and their shares (`ThresBls12_381`: certification, random
    /// beacon, ...): the basic scheme's tag (`crypto_lib/threshold_sig/bls12_381`).
    Threshold,
    /// Individual and combined multi-signatures of nodes (`MultiBls12_381`: consensus
    /// shares): the proof-of-possession scheme's tag (`crypto_lib/multi_sig/bls12_381`).
    MultiSig,
}

impl BlsScheme {
    /// Both schemes.
    pub const ALL: [BlsScheme; 2] = [BlsScheme::Threshold, BlsScheme::MultiSig];

    /// The hash-to-G1 domain separation tag the replica uses for messages.
    pub fn dst(self) -> &'static [u8] {
        match self {
            BlsScheme::Threshold => b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_",
            BlsScheme::MultiSig => b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_",
        }
    }

    /// The snake_case name: `threshold` or `multi_sig`.
    pub fn name(self) -> &'static str {
        match self {
            BlsScheme::Threshold => "threshold",
            BlsScheme::MultiSig => "multi_sig",
        }
    }
}
