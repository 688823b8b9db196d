//! Flashing a node: check the image against its release manifest, open the target once and
//! check that descriptor (`target`), write the image with the node's archive in its
//! configuration partition through that descriptor, sync, read the whole target back through
//! the same descriptor and compare. A block device is written and read with `O_DIRECT`, so the
//! read-back sees the device, not the page cache. `verify` repeats the read-back at any later
//! time. Success is reported only after the read-back matched.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::exit::ExitStatus;
use crate::image::{BLOCK, ImageError, ReleaseManifest, check_image};
use crate::target::{
    Expect, OpenKind, OpenTarget, SystemView, TargetError, open_device, open_file,
};
use sn_config::archive::{Partition, read_partition, read_partition_any_signer};
use sn_config::{Bundle, ConfigError};

/// Why a flash or verify failed; [`FlashError::status`] maps it to the exit status.
#[derive(Debug, Error)]
pub enum FlashError {
    /// The image or its release manifest does not check out.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// The node's bundle does not load or verify.
    #[error(transparent)]
    Bundle(#[from] ConfigError),
    /// The target was refused, or opening or checking it failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// Writing, syncing or reading the target failed (ENOSPC, EIO, a short write, ...).
    #[error("{stage} {path}: {source}")]
    TargetIo {
        /// What was being done: "writing", "syncing", "reading", ...
        stage: &'static str,
        /// The target.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The bundle is signed by a key the image does not pin: its node would refuse it.
    #[error(
        "the bundle is signed by {signer}, which the image does not pin ({manifest} pins {pinned}): its node would refuse it"
    )]
    SignerNotPinned {
        /// The bundle's signer, hex.
        signer: String,
        /// The release manifest.
        manifest: PathBuf,
        /// The signers the manifest pins, hex, separated by ", ".
        pinned: String,
    },
    /// The bundle's archive does not fit the configuration partition.
    #[error("the node's archive is {archive} bytes, the configuration partition {partition}")]
    ArchiveTooLarge {
        /// The archive's size, bytes.
        archive: u64,
        /// The partition's size, bytes.
        partition: u64,
    },
    /// Read-back found something other than what was written.
    #[error("{path}: verification failed: {reasons}", reasons = reasons.join("; "))]
    Mismatch {
        /// The target.
        path: PathBuf,
        /// Every difference found.
        reasons: Vec<String>,
    },
}

impl FlashError {
    /// Exit status of `provision` for this error (docs/operator-guide.md).
    pub fn status(&self) -> ExitStatus {
        match self {
            FlashError::Mismatch { .. } => ExitStatus::CheckFailed,
            FlashError::Image(_)
            | FlashError::Bundle(_)
            | FlashError::SignerNotPinned { .. }
            | FlashError::ArchiveTooLarge { .. } => ExitStatus::InvalidInput,
            FlashError::Target(TargetError::Refused { .. }) => ExitStatus::TargetRefused,
            FlashError::Target(TargetError::Io { .. }) | FlashError::TargetIo { .. } => {
                ExitStatus::Io
            }
        }
    }

    /// [`FlashError::status`] as the process exit status.
    pub fn exit_code(&self) -> u8 {
        self.status().code()
    }
}

/// Progress reporting: a phase name and its length, then the bytes done.
pub trait Progress {
    /// A new phase `name` of `len` bytes starts (ending the previous one).
    fn phase(&self, name: &str, len: u64);
    /// `done` bytes of the current phase are done.
    fn advance(&self, done: u64);
    /// The last phase is over.
    fn finish(&self);
}

/// No progress output.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// What a successful flash or verify established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The device or file read back.
    pub target: PathBuf,
    /// SHA-256 of the target's [0, image size) with the configuration region read as zeros:
    /// equal to the manifest's disk_image.sha256.
    pub image_sha256: String,
    /// SHA-256 of the configuration region as read back.
    pub config_sha256: String,
    /// The node the configuration partition's bundle is for.
    pub node_name: String,
    /// Bytes read back: the image's size.
    pub bytes: u64,
}

