//! The replica's runtime configuration (schema: docs/runtime-config.md), written
//! atomically so the replica never reads a half-written file.

use crate::facts::MachineFacts;
use crate::profile::{GpuRequirement, PoolKind, Profile};
use crate::select::Selection;
use gpu_crypto::policy::{BackendChoice, Operation, Policy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Version of the file format; bumped on any incompatible change.
pub const RUNTIME_CONFIG_SCHEMA_VERSION: u32 = 1;

/// What the GPU-patched replica reads at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    pub schema_version: u32,
    /// The profile it was derived from.
    pub profile: String,
    /// Backend, crossover and fallback per operation (`sha256` is checkpoint hashing).
    pub crypto: Policy,
    /// Why `crypto` differs from the profile's paths, if it does.
    pub crypto_notes: Vec<String>,
    pub pools: BTreeMap<PoolKind, PoolConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub threads: u32,
    /// Logical CPU ids to pin the pool's threads to; empty: not pinned.
    pub cpus: Vec<u32>,
}

impl Profile {
    /// The configuration exactly as the profile states it.
    pub fn runtime_config(&self) -> RuntimeConfig {
        RuntimeConfig {
            schema_version: RUNTIME_CONFIG_SCHEMA_VERSION,
            profile: self.name.clone(),
            crypto: self.crypto,
            crypto_notes: Vec::new(),
            pools: self
                .pools
                .iter()
                .map(|(kind, pool)| {
                    (
                        kind,
                        PoolConfig {
                            threads: pool.threads,
                            cpus: pool.cpus.as_ref().map(|c| c.to_vec()).unwrap_or_default(),
                        },
                    )
                })
                .collect(),
        }
    }
}

impl Selection {
    /// The profile's configuration adjusted to the probed machine: where the profile
    /// only prefers a GPU and none is usable, every path is set to `cpu` explicitly and
    /// the reason is recorded in `crypto_notes` (no silent fallback).
    pub fn runtime_config(&self, facts: &MachineFacts) -> RuntimeConfig {
        let mut config = self.profile.runtime_config();
        if !config.crypto.wants_gpu() {
            return config;
        }
        let device = config.crypto.gpu_device;
        let usable = match facts.gpus.gpus.iter().find(|g| g.index as usize == device) {
            Some(gpu) => gpu.usable(),
            None => Err(facts
                .gpus
                .absence_reason()
                .unwrap_or_else(|| format!("no GPU with index {device}"))),
        };
        if let Err(reason) = usable {
            match self.profile.requirements.gpu {
                GpuRequirement::Preferred => {
                    config.crypto = cpu_paths(config.crypto);
                    config.crypto_notes.push(format!(
                        "GPU preferred but not usable ({reason}): all crypto paths set to cpu"
                    ));
                }
                GpuRequirement::Required | GpuRequirement::Off => {
                    config.crypto_notes.push(format!(
                        "GPU required but not usable ({reason}): the node is not ready"
                    ));
                }
            }
        }
        config
    }
}

fn cpu_paths(mut policy: Policy) -> Policy {
    for op in Operation::ALL {
        let op_policy = match op {
            Operation::Decompress => &mut policy.decompress,
            Operation::Msm => &mut policy.msm,
            Operation::BlsVerify => &mut policy.bls_verify,
            Operation::Sha256 => &mut policy.sha256,
        };
        op_policy.backend = BackendChoice::Cpu;
    }
    policy
}

impl RuntimeConfig {
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

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
