//! A node's configuration bundle: the directory `provision plan --out` writes per node
//! (`node.toml`, `node-agent.toml`), and the deterministic ustar archive of it that
//! `provision flash` writes into the configuration partition.
//!
//! The archive holds `SHA256SUMS` (sha256sum format, over the other members) first, then
//! the files in name order; every header has mode 0644, uid/gid 0, mtime 0 and empty owner
//! names, so the same bundle always gives the same bytes. The rest of the partition is
//! zeros. `SHA256SUMS` lets anyone check a partition without the bundle it came from.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// `schema` of node.toml.
pub const NODE_CONFIG_SCHEMA: &str = "sovereign-node/node-config/v1";
pub const NODE_CONFIG: &str = "node.toml";
pub const AGENT_CONFIG: &str = "node-agent.toml";
pub const SUMS: &str = "SHA256SUMS";
/// The files a bundle consists of; anything else in the directory is refused (a stray file,
/// e.g. a private key, must never end up on a node's disk unnoticed).
pub const BUNDLE_FILES: [&str; 2] = [NODE_CONFIG, AGENT_CONFIG];

#[derive(Debug, Error)]
pub enum BundleError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("configuration partition: {0}")]
    Partition(String),
}

/// node.toml: what the node needs to come up on the subnet's network and be verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub schema: String,
    pub subnet: String,
    pub name: String,
    pub hostname: String,
    /// The hardware profile the node agent is pinned to.
    pub profile: String,
    /// Where the governing body's verifier asks for this node's evidence.
    pub verifier_endpoint: String,
    pub network: NodeNetwork,
    pub operator: NodeOperator,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeNetwork {
    /// Address with prefix length, e.g. "2001:db8:0:1::11/64".
    pub ipv6_address: String,
    pub ipv6_gateway: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_gateway: Option<String>,
    pub dns: Vec<String>,
    /// Port of the node agent (metrics, /v1/attestation).
    pub agent_port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOperator {
    pub name: String,
    /// OpenSSH public keys allowed to log in as the operator.
    pub ssh_keys: Vec<String>,
}

impl NodeConfig {
    pub fn parse(text: &str, path: &Path) -> Result<NodeConfig, BundleError> {
        let bad = |reason: String| BundleError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let config: NodeConfig = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if config.schema != NODE_CONFIG_SCHEMA {
            return Err(bad(format!(
                "schema {:?}, expected {NODE_CONFIG_SCHEMA:?}",
                config.schema
            )));
        }
        config
            .network
            .ipv6_address
            .parse::<ipnet::Ipv6Net>()
            .map_err(|e| bad(format!("network.ipv6_address: {e}")))?;
        config
            .network
            .ipv6_gateway
            .parse::<std::net::Ipv6Addr>()
            .map_err(|e| bad(format!("network.ipv6_gateway: {e}")))?;
        for key in &config.operator.ssh_keys {
            ssh_key::PublicKey::from_openssh(key)
                .map_err(|e| bad(format!("operator.ssh_keys: {e}")))?;
        }
        Ok(config)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

/// A bundle read from its directory and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub dir: PathBuf,
    pub node: NodeConfig,
    /// File name -> bytes, for every file of the bundle.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Bundle {
    pub fn load(dir: &Path) -> Result<Bundle, BundleError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| BundleError::Io { path, source }
        };
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let entry = entry.map_err(io(dir))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().map_err(io(&path))?;
            if !kind.is_file() || !BUNDLE_FILES.contains(&name.as_str()) {
                return Err(BundleError::Invalid {
                    path,
                    reason: format!(
                        "not part of a node bundle (a bundle holds exactly the regular files {})",
                        BUNDLE_FILES.join(", ")
                    ),
                });
            }
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            files.insert(name, bytes);
        }
        Bundle::from_files(dir, files)
    }

    pub fn from_files(dir: &Path, files: BTreeMap<String, Vec<u8>>) -> Result<Bundle, BundleError> {
        for name in BUNDLE_FILES {
            if !files.contains_key(name) {
                return Err(BundleError::Invalid {
                    path: dir.join(name),
                    reason: "missing from the bundle".into(),
                });
            }
        }
        let text = |name: &str| -> Result<String, BundleError> {
            let bytes = files.get(name).cloned().unwrap_or_default();
            String::from_utf8(bytes).map_err(|_| BundleError::Invalid {
                path: dir.join(name),
                reason: "not UTF-8".into(),
            })
        };
        let node = NodeConfig::parse(&text(NODE_CONFIG)?, &dir.join(NODE_CONFIG))?;
        // The agent's own parser is the node agent's; here: TOML whose profile is the pin.
        let agent_path = dir.join(AGENT_CONFIG);
        let agent: toml::Table =
            toml::from_str(&text(AGENT_CONFIG)?).map_err(|e| BundleError::Invalid {
                path: agent_path.clone(),
                reason: e.to_string(),
            })?;
        if agent.get("profile").and_then(|p| p.as_str()) != Some(node.profile.as_str()) {
            return Err(BundleError::Invalid {
                path: agent_path,
                reason: format!(
                    "profile is not {:?}, the pin of {NODE_CONFIG}",
                    node.profile
                ),
            });
        }
        Ok(Bundle {
            dir: dir.to_owned(),
            node,
            files,
        })
    }

    /// Writes the bundle's files into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> Result<(), BundleError> {
        std::fs::create_dir_all(dir).map_err(|source| BundleError::Io {
            path: dir.to_owned(),
            source,
        })?;
        for (name, bytes) in &self.files {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|source| BundleError::Io { path, source })?;
        }
        Ok(())
    }

    /// `SHA256SUMS` text over the bundle's files.
    pub fn sums(&self) -> String {
        sums_of(&self.files)
    }

    /// The deterministic ustar archive of the bundle.
    pub fn archive(&self) -> Result<Vec<u8>, BundleError> {
        let mut builder = tar::Builder::new(Vec::new());
        let sums = self.sums();
        let members = std::iter::once((SUMS, sums.as_bytes()))
            .chain(self.files.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
        for (name, bytes) in members {
            let mut header = tar::Header::new_ustar();
            let archive_err = |e: std::io::Error| BundleError::Invalid {
                path: self.dir.join(name),
                reason: format!("cannot archive: {e}"),
            };
            header.set_path(name).map_err(archive_err)?;
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            header.set_entry_type(tar::EntryType::Regular);
            header.set_cksum();
            builder.append(&header, bytes).map_err(archive_err)?;
        }
        builder.into_inner().map_err(|e| BundleError::Invalid {
            path: self.dir.clone(),
            reason: format!("cannot archive: {e}"),
        })
    }
}

