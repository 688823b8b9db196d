//! The node as the agent sees it after start: probed facts, the selected profile with
//! its explanation and mismatches, readiness, and the runtime configuration derived
//! from them. Computed once, before READY=1.

use crate::metric_family::{FamilyWriter, flag, one};
use hardware_profiles::{
    CostInputs, MachineFacts, Pin, ProfileSet, ReadinessCheck, RuntimeConfig, SelectError,
    SelectedBy, SevSnpState,
};
use prometheus_client::registry::Unit;
use serde::Serialize;
use sn_config::NodeOffload;
use std::fmt;
use std::path::{Path, PathBuf};

/// The node's assessment at start: what the probe found, the profile chosen for it, and
/// whether the node is ready to run the replica under that profile.
#[derive(Debug, Clone, Serialize)]
pub struct NodeAssessment {
    /// What the probe found on this machine.
    pub facts: MachineFacts,
    /// Name of the selected profile.
    pub profile: String,
    /// The selected profile's description.
    pub profile_description: String,
    /// How the profile was chosen: most_specific_match, development_default, pinned, forced_pin.
    pub selection: String,
    /// One sentence per line: the choice, and why every other profile was not chosen.
    pub explanation: Vec<String>,
    /// Where the chosen profile does not fit this machine (forced pins only).
    pub mismatches: Vec<String>,
    /// Every readiness check is satisfied: the node is fit to run the replica.
    pub ready: bool,
    /// The readiness checks, each with its result and detail.
    pub readiness: Vec<ReadinessCheck>,
    /// The replica's runtime configuration derived from the profile and the facts.
    pub runtime: RuntimeConfig,
    /// The node's SEV-SNP state, from the probe.
    pub sev_snp: SevView,
    /// The selected profile's cost inputs (before the settings' overrides).
    pub cost: CostInputs,
    /// What the node image was built with (`/usr/share/sovereign-node/image-inputs.json`).
    pub image: ImageStatus,
    /// Where the runtime configuration was written for the replica; `None` where the agent
    /// does not write it (`node-agent check`).
    pub runtime_config_file: Option<RuntimeConfigFile>,
    /// The node's configuration from the sn-config partition (node name, subnet, bundle
    /// digest and signer), or why there is none.
    pub configuration: Option<crate::node_config::NodeConfigView>,
}

/// The file `image/build` installs on the node, naming its optional inputs.
pub const IMAGE_INPUTS_FILE: &str = "/usr/share/sovereign-node/image-inputs.json";

/// The image's inputs as the node sees them. Off the image (a development machine) the
/// file is absent and `absent_reason` says so.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ImageStatus {
    /// The image version; `None` when the file could not be read.
    pub version: Option<String>,
    /// The optional inputs the image names, present or not.
    pub optional_inputs: Vec<ImageInput>,
    /// Why the file could not be read; `None` when it was.
    pub absent_reason: Option<String>,
}

/// One optional input of the image, and whether the image was built with it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ImageInput {
    /// "replica", "nvidia-driver".
    pub name: String,
    /// What the input is, in words.
    pub what: String,
    /// The image was built with this input.
    pub present: bool,
    /// SHA-256 of the input file, hex; `None` when the image was built without it.
    pub sha256: Option<String>,
}

impl ImageStatus {
    /// Reads [`IMAGE_INPUTS_FILE`] under `root`. Absent or unreadable is a reported state,
    /// never an error: the agent also runs off the image.
    pub fn read(root: &Path) -> ImageStatus {
        #[derive(serde::Deserialize)]
        struct File {
            version: String,
            optional_inputs: Vec<ImageInput>,
        }
        let path = root.join(IMAGE_INPUTS_FILE.trim_start_matches('/'));
        let absent = |reason: String| ImageStatus {
            absent_reason: Some(reason),
            ..ImageStatus::default()
        };
        match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => absent(format!(
                "{} does not exist: not running from the sovereign-node image",
                path.display()
            )),
            Err(e) => absent(format!("reading {}: {e}", path.display())),
            Ok(text) => match serde_json::from_str::<File>(&text) {
                Ok(file) => ImageStatus {
                    version: Some(file.version),
                    optional_inputs: file.optional_inputs,
                    absent_reason: None,
                },
                Err(e) => absent(format!("parsing {}: {e}", path.display())),
            },
        }
    }

    /// Names of the optional inputs the image was built without.
    pub fn missing_inputs(&self) -> Vec<&str> {
        self.optional_inputs
            .iter()
            .filter(|i| !i.present)
            .map(|i| i.name.as_str())
            .collect()
    }
}

