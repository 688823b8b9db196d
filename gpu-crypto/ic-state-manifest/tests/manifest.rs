//! The IC state manifest: the replica's own compatibility vectors, `compute` on chunk
//! boundaries against an independent straightforward computation, JSON, typed errors,
//! and the CPU SHA-256 reference (`cpu::sha256_prefixed`).

use gpu_crypto::{BackendChoice, DomainSeparator, Engine, Fallback, OperationPolicy, Policy, cpu};
use gpu_crypto_api::stats::Executed;
use ic_state_manifest::{
    self as manifest, CHUNK_SIZE, ChunkInfo, ComputeOptions, FileInfo, Manifest, ManifestError,
    ManifestVersion,
};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;

const MIB: usize = CHUNK_SIZE as usize;

fn h32(hex_text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_text, &mut out).expect("test vector is 64 hex digits");
    out
}

/// An independent, deliberately plain rendering of the IC's hashing rules
/// (rs/types/types/src/state_sync.rs note "Manifest Hash", rs/state_manager/src/manifest.rs):
/// everything in memory, no streaming, no shared code with the library.
mod reference {
    use super::*;

    pub(crate) fn sha256_concat(parts: &[&[u8]]) -> [u8; 32] {
        let mut h = Sha256::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().into()
    }

    pub(crate) fn chunk_hash(bytes: &[u8]) -> [u8; 32] {
        sha256_concat(&[&[14u8], b"ic-state-chunk", bytes])
    }

    pub(crate) fn file_hash(file_index: u32, chunks: &[ChunkInfo], version: u32) -> [u8; 32] {
        let mut bytes = vec![13u8];
        bytes.extend_from_slice(b"ic-state-file");
        bytes.extend_from_slice(&(chunks.len() as u32).to_be_bytes());
        for c in chunks {
            if version < 3 {
                bytes.extend_from_slice(&file_index.to_be_bytes());
            }
            bytes.extend_from_slice(&c.size.to_be_bytes());
            bytes.extend_from_slice(&c.offset.to_be_bytes());
            bytes.extend_from_slice(&c.hash);
        }
        sha256_concat(&[&bytes])
    }

