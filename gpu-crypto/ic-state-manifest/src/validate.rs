//! The replica's `validate_manifest_internal_consistency`, with typed errors.
//!
//! Accept set: exactly the replica's. The chunk checks below (file index in range, chunks
//! grouped by ascending file index) come first only to give a precise reason; every
//! manifest they reject the replica rejects too (as "extra chunks" or a size mismatch).
//! Like the replica, chunk sizes are not bounded by the chunk size and chunk hashes are
//! not checked (that needs the data).

use super::hash::file_hash;
use super::{Manifest, ManifestError};
use std::path::Path;

pub(crate) fn validate(manifest: &Manifest) -> Result<(), ManifestError> {
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

    let mut chunk_start = 0usize;
    for (file_index, file) in manifest.files.iter().enumerate() {
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

        let rest = manifest.chunks.get(chunk_start..).unwrap_or_default();
        let chunk_count = rest
            .iter()
            .take_while(|c| c.file_index as usize == file_index)
            .count();
        let file_chunks = rest.get(..chunk_count).unwrap_or_default();

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

        let computed = file_hash(manifest.version, file_chunks)?;
        if computed != file.hash {
            return Err(ManifestError::FileHashMismatch {
                file_index,
                path: file.path.clone(),
                declared: hex::encode(file.hash),
                computed: hex::encode(computed),
            });
        }
        chunk_start += chunk_count;
    }

    // Unreachable after the chunk checks above (each chunk's file consumed it), kept
    // because it is the replica's own final check.
    if chunk_start != manifest.chunks.len() {
        return Err(ManifestError::ChunksNotGroupedByFile {
            chunk_index: chunk_start,
            file_index: manifest.chunks.get(chunk_start).map_or(0, |c| c.file_index),
            previous: previous_file_index,
        });
    }
    Ok(())
}
