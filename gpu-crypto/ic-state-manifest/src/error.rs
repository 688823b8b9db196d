//! Why a manifest could not be parsed, validated, hashed or computed.

use gpu_crypto_api::EngineError;
use std::path::PathBuf;

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