    /// The manifest of in-memory files (path, contents), given in the expected order.
    pub(crate) fn manifest(
        version: ManifestVersion,
        files: &[(&str, Vec<u8>)],
        chunk: usize,
    ) -> Manifest {
        let mut file_table = Vec::new();
        let mut chunk_table = Vec::new();
        for (index, (path, data)) in files.iter().enumerate() {
            let mine: Vec<ChunkInfo> = data
                .chunks(chunk)
                .enumerate()
                .map(|(i, bytes)| ChunkInfo {
                    file_index: index as u32,
                    size: bytes.len() as u32,
                    offset: (i * chunk) as u64,
                    hash: chunk_hash(bytes),
                })
                .collect();
            file_table.push(FileInfo {
                path: path.to_string(),
                size: data.len() as u64,
                hash: file_hash(index as u32, &mine, version.as_u32()),
            });
            chunk_table.extend(mine);
        }
        Manifest {
            version,
            files: file_table,
            chunks: chunk_table,
        }
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 128 {
            out.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    fn length_delimited(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend(varint(body.len() as u64));
        out.extend_from_slice(body);
        out
    }

    /// Protobuf encoding, as the IC's `encode_manifest_expected` in compatibility.rs.
    pub(crate) fn encode(m: &Manifest) -> Vec<u8> {
        let mut out = Vec::new();
        if m.version.as_u32() != 0 {
            out.push(0x08);
            out.extend(varint(m.version.as_u32().into()));
        }
        for f in &m.files {
            let mut e = Vec::new();
            if !f.path.is_empty() {
                e.extend(length_delimited(0x0a, f.path.as_bytes()));
            }
            if f.size != 0 {
                e.push(0x10);
                e.extend(varint(f.size));
            }
            e.extend(length_delimited(0x1a, &f.hash));
            out.extend(length_delimited(0x12, &e));
        }
        for c in &m.chunks {
            let mut e = Vec::new();
            for (tag, value) in [
                (0x08u8, u64::from(c.file_index)),
                (0x10, c.size.into()),
                (0x18, c.offset),
            ] {
                if value != 0 {
                    e.push(tag);
                    e.extend(varint(value));
                }
            }
            e.extend(length_delimited(0x22, &c.hash));
            out.extend(length_delimited(0x1a, &e));
        }
        out
    }

    pub(crate) fn root_hash(m: &Manifest) -> [u8; 32] {
        let version = m.version.as_u32();
        if version >= 2 {
            let encoded = encode(m);
            let mut meta = vec![22u8];
            meta.extend_from_slice(b"ic-state-meta-manifest");
            meta.extend_from_slice(&version.to_be_bytes());
            let subs: Vec<[u8; 32]> = encoded
                .chunks(MIB)
                .map(|s| sha256_concat(&[&[21u8], b"ic-state-sub-manifest", s]))
                .collect();
            meta.extend_from_slice(&(subs.len() as u32).to_be_bytes());
            for s in &subs {
                meta.extend_from_slice(s);
            }
            return sha256_concat(&[&meta]);
        }
        let mut b = vec![17u8];
        b.extend_from_slice(b"ic-state-manifest");
        if version == 1 {
            b.extend_from_slice(&version.to_be_bytes());
        }
        b.extend_from_slice(&(m.files.len() as u32).to_be_bytes());
        for f in &m.files {
            b.extend_from_slice(&(f.path.len() as u32).to_be_bytes());
            b.extend_from_slice(f.path.as_bytes());
            b.extend_from_slice(&f.size.to_be_bytes());
            b.extend_from_slice(&f.hash);
        }
        if version == 1 {
            b.extend_from_slice(&(m.chunks.len() as u32).to_be_bytes());
            for c in &m.chunks {
                b.extend_from_slice(&c.file_index.to_be_bytes());
                b.extend_from_slice(&c.size.to_be_bytes());
                b.extend_from_slice(&c.offset.to_be_bytes());
                b.extend_from_slice(&c.hash);
            }
        }
        sha256_concat(&[&b])
    }
}

// ---------------------------------------------------------------------------------------
// The IC's own vectors.
//
// Source: dfinity/ic, rs/state_manager/src/manifest/tests/compatibility.rs, identical at
// commits 12791934f24343afafd9725be5fc48c9bd3a6586 and 6b857d45cf69349ed7e66570eccbe3dd62b2ad90:
// `testcase_file_table_and_chunk_table` ("computed from the checkpoint in a real subnet
// with 1 canister"), `EXPECTED_ENCODED_FILE_INFO`, `EXPECTED_ENCODED_CHUNK_INFO`,
// `EXPECTED_ENCODED_MANIFEST` and `deterministic_manifest_hash`.
// ---------------------------------------------------------------------------------------

const EMPTY_FILE_HASH: &str = "981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b36";

fn ic_testcase(version: ManifestVersion) -> Manifest {
    let file = |path: &str, size: u64, hash: &str| FileInfo {
        path: path.to_string(),
        size,
        hash: h32(hash),
    };
    let chunk = |file_index: u32, size: u32, hash: &str| ChunkInfo {
        file_index,
        size,
        offset: 0,
        hash: h32(hash),
    };
    let cs = "canister_states/00000000001000000101";
    Manifest {
        version,
        files: vec![
            file("bitcoin/testnet/address_outpoints.bin", 0, EMPTY_FILE_HASH),
            file(
                "bitcoin/testnet/state.pbuf",
                319,
                "5b47e1fb48988925cecb65aa78b9af5191338b761d16285ad99d550e8f518225",
            ),
            file("bitcoin/testnet/utxos_medium.bin", 0, EMPTY_FILE_HASH),
            file("bitcoin/testnet/utxos_small.bin", 0, EMPTY_FILE_HASH),
            file(
                &format!("{cs}/canister.pbuf"),
                192,
                "4c99cb3e6eb95d37a72345a79c78c58c3d3a193ad47789b29156e0245cc44a42",
            ),
            file(&format!("{cs}/queues.pbuf"), 0, EMPTY_FILE_HASH),
            file(
                &format!("{cs}/software.wasm"),
                218,
                "c790871526c7130487da1a88ce300074b50d1020f6368e043726af40535c3893",
            ),
            file(&format!("{cs}/stable_memory.bin"), 0, EMPTY_FILE_HASH),
            file(&format!("{cs}/vmemory_0.bin"), 0, EMPTY_FILE_HASH),
            file("subnet_queues.pbuf", 0, EMPTY_FILE_HASH),
            file(
                "system_metadata.pbuf",
                887,
                "1c134cd6a9d691d3ec74a81eec5462d5af8653be53beb61e26b884958ebd2d05",
            ),
        ],
        chunks: vec![
            chunk(
                1,
                319,
                "4cbaf08a21e06f3a359ec28b9a774eb79cf2c22164540ab4c37a9d6427b7b258",
            ),
            chunk(
                4,
                192,
                "92b48865e4c666592080e97cf49f4bb18ea1b24811c754c52a391554a4be959c",
            ),
            chunk(
                6,
                218,
                "66de6749199845f0fa41b0e0c944eb06ba1927197970674dd242895a82d359fe",
            ),
            chunk(
                10,
                887,
                "2b71ffd247351b2918a1d64a5f019d79de950ff612efc8a4a1e81b5f6543f517",
            ),
        ],
    }
}

const IC_EXPECTED_ENCODED_MANIFEST: &str = "080212490a25626974636f696e2f746573746e65742f616464726573735f6f7574706f696e74732e62696e1a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612410a1a626974636f696e2f746573746e65742f73746174652e7062756610bf021a205b47e1fb48988925cecb65aa78b9af5191338b761d16285ad99d550e8f51822512440a20626974636f696e2f746573746e65742f7574786f735f6d656469756d2e62696e1a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612430a1f626974636f696e2f746573746e65742f7574786f735f736d616c6c2e62696e1a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612590a3263616e69737465725f7374617465732f30303030303030303030313030303030303130312f63616e69737465722e7062756610c0011a204c99cb3e6eb95d37a72345a79c78c58c3d3a193ad47789b29156e0245cc44a4212540a3063616e69737465725f7374617465732f30303030303030303030313030303030303130312f7175657565732e706275661a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612590a3263616e69737465725f7374617465732f30303030303030303030313030303030303130312f736f6674776172652e7761736d10da011a20c790871526c7130487da1a88ce300074b50d1020f6368e043726af40535c3893125a0a3663616e69737465725f7374617465732f30303030303030303030313030303030303130312f737461626c655f6d656d6f72792e62696e1a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612560a3263616e69737465725f7374617465732f30303030303030303030313030303030303130312f766d656d6f72795f302e62696e1a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b3612360a127375626e65745f7175657565732e706275661a20981305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b36123b0a1473797374656d5f6d657461646174612e7062756610f7061a201c134cd6a9d691d3ec74a81eec5462d5af8653be53beb61e26b884958ebd2d051a27080110bf0222204cbaf08a21e06f3a359ec28b9a774eb79cf2c22164540ab4c37a9d6427b7b2581a27080410c001222092b48865e4c666592080e97cf49f4bb18ea1b24811c754c52a391554a4be959c1a27080610da01222066de6749199845f0fa41b0e0c944eb06ba1927197970674dd242895a82d359fe1a27080a10f70622202b71ffd247351b2918a1d64a5f019d79de950ff612efc8a4a1e81b5f6543f517";

#[test]
fn ic_compatibility_encoding_of_the_real_subnet_manifest() {
    let manifest = ic_testcase(ManifestVersion::V2);
    assert_eq!(
        hex::encode(manifest.encode_protobuf()),
        IC_EXPECTED_ENCODED_MANIFEST
    );
    assert_eq!(
        hex::encode(reference::encode(&manifest)),
        IC_EXPECTED_ENCODED_MANIFEST
    );
}

/// The encoding of one table entry: a V0 manifest (no version field) holding only it,
/// minus the 2-byte field header.
fn encoded_entry(manifest: Manifest) -> String {
    let encoded = manifest.encode_protobuf();
    assert!(encoded[1] < 0x80, "one-byte length");
    assert_eq!(encoded.len(), 2 + usize::from(encoded[1]));
    hex::encode(&encoded[2..])
}

#[test]
fn ic_compatibility_encoding_of_single_entries() {
    let file = FileInfo {
        path: "canister_states/000000000010ffff0101/stable_memory.bin".into(),
        size: 10_000_000_000,
        hash: h32("881305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b36"),
    };
    assert_eq!(
        encoded_entry(Manifest {
            version: ManifestVersion::V0,
            files: vec![file],
            chunks: vec![],
        }),
        "0a3663616e69737465725f7374617465732f30303030303030303030313066666666303130312f737461626c655f6d656d6f72792e62696e1080c8afa0251a20881305d7c0b2ace0f53fe822f4075278fa28511e8c34e70f37fd8425af659b36"
    );
    let chunk = ChunkInfo {
        file_index: 100_000,
        size: 1_048_576,
        offset: 1_048_576_000,
        hash: h32("5cbaf08a21e06f3a359ec28b9a774eb79cf2c22164540ab4c37a9d6427b7b258"),
    };
    assert_eq!(
        encoded_entry(Manifest {
            version: ManifestVersion::V0,
            files: vec![],
            chunks: vec![chunk],
        }),
        "08a08d061080804018808080f40322205cbaf08a21e06f3a359ec28b9a774eb79cf2c22164540ab4c37a9d6427b7b258"
    );
}

#[test]
fn ic_compatibility_root_hashes_v1_v2() {
    // The real-subnet tables are consistent (file hashes match chunk entries under V1 and
    // V2), so the validating `root_hash` reproduces the vectors.
    let v1 = ic_testcase(ManifestVersion::V1);
    let v2 = ic_testcase(ManifestVersion::V2);
    assert_eq!(
        hex::encode(v1.root_hash().unwrap()),
        "7569c279f5054addc6949493293c8ad24f87b166fbff18a5bfe3908c23f8d3b5"
    );
    assert_eq!(
        hex::encode(v2.root_hash().unwrap()),
        "24dad2a74373217053106e533da8fa2dc67560e0780df06bdd5ca9eb749d1242"
    );
    assert_eq!(reference::root_hash(&v1), v1.root_hash().unwrap());
    assert_eq!(reference::root_hash(&v2), v2.root_hash().unwrap());
    // V3 leaves the file index out of chunk entries, so the same file hashes no longer
    // match: the first file with chunks is reported.
    let v3 = ic_testcase(ManifestVersion::V3);
    assert!(matches!(
        v3.root_hash(),
        Err(ManifestError::FileHashMismatch { file_index: 1, .. })
    ));
    assert_eq!(
        v3.root_hash_unvalidated().unwrap(),
        reference::root_hash(&v3)
    );
}

/// `deterministic_manifest_hash`, second half: 1,000,000 files and 3,000,000 chunks whose
/// V2 encoding exceeds 100 MiB, so the meta-manifest has many sub-manifests. The tables
/// come from `dummy_file_table_and_chunk_table` in
/// rs/state_manager/src/manifest/tests/computation.rs (commit a4196391cb5c627f28b5fdf1a4a21da12230c400).
#[test]
fn ic_compatibility_root_hashes_of_a_manifest_over_100_mib() {
    let chunk_hash = reference::chunk_hash(&[0u8; 1000]);
    let file_hash = reference::sha256_concat(&[
        &[13u8],
        b"ic-state-file",
        &1u32.to_be_bytes(),
        &0u32.to_be_bytes(),
        &1000u32.to_be_bytes(),
        &0u64.to_be_bytes(),
        &chunk_hash,
    ]);
    let files = vec![
        FileInfo {
            path: "root.bin".into(),
            size: 1000,
            hash: file_hash,
        };
        1_000_000
    ];
    let chunks = vec![
        ChunkInfo {
            file_index: 0,
            size: 1000,
            offset: 0,
            hash: chunk_hash,
        };
        3_000_000
    ];
    let mut manifest = Manifest {
        version: ManifestVersion::V1,
        files,
        chunks,
    };
    assert_eq!(
        hex::encode(manifest.root_hash_unvalidated().unwrap()),
        "18aabe0f8bc12b80bc232c02e0d6ca1b8a078980b7f8799ac992f06696fc1385"
    );
    manifest.version = ManifestVersion::V2;
    assert_eq!(
        hex::encode(manifest.root_hash_unvalidated().unwrap()),
        "8df9274f839167037f02e7bd121a1c272c04d9363907f956b896e92ebd64aa06"
    );
}

// ---------------------------------------------------------------------------------------
// `compute` on real directories.
// ---------------------------------------------------------------------------------------

/// Deterministic non-repeating bytes, so that misplaced chunk boundaries change hashes.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    let mut state = 0x9e37_79b9_u32 ^ u32::from(seed);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect()
}

fn write_tree(root: &Path, files: &[(&str, Vec<u8>)]) {
    for (path, data) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, data).unwrap();
    }
}

