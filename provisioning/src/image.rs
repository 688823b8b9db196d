//! The release manifest (`release-manifest.json`, schema `sovereign-node/release-manifest/v1`)
//! and the disk image it describes: a GPT disk whose configuration partition `sn-config` is
//! all zeros as released. Flashing needs only the manifest's `disk_image` object; the other
//! fields (artifacts, inputs, tools, sev_snp) belong to the image build and the policy.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// `schema` of the manifests this tool reads.
pub const MANIFEST_SCHEMA: &str = "sovereign-node/release-manifest/v1";
/// GPT name of the configuration partition.
pub const CONFIG_PARTITION: &str = "sn-config";
/// Logical block size of the image's GPT.
pub const SECTOR: u64 = 512;

/// Why an image or its release manifest was refused.
#[derive(Debug, Error)]
pub enum ImageError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The image or manifest file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The manifest is not one of [`MANIFEST_SCHEMA`] with a consistent `disk_image`.
    #[error("{path}: not a release manifest: {reason}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The image does not match its manifest (size, GPT, SHA-256), or has no valid GPT.
    #[error("{path}: {reason}")]
    Image {
        /// The image file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ImageError + '_ {
    move |source| ImageError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The manifest's `disk_image.config_partition`: where the node's bundle goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigPartition {
    /// The GPT partition name: always [`CONFIG_PARTITION`].
    pub name: String,
    /// Byte offset in the disk, a multiple of [`SECTOR`].
    pub offset_bytes: u64,
    /// Size in bytes, a non-zero multiple of [`SECTOR`].
    pub size_bytes: u64,
}

/// The manifest's `disk_image`: the disk as released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskImage {
    /// The image's file name, next to the manifest (disk.img).
    pub file: String,
    /// SHA-256 of the whole disk.img as built (configuration partition all zeros), hex.
    pub sha256: String,
    /// Size in bytes, a non-zero multiple of [`SECTOR`].
    pub size: u64,
    /// The configuration partition, inside [0, size).
    pub config_partition: ConfigPartition,
}

/// What flashing takes from a release manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseManifest {
    /// The manifest file it was read from.
    pub path: PathBuf,
    /// The disk image it describes.
    pub disk_image: DiskImage,
    /// `disk_image.sha256`, decoded.
    pub sha256: [u8; 32],
    /// `config.signers`: the configuration signers the image pins on its measured command
    /// line; a node of this image applies only their bundles.
    pub config_signers: Vec<[u8; 32]>,
}

