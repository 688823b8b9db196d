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
mod hash;
mod json;
mod validate;

pub use compute::{ComputeOptions, DEFAULT_BATCH_BYTES, compute, compute_with};
pub use hash::{chunk_hash, file_hash};

use gpu_crypto_api::EngineError;
use std::fmt;
use std::path::PathBuf;

/// Chunk size of every IC manifest (`DEFAULT_CHUNK_SIZE` in the replica): 1 MiB.
pub const CHUNK_SIZE: u32 = 1 << 20;

/// File the replica places at a checkpoint's root while the checkpoint is unverified; the
/// manifest leaves it out (`UNVERIFIED_CHECKPOINT_MARKER` in `ic_state_layout`).
pub const UNVERIFIED_CHECKPOINT_MARKER: &str = "unverified_checkpoint_marker";

/// The replica's `StateSyncVersion`: which hashing procedure the manifest uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ManifestVersion {
    /// Root hash over the file table only.
    V0 = 0,
    /// Version and chunk table included in the root hash.
    V1 = 1,
    /// Root hash over the protobuf-encoded manifest, through the meta-manifest.
    V2 = 2,
    /// File index no longer part of chunk entries.
    V3 = 3,
    /// State-sync file grouping change only; hashed like V3.
    V4 = 4,
}

impl ManifestVersion {
    /// Every version, in ascending order.
    pub const ALL: [ManifestVersion; 5] = [
        ManifestVersion::V0,
        ManifestVersion::V1,
        ManifestVersion::V2,
        ManifestVersion::V3,
        ManifestVersion::V4,
    ];

    /// The version the replica uses for new checkpoints (`CURRENT_STATE_SYNC_VERSION`).
    pub const CURRENT: ManifestVersion = ManifestVersion::V3;

    /// The version's number (`V3` is 3), as the root hash and the JSON form carry it.
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// The version numbered `version`, or [`ManifestError::UnsupportedVersion`].
    pub fn from_number(version: u64) -> Result<ManifestVersion, ManifestError> {
        ManifestVersion::ALL
            .into_iter()
            .find(|v| u64::from(v.as_u32()) == version)
            .ok_or(ManifestError::UnsupportedVersion { version })
    }
}

impl fmt::Display for ManifestVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "V{}", self.as_u32())
    }
}

/// One entry of the file table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileInfo {
    /// Path relative to the checkpoint root, `/`-separated (`relative_path`).
    pub path: String,
    /// File size in bytes (`size_bytes`).
    pub size: u64,
    /// [`file_hash`] of the file's chunk entries.
    pub hash: [u8; 32],
}

/// One entry of the chunk table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkInfo {
    /// Index of the chunk's file in the file table.
    pub file_index: u32,
    /// Chunk size in bytes (`size_bytes`); at most [`CHUNK_SIZE`] in computed manifests.
    pub size: u32,
    /// Offset of the chunk in its file.
    pub offset: u64,
    /// [`chunk_hash`] of the chunk's bytes.
    pub hash: [u8; 32],
}

/// A checkpoint manifest: file table and chunk table (chunks ordered by file, then offset).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Manifest {
    /// The hashing procedure of the root hash and the file hashes.
    pub version: ManifestVersion,
    /// The file table, sorted by path as the IC sorts paths.
    pub files: Vec<FileInfo>,
    /// The chunk table, grouped by file in file-table order, each file's by offset.
    pub chunks: Vec<ChunkInfo>,
}