fn target_io<'a>(
    stage: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> FlashError + 'a {
    move |source| FlashError::TargetIo {
        stage,
        path: path.to_owned(),
        source,
    }
}

/// The whole configuration region for `bundle`: its archive padded with zeros, for an image
/// that pins the bundle's signer.
pub fn config_region(bundle: &Bundle, manifest: &ReleaseManifest) -> Result<Vec<u8>, FlashError> {
    if !manifest.config_signers.contains(&bundle.signer()) {
        return Err(FlashError::SignerNotPinned {
            signer: hex::encode(bundle.signer()),
            manifest: manifest.path.clone(),
            pinned: manifest
                .config_signers
                .iter()
                .map(hex::encode)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let archive = bundle.archive()?;
    let partition = manifest.disk_image.config_partition.size_bytes;
    if archive.len() as u64 > partition {
        return Err(FlashError::ArchiveTooLarge {
            archive: archive.len() as u64,
            partition,
        });
    }
    let mut region = archive;
    region.resize(usize::try_from(partition).unwrap_or(0), 0);
    Ok(region)
}

/// Where `provision flash` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A whole block device (`--target`), optionally pinned by serial and size.
    Device {
        /// The device node, e.g. /dev/sdb.
        path: PathBuf,
        /// The serial and size it must have.
        expect: Expect,
    },
    /// A regular file (`--to-file`), created if missing.
    File {
        /// The file.
        path: PathBuf,
    },
}

impl Destination {
    /// The device's or the file's path.
    pub fn path(&self) -> &Path {
        match self {
            Destination::Device { path, .. } | Destination::File { path } => path,
        }
    }
}

/// A page-aligned I/O buffer: `O_DIRECT` needs the memory aligned to the logical block size.
struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
}

const ALIGN: usize = 4096;

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let storage = vec![0u8; len + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN).min(ALIGN);
        AlignedBuf { storage, start }
    }

    fn get(&mut self, n: usize) -> &mut [u8] {
        let start = self.start;
        self.storage.get_mut(start..start + n).unwrap_or_default()
    }
}

/// Writes `image` and `bundle` to `dest` and verifies the result by reading it back through
/// the same descriptor.
pub fn flash(
    image: &Path,
    manifest: &ReleaseManifest,
    bundle: &Bundle,
    dest: &Destination,
    view: &SystemView,
    progress: &dyn Progress,
) -> Result<Verified, FlashError> {
    let size = manifest.disk_image.size;
    let region = config_region(bundle, manifest)?;
    // Opened and checked once; held (exclusively, for a device) from here to the read-back.
    let target = match dest {
        Destination::Device { path, expect } => open_device(path, size, expect, view)?,
        Destination::File { path } => open_file(path, image, view)?,
    };
    let remove_if_created = |t: &OpenTarget| {
        if let OpenKind::File { created: true } = t.kind {
            let _ = std::fs::remove_file(&t.path);
        }
    };
    progress.phase("checking the image", size);
    if let Err(e) = check_image(image, manifest, &|done| progress.advance(done)) {
        remove_if_created(&target);
        return Err(e.into());
    }
    let mut input = match File::open(image) {
        Ok(f) => f,
        Err(source) => {
            remove_if_created(&target);
            return Err(ImageError::Io {
                path: image.to_owned(),
                source,
            }
            .into());
        }
    };
    write_target(&target, image, &mut input, manifest, &region, progress)?;
    let expected_config = Sha256::digest(&region);
    read_back(
        &target.path,
        &target.file,
        manifest,
        Some(expected_config.into()),
        Some(bundle.signer()),
        progress,
    )
}