impl ReleaseManifest {
    /// Reads and checks the manifest at `path` ([`ReleaseManifest::parse`]).
    pub fn load(path: &Path) -> Result<ReleaseManifest, ImageError> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        ReleaseManifest::parse(&bytes, path)
    }

    /// Parses a manifest (the bytes of `path`): its schema, a `disk_image` whose size and
    /// configuration partition are sector-aligned and consistent, and `config.signers`.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<ReleaseManifest, ImageError> {
        let bad = |reason: String| ImageError::Manifest {
            path: path.to_owned(),
            reason,
        };
        let json: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        match json.get("schema").and_then(|s| s.as_str()) {
            Some(MANIFEST_SCHEMA) => {}
            Some(other) => {
                return Err(bad(format!(
                    "schema {other:?}, expected {MANIFEST_SCHEMA:?}"
                )));
            }
            None => return Err(bad(format!("no \"schema\" (expected {MANIFEST_SCHEMA:?})"))),
        }
        let disk = json
            .get("disk_image")
            .ok_or_else(|| bad("no \"disk_image\" object".into()))?;
        let disk_image: DiskImage =
            serde_json::from_value(disk.clone()).map_err(|e| bad(format!("disk_image: {e}")))?;
        let sha256: [u8; 32] = hex::decode(disk_image.sha256.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("disk_image.sha256 is not 64 hex digits".into()))?;
        if disk_image.size == 0 || !disk_image.size.is_multiple_of(SECTOR) {
            return Err(bad(format!(
                "disk_image.size {} is not a non-zero multiple of {SECTOR} bytes",
                disk_image.size
            )));
        }
        let c = &disk_image.config_partition;
        if c.name != CONFIG_PARTITION {
            return Err(bad(format!(
                "disk_image.config_partition.name is {:?}, expected {CONFIG_PARTITION:?}",
                c.name
            )));
        }
        if c.size_bytes == 0
            || !c.offset_bytes.is_multiple_of(SECTOR)
            || !c.size_bytes.is_multiple_of(SECTOR)
        {
            return Err(bad(format!(
                "configuration partition at {} (+{} bytes) is empty or not {SECTOR}-byte aligned",
                c.offset_bytes, c.size_bytes
            )));
        }
        match c.offset_bytes.checked_add(c.size_bytes) {
            Some(end) if end <= disk_image.size => {}
            _ => {
                return Err(bad(format!(
                    "configuration partition [{}, +{}) is not inside the {}-byte image",
                    c.offset_bytes, c.size_bytes, disk_image.size
                )));
            }
        }
        Ok(ReleaseManifest {
            path: path.to_owned(),
            disk_image,
            sha256,
            config_signers: attestation::policy::manifest_config_signers(&json).map_err(bad)?,
        })
    }

    /// The config region as a byte range of the disk.
    pub fn config_range(&self) -> std::ops::Range<u64> {
        let c = &self.disk_image.config_partition;
        c.offset_bytes..c.offset_bytes + c.size_bytes
    }

    /// The manifest next to an image: `release-manifest.json` in the image's directory.
    pub fn default_path(image: &Path) -> PathBuf {
        image
            .parent()
            .unwrap_or(Path::new("."))
            .join("release-manifest.json")
    }
}

/// Checks the image against its manifest before anything is written: size, the GPT's
/// `sn-config` partition at the manifest's offset and size, and the SHA-256 of the whole
/// file (which also proves the configuration partition is as released).
pub fn check_image(
    image: &Path,
    manifest: &ReleaseManifest,
    progress: &dyn Fn(u64),
) -> Result<(), ImageError> {
    let bad = |reason: String| ImageError::Image {
        path: image.to_owned(),
        reason,
    };
    let meta = std::fs::metadata(image).map_err(io_err(image))?;
    if meta.len() != manifest.disk_image.size {
        return Err(bad(format!(
            "{} bytes, the manifest {} says {}",
            meta.len(),
            manifest.path.display(),
            manifest.disk_image.size
        )));
    }
    let (offset, size) = config_partition_of(image)?;
    let want = &manifest.disk_image.config_partition;
    if (offset, size) != (want.offset_bytes, want.size_bytes) {
        return Err(bad(format!(
            "GPT partition {CONFIG_PARTITION} is at {offset} (+{size} bytes), the manifest says {} (+{})",
            want.offset_bytes, want.size_bytes
        )));
    }
    let mut file = std::fs::File::open(image).map_err(io_err(image))?;
    let digest =
        sha256_of(&mut file, manifest.disk_image.size, None, progress).map_err(io_err(image))?;
    if digest != manifest.sha256 {
        return Err(bad(format!(
            "SHA-256 {} != manifest disk_image.sha256 {}",
            hex::encode(digest),
            manifest.disk_image.sha256
        )));
    }
    Ok(())
}

