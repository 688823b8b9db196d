//! The domain separator the IC hashes before each chunk of state (SHA-256 batches).

use crate::error::EngineError;

/// The prefix `len(s) as u8 || s` the IC puts before hashed data (`dsep` in the replica).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSeparator(Vec<u8>);

impl DomainSeparator {
    /// The prefix of `separator`; [`EngineError::DomainSeparatorTooLong`] beyond 255 bytes.
    pub fn new(separator: &str) -> Result<DomainSeparator, EngineError> {
        let len = separator.len();
        let byte = u8::try_from(len).map_err(|_| EngineError::DomainSeparatorTooLong { len })?;
        let mut prefix = Vec::with_capacity(len + 1);
        prefix.push(byte);
        prefix.extend_from_slice(separator.as_bytes());
        Ok(DomainSeparator(prefix))
    }

    /// The bytes hashed before each chunk.
    pub fn prefix(&self) -> &[u8] {
        &self.0
    }
}
