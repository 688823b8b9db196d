//! The configuration contract of a sovereign node: the one definition of the node bundle,
//! used by `provision` (which writes and signs it) and by the node (`node-agent
//! apply-config`, which verifies and applies it). The format is described in full in this
//! crate's README.md; in short:
//!
//! * **Members** (top-level regular files, nothing else): `SHA256SUMS`, `SHA256SUMS.sig`,
//!   `node.toml` ([`node::NodeConfig`]), and optionally `ic.json5` (the replica's
//!   configuration, passed through).
//! * **`SHA256SUMS`**: `<sha256 hex>  <name>\n` for every content member, in name order.
//! * **`SHA256SUMS.sig`**: an Ed25519 signature by the subnet operator's key over
//!   [`sign::SIGNATURE_CONTEXT`] `||` SHA256SUMS, with the signer's public key.
//! * **Bundle digest**: SHA-256 of the bytes of SHA256SUMS. Evidence binds it, and the
//!   signer's public key, into the SEV-SNP REPORT_DATA.
//! * **Partition**: the deterministic ustar archive of the members ([`archive`]), then
//!   zeros to the end of the 16 MiB `sn-config` partition. All zeros (or no partition)
//!   means "no configuration": the image's defaults apply.
//! * **On the node** ([`apply`]): verify signature and checksums before using anything,
//!   then write `status.json`, `node.toml`, `hostname`, a systemd-networkd file and, when
//!   present, `ic.json5` into one directory, atomically; a refused partition leaves a
//!   failure record there instead.
//!
//! The bundle carries node identity and network only. Security settings (the node key's
//! location, the evidence source, the state directory, listeners) are not part of it and
//! cannot be: `node.toml` has no such fields and unknown fields are refused.

#![warn(missing_docs)]

pub mod apply;
pub mod archive;
pub mod bundle;
mod error;
pub mod fs;
pub mod node;
pub mod sign;

pub use bundle::Bundle;
pub use error::ConfigError;
pub use node::{NodeConfig, NodeOffload};

/// Size of the `sn-config` partition; the node reads no more than this.
pub const PARTITION_BYTES: u64 = 16 << 20;

/// The member listing the SHA-256 of every content member: what the signature covers.
pub const SUMS: &str = "SHA256SUMS";
/// The member holding the Ed25519 signature over SHA256SUMS ([`sign::SignatureFile`]).
pub const SIGNATURE: &str = "SHA256SUMS.sig";
/// The node's settings member ([`NodeConfig`]).
pub const NODE_CONFIG: &str = "node.toml";
/// The optional member with the replica's configuration, passed through.
pub const REPLICA_CONFIG: &str = "ic.json5";

/// Every member a bundle may hold, with its size limit in bytes.
pub const MEMBERS: [(&str, u64); 4] = [
    (SUMS, 4 << 10),
    (SIGNATURE, 4 << 10),
    (NODE_CONFIG, 64 << 10),
    (REPLICA_CONFIG, 4 << 20),
];

pub(crate) fn allowed_members() -> impl Iterator<Item = &'static str> {
    MEMBERS.iter().map(|(name, _)| *name)
}

pub(crate) fn allowed_list() -> String {
    allowed_members().collect::<Vec<_>>().join(", ")
}

/// The size limit of a member (0 for a name outside the schema).
pub fn member_limit(name: &str) -> u64 {
    MEMBERS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, limit)| *limit)
}
