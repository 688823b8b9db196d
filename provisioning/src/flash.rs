//! Flashing a node: check the image against its release manifest, refuse unsafe targets,
//! write the image, write the node's archive into the configuration partition, sync, drop
//! the target's cached pages, read the whole target back and compare. `verify` repeats the
//! read-back at any later time. Success is reported only after the read-back matched.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::image::{BLOCK, ImageError, ReleaseManifest, check_image, sha256_of};
use crate::target::{SystemView, Target, TargetError, TargetKind, check_target};
use sn_config::archive::{Partition, read_partition};
use sn_config::{Bundle, ConfigError};

#[derive(Debug, Error)]
pub enum FlashError {
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error(transparent)]
    Bundle(#[from] ConfigError),
    #[error(transparent)]
    Target(#[from] TargetError),
    /// Writing, syncing or reading the target failed (ENOSPC, EIO, a short write, ...).
    #[error("{stage} {path}: {source}")]
    TargetIo {
        stage: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: the target has {have} bytes, the image needs {need}")]
    TooSmall { path: PathBuf, have: u64, need: u64 },
    /// The bundle's archive does not fit the configuration partition.
    #[error("the node's archive is {archive} bytes, the configuration partition {partition}")]
    ArchiveTooLarge { archive: u64, partition: u64 },
    /// Read-back found something other than what was written.
    #[error("{path}: verification failed: {reasons}", reasons = reasons.join("; "))]
    Mismatch { path: PathBuf, reasons: Vec<String> },
}

impl FlashError {
    /// Exit status of `provision` for this error (docs/operator-guide.md).
    pub fn exit_code(&self) -> u8 {
        match self {
            FlashError::Mismatch { .. } => 1,
            FlashError::Image(_) | FlashError::Bundle(_) | FlashError::ArchiveTooLarge { .. } => 2,
            FlashError::Target(TargetError::Refused { .. }) => 3,
            FlashError::Target(TargetError::Io { .. })
            | FlashError::TargetIo { .. }
            | FlashError::TooSmall { .. } => 4,
        }
    }
}

/// Progress reporting: a phase name and its length, then the bytes done.
pub trait Progress {
    fn phase(&self, name: &str, len: u64);
    fn advance(&self, done: u64);
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
    pub target: PathBuf,
    /// SHA-256 of the target's [0, image size) with the configuration region read as zeros:
    /// equal to the manifest's disk_image.sha256.
    pub image_sha256: String,
    /// SHA-256 of the configuration region as read back.
    pub config_sha256: String,
    pub node_name: String,
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

/// The whole configuration region for `bundle`: its archive padded with zeros.
pub fn config_region(bundle: &Bundle, manifest: &ReleaseManifest) -> Result<Vec<u8>, FlashError> {
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

/// Writes `image` and `bundle` to `target` and verifies the result by reading it back.
pub fn flash(
    image: &Path,
    manifest: &ReleaseManifest,
    bundle: &Bundle,
    target_path: &Path,
    view: &SystemView,
    progress: &dyn Progress,
) -> Result<Verified, FlashError> {
    let target = Target::inspect(target_path)?;
    check_target(&target, image, view)?;
    let region = config_region(bundle, manifest)?;
    let archive_len = bundle.archive()?.len();
    let size = manifest.disk_image.size;

    progress.phase("checking the image", size);
    check_image(image, manifest, &|done| progress.advance(done))?;

    let is_file = !matches!(target.kind, TargetKind::BlockDevice { .. });
    let mut out = OpenOptions::new()
        .write(true)
        .create(is_file)
        .truncate(is_file)
        .open(target_path)
        .map_err(target_io("opening", target_path))?;
    if !is_file {
        let have = out
            .seek(SeekFrom::End(0))
            .map_err(target_io("sizing", target_path))?;
        if have < size {
            return Err(FlashError::TooSmall {
                path: target_path.to_owned(),
                have,
                need: size,
            });
        }
    }

    progress.phase("writing", size);
    let mut input = File::open(image).map_err(|source| ImageError::Io {
        path: image.to_owned(),
        source,
    })?;
    let mut buf = vec![0u8; BLOCK];
    let mut pos = 0u64;
    out.seek(SeekFrom::Start(0))
        .map_err(target_io("writing", target_path))?;
    while pos < size {
        let n = usize::try_from((size - pos).min(BLOCK as u64)).unwrap_or(BLOCK);
        let chunk = buf.get_mut(..n).unwrap_or_default();
        input.read_exact(chunk).map_err(|source| ImageError::Io {
            path: image.to_owned(),
            source,
        })?;
        if is_file && chunk.iter().all(|&b| b == 0) {
            out.seek(SeekFrom::Current(n as i64))
                .map_err(target_io("writing", target_path))?;
        } else {
            // write_all turns a short write into an error (WriteZero) rather than moving on.
            out.write_all(chunk)
                .map_err(target_io("writing", target_path))?;
        }
        pos += n as u64;
        progress.advance(pos);
    }
    if is_file {
        // Zero blocks were skipped (a sparse file); the length covers any trailing ones.
        out.set_len(size)
            .map_err(target_io("writing", target_path))?;
    }
    // The rest of the region is zeros already: the image's configuration partition is all
    // zeros (checked above) and was written as such (or left a hole in a file target).
    // The read-back checks the whole region either way.
    let offset = manifest.config_range().start;
    out.seek(SeekFrom::Start(offset))
        .and_then(|_| out.write_all(region.get(..archive_len).unwrap_or(&region)))
        .map_err(target_io(
            "writing the configuration partition of",
            target_path,
        ))?;
    out.sync_all().map_err(target_io("syncing", target_path))?;
    // Read back from the device, not from the page cache: drop the clean cached pages.
    let _ = nix::fcntl::posix_fadvise(
        out.as_fd(),
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    );
    drop(out);
    progress.finish();

    let expected_config = Sha256::digest(&region);
    verify_target(
        target_path,
        manifest,
        Some(expected_config.into()),
        progress,
    )
}

/// Re-checks a flashed target: the image part against the manifest, the configuration
/// partition as an intact bundle archive (and, given `expected_config`, exactly those bytes).
pub fn verify_target(
    target_path: &Path,
    manifest: &ReleaseManifest,
    expected_config: Option<[u8; 32]>,
    progress: &dyn Progress,
) -> Result<Verified, FlashError> {
    let size = manifest.disk_image.size;
    let range = manifest.config_range();
    let mut file = File::open(target_path).map_err(target_io("opening", target_path))?;
    let have = file
        .seek(SeekFrom::End(0))
        .map_err(target_io("reading", target_path))?;
    let mut reasons = Vec::new();
    if have < size {
        reasons.push(format!(
            "the target has {have} bytes, the image {size}: the write was cut short"
        ));
        return Err(FlashError::Mismatch {
            path: target_path.to_owned(),
            reasons,
        });
    }
    progress.phase("reading back", size);
    let digest = sha256_of(&mut file, size, Some(range.clone()), &|d| {
        progress.advance(d)
    })
    .map_err(target_io("reading", target_path))?;
    progress.finish();
    if digest != manifest.sha256 {
        reasons.push(format!(
            "image SHA-256 (configuration partition read as zeros) {} != manifest {}",
            hex::encode(digest),
            manifest.disk_image.sha256
        ));
    }
    let mut region = vec![0u8; usize::try_from(range.end - range.start).unwrap_or(0)];
    file.seek(SeekFrom::Start(range.start))
        .and_then(|_| file.read_exact(&mut region))
        .map_err(target_io("reading", target_path))?;
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
    let node_name = match read_partition(&region, &[]) {
        Ok(Partition::Bundle { bundle, .. }) => bundle.node().name.clone(),
        Ok(Partition::Empty) => {
            reasons.push("the configuration partition is empty (all zeros)".into());
            String::new()
        }
        Err(e) => {
            reasons.push(format!("configuration partition: {e}"));
            String::new()
        }
    };
    if !reasons.is_empty() {
        return Err(FlashError::Mismatch {
            path: target_path.to_owned(),
            reasons,
        });
    }
    Ok(Verified {
        target: target_path.to_owned(),
        image_sha256: hex::encode(digest),
        config_sha256: hex::encode(config_digest),
        node_name,
        bytes: size,
    })
}
