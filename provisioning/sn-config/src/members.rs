//! The bundle's members and their size limits, and the partition's size.

/// Size of the `sn-config` partition; the node reads no more than this.
pub const PARTITION_BYTES: u64 = 16 << 20;

/// The member listing the SHA-256 of every content member: what the signature covers.
pub const SUMS: &str = "SHA256SUMS";
/// The member holding the Ed25519 signature over SHA256SUMS ([`crate::sign::SignatureFile`]).
pub const SIGNATURE: &str = "SHA256SUMS.sig";
/// The node's settings member ([`crate::NodeConfig`]).
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
