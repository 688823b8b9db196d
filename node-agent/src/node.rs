//! The node as the agent sees it after start: probed facts, the selected profile with
//! its explanation and mismatches, readiness, and the runtime configuration derived
//! from them. Computed once, before READY=1.

use hardware_profiles::{
    CostInputs, MachineFacts, Pin, ProfileSet, ReadinessCheck, RuntimeConfig, SelectError,
    SelectedBy, SevSnpState,
};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct NodeAssessment {
    pub facts: MachineFacts,
    pub profile: String,
    pub profile_description: String,
    /// How the profile was chosen: most_specific_match, development_default, pinned, forced_pin.
    pub selection: String,
    /// One sentence per line: the choice, and why every other profile was not chosen.
    pub explanation: Vec<String>,
    /// Where the chosen profile does not fit this machine (forced pins only).
    pub mismatches: Vec<String>,
    pub ready: bool,
    pub readiness: Vec<ReadinessCheck>,
    pub runtime: RuntimeConfig,
    pub sev_snp: SevView,
    pub cost: CostInputs,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SevView {
    /// This node runs as a SEV-SNP guest: its memory is encrypted and it can be attested.
    pub active: bool,
    pub state: String,
    pub guest_device: bool,
    pub evidence: Vec<String>,
}

impl NodeAssessment {
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
        facts,
    })
}
