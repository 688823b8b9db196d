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
    /// Rule 1: the compression flag is clear.
    #[error("compression flag is clear")]
    NotCompressed,
    /// Rule 2: a malformed encoding of the point at infinity.
    #[error("infinity flag set with the sort flag or coordinate bits set")]
    BadInfinity,
    /// Rule 3: a coordinate is not below the field modulus p.
    #[error("coordinate is not canonical (>= p)")]
    NonCanonical,
    /// Rule 4: x has no square root, so no curve point has it.
    #[error("no point on the curve has this x coordinate")]
    NotOnCurve,
    /// Rule 5: on the curve but outside the prime-order subgroup.
    #[error("point is not in the prime-order subgroup")]
    NotInSubgroup,
}

impl DecodeError {
    /// Every reason, in precedence order (and code order, 1 to 5).
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

    /// The reason with this [`code`](Self::code); `None` for 0 and unknown codes.
    pub fn from_code(code: u8) -> Option<DecodeError> {
        DecodeError::ALL.into_iter().find(|e| e.code() == code)
    }
}

/// Why one BLS signature item did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum VerifyError {
    /// The signature does not decode to a G1 subgroup point.
    #[error("signature: {0}")]
    Signature(DecodeError),
    /// The public key does not decode to a G2 subgroup point.
    #[error("public key: {0}")]
    PublicKey(DecodeError),
    /// Both decode, but the pairing check fails.
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
    /// An MSM got a different number of points and scalars.
    #[error("{op}: {points} points but {scalars} scalars")]
    LengthMismatch {
        /// The operation called.
        op: Operation,
        /// Points given.
        points: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// A shared-base MSM got other than `rows * bases` scalars.
    #[error("{op}: {scalars} scalars for {rows} rows of {bases} bases (one per base and row)")]
    ScalarCountMismatch {
        /// The operation called.
        op: Operation,
        /// MSMs (rows) requested.
        rows: usize,
        /// Shared bases.
        bases: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// The policy pins `op` to the GPU, which could not be opened.
    #[error("{op}: the GPU backend is required but unusable: {reason}")]
    GpuUnavailable {
        /// The operation called.
        op: Operation,
        /// Why the GPU is unusable.
        reason: String,
    },
    /// The GPU failed mid-call under [`crate::Fallback::Never`].
    #[error("{op}: the GPU failed ({reason}) and the policy forbids recomputing on the CPU")]
    GpuFailed {
        /// The operation called.
        op: Operation,
        /// The GPU's failure.
        reason: String,
    },
    /// The policy pins `op` to the GPU, which has no kernel for it.
    #[error("{op}: no GPU implementation of this operation exists; use the cpu or auto backend")]
    NoGpuImplementation {
        /// The operation called.
        op: Operation,
    },
    /// A pairing product refers to a G2 point outside the table given.
    #[error("pairing product {product} names G2 point {index} of a table of {g2_points}")]
    PairingIndex {
        /// Index of the offending product.
        product: usize,
        /// The G2 index it names.
        index: usize,
        /// Length of the G2 table.
        g2_points: usize,
    },
    /// A domain separator longer than 255 bytes.
    #[error("domain separator is {len} bytes; at most 255 fit its one-byte length prefix")]
    DomainSeparatorTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The driver refused to change how host threads wait for the GPU.
    #[error("the GPU's wait mode could not be set: {reason}")]
    GpuWait {
        /// The driver's error.
        reason: String,
    },
    /// A policy the engine cannot run (the reason says why).
    #[error("invalid policy: {0}")]
    Policy(String),
}
