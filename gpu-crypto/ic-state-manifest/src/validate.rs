//! The replica's `validate_manifest_internal_consistency`, with typed errors.
//!
//! Accept set: exactly the replica's. The chunk checks below (file index in range, chunks
//! grouped by ascending file index) come first only to give a precise reason; every
//! manifest they reject the replica rejects too (as "extra chunks" or a size mismatch).
//! Like the replica, chunk sizes are not bounded by the chunk size and chunk hashes are
//! not checked (that needs the data).

use crate::error::ManifestError;
use crate::hash::file_hash;
use crate::manifest::{ChunkInfo, FileInfo, Manifest, ManifestVersion};
use std::path::Path;

/// Checks the manifest's internal consistency, as the replica does: chunks grouped by
/// file in file order, relative paths in strictly ascending order, each file's chunks
/// contiguous from offset 0 up to its size, and each file's hash that of its chunks.
pub(crate) fn validate(manifest: &Manifest) -> Result<(), ManifestError> {
    let last_file_index = check_chunk_file_indices(manifest)?;
    let mut chunk_start = 0usize;
    for (file_index, file) in manifest.files.iter().enumerate() {
        check_path(manifest, file_index, file)?;
        let rest = manifest.chunks.get(chunk_start..).unwrap_or_default();
        let chunk_count = rest
            .iter()
            .take_while(|c| c.file_index as usize == file_index)
            .count();
        let file_chunks = rest.get(..chunk_count).unwrap_or_default();
        check_file_chunks(manifest.version, file_index, file, chunk_start, file_chunks)?;
        chunk_start += chunk_count;
    }

    // Unreachable after the chunk checks above (each chunk's file consumed it), kept
    // because it is the replica's own final check.
    if chunk_start != manifest.chunks.len() {
        return Err(ManifestError::ChunksNotGroupedByFile {
            chunk_index: chunk_start,
            file_index: manifest.chunks.get(chunk_start).map_or(0, |c| c.file_index),
            previous: last_file_index,
        });
    }
    Ok(())
}

/// Every chunk's file index is in range and none is below its predecessor's; returns the
/// last chunk's file index (0 without chunks).
fn check_chunk_file_indices(manifest: &Manifest) -> Result<u32, ManifestError> {
    let file_count = manifest.files.len();
    let mut previous_file_index = 0u32;
    for (chunk_index, chunk) in manifest.chunks.iter().enumerate() {
        if chunk.file_index as usize >= file_count {
            return Err(ManifestError::ChunkFileIndexOutOfRange {
                chunk_index,
                file_index: chunk.file_index,
                file_count,
            });
        }
        if chunk.file_index < previous_file_index {
            return Err(ManifestError::ChunksNotGroupedByFile {
                chunk_index,
                file_index: chunk.file_index,
                previous: previous_file_index,
            });
        }
        previous_file_index = chunk.file_index;
    }
    Ok(previous_file_index)
}

/// File `file_index`'s path is relative and sorts strictly after the previous file's.
fn check_path(
    manifest: &Manifest,
    file_index: usize,
    file: &FileInfo,
) -> Result<(), ManifestError> {
    // The replica compares `PathBuf`s: component by component, so "a/b" < "a-b".
    let path = Path::new(&file.path);
    if path.is_absolute() {
        return Err(ManifestError::AbsolutePath {
            file_index,
            path: file.path.clone(),
        });
    }
    if let Some(previous_index) = file_index.checked_sub(1)
        && let Some(previous) = manifest.files.get(previous_index)
        && path <= Path::new(&previous.path)
    {
        return Err(ManifestError::PathsNotSorted {
            file_index,
            path: file.path.clone(),
            previous_index,
            previous: previous.path.clone(),
        });
    }
    Ok(())
}

/// File `file_index`'s chunks (the manifest's from `chunk_start` on) follow one another
/// from offset 0, add up to the file's size, and hash to the file's hash.
fn check_file_chunks(
    version: ManifestVersion,
    file_index: usize,
    file: &FileInfo,
    chunk_start: usize,
    file_chunks: &[ChunkInfo],
) -> Result<(), ManifestError> {
    let mut expected_offset = 0u64;
    for (i, chunk) in file_chunks.iter().enumerate() {
        if chunk.offset != expected_offset {
            return Err(ManifestError::ChunkOffsetMismatch {
                chunk_index: chunk_start + i,
                file_index,
                path: file.path.clone(),
                offset: chunk.offset,
                expected: expected_offset,
            });
        }
        // Cannot overflow: offsets equal the running sum of u32 sizes, so it would
        // take more than 2^32 chunks.
        expected_offset = expected_offset.saturating_add(chunk.size.into());
    }
    if file.size != expected_offset {
        return Err(ManifestError::FileSizeMismatch {
            file_index,
            path: file.path.clone(),
            size: file.size,
            chunk_total: expected_offset,
        });
    }

    let computed = file_hash(version, file_chunks)?;
    if computed != file.hash {
        return Err(ManifestError::FileHashMismatch {
            file_index,
            path: file.path.clone(),
            declared: hex::encode(file.hash),
            computed: hex::encode(computed),
        });
    }
    Ok(())
}