fn sums_of(files: &BTreeMap<String, Vec<u8>>) -> String {
    files
        .iter()
        .map(|(name, bytes)| format!("{}  {name}\n", hex::encode(Sha256::digest(bytes))))
        .collect()
}

/// What a configuration partition holds, after every check passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionContent {
    pub bundle: Bundle,
    /// Bytes of the archive (up to and including its end-of-archive blocks).
    pub archive_len: u64,
}

/// Reads a configuration partition's bytes: a ustar archive whose `SHA256SUMS` matches
/// every other member, members exactly a bundle's files, a valid node.toml, and nothing
/// but zeros after the archive.
pub fn read_partition(region: &[u8]) -> Result<PartitionContent, BundleError> {
    let bad = |reason: String| BundleError::Partition(reason);
    if region.iter().all(|&b| b == 0) {
        return Err(bad("all zeros: no configuration was written".into()));
    }
    let mut archive = tar::Archive::new(region);
    let mut members: Vec<(String, Vec<u8>)> = Vec::new();
    let mut end = 0u64;
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("damaged tar archive: {e}")))?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(bad("a member is not a regular file".into()));
        }
        let name = String::from_utf8(entry.path_bytes().into_owned())
            .map_err(|_| bad("a member name is not UTF-8".into()))?;
        let size = entry.size();
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        if bytes.len() as u64 != size {
            return Err(bad(format!("{name}: truncated")));
        }
        let data_end = entry.raw_file_position() + size;
        end = entry.raw_file_position() + size.div_ceil(512) * 512;
        // The padding of the member's last block is not covered by any checksum: zeros only.
        let padding = usize::try_from(data_end)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(a, b)| region.get(a..b));
        if !padding.is_some_and(|p| p.iter().all(|&b| b == 0)) {
            return Err(bad(format!(
                "{name}: non-zero bytes in the padding after its data"
            )));
        }
        members.push((name, bytes));
    }
    // The end-of-archive marker and the padding: zeros to the end of the partition.
    let tail = usize::try_from(end).ok().and_then(|e| region.get(e..));
    match tail {
        Some(rest) if rest.iter().all(|&b| b == 0) => {}
        Some(rest) => {
            let at = rest.iter().position(|&b| b != 0).unwrap_or(0) as u64 + end;
            return Err(bad(format!(
                "non-zero byte at partition offset {at}, after the archive"
            )));
        }
        None => return Err(bad("archive runs past the partition".into())),
    }
    let mut iter = members.into_iter();
    let (first, sums) = iter.next().ok_or_else(|| bad("empty archive".into()))?;
    if first != SUMS {
        return Err(bad(format!("first member is {first:?}, expected {SUMS}")));
    }
    let mut files = BTreeMap::new();
    for (name, bytes) in iter {
        if files.insert(name.clone(), bytes).is_some() {
            return Err(bad(format!("member {name:?} appears twice")));
        }
    }
    let want = sums_of(&files);
    if sums != want.as_bytes() {
        return Err(bad(format!(
            "{SUMS} does not match the members:\nrecorded:\n{}computed:\n{want}",
            String::from_utf8_lossy(&sums)
        )));
    }
    let bundle =
        Bundle::from_files(Path::new("sn-config:"), files).map_err(|e| bad(e.to_string()))?;
    Ok(PartitionContent {
        bundle,
        archive_len: end + 1024,
    })
}
