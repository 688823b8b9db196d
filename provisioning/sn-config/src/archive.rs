//! The bundle on the `sn-config` partition: a deterministic ustar archive followed by zeros.
//!
//! Writer: SHA256SUMS, SHA256SUMS.sig, then the content members in name order; every header
//! is ustar, type `0` (regular file), mode 0644, uid/gid 0, mtime 0, empty owner names, so
//! a bundle always gives the same bytes. Reader: the exact inverse, strict: only type-`0`
//! members whose name is one of the schema's, each at most once and within its size limit;
//! the padding of each member's last block and everything after the end-of-archive marker
//! must be zeros (bytes no checksum covers are refused, not ignored). Every header must be
//! byte for byte the one the writer makes for that member's name and size, and the members
//! must come in the writer's order, so one bundle has exactly one archive: a partition's bytes
//! are malleable nowhere the checksums do not reach.

use std::collections::BTreeMap;
use std::io::Read as _;

use crate::bundle::{Bundle, Signers};
use crate::error::ConfigError;
use crate::members::{PARTITION_BYTES, SIGNATURE, SUMS, allowed_list, allowed_members};

/// The archive of `files` (name -> bytes). [`Bundle::archive`] is the way to call it.
fn write_archive(files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>, ConfigError> {
    let archive_err = |name: &str, e: std::io::Error| ConfigError::Archive(format!("{name}: {e}"));
    let mut builder = tar::Builder::new(Vec::new());
    let order = [SUMS, SIGNATURE].into_iter().chain(
        files
            .keys()
            .map(String::as_str)
            .filter(|n| *n != SUMS && *n != SIGNATURE),
    );
    for name in order {
        let Some(bytes) = files.get(name) else {
            continue;
        };
        let header = member_header(name, bytes.len() as u64).map_err(|e| archive_err(name, e))?;
        builder
            .append(&header, bytes.as_slice())
            .map_err(|e| archive_err(name, e))?;
    }
    let archive = builder
        .into_inner()
        .map_err(|e| archive_err("end of archive", e))?;
    if archive.len() as u64 > PARTITION_BYTES {
        return Err(ConfigError::Archive(format!(
            "{} bytes do not fit the {PARTITION_BYTES}-byte partition",
            archive.len()
        )));
    }
    Ok(archive)
}

/// The one header the writer makes for a member: ustar, type `0`, mode 0644, uid/gid 0,
/// mtime 0, empty owner names, the name in the name field, the size in octal.
fn member_header(name: &str, size: u64) -> std::io::Result<tar::Header> {
    let mut header = tar::Header::new_ustar();
    header.set_path(name)?;
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    Ok(header)
}

/// The ustar header's fields, by byte range, to name the first one that differs.
const HEADER_FIELDS: [(&str, usize, usize); 17] = [
    ("name", 0, 100),
    ("mode", 100, 108),
    ("uid", 108, 116),
    ("gid", 116, 124),
    ("size", 124, 136),
    ("mtime", 136, 148),
    ("checksum", 148, 156),
    ("type", 156, 157),
    ("link name", 157, 257),
    ("magic", 257, 263),
    ("version", 263, 265),
    ("owner name (uname)", 265, 297),
    ("group name (gname)", 297, 329),
    ("device major", 329, 337),
    ("device minor", 337, 345),
    ("name prefix", 345, 500),
    ("header padding", 500, 512),
];

/// Refuses a header that is not byte for byte [`member_header`] of its name and size.
fn check_canonical(name: &str, size: u64, actual: &[u8; 512]) -> Result<(), ConfigError> {
    let expected = member_header(name, size).map_err(|e| ConfigError::UnsafeName {
        member: name.to_string(),
        reason: e.to_string(),
    })?;
    let expected = expected.as_bytes();
    // The checksum follows from the other bytes: name it only when nothing else differs.
    let differs = |i: &usize| actual[*i] != expected[*i];
    let Some(at) = (0..512)
        .filter(|i| !(148..156).contains(i))
        .find(differs)
        .or_else(|| (148..156).find(differs))
    else {
        return Ok(());
    };
    let (field, lo, hi) = HEADER_FIELDS
        .iter()
        .copied()
        .find(|&(_, lo, hi)| (lo..hi).contains(&at))
        .unwrap_or(("header", 0, 512));
    Err(ConfigError::NonCanonicalHeader {
        member: name.to_string(),
        field: field.to_string(),
        detail: format!(
            "header byte {at}: {} where the writer writes {}",
            hex::encode(&actual[lo..hi]),
            hex::encode(&expected[lo..hi])
        ),
    })
}

/// The writer's order: SHA256SUMS, SHA256SUMS.sig, then the content members by name.
fn writer_rank(name: &str) -> (u8, &str) {
    match name {
        SUMS => (0, ""),
        SIGNATURE => (1, ""),
        other => (2, other),
    }
}

impl Bundle {
    /// The deterministic ustar archive of the bundle, as `provision flash` writes it to the
    /// sn-config partition.
    pub fn archive(&self) -> Result<Vec<u8>, ConfigError> {
        write_archive(&self.files())
    }
}

/// What a partition (or a file holding its bytes) contains.
#[derive(Debug, Clone, PartialEq)]
pub enum Partition {
    /// Every byte is zero (or there is none): no configuration was written. The node runs
    /// with the image's defaults and says so.
    Empty,
    /// A verified bundle, and the length of its archive including the end marker.
    Bundle {
        /// The verified bundle.
        bundle: Box<Bundle>,
        /// Bytes from the partition's start to the end of the end-of-archive marker.
        archive_len: u64,
    },
}

/// Names a tar entry type for errors.
fn describe_entry_type(byte: u8) -> String {
    match byte {
        b'1' => "hard link".into(),
        b'2' => "symbolic link".into(),
        b'3' => "character device".into(),
        b'4' => "block device".into(),
        b'5' => "directory".into(),
        b'6' => "FIFO".into(),
        b'7' => "contiguous file".into(),
        b'x' | b'g' => "pax extended header".into(),
        b'L' | b'K' => "GNU long-name header".into(),
        b'S' => "GNU sparse file".into(),
        0 => "pre-POSIX (type NUL) file".into(),
        b => format!("tar entry of type {:?}", b as char),
    }
}

fn check_name(name: &str) -> Result<(), ConfigError> {
    let unsafe_name = |reason: &str| {
        Err(ConfigError::UnsafeName {
            member: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.is_empty() {
        return unsafe_name("empty");
    }
    if name.starts_with('/') {
        return unsafe_name("absolute path");
    }
    if name.split('/').any(|c| c == "..") {
        return unsafe_name("contains `..`");
    }
    if name.contains('/') {
        return unsafe_name("a path with directories: members are top-level files");
    }
    if !allowed_members().any(|m| m == name) {
        return Err(ConfigError::UnknownMember {
            member: name.to_string(),
            allowed: allowed_list(),
        });
    }
    Ok(())
}

fn all_zero(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b != 0)
}

/// Reads the bytes of a configuration partition: all zeros is [`Partition::Empty`];
/// otherwise a strict archive whose members form a verified [`Bundle`] signed by one of
/// `pinned` (nothing pinned accepts no bundle: [`ConfigError::NoPinnedSigner`]). Nothing is
/// parsed beyond the tar headers before the signature and checksums are verified. At most
/// [`PARTITION_BYTES`] are considered.
pub fn read_partition(region: &[u8], pinned: &[[u8; 32]]) -> Result<Partition, ConfigError> {
    read_partition_with(region, Signers::Pinned(pinned))
}

/// [`read_partition`] with the signature checked against whichever key signed, returned as
/// the bundle's signer: for `provision verify`, which reads a disk back on the host and
/// reports the signer. The node never uses it.
pub fn read_partition_any_signer(region: &[u8]) -> Result<Partition, ConfigError> {
    read_partition_with(region, Signers::Any)
}

fn read_partition_with(region: &[u8], signers: Signers<'_>) -> Result<Partition, ConfigError> {
    let region = region
        .get(..usize::try_from(PARTITION_BYTES).unwrap_or(usize::MAX))
        .unwrap_or(region);
    if all_zero(region).is_none() {
        return Ok(Partition::Empty);
    }
    let (files, end) = read_members(region)?;
    check_tail(region, end)?;
    let bundle = Bundle::verify_with(files, signers)?;
    Ok(Partition::Bundle {
        bundle: Box::new(bundle),
        archive_len: end + 1024,
    })
}

/// The members of the archive at the start of `region` (name -> bytes), each checked
/// against what the writer makes before its bytes are read, and the offset where the last
/// member's padding ends.
fn read_members(region: &[u8]) -> Result<(BTreeMap<String, Vec<u8>>, u64), ConfigError> {
    let mut archive = tar::Archive::new(region);
    let entries = archive
        .entries()
        .map_err(|e| ConfigError::Archive(format!("not a tar archive: {e}")))?
        .raw(true);
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut end = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(|e| ConfigError::Archive(format!("damaged: {e}")))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let size = entry.size();
        check_member_header(entry.header(), &name, size, &files)?;
        let bytes = read_member(&mut entry, &name, size)?;
        end = check_padding(region, entry.raw_file_position(), size, &name)?;
        files.insert(name, bytes);
    }
    Ok((files, end))
}

/// Refuses a member header the writer would not have made at this point: not ustar, not a
/// regular file, a name outside the schema, over its size limit, a second time, out of the
/// writer's order, or not byte for byte [`member_header`]. `seen`: the members before it.
fn check_member_header(
    header: &tar::Header,
    name: &str,
    size: u64,
    seen: &BTreeMap<String, Vec<u8>>,
) -> Result<(), ConfigError> {
    if header.as_ustar().is_none() {
        return Err(ConfigError::Archive(format!(
            "member {name:?}: not a ustar header"
        )));
    }
    let type_byte = header.as_old().linkflag[0];
    if type_byte != b'0' {
        return Err(ConfigError::NotRegularFile {
            member: name.to_string(),
            what: describe_entry_type(type_byte),
        });
    }
    check_name(name)?;
    crate::bundle::check_size(name, size)?;
    if seen.contains_key(name) {
        return Err(ConfigError::DuplicateMember {
            member: name.to_string(),
        });
    }
    if let Some(last) = seen.keys().map(|n| writer_rank(n)).max()
        && writer_rank(name) < last
    {
        return Err(ConfigError::NonCanonicalHeader {
            field: "member order".into(),
            detail: format!(
                "the writer writes {}, {}, then the content members by name",
                SUMS, SIGNATURE
            ),
            member: name.to_string(),
        });
    }
    check_canonical(name, size, header.as_bytes())
}

/// The `size` bytes of the member `name`; fewer is a truncated archive.
fn read_member(
    entry: &mut tar::Entry<'_, &[u8]>,
    name: &str,
    size: u64,
) -> Result<Vec<u8>, ConfigError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::Archive(format!("member {name:?}: {e}")))?;
    if bytes.len() as u64 != size {
        return Err(ConfigError::Archive(format!(
            "member {name:?}: truncated ({} of {size} bytes)",
            bytes.len()
        )));
    }
    Ok(bytes)
}

