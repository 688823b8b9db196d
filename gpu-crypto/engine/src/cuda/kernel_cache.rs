//! Where a program's cubin comes from, in this order:
//!
//! 1. **Precompiled** (`GPU_CRYPTO_PRECOMPILED_KERNELS`, read-only; the node image ships
//!    one): keyed by the program's full source text (headers included), the compile
//!    options, the architecture and the NVRTC version that compiled it, **not** the driver:
//!    a cubin for the exact `sm_XY` runs on any driver supporting the CUDA version of that
//!    NVRTC. The directory names that NVRTC version in its `nvrtc-version` file, so a node
//!    without NVRTC can compute the keys. A driver older than that CUDA version is refused
//!    (logged, counted) and the lookup goes on.
//! 2. **Cache** (`GPU_CRYPTO_KERNEL_CACHE`, else the user's cache directory; writable):
//!    keyed by source, options, architecture and the driver version, filled by compiling.
//! 3. **Compile** with NVRTC, unless `GPU_CRYPTO_KERNEL_MODE=cached-only`: then opening the
//!    GPU fails with every reason no cubin was usable ([`super::error::GpuError::KernelNotPrecompiled`]).
//!
//! Every entry carries a SHA-256 of its cubin: a truncated or corrupt entry is detected and
//! skipped (a corrupt writable entry is recompiled and overwritten), never fatal. Cache write
//! failures only cost the next start a recompile. [`load_counts`] counts what happened, for
//! the agent's metrics.

use super::compile::COMPILE_OPTIONS;
use super::sources::{HEADERS, KernelProgram};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The read-only directory of precompiled cubins: `GPU_CRYPTO_PRECOMPILED_KERNELS`.
pub const PRECOMPILED_ENV: &str = "GPU_CRYPTO_PRECOMPILED_KERNELS";
/// `compile` (default) or `cached-only`.
pub const MODE_ENV: &str = "GPU_CRYPTO_KERNEL_MODE";
/// File of a precompiled directory naming the NVRTC version of its cubins ("13.0").
pub const NVRTC_VERSION_FILE: &str = "nvrtc-version";

