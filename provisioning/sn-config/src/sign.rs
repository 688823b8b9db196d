//! The bundle's signer: an Ed25519 key held by the subnet operator (or the governing body).
//! The private key is a PKCS#8 PEM file written once with mode 0600; its public key, 32
//! bytes in hex, is what the image's kernel command line (`sn.config_signer=`) and the
//! verification policy (`[config] signers`) pin.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `schema` of SHA256SUMS.sig.
pub const SIGNATURE_SCHEMA: &str = "sovereign-node/config-signature/v1";
/// The signed message is this context followed by the bytes of SHA256SUMS, so that a
/// signature over a bundle is never valid for anything else the key signs.
pub const SIGNATURE_CONTEXT: &[u8] = b"sovereign-node/config-bundle/v1\0";

/// SHA256SUMS.sig.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureFile {
    /// Always [`SIGNATURE_SCHEMA`].
    pub schema: String,
    /// Always "ed25519".
    pub algorithm: String,
    /// The signer's public key, 32 bytes, lowercase hex.
    pub signer: String,
    /// The signature over SIGNATURE_CONTEXT || SHA256SUMS, 64 bytes, lowercase hex.
    pub signature: String,
}

fn sig_err(reason: impl Into<String>) -> ConfigError {
    ConfigError::SignatureFile(reason.into())
}

/// Parses a 64-hex-digit Ed25519 public key.
pub fn parse_public_key(text: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(text.trim()).ok()?;
    let key: [u8; 32] = bytes.try_into().ok()?;
    VerifyingKey::from_bytes(&key).ok().map(|k| k.to_bytes())
}

impl SignatureFile {
    /// Signs `sums` (the bytes of SHA256SUMS) with `key`.
    pub fn sign(key: &SigningKey, sums: &[u8]) -> SignatureFile {
        let signature = key.sign(&message(sums));
        SignatureFile {
            schema: SIGNATURE_SCHEMA.into(),
            algorithm: "ed25519".into(),
            signer: hex::encode(key.verifying_key().to_bytes()),
            signature: hex::encode(signature.to_bytes()),
        }
    }

    /// Parses SHA256SUMS.sig (TOML), refusing another schema or algorithm; the signature
    /// is not checked here ([`SignatureFile::verify`]).
    pub fn parse(bytes: &[u8]) -> Result<SignatureFile, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| sig_err(format!("not UTF-8: {e}")))?;
        let file: SignatureFile = toml::from_str(text).map_err(|e| sig_err(e.to_string()))?;
        if file.schema != SIGNATURE_SCHEMA {
            return Err(sig_err(format!(
                "schema {:?}, expected {SIGNATURE_SCHEMA:?}",
                file.schema
            )));
        }
        if file.algorithm != "ed25519" {
            return Err(sig_err(format!(
                "algorithm {:?}, only \"ed25519\" is accepted",
                file.algorithm
            )));
        }
        Ok(file)
    }

    /// SHA256SUMS.sig's text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Verifies the signature over `sums` (strict Ed25519: no small-order keys, canonical
    /// signatures) and that the signer is one of `pinned`. Nothing pinned accepts no
    /// signature at all ([`ConfigError::NoPinnedSigner`]): the node applies a bundle only
    /// under a signer its measured kernel command line names. Returns the signer's key.
    pub fn verify(&self, sums: &[u8], pinned: &[[u8; 32]]) -> Result<[u8; 32], ConfigError> {
        if pinned.is_empty() {
            return Err(ConfigError::NoPinnedSigner);
        }
        let signer = self.verify_any_signer(sums)?;
        if !pinned.contains(&signer) {
            return Err(ConfigError::WrongSigner {
                signer: hex::encode(signer),
                pinned: pinned
                    .iter()
                    .map(hex::encode)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Ok(signer)
    }

    /// Verifies the signature over `sums` by whichever key the file names and returns that
    /// key. For host-side tools reading their own plan's output, which compare the signer
    /// with what they expect themselves; the node never uses it.
    pub fn verify_any_signer(&self, sums: &[u8]) -> Result<[u8; 32], ConfigError> {
        let signer = parse_public_key(&self.signer).ok_or_else(|| {
            sig_err(format!(
                "signer {:?} is not an Ed25519 public key (64 hex digits)",
                self.signer
            ))
        })?;
        let key = VerifyingKey::from_bytes(&signer)
            .map_err(|e| sig_err(format!("signer {}: {e}", self.signer)))?;
        let signature: [u8; 64] = hex::decode(self.signature.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| sig_err("signature is not 64 bytes of hex"))?;
        key.verify_strict(&message(sums), &Signature::from_bytes(&signature))
            .map_err(|_| ConfigError::BadSignature {
                signer: hex::encode(signer),
            })?;
        Ok(signer)
    }
}

fn message(sums: &[u8]) -> Vec<u8> {
    let mut m = SIGNATURE_CONTEXT.to_vec();
    m.extend_from_slice(sums);
    m
}

/// Reads a signing key (PKCS#8 PEM, as [`generate_key`] writes it).
pub fn load_signing_key(path: &Path) -> Result<SigningKey, ConfigError> {
    let err = |reason: String| ConfigError::Key {
        path: path.to_owned(),
        reason,
    };
    let pem = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    SigningKey::from_pkcs8_pem(&pem).map_err(|e| err(format!("not an Ed25519 PKCS#8 PEM key: {e}")))
}

/// Generates a signing key and writes it to `path` (PKCS#8 PEM, mode 0600): into a new
/// temporary file next to it, fsync, then linked to `path` only if nothing is there (an
/// existing key is never replaced), and the directory fsynced.
pub fn generate_key(path: &Path) -> Result<SigningKey, ConfigError> {
    let err = |p: &Path, reason: String| ConfigError::Key {
        path: p.to_owned(),
        reason,
    };
    let key = SigningKey::generate(&mut rand::rngs::OsRng);
    let pem = key
        .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
        .map_err(|e| err(path, e.to_string()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| err(path, "not a file name".into()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(pem.as_bytes())?;
        f.sync_all()?;
        // hard_link fails with AlreadyExists instead of replacing an existing key.
        std::fs::hard_link(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()
    };
    let result = write();
    let _ = std::fs::remove_file(&tmp);
    result.map_err(|e| err(path, e.to_string()))?;
    Ok(key)
}