/// Files on both sides of every chunk boundary, in the order the IC sorts them: by path
/// component, so "a/b" comes before "a-b" although '-' < '/' byte-wise.
fn boundary_files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("a/b", pattern(10, 1)),
        ("a-b", pattern(20, 2)),
        (
            "canister_states/00000000001000000101/vmemory_0.bin",
            pattern(3 * MIB + 5, 3),
        ),
        ("empty", vec![]),
        ("exact_mib", pattern(MIB, 4)),
        ("mib_plus_one", pattern(MIB + 1, 5)),
        ("one_byte", pattern(1, 6)),
        ("sub/dir/empty_too", vec![]),
    ]
}

#[test]
fn compute_matches_the_independent_computation_on_chunk_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let files = boundary_files();
    write_tree(dir.path(), &files);
    fs::create_dir_all(dir.path().join("an/empty/dir")).unwrap();
    let engine = Engine::cpu_only();

    for version in ManifestVersion::ALL {
        let expected = reference::manifest(version, &files, MIB);
        for batch_bytes in [MIB, 3 * MIB, manifest::DEFAULT_BATCH_BYTES] {
            let options = ComputeOptions {
                batch_bytes,
                ..ComputeOptions::default()
            };
            let got = manifest::compute_with(&engine, dir.path(), version, options).unwrap();
            assert_eq!(got, expected, "{version}, batches of {batch_bytes} bytes");
        }
        let got = manifest::compute(&engine, dir.path(), version).unwrap();
        assert_eq!(got, expected);
        assert_eq!(got.root_hash().unwrap(), reference::root_hash(&expected));
    }

    let m = manifest::compute(&engine, dir.path(), ManifestVersion::V3).unwrap();
    let paths: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, files.iter().map(|(p, _)| *p).collect::<Vec<_>>());
    let sizes: Vec<(u32, u64, u32)> = m
        .chunks
        .iter()
        .map(|c| (c.file_index, c.offset, c.size))
        .collect();
    let m1 = MIB as u64;
    assert_eq!(
        sizes,
        vec![
            (0, 0, 10),
            (1, 0, 20),
            (2, 0, CHUNK_SIZE),
            (2, m1, CHUNK_SIZE),
            (2, 2 * m1, CHUNK_SIZE),
            (2, 3 * m1, 5),
            (4, 0, CHUNK_SIZE),
            (5, 0, CHUNK_SIZE),
            (5, m1, 1),
            (6, 0, 1),
        ]
    );
}