/// The replica's runtime configuration as written by `node-agent run`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RuntimeConfigFile {
    /// The file, when a location could be chosen.
    pub path: Option<PathBuf>,
    /// Why this location (configured, systemd, system default, development fallback).
    pub origin: String,
    /// The file was written.
    pub written: bool,
    /// Why no location could be chosen or the file could not be written; `None` when it
    /// was written.
    pub error: Option<String>,
}

/// Requirement name of the readiness check for the runtime configuration file.
pub const RUNTIME_CONFIG_REQUIREMENT: &str = "runtime_config_written";

/// The node's SEV-SNP state as /v1/status reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SevView {
    /// This node runs as a SEV-SNP guest: its memory is encrypted and it can be attested.
    pub active: bool,
    /// The probe's conclusion: "guest", "host" or "absent".
    pub state: String,
    /// /dev/sev-guest exists.
    pub guest_device: bool,
    /// One line per observation that led to `state`.
    pub evidence: Vec<String>,
}

impl NodeAssessment {
    /// Records where the runtime configuration went as a readiness check: a replica
    /// started without it would run on defaults the profile did not choose.
    pub fn set_runtime_config_file(&mut self, file: RuntimeConfigFile) {
        let detail = match (&file.path, &file.error) {
            (Some(path), None) => format!("{} ({})", path.display(), file.origin),
            (Some(path), Some(e)) => format!("writing {}: {e}", path.display()),
            (None, Some(e)) => e.clone(),
            (None, None) => file.origin.clone(),
        };
        self.readiness.push(ReadinessCheck {
            requirement: RUNTIME_CONFIG_REQUIREMENT.into(),
            satisfied: file.written,
            detail,
        });
        self.ready = self.ready && file.written;
        self.runtime_config_file = Some(file);
    }

    /// Records the node configuration as a readiness check: a refused (or unreadable)
    /// configuration makes the node not ready, with the reason, instead of running on
    /// defaults the plan did not choose.
    pub fn set_node_configuration(&mut self, config: &crate::node_config::NodeConfiguration) {
        self.readiness.push(ReadinessCheck {
            requirement: crate::node_config::NODE_CONFIG_REQUIREMENT.into(),
            satisfied: config.ok(),
            detail: config.detail(),
        });
        self.ready = self.ready && config.ok();
        self.configuration = Some(config.view.clone());
    }

    /// Why the node is not ready (empty when it is).
    pub fn reasons(&self) -> Vec<String> {
        self.readiness
            .iter()
            .filter(|c| !c.satisfied)
            .map(|c| c.detail.clone())
            .collect()
    }
}

fn selected_by_name(s: SelectedBy) -> &'static str {
    match s {
        SelectedBy::MostSpecificMatch => "most_specific_match",
        SelectedBy::DevelopmentDefault => "development_default",
        SelectedBy::Pinned => "pinned",
        SelectedBy::ForcedPin => "forced_pin",
    }
}

/// How the operator chose the profile: "auto", "NAME", or "NAME!" (pinned with force).
pub fn parse_pin(profile: &str) -> Option<Pin<'_>> {
    match profile {
        "auto" => None,
        name => Some(match name.strip_suffix('!') {
            Some(name) => Pin { name, force: true },
            None => Pin { name, force: false },
        }),
    }
}

