//! What a node makes of its partition: `node-agent apply-config --from P --to DIR`.
//!
//! The output directory DIR always holds `status.json` ([`ApplyStatus`]); with a verified
//! bundle also the files the node uses ([`node_files`]). DIR is built complete in a
//! temporary directory next to it (every file and directory fsynced) and then put in place
//! in one step (rename, or an atomic exchange with the previous DIR), so readers see the
//! previous result or the new one, never a mixture.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::archive::{Partition, read_partition};
use crate::bundle::Bundle;
use crate::error::ConfigError;
use crate::fs::{io_at, parent_of, sync_dir};
use crate::members::{NODE_CONFIG, PARTITION_BYTES, REPLICA_CONFIG};

/// `schema` of status.json.
pub const STATUS_SCHEMA: &str = "sovereign-node/config-status/v1";
/// The record in DIR that says what was applied, or why nothing was.
pub const STATUS_FILE: &str = "status.json";
/// The systemd-networkd file apply-config writes (DIR/network/). Its name sorts before the
/// image's default `80-ethernet-dhcp.network`, so networkd uses it for the links it matches.
pub const NETWORK_FILE: &str = "network/10-sovereign-node.network";
/// The host name apply-config writes (DIR/hostname), from node.toml's `hostname`.
pub const HOSTNAME_FILE: &str = "hostname";
/// The operator's SSH keys apply-config writes (DIR/authorized_keys), one per line.
pub const AUTHORIZED_KEYS_FILE: &str = "authorized_keys";

/// What apply-config did with the partition: `state` in status.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyState {
    /// A verified bundle was applied; the files are in DIR.
    Applied,
    /// The partition is empty or absent: the image's defaults apply (documented default).
    Default,
    /// The partition was refused; nothing of it is used; the node is not ready.
    Failed,
}

/// status.json: what apply-config did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyStatus {
    /// Always [`STATUS_SCHEMA`].
    pub schema: String,
    /// Applied, default or failed.
    pub state: ApplyState,
    /// The partition or file read.
    pub source: String,
    /// `default`: why (no partition, all zeros); `failed`: the refusal, naming the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `failed`: a stable name of the refusal ([`ConfigError::kind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// `failed`: the member the refusal is about, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// `applied`: the bundle digest (SHA-256 of SHA256SUMS), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_digest: Option<String>,
    /// `applied`: the signer's Ed25519 public key, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// `applied`: the node's name from node.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `applied`: the subnet's name from node.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    /// The files written next to status.json, relative to DIR.
    #[serde(default)]
    pub files: Vec<String>,
}

impl ApplyStatus {
    fn new(state: ApplyState, source: &Path) -> ApplyStatus {
        ApplyStatus {
            schema: STATUS_SCHEMA.into(),
            state,
            source: source.display().to_string(),
            reason: None,
            error_kind: None,
            member: None,
            bundle_digest: None,
            signer: None,
            node: None,
            subnet: None,
            files: Vec::new(),
        }
    }

    /// The failure record for `error`.
    pub fn failed(source: &Path, error: &ConfigError) -> ApplyStatus {
        ApplyStatus {
            reason: Some(error.to_string()),
            error_kind: Some(error.kind().into()),
            member: error.member().map(str::to_string),
            ..ApplyStatus::new(ApplyState::Failed, source)
        }
    }

    /// Reads DIR/status.json.
    pub fn read(dir: &Path) -> Result<ApplyStatus, ConfigError> {
        let path = dir.join(STATUS_FILE);
        let bytes = std::fs::read(&path).map_err(|source| ConfigError::Io {
            path: path.clone(),
            source,
        })?;
        let status: ApplyStatus =
            serde_json::from_slice(&bytes).map_err(|e| ConfigError::Invalid {
                member: path.display().to_string(),
                reason: e.to_string(),
            })?;
        if status.schema != STATUS_SCHEMA {
            return Err(ConfigError::Invalid {
                member: path.display().to_string(),
                reason: format!("schema {:?}, expected {STATUS_SCHEMA:?}", status.schema),
            });
        }
        Ok(status)
    }
}

