//! Every way a bundle, an archive or a key can be refused. Each error names the member or
//! field it is about, and has a stable [`ConfigError::kind`] for machine-readable records.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not a ustar archive, or a damaged one (header checksum, truncated data).
    #[error("configuration archive: {0}")]
    Archive(String),
    /// A member that is a symbolic link, hard link, device, FIFO, directory or an archive
    /// extension header (GNU long name, pax): only regular files are accepted.
    #[error("member {member:?} is a {what}, not a regular file")]
    NotRegularFile { member: String, what: String },
    /// Absolute, `..`, empty or nested member names.
    #[error("member {member:?}: unsafe name ({reason})")]
    UnsafeName { member: String, reason: String },
    #[error("member {member:?} is not part of a node bundle (allowed: {allowed})")]
    UnknownMember { member: String, allowed: String },
    #[error("member {member:?} appears twice")]
    DuplicateMember { member: String },
    #[error("member {member:?} is {size} bytes, at most {limit} are allowed")]
    OversizeMember {
        member: String,
        size: u64,
        limit: u64,
    },
    #[error("member {member:?} is missing")]
    MissingMember { member: String },
    /// Bytes the checksums do not cover: the padding of a member's last block, or anything
    /// after the end-of-archive marker. Refused so that nothing unchecked rides along.
    #[error("non-zero byte at offset {offset} ({place})")]
    UncoveredData { offset: u64, place: String },
    #[error("SHA256SUMS: {0}")]
    Sums(String),
    #[error("member {member:?}: SHA-256 {actual} != {recorded} recorded in SHA256SUMS")]
    ChecksumMismatch {
        member: String,
        actual: String,
        recorded: String,
    },
    #[error("SHA256SUMS.sig: {0}")]
    SignatureFile(String),
    #[error("the Ed25519 signature over SHA256SUMS does not verify with signer {signer}")]
    BadSignature { signer: String },
    #[error("signed by {signer}, which is not a pinned configuration signer ({pinned})")]
    WrongSigner { signer: String, pinned: String },
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
        member: String,
        field: String,
        detail: String,
    },
    /// A member's content is not valid for the schema (names the field).
    #[error("member {member:?}: {reason}")]
    Invalid { member: String, reason: String },
    #[error("signing key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
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
            ConfigError::Sums(_) => Some(crate::SUMS),
            ConfigError::SignatureFile(_)
            | ConfigError::BadSignature { .. }
            | ConfigError::WrongSigner { .. } => Some(crate::SIGNATURE),
            _ => None,
        }
    }
}
