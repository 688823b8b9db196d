//! The replica's runtime configuration (schema: docs/runtime-config.md): what the node
//! agent writes for the GPU-patched replica from the selected hardware profile, written
//! atomically so the replica never reads a half-written file.

use crate::policy::Policy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::Path;

/// The environment variable naming the runtime configuration file for the replica (the
/// image's replica unit sets it to `/run/sovereign-node/runtime-config.json`).
pub const RUNTIME_CONFIG_ENV: &str = "SOVEREIGN_RUNTIME_CONFIG";

/// Version of the file format; bumped on any incompatible change.
pub const RUNTIME_CONFIG_SCHEMA_VERSION: u32 = 3;

/// What the GPU-patched replica reads at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// [`RUNTIME_CONFIG_SCHEMA_VERSION`] for a file of this version.
    pub schema_version: u32,
    /// The profile it was derived from.
    pub profile: String,
    /// Backend, crossover and fallback per operation (`sha256` is checkpoint hashing).
    pub crypto: Policy,
    /// Why `crypto` differs from the profile's paths, if it does.
    pub crypto_notes: Vec<String>,
    /// Size and CPU pinning of each of the replica's thread pools.
    pub pools: BTreeMap<PoolKind, PoolConfig>,
}

/// One thread pool of the replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Threads the pool runs (at least 1).
    pub threads: u32,
    /// Logical CPU ids to pin the pool's threads to; empty: not pinned.
    pub cpus: Vec<u32>,
}

/// The replica's thread pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// Consensus.
    Consensus,
    /// Message execution of canisters.
    Execution,
    /// Query calls.
    Query,
    /// IDKG (threshold-key protocols).
    Idkg,
    /// State checkpointing (and its hashing).
    Checkpoint,
    /// Peer-to-peer and HTTP endpoints (mostly waiting on sockets).
    P2pHttp,
}

impl PoolKind {
    /// Every pool, in declaration order.
    pub const ALL: [PoolKind; 6] = [
        PoolKind::Consensus,
        PoolKind::Execution,
        PoolKind::Query,
        PoolKind::Idkg,
        PoolKind::Checkpoint,
        PoolKind::P2pHttp,
    ];

    /// The snake_case name used in profiles and the file: `consensus`, ..., `p2p_http`.
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Consensus => "consensus",
            PoolKind::Execution => "execution",
            PoolKind::Query => "query",
            PoolKind::Idkg => "idkg",
            PoolKind::Checkpoint => "checkpoint",
            PoolKind::P2pHttp => "p2p_http",
        }
    }

    /// Compute-bound pools run one thread per pinned CPU; the P2P/HTTP pool mostly waits
    /// on sockets, so it may run more threads than it has CPUs.
    pub fn threads_must_equal_cpus(self) -> bool {
        self != PoolKind::P2pHttp
    }
}

impl fmt::Display for PoolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl RuntimeConfig {
    /// The file's text: pretty-printed JSON ending in a newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

    /// Parses the file's text; unknown fields are an error.
    pub fn from_json(text: &str) -> Result<RuntimeConfig, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Writes the file through a temporary file in the same directory, flushed to disk,
    /// then renamed over `path`: a reader sees the old or the new file, never a mix.
    pub fn write_atomic(&self, path: &Path) -> std::io::Result<()> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".runtime-config.")
            .tempfile_in(dir)?;
        let text = self.to_json().map_err(std::io::Error::other)?;
        temp.write_all(text.as_bytes())?;
        temp.as_file().sync_all()?;
        {
            use std::os::unix::fs::PermissionsExt;
            // The replica runs as another user; the file holds no secret.
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        }
        temp.persist(path).map_err(|err| err.error)?;
        // Make the rename itself durable.
        std::fs::File::open(dir)?.sync_all()
    }
}
