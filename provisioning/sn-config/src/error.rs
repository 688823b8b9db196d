//! Every way a bundle, an archive or a key can be refused. Each error names the member or
//! field it is about, and has a stable [`ConfigError::kind`] for machine-readable records.

use std::path::PathBuf;

use thiserror::Error;

use crate::members::{SIGNATURE, SUMS};

/// Why a bundle, an archive or a signing key was refused.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file (or directory) the operation failed on.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Not a ustar archive, or a damaged one (header checksum, truncated data).
    #[error("configuration archive: {0}")]
    Archive(String),
    /// A member that is a symbolic link, hard link, device, FIFO, directory or an archive
    /// extension header (GNU long name, pax): only regular files are accepted.
    #[error("member {member:?} is a {what}, not a regular file")]
    NotRegularFile {
        /// The member's name as the archive gives it.
        member: String,
        /// What it is instead ("symbolic link", "directory", ...).
        what: String,
    },
    /// Absolute, `..`, empty or nested member names.
    #[error("member {member:?}: unsafe name ({reason})")]
    UnsafeName {
        /// The name as the archive gives it.
        member: String,
        /// What makes it unsafe.
        reason: String,
    },
    /// A member name outside the schema.
    #[error("member {member:?} is not part of a node bundle (allowed: {allowed})")]
    UnknownMember {
        /// The unknown name.
        member: String,
        /// The schema's member names, separated by ", ".
        allowed: String,
    },
    /// The same member twice in one archive.
    #[error("member {member:?} appears twice")]
    DuplicateMember {
        /// The repeated name.
        member: String,
    },
    /// A member over its size limit ([`crate::MEMBERS`]).
    #[error("member {member:?} is {size} bytes, at most {limit} are allowed")]
    OversizeMember {
        /// The member's name.
        member: String,
        /// Its size, bytes.
        size: u64,
        /// The limit for that member, bytes.
        limit: u64,
    },
    /// A member the bundle needs is absent.
    #[error("member {member:?} is missing")]
    MissingMember {
        /// The missing member's name.
        member: String,
    },
    /// Bytes the checksums do not cover: the padding of a member's last block, or anything
    /// after the end-of-archive marker. Refused so that nothing unchecked rides along.
    #[error("non-zero byte at offset {offset} ({place})")]
    UncoveredData {
        /// Byte offset of the first non-zero byte in the partition.
        offset: u64,
        /// Where that is ("padding after member ...", "after the archive's last member").
        place: String,
    },
    /// SHA256SUMS is malformed, or does not list a member the archive holds.
    #[error("SHA256SUMS: {0}")]
    Sums(String),
    /// A member's content does not have the digest SHA256SUMS records for it.
    #[error("member {member:?}: SHA-256 {actual} != {recorded} recorded in SHA256SUMS")]
    ChecksumMismatch {
        /// The member's name.
        member: String,
        /// Its content's SHA-256, hex.
        actual: String,
        /// The SHA-256 SHA256SUMS records, hex.
        recorded: String,
    },
    /// SHA256SUMS.sig is malformed: not UTF-8 TOML of its schema, another algorithm, or a
    /// signer key or signature that is not hex of the right length.
    #[error("SHA256SUMS.sig: {0}")]
    SignatureFile(String),
    /// The signature over SHA256SUMS does not verify under the key it names.
    #[error("the Ed25519 signature over SHA256SUMS does not verify with signer {signer}")]
    BadSignature {
        /// The signer's public key, hex.
        signer: String,
    },
    /// A valid signature by a key that is not pinned.
    #[error("signed by {signer}, which is not a pinned configuration signer ({pinned})")]
    WrongSigner {
        /// The signer's public key, hex.
        signer: String,
        /// The pinned keys, hex, separated by ", ".
        pinned: String,
    },
    /// The node's measured kernel command line pins no configuration signer
    /// (`sn.config_signer=`): no bundle is applied, whoever signed it.
    #[error(
        "no configuration signer is pinned (no sn.config_signer= on the measured kernel command line): no bundle is applied"
    )]
    NoPinnedSigner,
    /// A tar header with bytes the writer never sets (mode, owner, times, names, padding,
    /// number encodings), or members out of the writer's order: the same bundle must have
    /// exactly one archive.
    #[error("member {member:?}: {field} differs from the archive the writer makes ({detail})")]
    NonCanonicalHeader {
        /// The member whose header (or position) differs.
        member: String,
        /// The header field that differs, or "member order".
        field: String,
        /// The bytes found and the writer's, or the writer's order.
        detail: String,
    },
    /// A member's content is not valid for the schema (names the field).
    #[error("member {member:?}: {reason}")]
    Invalid {
        /// The member's name.
        member: String,
        /// What is invalid, naming the field.
        reason: String,
    },
    /// A signing key file that cannot be read as an Ed25519 PKCS#8 PEM key, or be written.
    #[error("signing key {path}: {reason}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl ConfigError {
    /// A stable name of the refusal, written into the failure record.
    pub fn kind(&self) -> &'static str {
        match self {
            ConfigError::Io { .. } => "io",
            ConfigError::Archive(_) => "damaged_archive",
            ConfigError::NotRegularFile { .. } => "not_regular_file",
            ConfigError::UnsafeName { .. } => "unsafe_name",
            ConfigError::UnknownMember { .. } => "unknown_member",
            ConfigError::DuplicateMember { .. } => "duplicate_member",
            ConfigError::OversizeMember { .. } => "oversize_member",
            ConfigError::MissingMember { .. } => "missing_member",
            ConfigError::UncoveredData { .. } => "uncovered_data",
            ConfigError::Sums(_) => "bad_checksum_list",
            ConfigError::ChecksumMismatch { .. } => "checksum_mismatch",
            ConfigError::SignatureFile(_) => "bad_signature_file",
            ConfigError::BadSignature { .. } => "bad_signature",
            ConfigError::WrongSigner { .. } => "wrong_signer",
            ConfigError::NoPinnedSigner => "no_pinned_signer",
            ConfigError::NonCanonicalHeader { .. } => "noncanonical_header",
            ConfigError::Invalid { .. } => "invalid_member",
            ConfigError::Key { .. } => "signing_key",
        }
    }

    /// The member the error is about, where there is one.
    pub fn member(&self) -> Option<&str> {
        match self {
            ConfigError::NotRegularFile { member, .. }
            | ConfigError::UnsafeName { member, .. }
            | ConfigError::UnknownMember { member, .. }
            | ConfigError::DuplicateMember { member }
            | ConfigError::OversizeMember { member, .. }
            | ConfigError::MissingMember { member }
            | ConfigError::ChecksumMismatch { member, .. }
            | ConfigError::NonCanonicalHeader { member, .. }
            | ConfigError::Invalid { member, .. } => Some(member),
            ConfigError::Sums(_) => Some(SUMS),
            ConfigError::SignatureFile(_)
            | ConfigError::BadSignature { .. }
            | ConfigError::WrongSigner { .. } => Some(SIGNATURE),
            _ => None,
        }
    }
}
