//! The governing body's witness of the last registry head it verified, kept outside the
//! registry's directory.
//!
//! A signed head shows what the governing body signed, not that it is the latest: whoever
//! can write the registry's directory can put back an older registry together with its
//! older, validly signed head. The witness is that head (record count, SHA-256 of the last
//! covered line, signer, signature) as the governing body last verified or signed it,
//! written (temporary file, fsync, rename) after every successful `registry check`,
//! `registry nodes`, `registry sign` and transition. [`check`] refuses a registry whose
//! signed head covers fewer records than the witness (a rollback) or whose records at the
//! witness's count end in another line (a fork). A missing witness is refused unless the
//! caller says explicitly that there is none yet; an existing witness is always checked.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::exit::ExitStatus;
use crate::registry::{Registry, SignedHead, verify_head_signature};

/// Why the registry was refused against its witness, or the witness could not be used.
#[derive(Debug, Error)]
pub enum WitnessError {
    /// No witness at the path and no explicit override.
    #[error(
        "no witness at {witness}: without it a rolled-back registry with its older signed head cannot be told from the current one (give the witness with --witness, or accept this registry as the starting point with --no-witness)"
    )]
    Missing {
        /// Where the witness was looked for.
        witness: PathBuf,
    },
    /// The override was given although a witness exists: the witness is always checked.
    #[error(
        "--no-witness: a witness exists at {witness} and is always checked (remove it by hand only if it is known to be wrong)"
    )]
    OverrideWithWitness {
        /// The existing witness.
        witness: PathBuf,
    },
    /// The registry's signed head is older than the witness.
    #[error(
        "rollback: the signed head of {registry} covers {signed} record(s), the witness {witness} saw {witnessed}: an older registry was put back"
    )]
    Rollback {
        /// The registry file.
        registry: PathBuf,
        /// The witness file.
        witness: PathBuf,
        /// Records the registry's signed head covers.
        signed: u64,
        /// Records the witness covers.
        witnessed: u64,
    },
    /// The registry does not extend the witnessed head.
    #[error(
        "fork: record {records} of {registry} has SHA-256 {found}, the witness {witness} saw {witnessed}: the registry does not extend the head last verified"
    )]
    Fork {
        /// The registry file.
        registry: PathBuf,
        /// The witness file.
        witness: PathBuf,
        /// The witness's record count, where the prefixes differ.
        records: u64,
        /// SHA-256 of the registry's line at that count.
        found: String,
        /// SHA-256 the witness recorded.
        witnessed: String,
    },
    /// The witness is unreadable, malformed, not the governing body's, or badly placed.
    #[error("witness {witness}: {reason}")]
    Invalid {
        /// The witness file.
        witness: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing the witness failed.
    #[error("writing witness {witness}: {reason}")]
    Write {
        /// The witness file.
        witness: PathBuf,
        /// The operating system's error.
        reason: String,
    },
}

impl WitnessError {
    /// Exit status of `provision` for this error.
    pub fn status(&self) -> ExitStatus {
        match self {
            WitnessError::Write { .. } => ExitStatus::Io,
            WitnessError::OverrideWithWitness { .. } => ExitStatus::InvalidInput,
            _ => ExitStatus::RegistryBroken,
        }
    }
}

/// The witness file: the last verified signed head, and the registry it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Witness {
    /// The registry file, as the governing body named it (informational).
    pub registry: String,
    /// Records the witnessed head covers.
    pub records: u64,
    /// SHA-256 of the last covered line (the chained digest of the whole prefix).
    pub head_sha256: String,
    /// The governing body's Ed25519 public key, hex.
    pub signer: String,
    /// The head's signature, as in the signed head.
    pub signature: String,
}

impl Witness {
    fn head(&self) -> SignedHead {
        SignedHead {
            records: self.records,
            head_sha256: self.head_sha256.clone(),
            signer: self.signer.clone(),
            signature: self.signature.clone(),
        }
    }
}

/// What the witness check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The registry extends the witness, which covered this many records.
    Extends(u64),
    /// There was no witness and the override was given: nothing was checked.
    Overridden,
}

