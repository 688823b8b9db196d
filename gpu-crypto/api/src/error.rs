//! Error types. Per-item errors (`DecodeError`, `VerifyError`) live inside a batch's
//! result vector; `EngineError` fails a whole call and never hides a partial result.

use crate::operation::Operation;

/// Why a compressed point encoding (G1: 48 bytes, G2: 96 bytes) was rejected.
///
/// The accept set is exactly `ic_bls12_381`'s `from_compressed`; the reason is assigned
/// in this precedence order, identical on every backend:
/// 1. compression flag (bit 7 of byte 0) clear;
/// 2. infinity flag (bit 6) set with the sort flag (bit 5) or any coordinate bit set;
/// 3. a coordinate is not canonical (>= p);
/// 4. no square root: the x coordinate is not on the curve;
/// 5. the point is not in the prime-order subgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum DecodeError {
    #[error("compression flag is clear")]
    NotCompressed,
    #[error("infinity flag set with the sort flag or coordinate bits set")]
    BadInfinity,
    #[error("coordinate is not canonical (>= p)")]
    NonCanonical,
    #[error("no point on the curve has this x coordinate")]
    NotOnCurve,
    #[error("point is not in the prime-order subgroup")]
    NotInSubgroup,
}

impl DecodeError {
    pub const ALL: [DecodeError; 5] = [
        DecodeError::NotCompressed,
        DecodeError::BadInfinity,
        DecodeError::NonCanonical,
        DecodeError::NotOnCurve,
        DecodeError::NotInSubgroup,
    ];

    /// One word for line-oriented output (`gpu-crypto decompress` prints `err <word>`).
    pub fn reason_word(self) -> &'static str {
        match self {
            DecodeError::NotCompressed => "not-compressed",
            DecodeError::BadInfinity => "bad-infinity",
            DecodeError::NonCanonical => "non-canonical",
            DecodeError::NotOnCurve => "not-on-curve",
            DecodeError::NotInSubgroup => "not-in-subgroup",
        }
    }

    /// Stable numeric code shared with the GPU kernels and the C ABI (0 means success).
    pub fn code(self) -> u8 {
        match self {
            DecodeError::NotCompressed => 1,
            DecodeError::BadInfinity => 2,
            DecodeError::NonCanonical => 3,
            DecodeError::NotOnCurve => 4,
            DecodeError::NotInSubgroup => 5,
        }
    }

    pub fn from_code(code: u8) -> Option<DecodeError> {
        DecodeError::ALL.into_iter().find(|e| e.code() == code)
    }
}

/// Why one BLS signature item did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum VerifyError {
    #[error("signature: {0}")]
    Signature(DecodeError),
    #[error("public key: {0}")]
    PublicKey(DecodeError),
    #[error("signature does not verify for this public key and message")]
    Invalid,
}

impl VerifyError {
    /// One word for line-oriented output (`gpu-crypto verify` prints `err <word>`).
    pub fn reason_word(&self) -> String {
        match self {
            VerifyError::Signature(e) => format!("signature-{}", e.reason_word()),
            VerifyError::PublicKey(e) => format!("public-key-{}", e.reason_word()),
            VerifyError::Invalid => "invalid-signature".to_string(),
        }
    }
}

/// A failure of a whole call. No partial result accompanies it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("{op}: {points} points but {scalars} scalars")]
    LengthMismatch {
        op: Operation,
        points: usize,
        scalars: usize,
    },
    #[error("{op}: {scalars} scalars for {rows} rows of {bases} bases (one per base and row)")]
    ScalarCountMismatch {
        op: Operation,
        rows: usize,
        bases: usize,
        scalars: usize,
    },
    #[error("{op}: the GPU backend is required but unusable: {reason}")]
    GpuUnavailable { op: Operation, reason: String },
    #[error("{op}: the GPU failed ({reason}) and the policy forbids recomputing on the CPU")]
    GpuFailed { op: Operation, reason: String },
    #[error("{op}: no GPU implementation of this operation exists; use the cpu or auto backend")]
    NoGpuImplementation { op: Operation },
    #[error("pairing product {product} names G2 point {index} of a table of {g2_points}")]
    PairingIndex {
        product: usize,
        index: usize,
        g2_points: usize,
    },
    #[error("domain separator is {len} bytes; at most 255 fit its one-byte length prefix")]
    DomainSeparatorTooLong { len: usize },
    #[error("invalid policy: {0}")]
    Policy(String),
}