/// Why a manifest could not be parsed, validated, hashed or computed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A version number other than 0 to 4.
    #[error("manifest version {version} is not supported (supported: 0 to 4)")]
    UnsupportedVersion {
        /// The number asked for.
        version: u64,
    },
    /// The JSON form does not parse (the parser's message).
    #[error("invalid manifest JSON: {0}")]
    Json(String),
    /// A file's path is absolute.
    #[error(
        "file {file_index} ({path:?}): absolute path; paths are relative to the checkpoint root"
    )]
    AbsolutePath {
        /// The file's index in the file table.
        file_index: usize,
        /// The file's path.
        path: String,
    },
    /// A file's path does not sort strictly after the previous file's.
    #[error(
        "file {file_index} ({path:?}) does not sort after file {previous_index} ({previous:?}); \
         paths must be strictly increasing, compared component by component"
    )]
    PathsNotSorted {
        /// The file's index in the file table.
        file_index: usize,
        /// The file's path.
        path: String,
        /// The previous file's index (`file_index - 1`).
        previous_index: usize,
        /// The previous file's path.
        previous: String,
    },
    /// A chunk names a file past the end of the file table.
    #[error("chunk {chunk_index}: file_index {file_index} is out of range ({file_count} files)")]
    ChunkFileIndexOutOfRange {
        /// The chunk's index in the chunk table.
        chunk_index: usize,
        /// The file index it names.
        file_index: u32,
        /// The number of files in the file table.
        file_count: usize,
    },
    /// A chunk's file index is below the previous chunk's (chunks not grouped by file).
    #[error(
        "chunk {chunk_index}: file_index {file_index} follows a chunk of file {previous}; \
         chunks must be grouped by file in file-table order"
    )]
    ChunksNotGroupedByFile {
        /// The chunk's index in the chunk table.
        chunk_index: usize,
        /// The file index it names.
        file_index: u32,
        /// The previous chunk's file index.
        previous: u32,
    },
    /// A chunk does not start where its file's previous chunk ended (or, first, at 0).
    #[error(
        "chunk {chunk_index} of file {file_index} ({path:?}): offset {offset}, expected {expected} \
         (chunks must be contiguous from offset 0)"
    )]
    ChunkOffsetMismatch {
        /// The chunk's index in the chunk table.
        chunk_index: usize,
        /// Its file's index in the file table.
        file_index: usize,
        /// Its file's path.
        path: String,
        /// The chunk's offset.
        offset: u64,
        /// The end of the file's previous chunk (0 for its first).
        expected: u64,
    },
    /// A file's size is not the sum of its chunks' sizes.
    #[error("file {file_index} ({path:?}): size {size} but its chunks cover {chunk_total} bytes")]
    FileSizeMismatch {
        /// The file's index in the file table.
        file_index: usize,
        /// The file's path.
        path: String,
        /// The file's size in bytes, as declared.
        size: u64,
        /// The sum of its chunks' sizes in bytes.
        chunk_total: u64,
    },
    /// A file's declared hash is not the [`file_hash`] of its chunk entries.
    #[error(
        "file {file_index} ({path:?}): hash {declared} does not match its chunk entries ({computed})"
    )]
    FileHashMismatch {
        /// The file's index in the file table.
        file_index: usize,
        /// The file's path.
        path: String,
        /// The declared hash, lowercase hex.
        declared: String,
        /// The hash of its chunk entries, lowercase hex.
        computed: String,
    },
    /// A table or list holds more entries than a u32 counts.
    #[error("{what} has {count} entries; the IC's encoding counts them in a u32")]
    TooManyEntries {
        /// Which table or list.
        what: &'static str,
        /// How many entries it holds.
        count: usize,
    },
    /// Reading the checkpoint directory or one of its files failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory read.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file ended before the size it had when the directory was walked.
    #[error("{}: file ended at byte {read}, expected {size} bytes (changed while reading?)", path.display())]
    FileShrank {
        /// The file.
        path: PathBuf,
        /// Its size in bytes when the directory was walked.
        size: u64,
        /// The bytes read before it ended.
        read: u64,
    },
    /// A file or directory name is not valid UTF-8.
    #[error("{}: file name is not UTF-8; the IC hashes paths as UTF-8 strings", path.display())]
    NotUtf8Path {
        /// The file or directory.
        path: PathBuf,
    },
    /// The checkpoint holds a symbolic link.
    #[error("{}: symbolic link; checkpoints hold only regular files and directories", path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The checkpoint holds a device, FIFO or socket.
    #[error("{}: special file (device, FIFO or socket); checkpoints hold only regular files and directories", path.display())]
    SpecialFile {
        /// The special file.
        path: PathBuf,
    },
    /// An unverified checkpoint holds the unverified-checkpoint marker below its root too.
    #[error(
        "{path:?}: unverified-checkpoint marker below the root of an unverified checkpoint (the replica refuses this)"
    )]
    NestedMarker {
        /// The nested marker's path relative to the checkpoint root.
        path: String,
    },
    /// [`ComputeOptions`] out of their range (what is wrong).
    #[error("invalid compute options: {0}")]
    InvalidOptions(String),
    /// The engine refused or failed the chunk hashing.
    #[error("chunk hashing failed: {0}")]
    Engine(#[from] EngineError),
    /// An invariant of the computation did not hold (a bug; which one).
    #[error("internal error: {0}")]
    Internal(&'static str),
}

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
