//! The named parts of a dealing and of its context, for errors and reports.

use std::fmt;

/// Which part of a dealing (or of its context) an encoded element belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// A receiver's forward-secure encryption public key (G1).
    ReceiverKey,
    /// A public coefficient `A_k` of the shared polynomial (G2).
    PublicCoefficient,
    /// A first randomizer `R_j` of the ciphertext (G1).
    CiphertextR,
    /// A second randomizer `S_j` of the ciphertext (G1).
    CiphertextS,
    /// A forward-secure randomizer `Z_j` of the ciphertext (G2).
    CiphertextZ,
    /// An encrypted chunk `C_ij`; the index is `16 * receiver + chunk` (G1).
    CiphertextChunk,
    /// The chunking proof's `y_0` (G1).
    ChunkingY0,
    /// The chunking proof's `B_k` (G1).
    ChunkingB,
    /// The chunking proof's `C_k` (G1).
    ChunkingC,
    /// The chunking proof's `D_i`, `i = 0..=n` (G1).
    ChunkingD,
    /// The chunking proof's `Y` (G1).
    ChunkingY,
    /// The chunking proof's `z_r,i` (scalar).
    ChunkingZr,
    /// The chunking proof's `z_s,k` (scalar).
    ChunkingZs,
    /// The chunking proof's `z_beta` (scalar).
    ChunkingZbeta,
    /// The sharing proof's `F` (G1).
    SharingF,
    /// The sharing proof's `A` (G2).
    SharingA,
    /// The sharing proof's `Y` (G1).
    SharingY,
    /// The sharing proof's `z_r` (scalar).
    SharingZr,
    /// The sharing proof's `z_alpha` (scalar).
    SharingZalpha,
}

impl Component {
    /// Stable lower-case name (used in error messages and reports).
    pub fn name(self) -> &'static str {
        match self {
            Component::ReceiverKey => "receiver_key",
            Component::PublicCoefficient => "public_coefficient",
            Component::CiphertextR => "ciphertext_r",
            Component::CiphertextS => "ciphertext_s",
            Component::CiphertextZ => "ciphertext_z",
            Component::CiphertextChunk => "ciphertext_chunk",
            Component::ChunkingY0 => "chunking_y0",
            Component::ChunkingB => "chunking_b",
            Component::ChunkingC => "chunking_c",
            Component::ChunkingD => "chunking_d",
            Component::ChunkingY => "chunking_y",
            Component::ChunkingZr => "chunking_z_r",
            Component::ChunkingZs => "chunking_z_s",
            Component::ChunkingZbeta => "chunking_z_beta",
            Component::SharingF => "sharing_f",
            Component::SharingA => "sharing_a",
            Component::SharingY => "sharing_y",
            Component::SharingZr => "sharing_z_r",
            Component::SharingZalpha => "sharing_z_alpha",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