/// The replica's `test_simple_manifest_computation` (computation.rs at commit
/// a4196391cb5c627f28b5fdf1a4a21da12230c400): the same tree, 1024-byte chunks, and the
/// expected tables and root hashes written out from the hashing rules.
#[test]
fn ic_simple_manifest_computation() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        ("root.bin", vec![0u8; 1000]),
        ("subdir/memory", vec![1u8; 2048]),
        ("subdir/metadata", vec![2u8; 1050]),
        ("subdir/queue", vec![]),
    ];
    write_tree(dir.path(), &files);
    let options = ComputeOptions {
        chunk_size: 1024,
        batch_bytes: 2048,
    };
    for version in [
        ManifestVersion::V1,
        ManifestVersion::V2,
        ManifestVersion::V3,
    ] {
        let got =
            manifest::compute_with(&Engine::cpu_only(), dir.path(), version, options).unwrap();
        let expected = reference::manifest(version, &files, 1024);
        assert_eq!(got, expected);
        let sizes: Vec<u32> = got.chunks.iter().map(|c| c.size).collect();
        assert_eq!(sizes, [1000, 1024, 1024, 1024, 26]);
        assert_eq!(got.root_hash().unwrap(), reference::root_hash(&expected));
    }
}

#[test]
fn empty_checkpoint_and_unverified_marker() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::cpu_only();
    let empty = manifest::compute(&engine, dir.path(), ManifestVersion::V3).unwrap();
    assert!(empty.files.is_empty() && empty.chunks.is_empty());
    assert_eq!(empty.root_hash().unwrap(), reference::root_hash(&empty));

    write_tree(dir.path(), &[("system_metadata.pbuf", pattern(887, 9))]);
    let verified = manifest::compute(&engine, dir.path(), ManifestVersion::V3).unwrap();
    fs::write(dir.path().join("unverified_checkpoint_marker"), b"").unwrap();
    let unverified = manifest::compute(&engine, dir.path(), ManifestVersion::V3).unwrap();
    assert_eq!(verified, unverified, "the root marker is left out");

    write_tree(dir.path(), &[("x/unverified_checkpoint_marker", vec![])]);
    assert!(matches!(
        manifest::compute(&engine, dir.path(), ManifestVersion::V3),
        Err(ManifestError::NestedMarker { path }) if path == "x/unverified_checkpoint_marker"
    ));
}