/// The default witness of `registry`: one file per registry (named by the SHA-256 of its
/// absolute path) under `$XDG_CONFIG_HOME/sovereign-node/registry-witness/`, or
/// `$HOME/.config/...`; None when neither variable is set.
pub fn default_path(registry: &Path) -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let absolute = std::path::absolute(registry).unwrap_or_else(|_| registry.to_owned());
    let name = hex::encode(Sha256::digest(absolute.as_os_str().as_encoded_bytes()));
    Some(
        config
            .join("sovereign-node/registry-witness")
            .join(format!("{name}.json")),
    )
}

/// Checks `reg`, whose signed head `signed` verified, against the witness at `witness`;
/// `no_witness` is the explicit override for a witness that does not exist yet.
pub fn check(
    reg: &Registry,
    signed: &SignedHead,
    witness: &Path,
    no_witness: bool,
    signer: &[u8; 32],
) -> Result<Outcome, WitnessError> {
    refuse_inside_registry_dir(reg.path(), witness)?;
    let Some(w) = load(witness, signer)? else {
        return match no_witness {
            true => Ok(Outcome::Overridden),
            false => Err(WitnessError::Missing {
                witness: witness.to_owned(),
            }),
        };
    };
    if no_witness {
        return Err(WitnessError::OverrideWithWitness {
            witness: witness.to_owned(),
        });
    }
    if signed.records < w.records {
        return Err(WitnessError::Rollback {
            registry: reg.path().to_owned(),
            witness: witness.to_owned(),
            signed: signed.records,
            witnessed: w.records,
        });
    }
    let found = reg.prefix_sha256(w.records).unwrap_or("(none)");
    if found != w.head_sha256 {
        return Err(WitnessError::Fork {
            registry: reg.path().to_owned(),
            witness: witness.to_owned(),
            records: w.records,
            found: found.to_string(),
            witnessed: w.head_sha256,
        });
    }
    Ok(Outcome::Extends(w.records))
}

/// The witness at `path`, its signature verified under `signer`; None when there is none.
fn load(path: &Path, signer: &[u8; 32]) -> Result<Option<Witness>, WitnessError> {
    let invalid = |reason: String| WitnessError::Invalid {
        witness: path.to_owned(),
        reason,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(invalid(e.to_string())),
    };
    let w: Witness =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not a witness: {e}")))?;
    // A witness must be a head the governing body signed: a forged one could hide a fork.
    verify_head_signature(&w.head(), signer)
        .map_err(|why| invalid(format!("the witnessed head{why}")))?;
    Ok(Some(w))
}

/// A witness in (or under) the registry's own directory would be put back with it.
fn refuse_inside_registry_dir(registry: &Path, witness: &Path) -> Result<(), WitnessError> {
    let dir_of = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => resolved(d),
        _ => resolved(Path::new(".")),
    };
    let registry_dir = dir_of(registry);
    if dir_of(witness).starts_with(&registry_dir) {
        return Err(WitnessError::Invalid {
            witness: witness.to_owned(),
            reason: format!(
                "inside the registry's directory {}: whoever can put back an older registry there can put back its witness too; keep it elsewhere",
                registry_dir.display()
            ),
        });
    }
    Ok(())
}

/// `path` absolute, with symbolic links resolved as far as it exists (a witness directory
/// is created only when the witness is first written).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc, name| acc.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Records `head` of `registry` as the witness at `path` (creating its directory, mode
/// 0700): temporary file, fsync, rename, fsync of the directory.
pub fn write(path: &Path, registry: &Path, head: &SignedHead) -> Result<(), WitnessError> {
    let fail = |reason: String| WitnessError::Write {
        witness: path.to_owned(),
        reason,
    };
    let w = Witness {
        registry: registry.display().to_string(),
        records: head.records,
        head_sha256: head.head_sha256.clone(),
        signer: head.signer.clone(),
        signature: head.signature.clone(),
    };
    let text = serde_json::to_string_pretty(&w).map_err(|e| fail(e.to_string()))? + "\n";
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| fail(e.to_string()))?;
    sn_config::fs::write_file_atomic(path, text.as_bytes()).map_err(|e| fail(e.to_string()))?;
    sn_config::fs::sync_dir(&dir).map_err(|e| fail(e.to_string()))
}
