//! The replica's runtime configuration (the type and its file: `gpu_crypto_api::runtime_config`)
//! as a profile states it and as it is adjusted to the probed machine.

use crate::facts::MachineFacts;
use crate::profile::{GpuRequirement, Profile};
use crate::select::Selection;
use gpu_crypto_api::operation::Operation;
use gpu_crypto_api::policy::{BackendChoice, Policy};
pub use gpu_crypto_api::runtime_config::{
    PoolConfig, RUNTIME_CONFIG_SCHEMA_VERSION, RuntimeConfig,
};

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
        policy.operation_mut(op).backend = BackendChoice::Cpu;
    }
    policy
}