#[test]
fn compute_rejects_what_a_checkpoint_cannot_hold() {
    let engine = Engine::cpu_only();
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &[("f", vec![1, 2, 3])]);
    std::os::unix::fs::symlink("f", dir.path().join("link")).unwrap();
    assert!(matches!(
        manifest::compute(&engine, dir.path(), ManifestVersion::V3),
        Err(ManifestError::Symlink { .. })
    ));

    let missing = dir.path().join("does-not-exist");
    let err = manifest::compute(&engine, &missing, ManifestVersion::V3).unwrap_err();
    assert!(
        matches!(&err, ManifestError::Io { path, .. } if path == &missing),
        "{err}"
    );

    for options in [
        ComputeOptions {
            batch_bytes: MIB - 1,
            ..ComputeOptions::default()
        },
        ComputeOptions {
            chunk_size: 0,
            batch_bytes: MIB,
        },
    ] {
        assert!(matches!(
            manifest::compute_with(&engine, dir.path(), ManifestVersion::V3, options),
            Err(ManifestError::InvalidOptions(_))
        ));
    }
}

/// Chunk hashes from the GPU equal the CPU's.
#[test]
#[ignore = "needs a GPU: hashes the manifest's chunks on the CUDA backend"]
fn gpu_chunk_hashing_matches_cpu() {
    let mut policy = Policy::cpu_only();
    policy.sha256 = OperationPolicy {
        backend: BackendChoice::Gpu,
        gpu_min_batch: 1,
    };
    policy.fallback = Fallback::Never;
    let gpu = Engine::new(policy).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let files = boundary_files();
    write_tree(dir.path(), &files);
    for version in [ManifestVersion::V2, ManifestVersion::V3] {
        let on_gpu = manifest::compute(&gpu, dir.path(), version).unwrap();
        let on_cpu = manifest::compute(&Engine::cpu_only(), dir.path(), version).unwrap();
        assert_eq!(on_gpu, on_cpu);
        assert_eq!(on_gpu, reference::manifest(version, &files, MIB));
    }
    let ran_on_gpu = gpu
        .stats()
        .operations
        .iter()
        .any(|c| c.executed == Executed::Gpu && c.items > 0);
    assert!(ran_on_gpu, "the GPU engine did not run: {:?}", gpu.stats());
}