/// Byte offset and size of the GPT partition named `sn-config`.
pub fn config_partition_of(image: &Path) -> Result<(u64, u64), ImageError> {
    let bad = |reason: String| ImageError::Image {
        path: image.to_owned(),
        reason,
    };
    let disk = gpt::GptConfig::new()
        .writable(false)
        .logical_block_size(gpt::disk::LogicalBlockSize::Lb512)
        .open(image)
        .map_err(|e| bad(format!("no valid GPT: {e}")))?;
    let mut found = disk
        .partitions()
        .values()
        .filter(|p| p.is_used() && p.name == CONFIG_PARTITION);
    let part = found
        .next()
        .ok_or_else(|| bad(format!("the GPT has no partition named {CONFIG_PARTITION}")))?;
    if found.next().is_some() {
        return Err(bad(format!(
            "the GPT has more than one partition named {CONFIG_PARTITION}"
        )));
    }
    let offset = part
        .first_lba
        .checked_mul(SECTOR)
        .ok_or_else(|| bad("partition offset overflows".into()))?;
    let size = part
        .last_lba
        .checked_sub(part.first_lba)
        .and_then(|n| n.checked_add(1))
        .and_then(|n| n.checked_mul(SECTOR))
        .ok_or_else(|| bad("partition bounds are inverted".into()))?;
    Ok((offset, size))
}

/// SHA-256 of `reader`'s bytes [0, len), reading `zeroed` as zeros; fails on a short read.
pub fn sha256_of<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    zeroed: Option<std::ops::Range<u64>>,
    progress: &dyn Fn(u64),
) -> std::io::Result<[u8; 32]> {
    reader.seek(SeekFrom::Start(0))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BLOCK];
    let mut pos = 0u64;
    while pos < len {
        let n = usize::try_from((len - pos).min(BLOCK as u64)).unwrap_or(BLOCK);
        let chunk = buf.get_mut(..n).unwrap_or_default();
        reader.read_exact(chunk)?;
        if let Some(z) = &zeroed {
            zero_overlap(chunk, pos, z);
        }
        hasher.update(&*chunk);
        pos += n as u64;
        progress(pos);
    }
    Ok(hasher.finalize().into())
}

/// Zeroes the part of `chunk` (which starts at disk offset `start`) inside `range`.
fn zero_overlap(chunk: &mut [u8], start: u64, range: &std::ops::Range<u64>) {
    let end = start + chunk.len() as u64;
    let lo = range.start.max(start);
    let hi = range.end.min(end);
    if lo < hi {
        let (a, b) = ((lo - start) as usize, (hi - start) as usize);
        if let Some(part) = chunk.get_mut(a..b) {
            part.fill(0);
        }
    }
}

/// I/O block size for copying and hashing.
pub const BLOCK: usize = 4 << 20;

/// A small but genuine GPT disk image for practice and tests: protective MBR, primary and
/// backup GPT, a `sn-root` partition filled with seeded bytes and an all-zero `sn-config`
/// partition of `config_bytes`, plus the release manifest describing it (pinning
/// `config_signers`, as image/build's does). It holds no
/// operating system; the real image comes from `image/` (docs/operator-guide.md).
pub fn write_test_image(
    dir: &Path,
    root_bytes: u64,
    config_bytes: u64,
    config_signers: &[[u8; 32]],
) -> Result<ReleaseManifest, ImageError> {
    let image = dir.join("disk.img");
    if root_bytes == 0 || config_bytes == 0 || !config_bytes.is_multiple_of(SECTOR) {
        return Err(image_error(&image)(
            "partition sizes must be non-zero multiples of 512".into(),
        ));
    }
    // 1 MiB before the first partition (alignment), 1 MiB after the last (backup GPT).
    let total = (1 << 20) + root_bytes.div_ceil(1 << 20) * (1 << 20) + config_bytes + (1 << 20);
    create_with_protective_mbr(&image, total)?;
    let (mut file, root_offset) = write_test_gpt(&image, root_bytes, config_bytes)?;
    write_seeded_root(&mut file, root_offset, root_bytes).map_err(io_err(&image))?;
    drop(file);
    write_test_manifest(dir, &image, total, config_signers)
}

/// [`ImageError::Image`] about `path`, from its reason.
fn image_error(path: &Path) -> impl Fn(String) -> ImageError + '_ {
    move |reason| ImageError::Image {
        path: path.to_owned(),
        reason,
    }
}