/// Selects the profile for `facts` and evaluates readiness.
pub fn assess(
    facts: MachineFacts,
    profiles: &ProfileSet,
    profile: &str,
    image: ImageStatus,
) -> Result<NodeAssessment, SelectError> {
    let selection = profiles.select(&facts, parse_pin(profile))?;
    let readiness = selection.readiness(&facts);
    let runtime = selection.runtime_config(&facts);
    let sev = &facts.sev_snp;
    let sev_snp = SevView {
        active: sev.state == SevSnpState::Guest,
        state: sev.state.name().to_string(),
        guest_device: sev.guest_device,
        evidence: sev.evidence.clone(),
    };
    Ok(NodeAssessment {
        profile: selection.profile.name.clone(),
        profile_description: selection.profile.description.clone(),
        selection: selected_by_name(selection.selected_by).to_string(),
        explanation: selection.explain(),
        mismatches: selection.mismatches.iter().map(|m| m.to_string()).collect(),
        ready: readiness.ready,
        readiness: readiness.checks,
        runtime,
        sev_snp,
        cost: selection.profile.cost,
        image,
        runtime_config_file: None,
        configuration: None,
        facts,
    })
}

/// The assessment's metric families: profile, readiness, image and SEV-SNP state.
pub fn encode_metrics(node: &NodeAssessment, families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_profile_info",
        "The hardware profile the agent runs the node with, and how it was chosen.",
        None,
        &one(
            vec![
                ("profile", node.profile.clone()),
                ("selection", node.selection.clone()),
            ],
            1.0,
        ),
    )?;
    families.gauge(
        "sovereign_profile_mismatches",
        "Differences between the machine and the selected profile.",
        None,
        &one(vec![], node.mismatches.len() as f64),
    )?;
    families.gauge(
        "sovereign_node_ready",
        "Whether the node is fit to run the replica under its profile (readiness).",
        None,
        &one(vec![], flag(node.ready)),
    )?;
    families.gauge(
        "sovereign_readiness_check_passed",
        "Result of each readiness check.",
        None,
        &node
            .readiness
            .iter()
            .map(|c| {
                (
                    vec![("requirement", c.requirement.clone())],
                    flag(c.satisfied),
                )
            })
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_image_info",
        "The sovereign-node image version the node runs (absent off the image).",
        None,
        &node
            .image
            .version
            .iter()
            .map(|v| (vec![("version", v.clone())], 1.0))
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_image_optional_input_present",
        "Whether the image was built with the optional input (replica, NVIDIA driver).",
        None,
        &node
            .image
            .optional_inputs
            .iter()
            .map(|i| (vec![("input", i.name.clone())], flag(i.present)))
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_sev_snp_active",
        "Whether SEV-SNP protects this node (from the probe).",
        None,
        &one(vec![], flag(node.sev_snp.active)),
    )?;
    families.gauge(
        "sovereign_sev_guest_device_present",
        "Whether /dev/sev-guest (attestation reports) is present.",
        None,
        &one(vec![], flag(node.sev_snp.guest_device)),
    )?;
    if let Some(offload) = node.configuration.as_ref().and_then(|c| c.offload.as_ref()) {
        encode_planned_offload(offload, families)?;
    }
    Ok(())
}

/// The plan's offload figures from the node's bundle: what the profile's benchmark says the
/// GPU takes off this node's host, beside the CPU-seconds the agent counts offloaded.
fn encode_planned_offload(offload: &NodeOffload, families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_planned_offload_host_cpu_per_dkg_round",
        "Host CPU time one DKG round's dealing verifications no longer cost with the GPU, from the plan's benchmark of the node's profile.",
        Some(Unit::Seconds),
        &one(
            vec![
                ("benchmark", offload.benchmark.clone()),
                ("dealings", offload.dkg_round_dealings.to_string()),
            ],
            offload.host_cpu_seconds_per_dkg_round,
        ),
    )?;
    families.gauge(
        "sovereign_planned_offload_threads",
        "Host threads the GPU frees, from the plan: at the DKG and checkpoint peak (burst) and on average (steady).",
        None,
        &[
            (
                vec![("load", "burst".to_string())],
                offload.burst_threads_freed as f64,
            ),
            (
                vec![("load", "steady".to_string())],
                offload.steady_threads_freed,
            ),
        ],
    )
}