// ---------------------------------------------------------------------------------------
// JSON.
// ---------------------------------------------------------------------------------------

fn small_manifest() -> Manifest {
    reference::manifest(
        ManifestVersion::V3,
        &[("a", pattern(5, 1)), ("b/c", vec![]), ("d", pattern(3, 2))],
        MIB,
    )
}

#[test]
fn json_form_and_round_trip() {
    let m = small_manifest();
    let json = m.to_json();
    let want = format!(
        r#"{{"version":3,"files":[{{"path":"a","size":5,"hash":"{}"}},{{"path":"b/c","size":0,"hash":"{}"}},{{"path":"d","size":3,"hash":"{}"}}],"chunks":[{{"file_index":0,"size":5,"offset":0,"hash":"{}"}},{{"file_index":2,"size":3,"offset":0,"hash":"{}"}}]}}"#,
        hex::encode(m.files[0].hash),
        hex::encode(m.files[1].hash),
        hex::encode(m.files[2].hash),
        hex::encode(m.chunks[0].hash),
        hex::encode(m.chunks[1].hash),
    );
    assert_eq!(json, want);
    assert_eq!(Manifest::from_json(&json).unwrap(), m);
    let mut written = Vec::new();
    m.write_json(&mut written).unwrap();
    assert_eq!(written, json.as_bytes());
    assert_eq!(Manifest::from_json_reader(written.as_slice()).unwrap(), m);

    // The IC vector survives the JSON form, and a computed manifest too.
    let ic = ic_testcase(ManifestVersion::V2);
    assert_eq!(Manifest::from_json(&ic.to_json()).unwrap(), ic);
    // Upper-case hex is read; written back in lower case.
    let upper = json.replace(
        &hex::encode(m.files[0].hash),
        &hex::encode_upper(m.files[0].hash),
    );
    assert_eq!(Manifest::from_json(&upper).unwrap(), m);
}