/// Creates `image` as a sparse file of `total` bytes with a protective MBR in sector 0.
fn create_with_protective_mbr(image: &Path, total: u64) -> Result<(), ImageError> {
    let mut file = std::fs::File::create(image).map_err(io_err(image))?;
    file.set_len(total).map_err(io_err(image))?;
    let mbr = gpt::mbr::ProtectiveMBR::with_lb_size(
        u32::try_from(total / SECTOR - 1).unwrap_or(u32::MAX),
    );
    mbr.overwrite_lba0(&mut file)
        .map_err(|e| image_error(image)(format!("protective MBR: {e}")))?;
    Ok(())
}

/// Writes the primary and backup GPT with `sn-root` (`root_bytes`) and `sn-config`
/// (`config_bytes`), 1 MiB aligned; returns the image, still open, and `sn-root`'s byte
/// offset.
fn write_test_gpt(
    image: &Path,
    root_bytes: u64,
    config_bytes: u64,
) -> Result<(std::fs::File, u64), ImageError> {
    let bad = image_error(image);
    let mut disk = gpt::GptConfig::new()
        .writable(true)
        .logical_block_size(gpt::disk::LogicalBlockSize::Lb512)
        .create(image)
        .map_err(|e| bad(format!("creating the GPT: {e}")))?;
    let align = Some((1 << 20) / SECTOR);
    let root_id = disk
        .add_partition(
            "sn-root",
            root_bytes,
            gpt::partition_types::LINUX_FS,
            0,
            align,
        )
        .map_err(|e| bad(format!("adding sn-root: {e}")))?;
    disk.add_partition(
        CONFIG_PARTITION,
        config_bytes,
        gpt::partition_types::LINUX_FS,
        0,
        align,
    )
    .map_err(|e| bad(format!("adding {CONFIG_PARTITION}: {e}")))?;
    let root = disk
        .partitions()
        .get(&root_id)
        .cloned()
        .ok_or_else(|| bad("sn-root vanished".into()))?;
    let file = disk
        .write()
        .map_err(|e| bad(format!("writing the GPT: {e}")))?;
    Ok((file, root.first_lba * SECTOR))
}

/// Fills the `root_bytes` at `offset` with seeded, non-zero content (so a flipped byte
/// anywhere is visible) and syncs the file.
fn write_seeded_root(
    file: &mut std::fs::File,
    offset: u64,
    root_bytes: u64,
) -> std::io::Result<()> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut content = vec![0u8; usize::try_from(root_bytes).unwrap_or(0)];
    for b in content.iter_mut() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *b = state as u8;
    }
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.write_all(&content))
        .and_then(|()| file.sync_all())
}

/// Writes `release-manifest.json` into `dir` for the test image `image` of `total` bytes,
/// pinning `config_signers`, and loads it back.
fn write_test_manifest(
    dir: &Path,
    image: &Path,
    total: u64,
    config_signers: &[[u8; 32]],
) -> Result<ReleaseManifest, ImageError> {
    let (offset, size) = config_partition_of(image)?;
    let mut file = std::fs::File::open(image).map_err(io_err(image))?;
    let digest = sha256_of(&mut file, total, None, &|_| {}).map_err(io_err(image))?;
    let manifest = serde_json::json!({
        "schema": MANIFEST_SCHEMA,
        "note": "TEST IMAGE from `provision test-image`: a genuine GPT layout, no operating system",
        "config": { "signers": config_signers.iter().map(hex::encode).collect::<Vec<_>>() },
        "disk_image": {
            "file": "disk.img",
            "sha256": hex::encode(digest),
            "size": total,
            "config_partition": {
                "name": CONFIG_PARTITION,
                "offset_bytes": offset,
                "size_bytes": size,
            },
        },
    });
    let path = dir.join("release-manifest.json");
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(io_err(&path))?;
    ReleaseManifest::load(&path)
}
