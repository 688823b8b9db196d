//! Durable, atomic writes of the configuration's files and directories, and the names of
//! file types in errors.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

pub(crate) fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> ConfigError + '_ {
    move |source| ConfigError::Io {
        path: path.to_owned(),
        source,
    }
}

/// fsync of a directory (its entries are durable).
pub fn sync_dir(dir: &Path) -> Result<(), ConfigError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// Writes `path` through a temporary file in its directory: write, fsync, rename.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), ConfigError> {
    let dir = parent_of(path);
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_at(path))
}

pub(crate) fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Names a file type found in a bundle directory, for errors.
pub(crate) fn describe_file_type(t: std::fs::FileType) -> String {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
    .into()
}