fn write_target(
    target: &OpenTarget,
    image: &Path,
    input: &mut File,
    manifest: &ReleaseManifest,
    region: &[u8],
    progress: &dyn Progress,
) -> Result<(), FlashError> {
    let path = &target.path;
    let out = &target.file;
    let size = manifest.disk_image.size;
    let config = manifest.config_range();
    let is_file = matches!(target.kind, OpenKind::File { .. });
    if is_file {
        // Emptied first: zero blocks are skipped below (a sparse file), so nothing old may remain.
        out.set_len(0).map_err(target_io("truncating", path))?;
    }
    progress.phase("writing", size);
    let mut buf = AlignedBuf::new(BLOCK);
    let mut pos = 0u64;
    while pos < size {
        let n = usize::try_from((size - pos).min(BLOCK as u64)).unwrap_or(BLOCK);
        let chunk = buf.get(n);
        std::io::Read::read_exact(input, chunk).map_err(|source| ImageError::Io {
            path: image.to_owned(),
            source,
        })?;
        // The image's configuration partition is all zeros (its SHA-256 was checked): the
        // node's archive, padded with zeros, takes its place in the same pass.
        overlay(chunk, pos, &config, region);
        if !(is_file && chunk.iter().all(|&b| b == 0)) {
            // write_all_at turns a short write into an error (WriteZero) rather than moving on.
            out.write_all_at(chunk, pos)
                .map_err(target_io("writing", path))?;
        }
        pos += n as u64;
        progress.advance(pos);
    }
    if is_file {
        // Zero blocks were skipped (a sparse file); the length covers any trailing ones.
        out.set_len(size).map_err(target_io("writing", path))?;
    }
    // O_DIRECT bypasses the page cache, not the device's write cache: fsync flushes that.
    out.sync_all().map_err(target_io("syncing", path))?;
    progress.finish();
    Ok(())
}

/// Copies the part of `region` (the bytes of disk range `range`) that `chunk` (at disk offset
/// `start`) overlaps into `chunk`.
fn overlay(chunk: &mut [u8], start: u64, range: &std::ops::Range<u64>, region: &[u8]) {
    let end = start + chunk.len() as u64;
    let lo = range.start.max(start);
    let hi = range.end.min(end);
    if lo < hi {
        let (a, b) = ((lo - start) as usize, (hi - start) as usize);
        let (ra, rb) = ((lo - range.start) as usize, (hi - range.start) as usize);
        if let (Some(dst), Some(src)) = (chunk.get_mut(a..b), region.get(ra..rb)) {
            dst.copy_from_slice(src);
        }
    }
}

/// Re-checks a flashed target: the image part against the manifest, the configuration
/// partition as an intact bundle archive (and, given `expected_config`, exactly those bytes).
/// A block device is read with `O_DIRECT`.
pub fn verify_target(
    target_path: &Path,
    manifest: &ReleaseManifest,
    expected_config: Option<[u8; 32]>,
    progress: &dyn Progress,
) -> Result<Verified, FlashError> {
    let file = File::open(target_path).map_err(target_io("opening", target_path))?;
    let meta = file.metadata().map_err(target_io("opening", target_path))?;
    if meta.file_type().is_block_device() {
        fcntl(file.as_fd(), FcntlArg::F_SETFL(OFlag::O_DIRECT)).map_err(|e| {
            target_io("opening", target_path)(std::io::Error::other(format!(
                "setting O_DIRECT: {e}"
            )))
        })?;
    } else if !meta.is_file() {
        return Err(FlashError::Target(TargetError::Refused {
            target: target_path.to_owned(),
            reason: "neither a block device nor a regular file".into(),
        }));
    }
    read_back(
        target_path,
        &file,
        manifest,
        expected_config,
        None,
        progress,
    )
}

