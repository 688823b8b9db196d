//! The manifest's protobuf encoding, byte-identical to prost's encoding of
//! `ic_protobuf::state::sync::v1::Manifest` (proto3: default-valued scalars are omitted,
//! fields in field-number order):
//!
//! ```text
//! Manifest  { uint32 version = 1; repeated FileInfo file_table = 2; repeated ChunkInfo chunk_table = 3; }
//! FileInfo  { string relative_path = 1; uint64 size_bytes = 2; bytes hash = 3; }
//! ChunkInfo { uint32 file_index = 1; uint32 size_bytes = 2; uint64 offset = 3; bytes hash = 4; }
//! ```
//!
//! Written by hand rather than with prost so that the V2+ root hash can stream the
//! encoding into 1 MiB sub-manifest hashes entry by entry; the IC's own compatibility test
//! pins these bytes (see tests/manifest.rs).

use crate::manifest::{ChunkInfo, FileInfo, Manifest};

/// Where encoded bytes go: a buffer, or the sub-manifest hasher.
pub(crate) trait ByteSink {
    fn put(&mut self, bytes: &[u8]);
}

impl ByteSink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

// Tags: field_number << 3 | wire_type (0 varint, 2 length-delimited).
const MANIFEST_VERSION: u8 = 1 << 3;
const MANIFEST_FILE: u8 = (2 << 3) | 2;
const MANIFEST_CHUNK: u8 = (3 << 3) | 2;
const FILE_PATH: u8 = (1 << 3) | 2;
const FILE_SIZE: u8 = 2 << 3;
const FILE_HASH: u8 = (3 << 3) | 2;
const CHUNK_FILE_INDEX: u8 = 1 << 3;
const CHUNK_SIZE_BYTES: u8 = 2 << 3;
const CHUNK_OFFSET: u8 = 3 << 3;
const CHUNK_HASH: u8 = (4 << 3) | 2;

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_bytes_field(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn encode_file_info(file: &FileInfo, out: &mut Vec<u8>) {
    if !file.path.is_empty() {
        put_bytes_field(out, FILE_PATH, file.path.as_bytes());
    }
    if file.size != 0 {
        out.push(FILE_SIZE);
        put_varint(out, file.size);
    }
    put_bytes_field(out, FILE_HASH, &file.hash);
}

fn encode_chunk_info(chunk: &ChunkInfo, out: &mut Vec<u8>) {
    if chunk.file_index != 0 {
        out.push(CHUNK_FILE_INDEX);
        put_varint(out, chunk.file_index.into());
    }
    if chunk.size != 0 {
        out.push(CHUNK_SIZE_BYTES);
        put_varint(out, chunk.size.into());
    }
    if chunk.offset != 0 {
        out.push(CHUNK_OFFSET);
        put_varint(out, chunk.offset);
    }
    put_bytes_field(out, CHUNK_HASH, &chunk.hash);
}

/// Writes the encoding of `manifest` to `sink`, one table entry at a time.
pub(crate) fn encode_manifest(manifest: &Manifest, sink: &mut impl ByteSink) {
    let mut entry = Vec::with_capacity(128);
    let mut field = Vec::with_capacity(160);
    let version = manifest.version.as_u32();
    if version != 0 {
        field.push(MANIFEST_VERSION);
        put_varint(&mut field, version.into());
        sink.put(&field);
    }
    for file in &manifest.files {
        entry.clear();
        encode_file_info(file, &mut entry);
        field.clear();
        put_bytes_field(&mut field, MANIFEST_FILE, &entry);
        sink.put(&field);
    }
    for chunk in &manifest.chunks {
        entry.clear();
        encode_chunk_info(chunk, &mut entry);
        field.clear();
        put_bytes_field(&mut field, MANIFEST_CHUNK, &entry);
        sink.put(&field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_protobuf_spec() {
        // Values and encodings from protobuf.dev/programming-guides/encoding and the IC's
        // compatibility test (319 -> bf02, 10_000_000_000 -> 80c8afa025).
        for (value, want) in [
            (0u64, "00"),
            (1, "01"),
            (127, "7f"),
            (128, "8001"),
            (150, "9601"),
            (319, "bf02"),
            (10_000_000_000, "80c8afa025"),
            (u64::MAX, "ffffffffffffffffff01"),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(hex::encode(out), want, "varint of {value}");
        }
    }
}