#[test]
fn malformed_json_is_a_clear_error() {
    let good = small_manifest().to_json();
    let hash = hex::encode(small_manifest().files[0].hash);
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "expected"),
        (
            good.replacen("{", r#"{"extra":1,"#, 1),
            "unknown field `extra`",
        ),
        (
            good.replacen(r#""size":5,"#, r#""size":5,"mode":1,"#, 1),
            "unknown field `mode`",
        ),
        (
            good.replacen(r#","chunks":"#, r#","chunkz":"#, 1),
            "unknown field `chunkz`",
        ),
        (good.replacen(&hash, &hash[1..], 1), "64 hex digits"),
        (
            good.replacen(&hash, &format!("g{}", &hash[1..]), 1),
            "not hex",
        ),
        (
            good.replacen(r#""size":5,"#, r#""size":-5,"#, 1),
            "invalid value",
        ),
        (
            good.replacen(r#""file_index":2"#, r#""file_index":4294967296"#, 1),
            "u32",
        ),
        (
            good.replacen(r#""path":"a","#, "", 1),
            "missing field `path`",
        ),
        (good[..good.len() - 1].to_string(), "EOF"),
    ];
    for (text, needle) in cases {
        match Manifest::from_json(&text) {
            Err(ManifestError::Json(message)) => {
                assert!(message.contains(needle), "{message:?} lacks {needle:?}")
            }
            other => panic!("{text}: expected a JSON error, got {other:?}"),
        }
    }
    for (version, shown) in [("5", 5u64), ("1099511627776", 1 << 40)] {
        let text = good.replacen(r#""version":3"#, &format!(r#""version":{version}"#), 1);
        assert!(matches!(
            Manifest::from_json(&text),
            Err(ManifestError::UnsupportedVersion { version }) if version == shown
        ));
    }
}

// ---------------------------------------------------------------------------------------
// Validation: the replica's accept set, typed reasons.
// ---------------------------------------------------------------------------------------

/// A valid manifest with several chunks per file, for mutation.
fn multi_chunk_manifest() -> Manifest {
    reference::manifest(
        ManifestVersion::V3,
        &[
            ("f0", pattern(2500, 1)),
            ("f1", pattern(10, 2)),
            ("f2", pattern(2100, 3)),
        ],
        1024,
    )
}

fn refresh_file_hashes(m: &mut Manifest) {
    for i in 0..m.files.len() {
        let range = m.file_chunk_range(i);
        m.files[i].hash = manifest::file_hash(m.version, &m.chunks[range]).unwrap();
    }
}

#[test]
fn inconsistent_manifests_are_typed_errors() {
    let valid = multi_chunk_manifest();
    valid.validate().unwrap();
    assert_eq!(valid.root_hash().unwrap(), reference::root_hash(&valid));

    let check = |mutate: &dyn Fn(&mut Manifest), want: &dyn Fn(&ManifestError) -> bool| {
        let mut m = valid.clone();
        mutate(&mut m);
        let err = m.validate().unwrap_err();
        assert!(want(&err), "unexpected error: {err}");
        let again = m.root_hash().unwrap_err();
        assert_eq!(again.to_string(), err.to_string());
    };
    check(&|m| m.chunks[3].file_index = 3, &|e| {
        matches!(
            e,
            ManifestError::ChunkFileIndexOutOfRange {
                chunk_index: 3,
                file_index: 3,
                file_count: 3
            }
        )
    });
    check(&|m| m.chunks.swap(2, 3), &|e| {
        matches!(
            e,
            ManifestError::ChunksNotGroupedByFile {
                chunk_index: 3,
                file_index: 0,
                previous: 1
            }
        )
    });
    check(&|m| m.chunks[1].offset = 1000, &|e| {
        matches!(
            e,
            ManifestError::ChunkOffsetMismatch {
                chunk_index: 1,
                file_index: 0,
                offset: 1000,
                expected: 1024,
                ..
            }
        )
    });
    check(&|m| m.files[2].size += 1, &|e| {
        matches!(
            e,
            ManifestError::FileSizeMismatch {
                file_index: 2,
                size: 2101,
                chunk_total: 2100,
                ..
            }
        )
    });
    check(&|m| m.files[1].hash[0] ^= 1, &|e| {
        matches!(e, ManifestError::FileHashMismatch { file_index: 1, .. })
    });
    check(&|m| m.chunks[4].hash[31] ^= 1, &|e| {
        matches!(e, ManifestError::FileHashMismatch { file_index: 2, .. })
    });
    // File hashes depend on the version (file_index is in chunk entries before V3).
    check(&|m| m.version = ManifestVersion::V2, &|e| {
        matches!(e, ManifestError::FileHashMismatch { file_index: 0, .. })
    });
    check(&|m| m.files[0].path = "/f0".into(), &|e| {
        matches!(e, ManifestError::AbsolutePath { file_index: 0, .. })
    });
    check(&|m| m.files[1].path = "f0".into(), &|e| {
        matches!(
            e,
            ManifestError::PathsNotSorted {
                file_index: 1,
                previous_index: 0,
                ..
            }
        )
    });
    // Component order: "f0/x" sorts before "f0-x", so this table is out of order.
    check(
        &|m| {
            m.files[0].path = "f0-x".into();
            m.files[1].path = "f0/x".into();
        },
        &|e| matches!(e, ManifestError::PathsNotSorted { file_index: 1, .. }),
    );
}

#[test]
fn what_the_replica_accepts_is_accepted() {
    // Component order: "f/x" then "f-x" is sorted for the replica (not byte-wise).
    let mut m = multi_chunk_manifest();
    m.files[0].path = "f/x".into();
    m.files[1].path = "f-x".into();
    m.validate().unwrap();

    // The replica bounds neither chunk sizes nor forbids empty chunks; only contiguity.
    let mut m = multi_chunk_manifest();
    m.chunks.insert(
        3,
        ChunkInfo {
            file_index: 0,
            size: 0,
            offset: 2500,
            hash: reference::chunk_hash(&[]),
        },
    );
    refresh_file_hashes(&mut m);
    m.validate().unwrap();

    // Empty manifests of every version hash.
    for version in ManifestVersion::ALL {
        let empty = Manifest {
            version,
            files: vec![],
            chunks: vec![],
        };
        assert_eq!(empty.root_hash().unwrap(), reference::root_hash(&empty));
    }
}

#[test]
fn version_numbers() {
    for (n, v) in ManifestVersion::ALL.into_iter().enumerate() {
        assert_eq!(ManifestVersion::from_number(n as u64).unwrap(), v);
        assert_eq!(v.as_u32(), n as u32);
    }
    assert!(matches!(
        ManifestVersion::from_number(5),
        Err(ManifestError::UnsupportedVersion { version: 5 })
    ));
    assert_eq!(ManifestVersion::CURRENT, ManifestVersion::V3);
}

// ---------------------------------------------------------------------------------------
// The CPU SHA-256 reference.
// ---------------------------------------------------------------------------------------

#[test]
fn sha256_prefixed_nist_vectors() {
    // FIPS 180-2 appendix B.1 and B.2 (one- and two-block messages), and the empty message.
    let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    let two_block = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let msg = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    let out = cpu::sha256_prefixed(b"", &[b"abc", msg, b""]);
    assert_eq!(out, vec![h32(abc), h32(two_block), h32(empty)]);
    let split = cpu::sha256_prefixed(b"ab", &[b"c"]);
    assert_eq!(split, vec![h32(abc)]);
    let split = cpu::sha256_prefixed(&msg[..29], &[&msg[29..]]);
    assert_eq!(split, vec![h32(two_block)]);
}

#[test]
fn sha256_prefixed_matches_one_shot_sha2() {
    let prefix = DomainSeparator::new("ic-state-chunk").unwrap();
    assert_eq!(prefix.prefix(), b"\x0eic-state-chunk");
    let data = pattern(3 * MIB, 7);
    // Lengths around SHA-256 padding (55/56/64 with the 15-byte prefix in front) and
    // large enough batches to take the parallel path.
    let mut chunks: Vec<&[u8]> = [0, 1, 40, 41, 48, 49, 55, 56, 63, 64, 65, 113, 1000]
        .iter()
        .map(|&n| &data[..n])
        .collect();
    chunks.extend([
        &data[..MIB],
        &data[MIB..2 * MIB],
        &data[5..MIB + 6],
        &data[..],
    ]);
    let want: Vec<[u8; 32]> = chunks
        .iter()
        .map(|c| Sha256::digest([prefix.prefix(), c].concat()).into())
        .collect();
    assert_eq!(cpu::sha256_prefixed(prefix.prefix(), &chunks), want);
    assert_eq!(
        Engine::cpu_only().sha256_chunks(&prefix, &chunks).unwrap(),
        want
    );
    let via_manifest: Vec<[u8; 32]> = chunks.iter().map(|c| manifest::chunk_hash(c)).collect();
    assert_eq!(via_manifest, want);
    assert!(cpu::sha256_prefixed(b"x", &[]).is_empty());
}
