//! The IC state manifest, computed and hashed bit-exactly as the replica's state manager
//! does (`rs/state_manager/src/manifest.rs` of dfinity/ic), with the chunk hashing routed
//! through an [`Engine`](gpu_crypto::Engine) so that full batches of 1 MiB chunks can run on
//! the GPU.
//!
//! # Entry points
//!
//! | Function | What it does |
//! |---|---|
//! | [`compute`]`(engine, dir, version)` | Walks a checkpoint directory and builds its [`Manifest`]: relative paths sorted as the IC sorts them, 1 MiB chunks hashed with `engine.sha256_chunks`, file hashes, in bounded memory. |
//! | [`compute_with`]`(engine, dir, version, options)` | The same with explicit [`ComputeOptions`] (read batch size; chunk size for tests). |
//! | [`Manifest::root_hash`] | Validates the manifest as the replica does ([`Manifest::validate`]), then returns the root hash the IC certifies (`CryptoHashOfState`). |
//! | [`Manifest::validate`] | The replica's `validate_manifest_internal_consistency`: relative, strictly sorted paths; chunks grouped by file with contiguous offsets summing to the file size; every file hash recomputed and compared. Typed errors, no panics. |
//! | [`Manifest::root_hash_unvalidated`] | The IC's `manifest_hash` as is, without the consistency checks (reproduces the IC's >100 MiB compatibility vector, whose tables are not a valid manifest; use only for diagnosis). |
//! | [`Manifest::from_json`] / [`Manifest::from_json_reader`] | Parses the JSON form below (unknown fields rejected, hashes must be 64 hex digits). Does not validate: call `validate` or `root_hash`. |
//! | [`Manifest::to_json`] / [`Manifest::write_json`] | Writes the JSON form (lowercase hex). |
//! | [`Manifest::encode_protobuf`] | The manifest's protobuf encoding (`ic_protobuf::state::sync::v1::Manifest`), the input of the V2+ root hash. |
//! | [`chunk_hash`], [`file_hash`] | One chunk's and one file's hash, for callers that check single entries. |
//!
//! # JSON form
//!
//! ```json
//! {"version": 3,
//!  "files":  [{"path": "system_metadata.pbuf", "size": 887, "hash": "<64 hex>"}],
//!  "chunks": [{"file_index": 0, "size": 887, "offset": 0, "hash": "<64 hex>"}]}
//! ```
//!
//! `files` is the IC's file table (`relative_path`, `size_bytes`, `hash`), `chunks` its
//! chunk table (`file_index`, `size_bytes`, `offset`, `hash`).
//!
//! # Hashing rules (IC note "Manifest Hash")
//!
//! Integers are hashed big-endian; `dsep(s) = len(s) as u8 || s`.
//!
//! ```text
//! chunk_hash  = SHA-256(dsep("ic-state-chunk") || file[offset .. offset + size])
//! file_hash   = SHA-256(dsep("ic-state-file") || n_chunks as u32 || chunk_entry*)
//! chunk_entry = [file_index as u32, before V3] || size as u32 || offset as u64 || chunk_hash
//!
//! V0, V1: root = SHA-256(dsep("ic-state-manifest") || [version as u32, V1]
//!                 || n_files as u32 || (len(path) as u32 || path || size as u64 || file_hash)*
//!                 || [n_chunks as u32 || chunk_entry*, V1])
//! V2+:    encoded = protobuf(Manifest), split into 1 MiB sub-manifests
//!         sub     = SHA-256(dsep("ic-state-sub-manifest") || encoded[i MiB .. (i+1) MiB])
//!         root    = SHA-256(dsep("ic-state-meta-manifest") || version as u32 || n_subs as u32 || sub*)
//! ```
//!
//! Versions: V1 adds the version and the chunk table to the root hash, V2 hashes the
//! protobuf encoding through the meta-manifest, V3 drops `file_index` from the chunk
//! entries of file hashes (the protobuf encoding still carries it), V4 changes only how
//! state sync groups small files for transfer and hashes like V3.
//!
//! # CLI use
//!
//! `gpu-crypto manifest-hash FILE.json`: [`Manifest::from_json_reader`] then
//! [`Manifest::root_hash`]. `gpu-crypto manifest DIR`: [`compute`] (version
//! [`ManifestVersion::CURRENT`] unless asked otherwise, [`ManifestVersion::from_number`])
//! then [`Manifest::write_json`] and [`Manifest::root_hash`]. Errors are [`ManifestError`],
//! whose messages name the offending entry.

#![warn(missing_docs)]

mod compute;
mod encode;
mod error;
mod hash;
mod json;
mod manifest;
mod validate;

pub use compute::{ComputeOptions, DEFAULT_BATCH_BYTES, compute, compute_with};
pub use error::ManifestError;
pub use hash::{chunk_hash, file_hash};
pub use manifest::{
    CHUNK_SIZE, ChunkInfo, FileInfo, Manifest, ManifestVersion, UNVERIFIED_CHECKPOINT_MARKER,
};

impl Manifest {
    /// Checks the manifest as the replica's `validate_manifest_internal_consistency`
    /// does; accepts exactly the manifests it accepts.
    pub fn validate(&self) -> Result<(), ManifestError> {
        validate::validate(self)
    }

    /// The root hash the IC certifies for this manifest, after [`Manifest::validate`].
    pub fn root_hash(&self) -> Result<[u8; 32], ManifestError> {
        self.validate()?;
        self.root_hash_unvalidated()
    }

    /// The IC's `manifest_hash` without consistency checks: for reproducing the IC's
    /// test vectors and diagnosing broken manifests. Prefer [`Manifest::root_hash`].
    pub fn root_hash_unvalidated(&self) -> Result<[u8; 32], ManifestError> {
        hash::root_hash(self)
    }

    /// The protobuf encoding (`state.sync.v1.Manifest`) the V2+ root hash is computed over.
    pub fn encode_protobuf(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode::encode_manifest(self, &mut out);
        out
    }

    /// The chunk-table range of file `file_index` (empty for empty files or an index
    /// without chunks). Chunks must be grouped by file, as [`Manifest::validate`] checks.
    pub fn file_chunk_range(&self, file_index: usize) -> std::ops::Range<usize> {
        let start = self
            .chunks
            .partition_point(|c| (c.file_index as usize) < file_index);
        let end = self
            .chunks
            .partition_point(|c| (c.file_index as usize) <= file_index);
        start..end.max(start)
    }
}