/// Checks that the padding of the member `name` (data of `size` bytes at `start` in
/// `region`) up to the next 512-byte block is zeros; returns where the padding ends.
fn check_padding(region: &[u8], start: u64, size: u64, name: &str) -> Result<u64, ConfigError> {
    let data_end = start + size;
    let end = start + size.div_ceil(512) * 512;
    let padding = usize::try_from(data_end)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(a, b)| region.get(a..b))
        .ok_or_else(|| ConfigError::Archive(format!("member {name:?}: truncated")))?;
    if let Some(at) = all_zero(padding) {
        return Err(ConfigError::UncoveredData {
            offset: data_end + at as u64,
            place: format!("padding after member {name:?}"),
        });
    }
    Ok(end)
}

/// The end-of-archive marker (two zero blocks) and the rest of the partition after `end`,
/// the last member's end: zeros.
fn check_tail(region: &[u8], end: u64) -> Result<(), ConfigError> {
    let tail = usize::try_from(end)
        .ok()
        .and_then(|e| region.get(e..))
        .ok_or_else(|| ConfigError::Archive("runs past the partition".into()))?;
    if tail.len() < 1024 {
        return Err(ConfigError::Archive(
            "no end-of-archive marker (two zero blocks)".into(),
        ));
    }
    if let Some(at) = all_zero(tail) {
        return Err(ConfigError::UncoveredData {
            offset: end + at as u64,
            place: "after the archive's last member".into(),
        });
    }
    Ok(())
}
