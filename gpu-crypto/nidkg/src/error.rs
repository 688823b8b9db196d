//! Errors of dealing verification, creation and decryption.

use crate::component::Component;
use thiserror::Error;

/// Which equation of the chunking proof failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkingCheck {
    /// A response `z_s,k` is not below the bound `Z`; the index is `k`.
    ResponseRange(usize),
    /// `sum_j R_j * (sum_k e_ijk x^k) + D_i == g1 * z_r,i` fails for receiver `i`.
    Randomizers(usize),
    /// `sum_k B_k x^k + D_0 == g1 * z_beta` fails.
    Blinders,
    /// The chunk equation over the 32 challenge MSMs fails.
    Chunks,
}

/// Which equation of the sharing proof failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharingCheck {
    /// `R * x' + F == g1 * z_r` over the combined randomizer.
    Randomizer,
    /// The public-coefficient equation in G2.
    Coefficients,
    /// The combined-ciphertext equation in G1.
    Ciphertexts,
}

/// A backend could not compute one of the verifier's batches (an unusable GPU, a GPU
/// failure the policy does not recompute on the CPU): no verdict on the dealing.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{operation} failed: {reason}")]
pub struct BackendError {
    /// The batch operation (`g1_decompress`, `pairing_products`, ...).
    pub operation: &'static str,
    /// What the backend reported.
    pub reason: String,
}

/// Why a dealing was rejected or could not be examined.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum VerifyError {
    /// Not a dealing file, or a header field out of range.
    #[error("unusable input: {0}")]
    Header(&'static str),
    /// The IC's CBOR encoding does not parse: named field, length or item.
    #[error("unusable input: {0}")]
    Encoding(String),
    /// The dealing's public coefficients are not as many as the context's threshold.
    #[error("the dealing has {actual} public coefficients where the threshold is {expected}")]
    ThresholdMismatch {
        /// The threshold of the context.
        expected: usize,
        /// Public coefficients in the dealing.
        actual: usize,
    },
    /// The dealing's ciphertext rows are not as many as the receivers.
    #[error("the dealing has {actual} ciphertext rows for {expected} receivers")]
    ReceiverCount {
        /// Receivers of the context.
        expected: usize,
        /// Ciphertext rows in the dealing.
        actual: usize,
    },
    /// `n` or `t` outside what the protocol defines.
    #[error("unusable input: n = {n}, t = {t} (need 1 <= t <= n <= 1024)")]
    Shape {
        /// Receivers.
        n: usize,
        /// Threshold.
        t: usize,
    },
    /// The input is truncated or has trailing bytes.
    #[error("unusable input: {actual} bytes where the header implies {expected}")]
    Length {
        /// Length the shape implies.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// An element does not decode: a point not on the curve, outside the prime-order
    /// subgroup or non-canonical, or a scalar not below the group order.
    #[error(
        "{component} {index} does not decode (not a canonical element of the prime-order group)"
    )]
    Deserialize {
        /// The dealing component holding the element.
        component: Component,
        /// Index within the component.
        index: usize,
    },
    /// The dealing's receiver keys are not the receivers' registered keys.
    #[error("receiver key {index} is not the registered key of receiver {index}")]
    WrongReceiverKey {
        /// Receiver index.
        index: usize,
    },
    /// Ciphertext row `row` fails `e(R_j, id) e(S_j, h) e(-g1, Z_j) = 1`.
    #[error("ciphertext integrity fails for chunk row {row}")]
    CiphertextIntegrity {
        /// Chunk row `j` in `0..16`.
        row: usize,
    },
    /// The chunking proof does not verify.
    #[error("chunking proof fails ({0:?})")]
    ChunkingProof(ChunkingCheck),
    /// The sharing proof does not verify.
    #[error("sharing proof fails ({0:?})")]
    SharingProof(SharingCheck),
    /// The backend failed: the dealing was neither accepted nor rejected.
    #[error("could not verify: {0}")]
    Backend(#[from] BackendError),
}

impl VerifyError {
    /// True when the input could not be examined (unusable input) rather than being a
    /// well-formed dealing whose content is wrong. Decoding failures of points and scalars
    /// count as rejections: the bytes have the right shape, the content is invalid.
    pub fn is_unusable_input(&self) -> bool {
        matches!(
            self,
            VerifyError::Header(_)
                | VerifyError::Encoding(_)
                | VerifyError::Shape { .. }
                | VerifyError::Length { .. }
        )
    }

    /// True when the backend failed, so the dealing got no verdict.
    pub fn is_backend_failure(&self) -> bool {
        matches!(self, VerifyError::Backend(_))
    }

    /// The rejected component's name, as the CLI prints it.
    pub fn component(&self) -> String {
        match self {
            VerifyError::Header(_)
            | VerifyError::Encoding(_)
            | VerifyError::Shape { .. }
            | VerifyError::Length { .. } => "input".to_string(),
            VerifyError::ThresholdMismatch { .. } => "public_coefficients".to_string(),
            VerifyError::ReceiverCount { .. } => "ciphertext_chunks".to_string(),
            VerifyError::Deserialize { component, index } => format!("{component}[{index}]"),
            VerifyError::WrongReceiverKey { index } => format!("receiver_key[{index}]"),
            VerifyError::CiphertextIntegrity { row } => format!("ciphertext_integrity[{row}]"),
            VerifyError::ChunkingProof(_) => "chunking_proof".to_string(),
            VerifyError::SharingProof(_) => "sharing_proof".to_string(),
            VerifyError::Backend(e) => format!("backend({})", e.operation),
        }
    }
}

/// Why a dealing could not be created.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DealError {
    /// `n` or `t` outside what the protocol defines.
    #[error("cannot deal to n = {n} receivers with threshold t = {t} (need 1 <= t <= n <= 1024)")]
    Shape {
        /// Receivers.
        n: usize,
        /// Threshold.
        t: usize,
    },
    /// A receiver key is not a valid point of the prime-order subgroup or is the identity.
    #[error("receiver key {index} is not a valid encryption key")]
    ReceiverKey {
        /// Receiver index.
        index: usize,
    },
}

/// Why a receiver could not decrypt its share.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecryptError {
    /// The key has been updated past the dealing's epoch (forward security).
    #[error("the key no longer decrypts epoch {epoch}")]
    ExpiredKey {
        /// The dealing's epoch.
        epoch: u32,
    },
    /// The receiver index is outside the dealing.
    #[error("receiver index {index} is outside the dealing's {n} receivers")]
    ReceiverIndex {
        /// Index asked for.
        index: usize,
        /// Receivers in the dealing.
        n: usize,
    },
    /// A chunk's discrete logarithm is outside `[0, 2^16)`: an honest dealer never
    /// produces one; the IC's large search for a cheating dealer's chunk is not provided.
    #[error("chunk {chunk} is outside [0, 2^16)")]
    ChunkOutOfRange {
        /// Chunk index in `0..16`.
        chunk: usize,
    },
}
