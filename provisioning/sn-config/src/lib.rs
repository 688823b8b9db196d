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
mod members;
pub mod node;
pub mod sign;

pub use bundle::Bundle;
pub use error::ConfigError;
pub use members::{
    MEMBERS, NODE_CONFIG, PARTITION_BYTES, REPLICA_CONFIG, SIGNATURE, SUMS, member_limit,
};
pub use node::{NodeConfig, NodeOffload};
