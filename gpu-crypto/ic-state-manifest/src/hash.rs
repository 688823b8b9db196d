//! The IC's manifest hashes (`rs/state_manager/src/manifest.rs` and `manifest/hash.rs`).

use crate::encode::{ByteSink, encode_manifest};
use crate::error::ManifestError;
use crate::manifest::{CHUNK_SIZE, ChunkInfo, Manifest, ManifestVersion};
use sha2::{Digest, Sha256};

pub(crate) const CHUNK_DOMAIN: &str = "ic-state-chunk";
const FILE_DOMAIN: &str = "ic-state-file";
const MANIFEST_DOMAIN: &str = "ic-state-manifest";
const SUB_MANIFEST_DOMAIN: &str = "ic-state-sub-manifest";
const META_MANIFEST_DOMAIN: &str = "ic-state-meta-manifest";

/// A hasher that has absorbed `dsep(domain) = len(domain) as u8 || domain`.
fn hasher_for(domain: &'static str) -> Sha256 {
    // Every domain above is shorter than 256 bytes, so the length fits its one byte.
    let mut h = Sha256::new();
    h.update([domain.len() as u8]);
    h.update(domain.as_bytes());
    h
}

/// A table length as the u32 the IC hashes (its `len() as u32` would wrap silently).
pub(crate) fn len_u32(what: &'static str, count: usize) -> Result<u32, ManifestError> {
    u32::try_from(count).map_err(|_| ManifestError::TooManyEntries { what, count })
}

/// `SHA-256(dsep("ic-state-chunk") || bytes)`: one chunk's hash.
pub fn chunk_hash(bytes: &[u8]) -> [u8; 32] {
    let mut h = hasher_for(CHUNK_DOMAIN);
    h.update(bytes);
    h.finalize().into()
}

fn update_chunk_entry(h: &mut Sha256, chunk: &ChunkInfo, version: ManifestVersion) {
    // From V3 on the file index is left out, so a file's hash does not depend on its
    // position in the file table.
    if version < ManifestVersion::V3 {
        h.update(chunk.file_index.to_be_bytes());
    }
    h.update(chunk.size.to_be_bytes());
    h.update(chunk.offset.to_be_bytes());
    h.update(chunk.hash);
}

/// A file's hash over its chunk entries (the chunk-table slice of that file, in order).
pub fn file_hash(
    version: ManifestVersion,
    chunks: &[ChunkInfo],
) -> Result<[u8; 32], ManifestError> {
    let mut h = hasher_for(FILE_DOMAIN);
    h.update(len_u32("a file's chunk list", chunks.len())?.to_be_bytes());
    for chunk in chunks {
        update_chunk_entry(&mut h, chunk, version);
    }
    Ok(h.finalize().into())
}

/// The IC's `manifest_hash`: no consistency checks.
pub(crate) fn root_hash(manifest: &Manifest) -> Result<[u8; 32], ManifestError> {
    if manifest.version >= ManifestVersion::V2 {
        meta_manifest_hash(manifest)
    } else {
        table_hash(manifest)
    }
}

/// V0 and V1: hash of the tables themselves.
fn table_hash(manifest: &Manifest) -> Result<[u8; 32], ManifestError> {
    let version = manifest.version;
    let mut h = hasher_for(MANIFEST_DOMAIN);
    if version >= ManifestVersion::V1 {
        h.update(version.as_u32().to_be_bytes());
    }
    h.update(len_u32("the file table", manifest.files.len())?.to_be_bytes());
    for file in &manifest.files {
        h.update(len_u32("a path's bytes", file.path.len())?.to_be_bytes());
        h.update(file.path.as_bytes());
        h.update(file.size.to_be_bytes());
        h.update(file.hash);
    }
    if version >= ManifestVersion::V1 {
        h.update(len_u32("the chunk table", manifest.chunks.len())?.to_be_bytes());
        for chunk in &manifest.chunks {
            update_chunk_entry(&mut h, chunk, version);
        }
    }
    Ok(h.finalize().into())
}

/// Hashes a byte stream in consecutive 1 MiB sub-manifests as it is written, so the
/// encoding of a large manifest (hundreds of MiB) is never held in memory.
struct SubManifestHasher {
    current: Sha256,
    filled: usize,
    hashes: Vec<[u8; 32]>,
}

impl SubManifestHasher {
    fn new() -> SubManifestHasher {
        SubManifestHasher {
            current: hasher_for(SUB_MANIFEST_DOMAIN),
            filled: 0,
            hashes: Vec::new(),
        }
    }

    /// The sub-manifest hashes; an empty stream has none, as in the replica.
    fn finish(mut self) -> Vec<[u8; 32]> {
        if self.filled > 0 {
            self.hashes.push(self.current.finalize().into());
        }
        self.hashes
    }
}

impl ByteSink for SubManifestHasher {
    fn put(&mut self, mut bytes: &[u8]) {
        let sub_manifest_size = CHUNK_SIZE as usize;
        while !bytes.is_empty() {
            let take = bytes.len().min(sub_manifest_size - self.filled);
            let (head, rest) = bytes.split_at(take);
            self.current.update(head);
            self.filled += take;
            bytes = rest;
            if self.filled == sub_manifest_size {
                let full = std::mem::replace(&mut self.current, hasher_for(SUB_MANIFEST_DOMAIN));
                self.hashes.push(full.finalize().into());
                self.filled = 0;
            }
        }
    }
}

/// V2 and later: hash of the meta-manifest (version and sub-manifest hashes).
fn meta_manifest_hash(manifest: &Manifest) -> Result<[u8; 32], ManifestError> {
    let mut sub_manifests = SubManifestHasher::new();
    encode_manifest(manifest, &mut sub_manifests);
    let sub_manifest_hashes = sub_manifests.finish();

    let mut h = hasher_for(META_MANIFEST_DOMAIN);
    h.update(manifest.version.as_u32().to_be_bytes());
    h.update(len_u32("the sub-manifest list", sub_manifest_hashes.len())?.to_be_bytes());
    for sub_manifest_hash in &sub_manifest_hashes {
        h.update(sub_manifest_hash);
    }
    Ok(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_manifests_split_at_exact_mebibytes() {
        let data: Vec<u8> = (0..(2 * CHUNK_SIZE as usize + 3))
            .map(|i| (i % 251) as u8)
            .collect();
        let expected = |part: &[u8]| -> [u8; 32] {
            let mut h = hasher_for(SUB_MANIFEST_DOMAIN);
            h.update(part);
            h.finalize().into()
        };
        let mib = CHUNK_SIZE as usize;
        for len in [0, 1, mib, mib + 1, 2 * mib, 2 * mib + 3] {
            // Feed in odd-sized pieces to cross the boundaries mid-write.
            let mut s = SubManifestHasher::new();
            for piece in data[..len].chunks(65_537) {
                s.put(piece);
            }
            let want: Vec<[u8; 32]> = data[..len].chunks(mib).map(expected).collect();
            assert_eq!(s.finish(), want, "stream length {len}");
        }
    }
}