/// The node's files from a verified bundle, relative path -> content:
/// * `node.toml`: the verified node settings, as signed (the agent reads them);
/// * `hostname`: for /etc/hostname;
/// * `network/10-sovereign-node.network`: systemd-networkd, the plan's static addresses,
///   gateways and name servers on the Ethernet link;
/// * `authorized_keys`: the operator's OpenSSH keys (only when there are any);
/// * `ic.json5`: the replica's configuration (only when the bundle has one).
pub fn node_files(bundle: &Bundle) -> Result<BTreeMap<String, Vec<u8>>, ConfigError> {
    let node = bundle.node();
    let a = node.addresses()?;
    let mut files = BTreeMap::new();
    files.insert(
        NODE_CONFIG.to_string(),
        bundle
            .members()
            .get(NODE_CONFIG)
            .cloned()
            .unwrap_or_default(),
    );
    files.insert(
        HOSTNAME_FILE.into(),
        format!("{}\n", node.hostname).into_bytes(),
    );
    let mut net = format!(
        "# Node {} of subnet {}: the plan's addresses, from the configuration bundle\n\
         # {} (node-agent apply-config). Matches the node's Ethernet link.\n\
         [Match]\nType=ether\nName=!lo\n\n[Network]\nAddress={}\nGateway={}\n",
        node.name,
        node.subnet,
        hex::encode(bundle.digest()),
        a.ipv6,
        a.ipv6_gateway
    );
    if let Some(v4) = a.ipv4 {
        net.push_str(&format!("Address={v4}\n"));
    }
    if let Some(g) = a.ipv4_gateway {
        net.push_str(&format!("Gateway={g}\n"));
    }
    for d in &a.dns {
        net.push_str(&format!("DNS={d}\n"));
    }
    // Static addressing only: no router advertisements or DHCP decide the node's address.
    net.push_str("IPv6AcceptRA=no\nLinkLocalAddressing=ipv6\n");
    files.insert(NETWORK_FILE.into(), net.into_bytes());
    if !node.operator.ssh_keys.is_empty() {
        let keys: String = node
            .operator
            .ssh_keys
            .iter()
            .map(|k| format!("{k}\n"))
            .collect();
        files.insert(AUTHORIZED_KEYS_FILE.into(), keys.into_bytes());
    }
    if let Some(r) = bundle.replica_config() {
        files.insert(REPLICA_CONFIG.into(), r.to_vec());
    }
    Ok(files)
}

/// Reads at most [`PARTITION_BYTES`] of `from`. A path that does not exist is `None`.
pub fn read_source(from: &Path) -> Result<Option<Vec<u8>>, ConfigError> {
    let file = match std::fs::File::open(from) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Io {
                path: from.to_owned(),
                source,
            });
        }
    };
    let mut bytes = Vec::new();
    file.take(PARTITION_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|source| ConfigError::Io {
            path: from.to_owned(),
            source,
        })?;
    Ok(Some(bytes))
}

/// The outcome of [`apply`]: what was written to DIR.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The record written to DIR/status.json.
    pub status: ApplyStatus,
    /// The verified bundle (state `applied`).
    pub bundle: Option<Bundle>,
}

/// Reads `from`, verifies, maps and writes DIR atomically. On a refused partition DIR holds
/// only the failure record and the error is returned too (the caller exits non-zero);
/// an I/O error writing DIR is returned without a record (nothing was replaced).
///
/// `pinned` are the signers the measured kernel command line names ([`pinned_signers`]).
/// Nothing pinned applies nothing, whatever the partition holds: the record is a refusal
/// ([`ConfigError::NoPinnedSigner`]), so an image built without a signer cannot run a
/// bundle, nor pass for a node with its image's default configuration.
pub fn apply(from: &Path, to: &Path, pinned: &[[u8; 32]]) -> Result<Applied, ApplyError> {
    let outcome = if pinned.is_empty() {
        Err(ConfigError::NoPinnedSigner)
    } else {
        read_source(from).and_then(|bytes| match bytes {
            None => Ok(None),
            Some(b) => read_partition(&b, pinned).map(Some),
        })
    };
    let mut status;
    let mut files = BTreeMap::new();
    let mut bundle = None;
    let refused = match outcome {
        Ok(None) => {
            status = ApplyStatus::new(ApplyState::Default, from);
            status.reason = Some(format!(
                "{} does not exist: the image's default configuration applies",
                from.display()
            ));
            None
        }
        Ok(Some(Partition::Empty)) => {
            status = ApplyStatus::new(ApplyState::Default, from);
            status.reason = Some(format!(
                "{} is all zeros (no configuration written): the image's default configuration applies",
                from.display()
            ));
            None
        }
        Ok(Some(Partition::Bundle { bundle: b, .. })) => match node_files(&b) {
            Ok(f) => {
                status = ApplyStatus::new(ApplyState::Applied, from);
                status.bundle_digest = Some(hex::encode(b.digest()));
                status.signer = Some(hex::encode(b.signer()));
                status.node = Some(b.node().name.clone());
                status.subnet = Some(b.node().subnet.clone());
                status.files = f.keys().cloned().collect();
                files = f;
                bundle = Some(*b);
                None
            }
            Err(e) => {
                status = ApplyStatus::failed(from, &e);
                Some(e)
            }
        },
        Err(e) => {
            status = ApplyStatus::failed(from, &e);
            Some(e)
        }
    };
    let json = serde_json::to_vec_pretty(&status).map_err(|e| {
        ApplyError::Write(ConfigError::Io {
            path: to.join(STATUS_FILE),
            source: std::io::Error::other(e),
        })
    })?;
    files.insert(STATUS_FILE.into(), json);
    replace_dir(to, &files).map_err(ApplyError::Write)?;
    match refused {
        Some(e) => Err(ApplyError::Refused {
            status: Box::new(status),
            error: e,
        }),
        None => Ok(Applied { status, bundle }),
    }
}

