//! On-disk cache of compiled cubins, keyed by the program's full source text (headers
//! included), the compile options, the architecture and the driver version. An entry carries
//! a SHA-256 of its cubin: a truncated or corrupt entry is detected, recompiled and
//! overwritten, never fatal. Cache write failures only cost the next start a recompile.

use super::compile::COMPILE_OPTIONS;
use super::sources::{HEADERS, KernelProgram};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"gpu-crypto-cubin";

/// `GPU_CRYPTO_KERNEL_CACHE`, else `$XDG_CACHE_HOME/sovereign-node/kernels`, else
/// `$HOME/.cache/sovereign-node/kernels`; `None` when none is set.
pub fn cache_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("GPU_CRYPTO_KERNEL_CACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("sovereign-node").join("kernels"));
    }
    non_empty("HOME").map(|h| PathBuf::from(h).join(".cache/sovereign-node/kernels"))
}

/// Hex key of one program for one architecture and driver.
pub fn cache_key(program: &KernelProgram, arch: &str, driver_version: i32) -> String {
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(program.name.as_bytes());
    field(program.source.as_bytes());
    for (name, text) in HEADERS {
        field(name.as_bytes());
        field(text.as_bytes());
    }
    for o in COMPILE_OPTIONS {
        field(o.as_bytes());
    }
    field(arch.as_bytes());
    field(&driver_version.to_le_bytes());
    hex::encode(h.finalize())
}

fn entry_path(dir: &Path, program: &KernelProgram, key: &str) -> PathBuf {
    let stem = program.name.replace(['/', '.'], "_");
    dir.join(format!("{stem}-{key}.cubin"))
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    Hit(Vec<u8>),
    Miss,
    /// The entry exists but fails its checksum (or cannot be read); the reason.
    Corrupt(String),
}

pub fn load(dir: &Path, program: &KernelProgram, key: &str) -> Lookup {
    let path = entry_path(dir, program, key);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
        Err(e) => return Lookup::Corrupt(format!("{}: {e}", path.display())),
    };
    if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
        return Lookup::Corrupt(format!("{}: bad header", path.display()));
    }
    let (sum, cubin) = bytes[MAGIC.len()..].split_at(32);
    if Sha256::digest(cubin).as_slice() != sum {
        return Lookup::Corrupt(format!("{}: checksum mismatch", path.display()));
    }
    Lookup::Hit(cubin.to_vec())
}

/// Writes atomically (temporary file, then rename). Errors are returned for logging only.
pub fn store(dir: &Path, program: &KernelProgram, key: &str, cubin: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = entry_path(dir, program, key);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut bytes = Vec::with_capacity(MAGIC.len() + 32 + cubin.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&Sha256::digest(cubin));
    bytes.extend_from_slice(cubin);
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, &path)
}

/// The entry file of a program (for tests that corrupt it).
pub fn entry_file(dir: &Path, program: &KernelProgram, arch: &str, driver_version: i32) -> PathBuf {
    entry_path(dir, program, &cache_key(program, arch, driver_version))
}
