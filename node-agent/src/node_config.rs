//! The node's configuration as `node-agent apply-config` left it (the sn-config contract,
//! provisioning/sn-config): applied from a verified bundle, the image default, or refused.
//! A refused or unreadable configuration makes the node NOT READY with the reason; the
//! agent still serves /readyz and /v1/status so the reason can be read, and never falls
//! back to defaults silently.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sn_config::NodeConfig;
use sn_config::NodeOffload;
use sn_config::apply::{ApplyState, ApplyStatus};

/// Requirement name of the readiness check for the node configuration.
pub const NODE_CONFIG_REQUIREMENT: &str = "node_configuration";

/// What /v1/status says about the configuration.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeConfigView {
    /// "applied", "default", "failed", or "development" (no `--node-config` given).
    pub state: String,
    /// The directory apply-config wrote.
    pub dir: Option<PathBuf>,
    /// The partition or file apply-config read.
    pub source: Option<String>,
    /// Why the default applies, or why the configuration was refused.
    pub reason: Option<String>,
    /// The refusal's stable name (sn-config's `ConfigError::kind`).
    pub error_kind: Option<String>,
    /// The bundle member a refusal is about; `None` when there is none.
    pub member: Option<String>,
    /// The node's name, from the verified node.toml; `None` unless applied.
    pub node: Option<String>,
    /// The subnet's name, from the verified node.toml; `None` unless applied.
    pub subnet: Option<String>,
    /// The node's host name, from the verified node.toml; `None` unless applied.
    pub hostname: Option<String>,
    /// The hardware profile node.toml pins the node to; `None` unless applied.
    pub profile: Option<String>,
    /// SHA-256 of the bundle's SHA256SUMS, hex; bound into the attestation evidence.
    pub bundle_digest: Option<String>,
    /// The bundle signer's Ed25519 public key, hex; bound into the evidence too.
    pub signer: Option<String>,
    /// The plan's figures of the host work the GPU takes off this node (node.toml's
    /// `[offload]`); `None` unless applied with them.
    pub offload: Option<NodeOffload>,
}

/// The node configuration: the view, and the node's record when a bundle was applied.
#[derive(Debug, Clone)]
pub struct NodeConfiguration {
    /// What /v1/status says about the configuration.
    pub view: NodeConfigView,
    /// The verified node.toml; `None` unless a bundle was applied.
    pub node: Option<NodeConfig>,
}

impl NodeConfiguration {
    /// No `--node-config`: a development run (the agent settings file only).
    pub fn development() -> NodeConfiguration {
        NodeConfiguration {
            view: NodeConfigView {
                state: "development".into(),
                dir: None,
                source: None,
                reason: Some("no --node-config directory: development run".into()),
                error_kind: None,
                member: None,
                node: None,
                subnet: None,
                hostname: None,
                profile: None,
                bundle_digest: None,
                signer: None,
                offload: None,
            },
            node: None,
        }
    }

    /// Reads what apply-config wrote in `dir`. A missing or unreadable record, or an
    /// applied record whose node.toml does not parse, is a failure, not a default.
    pub fn load(dir: &Path) -> NodeConfiguration {
        let mut view = NodeConfigView {
            dir: Some(dir.to_owned()),
            ..NodeConfiguration::development().view
        };
        view.reason = None;
        let fail = |mut view: NodeConfigView, reason: String, kind: &str| {
            view.state = "failed".into();
            view.reason = Some(reason);
            view.error_kind = Some(kind.into());
            NodeConfiguration { view, node: None }
        };
        let status = match ApplyStatus::read(dir) {
            Ok(s) => s,
            Err(e) => {
                return fail(
                    view,
                    format!("no usable configuration record (did apply-config run?): {e}"),
                    "no_record",
                );
            }
        };
        view.source = Some(status.source.clone());
        view.reason = status.reason.clone();
        view.error_kind = status.error_kind.clone();
        view.member = status.member.clone();
        match status.state {
            ApplyState::Failed => {
                view.state = "failed".into();
                NodeConfiguration { view, node: None }
            }
            ApplyState::Default => {
                view.state = "default".into();
                NodeConfiguration { view, node: None }
            }
            ApplyState::Applied => {
                let path = dir.join(sn_config::NODE_CONFIG);
                let node = match std::fs::read(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|b| NodeConfig::parse(&b).map_err(|e| e.to_string()))
                {
                    Ok(n) => n,
                    Err(e) => return fail(view, e, "invalid_member"),
                };
                view.state = "applied".into();
                view.node = Some(node.name.clone());
                view.subnet = Some(node.subnet.clone());
                view.hostname = Some(node.hostname.clone());
                view.profile = Some(node.profile.clone());
                view.bundle_digest = status.bundle_digest.clone();
                view.signer = status.signer.clone();
                view.offload = node.offload.clone();
                NodeConfiguration {
                    view,
                    node: Some(node),
                }
            }
        }
    }

    /// Whether the node may be ready as far as its configuration goes.
    pub fn ok(&self) -> bool {
        self.view.state != "failed"
    }

    /// One line for the readiness check and the console.
    pub fn detail(&self) -> String {
        let v = &self.view;
        match v.state.as_str() {
            "applied" => format!(
                "node {} of subnet {}: bundle {} signed by {}",
                v.node.as_deref().unwrap_or("?"),
                v.subnet.as_deref().unwrap_or("?"),
                v.bundle_digest.as_deref().unwrap_or("?"),
                v.signer.as_deref().unwrap_or("?")
            ),
            // The partition's path stays in /v1/status (`source`): this line also goes to
            // the public /readyz, whose bodies name no local path.
            "failed" => format!(
                "configuration refused: {}",
                v.reason.as_deref().unwrap_or("no reason recorded")
            ),
            _ => format!(
                "{} configuration: {}",
                v.state,
                v.reason.as_deref().unwrap_or("")
            ),
        }
    }

    /// The (digest, signer) evidence binds; zeros where no bundle was applied.
    pub fn binding(&self) -> ([u8; 32], [u8; 32]) {
        let parse = |h: &Option<String>| {
            h.as_deref()
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .unwrap_or([0; 32])
        };
        if self.view.state == "applied" {
            (parse(&self.view.bundle_digest), parse(&self.view.signer))
        } else {
            ([0; 32], [0; 32])
        }
    }
}

/// `node-agent apply-config`: the signer pins of the kernel command line, then
/// [`sn_config::apply::apply`]. Err when the partition was refused (DIR holds the failure
/// record) or DIR could not be written.
pub fn apply_config(from: &Path, to: &Path, cmdline: &Path) -> anyhow::Result<ApplyStatus> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(cmdline)
        .with_context(|| format!("reading the kernel command line {}", cmdline.display()))?;
    let pinned = match sn_config::apply::pinned_signers(&text) {
        Ok(p) => p,
        Err(e) => {
            // A malformed pin: record the refusal like any other.
            let status = ApplyStatus::failed(from, &e);
            let json = serde_json::to_vec_pretty(&status)?;
            let files: std::collections::BTreeMap<String, Vec<u8>> =
                [(sn_config::apply::STATUS_FILE.to_string(), json)]
                    .into_iter()
                    .collect();
            sn_config::apply::replace_dir(to, &files)?;
            anyhow::bail!("configuration refused: {e}");
        }
    };
    match sn_config::apply::apply(from, to, &pinned) {
        Ok(applied) => Ok(applied.status),
        Err(e) => Err(e.into()),
    }
}