/// Why [`apply`] did not apply a bundle.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The partition was refused; DIR holds the failure record.
    #[error("configuration refused: {error}")]
    Refused {
        /// Boxed: the record is large and the error travels by value.
        status: Box<ApplyStatus>,
        /// Why the partition was refused.
        error: ConfigError,
    },
    /// DIR could not be written; the previous DIR (if any) is unchanged.
    #[error("writing the applied configuration: {0}")]
    Write(ConfigError),
}

/// Makes `dir` hold exactly `files` (relative path -> bytes, mode 0644, directories 0755),
/// in one step: built in `.NAME.new-PID` next to it, fsynced, then renamed over (or
/// atomically exchanged with) the previous `dir`, whose old content is removed afterwards.
pub fn replace_dir(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), ConfigError> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let parent = parent_of(dir);
    std::fs::create_dir_all(&parent).map_err(io_at(&parent))?;
    let name = dir
        .file_name()
        .ok_or_else(|| ConfigError::Io {
            path: dir.to_owned(),
            source: std::io::Error::other("not a directory name"),
        })?
        .to_string_lossy()
        .into_owned();
    let tmp = parent.join(format!(".{name}.new-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io_at(&tmp))?;
    }
    let build = || -> Result<(), ConfigError> {
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&tmp)
            .map_err(io_at(&tmp))?;
        let mut dirs = vec![tmp.clone()];
        for (rel, bytes) in files {
            let path = tmp.join(rel);
            let sub = parent_of(&path);
            if !sub.exists() {
                std::fs::DirBuilder::new()
                    .mode(0o755)
                    .recursive(true)
                    .create(&sub)
                    .map_err(io_at(&sub))?;
                dirs.push(sub);
            }
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&path)
                .map_err(io_at(&path))?;
            f.write_all(bytes)
                .and_then(|_| f.sync_all())
                .map_err(io_at(&path))?;
        }
        // Subdirectories first, the top last.
        for d in dirs.iter().rev() {
            sync_dir(d)?;
        }
        Ok(())
    };
    if let Err(e) = build() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let exists = std::fs::symlink_metadata(dir).is_ok();
    let swapped = if exists {
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &tmp,
            nix::fcntl::AT_FDCWD,
            dir,
            nix::fcntl::RenameFlags::RENAME_EXCHANGE,
        )
        .map_err(|e| io_at(dir)(std::io::Error::from(e)))
    } else {
        std::fs::rename(&tmp, dir).map_err(io_at(dir))
    };
    if let Err(e) = swapped {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    sync_dir(&parent)?;
    if exists {
        // `tmp` now names the previous result.
        std::fs::remove_dir_all(&tmp).map_err(io_at(&tmp))?;
    }
    Ok(())
}

/// Pinned signers from a kernel command line: `sn.config_signer=HEX[,HEX...]`.
///
/// A malformed key is an error (a pin that cannot match must not read as "no pin"). The
/// image's command line (image/build) carries the parameter once; a second one is accepted
/// only on a test boot's command line (`sn.evidence=test`), which may add a test key, and
/// then every key named is pinned. No parameter at all is an empty list, which
/// [`apply`] refuses.
pub fn pinned_signers(cmdline: &str) -> Result<Vec<[u8; 32]>, ConfigError> {
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut test_boot = false;
    for word in cmdline.split_ascii_whitespace() {
        if word == "sn.evidence=test" {
            test_boot = true;
        }
        if let Some(list) = word.strip_prefix("sn.config_signer=") {
            seen += 1;
            for hex_key in list.split(',') {
                out.push(crate::sign::parse_public_key(hex_key).ok_or_else(|| {
                    ConfigError::SignatureFile(format!(
                        "kernel command line sn.config_signer={hex_key:?} is not an Ed25519 public key"
                    ))
                })?);
            }
        }
    }
    if seen > 1 && !test_boot {
        return Err(ConfigError::SignatureFile(format!(
            "kernel command line: sn.config_signer= appears {seen} times; only a test boot \
             (sn.evidence=test) may add a signer to the image's"
        )));
    }
    Ok(out)
}
