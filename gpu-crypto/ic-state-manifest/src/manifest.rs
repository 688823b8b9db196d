//! The manifest as the replica defines it: its version, file table and chunk table.

use std::fmt;

use crate::error::ManifestError;

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