/// `GPU_CRYPTO_PRECOMPILED_KERNELS`, when set and not empty.
pub fn precompiled_dir() -> Option<PathBuf> {
    std::env::var_os(PRECOMPILED_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether kernels may be compiled when no cubin is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelMode {
    /// Precompiled, then the writable cache, then NVRTC.
    Compile,
    /// Precompiled or the writable cache only; no cubin fails the GPU's opening.
    CachedOnly,
}

impl KernelMode {
    /// Parses `GPU_CRYPTO_KERNEL_MODE`'s value; anything unknown is an error, not a default.
    pub fn parse(value: &str) -> Result<KernelMode, String> {
        match value {
            "" | "compile" => Ok(KernelMode::Compile),
            "cached-only" => Ok(KernelMode::CachedOnly),
            other => Err(format!(
                "{MODE_ENV}={other:?} is not a kernel mode (compile, cached-only)"
            )),
        }
    }

    /// From the environment (unset: `compile`).
    pub fn from_env() -> Result<KernelMode, String> {
        match std::env::var(MODE_ENV) {
            Ok(v) => KernelMode::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(KernelMode::Compile),
            Err(e) => Err(format!("{MODE_ENV}: {e}")),
        }
    }
}

/// Length-prefixed fields of a key: the program (name, source, headers) and the options.
fn program_hasher(program: &KernelProgram, domain: &str) -> Sha256 {
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(domain.as_bytes());
    field(program.name.as_bytes());
    field(program.source.as_bytes());
    for (name, text) in HEADERS {
        field(name.as_bytes());
        field(text.as_bytes());
    }
    for o in COMPILE_OPTIONS {
        field(o.as_bytes());
    }
    h
}

fn finish(mut h: Sha256, fields: &[&[u8]]) -> String {
    for b in fields {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    hex::encode(h.finalize())
}

/// Hex key of one program in the writable cache: architecture and driver version.
pub fn cache_key(program: &KernelProgram, arch: &str, driver_version: i32) -> String {
    finish(
        program_hasher(program, "cache"),
        &[arch.as_bytes(), &driver_version.to_le_bytes()],
    )
}

/// Hex key of one precompiled program: architecture and the NVRTC version (major, minor)
/// that compiled it; independent of the driver.
pub fn precompiled_key(program: &KernelProgram, arch: &str, nvrtc: (i32, i32)) -> String {
    finish(
        program_hasher(program, "precompiled"),
        &[
            arch.as_bytes(),
            &nvrtc.0.to_le_bytes(),
            &nvrtc.1.to_le_bytes(),
        ],
    )
}

/// The oldest CUDA driver API version (`cuDriverGetVersion`, e.g. 13000) that loads cubins
/// of NVRTC `major.minor`: the driver must support that CUDA version.
pub fn min_driver_version(nvrtc: (i32, i32)) -> i32 {
    nvrtc.0 * 1000 + nvrtc.1 * 10
}

/// Reads a precompiled directory's `nvrtc-version` ("MAJOR.MINOR").
pub fn read_nvrtc_version(dir: &Path) -> Result<(i32, i32), String> {
    let path = dir.join(NVRTC_VERSION_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = || format!("{}: {:?} is not MAJOR.MINOR", path.display(), text.trim());
    let (major, minor) = text.trim().split_once('.').ok_or_else(bad)?;
    let major: i32 = major.parse().map_err(|_| bad())?;
    let minor: i32 = minor.parse().map_err(|_| bad())?;
    if major <= 0 || minor < 0 {
        return Err(bad());
    }
    Ok((major, minor))
}

/// Writes a precompiled directory's `nvrtc-version`.
pub fn write_nvrtc_version(dir: &Path, nvrtc: (i32, i32)) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join(NVRTC_VERSION_FILE),
        format!("{}.{}\n", nvrtc.0, nvrtc.1),
    )
}

/// Stores one precompiled cubin (what the image build does); returns the entry's path.
pub fn store_precompiled(
    dir: &Path,
    program: &KernelProgram,
    arch: &str,
    nvrtc: (i32, i32),
    cubin: &[u8],
) -> std::io::Result<PathBuf> {
    let key = precompiled_key(program, arch, nvrtc);
    store(dir, program, &key, cubin)?;
    Ok(entry_path(dir, program, &key))
}

fn entry_path(dir: &Path, program: &KernelProgram, key: &str) -> PathBuf {
    dir.join(format!("{}{key}.cubin", entry_prefix(program)))
}

/// How every cache entry file of `program` begins (`ops/g1_decompress.cu` ->
/// `ops_g1_decompress_cu-`), the key and `.cubin` following: tests find entries by it.
pub fn entry_prefix(program: &KernelProgram) -> String {
    format!("{}-", program.name.replace(['/', '.'], "_"))
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// The entry's cubin, checksum verified.
    Hit(Vec<u8>),
    /// No entry for the key.
    Miss,
    /// The entry exists but fails its checksum (or cannot be read); the reason.
    Corrupt(String),
}

/// Reads the cache entry of `program` under `key` in `dir` and checks its checksum.
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

/// Where a usable cubin was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// The image's precompiled directory.
    Precompiled,
    /// The writable on-disk cache.
    Cache,
}

impl Origin {
    /// `precompiled` or `cache`: the load source's metric label.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Precompiled => "precompiled",
            Origin::Cache => "cache",
        }
    }
}

/// A cubin to try loading, in lookup order.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Which source it came from.
    pub origin: Origin,
    /// The file it was read from.
    pub path: PathBuf,
    /// Its bytes.
    pub cubin: Vec<u8>,
}

/// Why a source gave no cubin. `kind` is a short, bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The source skipped.
    pub origin: Origin,
    /// Short label, e.g. `no_entry`, `corrupt`, `driver_too_old`, `rejected_by_driver`.
    pub kind: &'static str,
    /// What was found, for the log.
    pub reason: String,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin.label(), self.reason)
    }
}

/// Where the cubins of one program may come from.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// The precompiled directory, if configured.
    pub precompiled: Option<&'a Path>,
    /// The writable cache directory, if any.
    pub writable: Option<&'a Path>,
}

/// The lookup of one program: the cubins to try in order, and why the other sources gave
/// none. A precompiled miss counts as a skip (the image meant to ship it); an empty
/// writable cache does not (it fills itself).
#[derive(Debug, Clone)]
pub struct Plan {
    /// The cubins to load, first choice first.
    pub candidates: Vec<Candidate>,
    /// The sources that gave none, and why.
    pub skipped: Vec<Skip>,
}

