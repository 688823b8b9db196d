//! The nodes a governing body registered (NODES.toml) and what a verifier expects of each:
//! the registered chip id, node key and planned configuration digest.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a verifier knows about the node it asked, beyond the policy (from NODES.toml).
#[derive(Debug, Clone, Default)]
pub struct ExpectedNode {
    /// The registered chip id (64 bytes; Turin 8).
    pub chip_id: Option<Vec<u8>>,
    /// The registered Ed25519 node public key.
    pub node_public_key: Option<[u8; 32]>,
    /// The digest of the node's planned configuration bundle (`provision enroll` takes it
    /// from the plan's bundle, `attest fleet` from NODES.toml).
    pub config_digest: Option<[u8; 32]>,
}

/// Why a node list cannot be used.
#[derive(Debug, Error)]
pub enum NodeListError {
    /// The file could not be read.
    #[error("reading {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The read error.
        message: String,
    },
    /// Not TOML of the node list schema.
    #[error("{path} is not a valid node list: {message}")]
    Toml {
        /// The file (or the name it was given as).
        path: String,
        /// The parser's error.
        message: String,
    },
    /// An entry with a malformed or repeated value.
    #[error("node {name}: {message}")]
    Entry {
        /// The entry's `name`.
        name: String,
        /// What is wrong with it.
        message: String,
    },
}

/// NODES.toml: `[[node]]` entries with `name`, `url` and optionally the registered `chip_id`
/// (hex) and `node_public_key` (hex).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeList {
    /// The `[[node]]` entries, in file order.
    #[serde(default)]
    pub node: Vec<NodeEntry>,
}

/// One `[[node]]` entry of NODES.toml.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The node's name, for verdicts and metrics.
    pub name: String,
    /// Base URL of the node agent, e.g. `http://10.0.0.5:9100`.
    pub url: String,
    /// The registered chip id, hex.
    pub chip_id: Option<String>,
    /// The registered Ed25519 node public key, hex.
    pub node_public_key: Option<String>,
    /// The digest of the node's planned configuration bundle (sn-config), hex: the node
    /// must run exactly this bundle (`config.bundle_digest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
}

impl NodeList {
    /// Reads and parses the node list at `path`.
    pub fn load(path: &Path) -> Result<NodeList, NodeListError> {
        let text = std::fs::read_to_string(path).map_err(|e| NodeListError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        NodeList::parse(&text, &path.display().to_string())
    }

    /// Parses node list text; `name` names it in errors.
    pub fn parse(text: &str, name: &str) -> Result<NodeList, NodeListError> {
        let list: NodeList = toml::from_str(text).map_err(|e| NodeListError::Toml {
            path: name.to_owned(),
            message: e.to_string(),
        })?;
        for n in &list.node {
            n.expected()?;
        }
        Ok(list)
    }
}

impl NodeEntry {
    /// The registered identity to compare against, decoded.
    pub fn expected(&self) -> Result<ExpectedNode, NodeListError> {
        let err = |message: String| NodeListError::Entry {
            name: self.name.clone(),
            message,
        };
        let chip_id = self
            .chip_id
            .as_deref()
            .map(|c| {
                let b = hex::decode(c.trim()).map_err(|e| err(format!("chip_id: {e}")))?;
                if b.len() != 64 && b.len() != 8 {
                    return Err(err(format!(
                        "chip_id is {} bytes, expected 64 (Turin: 8)",
                        b.len()
                    )));
                }
                Ok(b)
            })
            .transpose()?;
        let node_public_key = self
            .node_public_key
            .as_deref()
            .map(|k| {
                let b = hex::decode(k.trim()).map_err(|e| err(format!("node_public_key: {e}")))?;
                <[u8; 32]>::try_from(b).map_err(|_| err("node_public_key is not 32 bytes".into()))
            })
            .transpose()?;
        let config_digest = self
            .config_digest
            .as_deref()
            .map(|k| {
                let b = hex::decode(k.trim()).map_err(|e| err(format!("config_digest: {e}")))?;
                <[u8; 32]>::try_from(b).map_err(|_| err("config_digest is not 32 bytes".into()))
            })
            .transpose()?;
        Ok(ExpectedNode {
            chip_id,
            node_public_key,
            config_digest,
        })
    }
}