/// Reads [0, image size) back through the target's descriptor: the image part's SHA-256 with
/// the configuration region read as zeros, and the configuration region itself: a bundle
/// signed by `signer` when given (the bundle just written), else by whichever key signed.
fn read_back(
    path: &Path,
    file: &File,
    manifest: &ReleaseManifest,
    expected_config: Option<[u8; 32]>,
    signer: Option<[u8; 32]>,
    progress: &dyn Progress,
) -> Result<Verified, FlashError> {
    let size = manifest.disk_image.size;
    let mismatch = |reasons: Vec<String>| FlashError::Mismatch {
        path: path.to_owned(),
        reasons,
    };
    let have = std::io::Seek::seek(&mut &*file, std::io::SeekFrom::End(0))
        .map_err(target_io("reading", path))?;
    if have < size {
        return Err(mismatch(vec![format!(
            "the target has {have} bytes, the image {size}: the write was cut short"
        )]));
    }
    let (digest, region) = read_image_back(path, file, size, manifest.config_range(), progress)?;
    let mut reasons = Vec::new();
    if digest != manifest.sha256 {
        reasons.push(format!(
            "image SHA-256 (configuration partition read as zeros) {} != manifest {}",
            hex::encode(digest),
            manifest.disk_image.sha256
        ));
    }
    let config_digest: [u8; 32] = Sha256::digest(&region).into();
    if let Some(want) = expected_config
        && config_digest != want
    {
        reasons.push(format!(
            "configuration partition SHA-256 {} != written {}",
            hex::encode(config_digest),
            hex::encode(want)
        ));
    }
    let node_name = node_on_partition(&region, signer, &mut reasons);
    if !reasons.is_empty() {
        return Err(mismatch(reasons));
    }
    Ok(Verified {
        target: path.to_owned(),
        image_sha256: hex::encode(digest),
        config_sha256: hex::encode(config_digest),
        node_name,
        bytes: size,
    })
}

/// Reads [0, `size`) of `file` in [`BLOCK`]s: the SHA-256 of those bytes with `range` (the
/// configuration region) read as zeros, and the bytes of `range` themselves.
fn read_image_back(
    path: &Path,
    file: &File,
    size: u64,
    range: std::ops::Range<u64>,
    progress: &dyn Progress,
) -> Result<([u8; 32], Vec<u8>), FlashError> {
    progress.phase("reading back", size);
    let mut hasher = Sha256::new();
    let mut region = vec![0u8; usize::try_from(range.end - range.start).unwrap_or(0)];
    let mut buf = AlignedBuf::new(BLOCK);
    let mut pos = 0u64;
    while pos < size {
        let n = usize::try_from((size - pos).min(BLOCK as u64)).unwrap_or(BLOCK);
        let chunk = buf.get(n);
        file.read_exact_at(chunk, pos)
            .map_err(target_io("reading", path))?;
        take_region(chunk, pos, &range, &mut region);
        hasher.update(&*chunk);
        pos += n as u64;
        progress.advance(pos);
    }
    progress.finish();
    Ok((hasher.finalize().into(), region))
}

/// Copies the part of `chunk` (which starts at disk offset `start`) inside `range` into
/// `region` (the bytes of `range`), then zeroes it in `chunk`: the inverse of [`overlay`].
fn take_region(chunk: &mut [u8], start: u64, range: &std::ops::Range<u64>, region: &mut [u8]) {
    let end = start + chunk.len() as u64;
    let (lo, hi) = (range.start.max(start), range.end.min(end));
    if lo < hi {
        let (a, b) = ((lo - start) as usize, (hi - start) as usize);
        let (ra, rb) = ((lo - range.start) as usize, (hi - range.start) as usize);
        if let (Some(src), Some(dst)) = (chunk.get_mut(a..b), region.get_mut(ra..rb)) {
            dst.copy_from_slice(src);
            src.fill(0);
        }
    }
}

/// The name of the node whose bundle the configuration region holds: signed by `signer`
/// when given (the bundle just written), else by whichever key signed. An empty or unreadable
/// partition adds its reason to `reasons` and names no node.
fn node_on_partition(region: &[u8], signer: Option<[u8; 32]>, reasons: &mut Vec<String>) -> String {
    let read = match signer {
        Some(key) => read_partition(region, &[key]),
        None => read_partition_any_signer(region),
    };
    match read {
        Ok(Partition::Bundle { bundle, .. }) => bundle.node().name.clone(),
        Ok(Partition::Empty) => {
            reasons.push("the configuration partition is empty (all zeros)".into());
            String::new()
        }
        Err(e) => {
            reasons.push(format!("configuration partition: {e}"));
            String::new()
        }
    }
}