/// Looks `program` up for `arch` on a driver reporting `driver_version`: precompiled first
/// (refused when the driver is older than the CUDA version of its NVRTC), then the writable
/// cache. Reads files only; the caller loads the cubins and compiles on no success.
pub fn plan(
    program: &KernelProgram,
    arch: &str,
    driver_version: i32,
    sources: Sources<'_>,
) -> Plan {
    let mut plan = Plan {
        candidates: Vec::new(),
        skipped: Vec::new(),
    };
    let skip = |origin, kind, reason: String| Skip {
        origin,
        kind,
        reason,
    };
    if let Some(dir) = sources.precompiled {
        match read_nvrtc_version(dir) {
            Err(why) => plan
                .skipped
                .push(skip(Origin::Precompiled, "no_version", why)),
            Ok(nvrtc) if driver_version < min_driver_version(nvrtc) => {
                plan.skipped.push(skip(
                    Origin::Precompiled,
                    "driver_too_old",
                    format!(
                        "{}: the driver supports CUDA {}.{}, the cubins (NVRTC {}.{}) need CUDA {}.{} or newer",
                        dir.display(),
                        driver_version / 1000,
                        (driver_version % 1000) / 10,
                        nvrtc.0,
                        nvrtc.1,
                        nvrtc.0,
                        nvrtc.1
                    ),
                ))
            }
            Ok(nvrtc) => {
                let key = precompiled_key(program, arch, nvrtc);
                let path = entry_path(dir, program, &key);
                match load(dir, program, &key) {
                    Lookup::Hit(cubin) => plan.candidates.push(Candidate {
                        origin: Origin::Precompiled,
                        path,
                        cubin,
                    }),
                    Lookup::Miss => plan.skipped.push(skip(
                        Origin::Precompiled,
                        "no_entry",
                        format!(
                            "{}: no cubin of {} for {arch} (NVRTC {}.{}; {} missing: other sources or another architecture)",
                            dir.display(),
                            program.name,
                            nvrtc.0,
                            nvrtc.1,
                            path.display()
                        ),
                    )),
                    Lookup::Corrupt(why) => {
                        plan.skipped.push(skip(Origin::Precompiled, "corrupt", why))
                    }
                }
            }
        }
    }
    if let Some(dir) = sources.writable {
        let key = cache_key(program, arch, driver_version);
        let path = entry_path(dir, program, &key);
        match load(dir, program, &key) {
            Lookup::Hit(cubin) => plan.candidates.push(Candidate {
                origin: Origin::Cache,
                path,
                cubin,
            }),
            Lookup::Miss => {}
            Lookup::Corrupt(why) => plan.skipped.push(skip(Origin::Cache, "corrupt", why)),
        }
    }
    plan
}

/// The error of `cached-only` mode when no cubin was usable: every reason, in order.
pub fn cached_only_failure(program: &KernelProgram, arch: &str, skipped: &[Skip]) -> String {
    let mut msg = format!(
        "{MODE_ENV}=cached-only: no usable precompiled or cached cubin of {} for {arch}, and compiling is not allowed",
        program.name
    );
    if skipped.is_empty() {
        msg.push_str(&format!(" ({PRECOMPILED_ENV} unset and no cache entry)"));
    }
    for s in skipped {
        msg.push_str("; ");
        msg.push_str(&s.to_string());
    }
    msg
}

/// How programs were obtained since the process started: (outcome, reason kind) -> count.
/// Outcomes: `precompiled`, `cache`, `compiled`, `skipped_precompiled`, `skipped_cache`,
/// `refused_cached_only`. Reason kinds are short labels (`driver_too_old`, `no_entry`,
/// `corrupt`, `no_version`, `rejected_by_driver`; empty for a plain load).
static LOAD_COUNTS: Mutex<BTreeMap<(&'static str, &'static str), u64>> =
    Mutex::new(BTreeMap::new());

pub(crate) fn count(outcome: &'static str, kind: &'static str) {
    let mut m = LOAD_COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    *m.entry((outcome, kind)).or_default() += 1;
}

pub(crate) fn count_skip(s: &Skip) {
    count(
        match s.origin {
            Origin::Precompiled => "skipped_precompiled",
            Origin::Cache => "skipped_cache",
        },
        s.kind,
    );
}

/// One counter of [`load_counts`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadCount {
    /// `precompiled`, `cache`, `compiled`, `refused_cached_only`, or a skipped source
    /// (`skipped_precompiled`, `skipped_cache`).
    pub outcome: &'static str,
    /// For skips, the skip's kind; else empty.
    pub reason: &'static str,
    /// Programs counted since the process started.
    pub count: u64,
}

/// Snapshot of the kernel load counters (the agent exports them as a metric).
pub fn load_counts() -> Vec<LoadCount> {
    let m = LOAD_COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    m.iter()
        .map(|(&(outcome, reason), &count)| LoadCount {
            outcome,
            reason,
            count,
        })
        .collect()
}
