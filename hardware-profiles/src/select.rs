//! Matching profiles against probed facts, the choice among the matching ones, and the
//! readiness evaluation of the chosen profile.

use crate::error::SelectError;
use crate::facts::{Fact, GpuFacts, MachineFacts, SevSnpState};
pub use crate::mismatch::Mismatch;
use crate::profile::{CountRange, GpuRequirement, MatchCriteria, ModelPattern, Profile};
use crate::set::ProfileSet;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An operator's choice of profile by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin<'a> {
    /// The profile's name.
    pub name: &'a str,
    /// Use the profile even where it does not match this machine (reported).
    pub force: bool,
}

/// Why the selected profile was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectedBy {
    /// The matching profile with the most criteria (ties: the first name in byte order).
    MostSpecificMatch,
    /// No other profile matched.
    DevelopmentDefault,
    /// Pinned by the operator, and it matches.
    Pinned,
    /// Pinned by the operator with force although it does not match.
    ForcedPin,
}

/// How one profile fared against the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The profile's name.
    pub name: String,
    /// The file it was read from.
    pub source: String,
    /// Its number of `[match]` criteria ([`MatchCriteria::specificity`]).
    pub specificity: usize,
    /// Whether it is the set's development default.
    pub development_default: bool,
    /// Empty when the profile matches.
    pub mismatches: Vec<Mismatch>,
    /// GPU criteria that could not be checked because NVML is unavailable while NVIDIA
    /// GPUs are on the PCI bus; they do not prevent a match (readiness checks the GPU).
    pub unverified: Vec<Mismatch>,
}

impl Candidate {
    /// Whether the profile matches the machine (no mismatch).
    pub fn matches(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// The outcome of [`ProfileSet::select`].
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The chosen profile.
    pub profile: Profile,
    /// Why it was chosen.
    pub selected_by: SelectedBy,
    /// Where the chosen profile does not fit the machine (non-empty only for a forced pin).
    pub mismatches: Vec<Mismatch>,
    /// Criteria of the chosen profile that could not be checked (see [`Candidate::unverified`]).
    pub unverified: Vec<Mismatch>,
    /// Every profile of the set, by name, with its outcome.
    pub candidates: Vec<Candidate>,
}

impl Selection {
    /// The choice and every mismatch, one sentence per line.
    pub fn explain(&self) -> Vec<String> {
        let chosen = &self.profile.name;
        let specificity = self.profile.criteria.specificity();
        let mut lines = vec![match self.selected_by {
            SelectedBy::MostSpecificMatch => format!(
                "selected `{chosen}` ({}): the matching profile with the most criteria ({specificity})",
                self.profile.source
            ),
            SelectedBy::DevelopmentDefault => format!(
                "selected `{chosen}` ({}): the development default, because no other profile matches",
                self.profile.source
            ),
            SelectedBy::Pinned => format!(
                "selected `{chosen}` ({}): pinned by the operator; it matches this machine",
                self.profile.source
            ),
            SelectedBy::ForcedPin => format!(
                "selected `{chosen}` ({}): pinned by the operator WITH FORCE although it does not match this machine ({} mismatches)",
                self.profile.source,
                self.mismatches.len()
            ),
        }];
        for mismatch in &self.mismatches {
            lines.push(format!("  `{chosen}` mismatch: {mismatch}"));
        }
        for unverified in &self.unverified {
            lines.push(format!("  `{chosen}` not verified: {unverified}"));
        }
        for candidate in &self.candidates {
            if &candidate.name == chosen {
                continue;
            }
            if candidate.matches() {
                let why = if candidate.development_default {
                    "is the development default, used only when nothing else matches".to_string()
                } else if candidate.specificity == specificity {
                    format!(
                        "also matches with as many criteria ({specificity}); `{chosen}` comes first by name"
                    )
                } else {
                    format!(
                        "also matches, with fewer criteria ({} < {specificity})",
                        candidate.specificity
                    )
                };
                let why = match self.selected_by {
                    SelectedBy::Pinned | SelectedBy::ForcedPin => {
                        "also matches; not chosen because of the pin".to_string()
                    }
                    _ => why,
                };
                lines.push(format!("`{}` {why}", candidate.name));
            } else {
                lines.push(format!("`{}` does not match:", candidate.name));
                for mismatch in &candidate.mismatches {
                    lines.push(format!("  {mismatch}"));
                }
            }
        }
        lines
    }

    /// Whether the node may report ready under this profile, with every check.
    pub fn readiness(&self, facts: &MachineFacts) -> Readiness {
        let profile = &self.profile;
        let requirements = profile.requirements;
        let mut checks = Vec::new();
        if requirements.sev_snp {
            checks.push(sev_snp_check(facts));
        }
        let device = profile.crypto.gpu_device;
        let gpu = facts.gpus.gpus.iter().find(|g| g.index as usize == device);
        let gpu_state = gpu_state(facts, gpu, device);
        checks.extend(gpu_check(requirements.gpu, &gpu_state, device));
        if requirements.gpu_cc {
            checks.push(gpu_cc_check(gpu));
        }
        checks.extend(pool_cpus_check(profile, facts));
        Readiness {
            ready: checks.iter().all(|check| check.satisfied),
            checks,
        }
    }
}

/// The `sev_snp` readiness check: satisfied only inside a SEV-SNP guest.
fn sev_snp_check(facts: &MachineFacts) -> ReadinessCheck {
    let sev = &facts.sev_snp;
    let evidence = sev.evidence.join("; ");
    ReadinessCheck {
        requirement: "sev_snp".into(),
        satisfied: sev.state == SevSnpState::Guest,
        detail: match sev.state {
            SevSnpState::Guest => format!("running in a SEV-SNP guest ({evidence})"),
            SevSnpState::Host => format!(
                "SEV-SNP required but this is an SNP-capable host, not an SNP guest: the replica would run unprotected ({evidence})"
            ),
            SevSnpState::Absent => {
                format!("SEV-SNP required but absent ({evidence})")
            }
        },
    }
}

/// The profile's crypto GPU (`device`) when it is present and usable, else why not.
fn gpu_state<'a>(
    facts: &MachineFacts,
    gpu: Option<&'a GpuFacts>,
    device: usize,
) -> Result<&'a GpuFacts, String> {
    match gpu {
        Some(gpu) => gpu.usable().map(|()| gpu),
        None => Err(match facts.gpus.absence_reason() {
            Some(reason) => format!("no GPU: {reason}"),
            None => format!(
                "no GPU with index {device} (NVML lists {} GPUs)",
                facts.gpus.gpus.len()
            ),
        }),
    }
}

/// The `gpu` readiness check: an unusable GPU fails it when required and is only reported
/// when preferred; none when the profile turns the GPU off.
fn gpu_check(
    requirement: GpuRequirement,
    gpu_state: &Result<&GpuFacts, String>,
    device: usize,
) -> Option<ReadinessCheck> {
    match requirement {
        GpuRequirement::Required => Some(ReadinessCheck {
            requirement: "gpu".into(),
            satisfied: gpu_state.is_ok(),
            detail: match gpu_state {
                Ok(gpu) => format!("GPU {device} usable: {}", gpu.name),
                Err(reason) => format!("GPU required but not usable: {reason}"),
            },
        }),
        GpuRequirement::Preferred => Some(ReadinessCheck {
            requirement: "gpu".into(),
            satisfied: true,
            detail: match gpu_state {
                Ok(gpu) => format!("GPU {device} usable: {}", gpu.name),
                Err(reason) => format!(
                    "GPU preferred but not usable ({reason}): every crypto path runs on the CPU"
                ),
            },
        }),
        GpuRequirement::Off => None,
    }
}

/// The `gpu_cc` readiness check: the crypto GPU exists and is in production CC mode.
fn gpu_cc_check(gpu: Option<&GpuFacts>) -> ReadinessCheck {
    let detail = match gpu {
        None => Err("GPU CC required but there is no GPU".to_string()),
        Some(gpu) => cc_production_state(gpu),
    };
    ReadinessCheck {
        requirement: "gpu_cc".into(),
        satisfied: detail.is_ok(),
        detail: detail.unwrap_or_else(|reason| reason),
    }
}

/// The `pool_cpus` readiness check: every pool's pinned CPUs are online (a forced pin may
/// carry CPU sets this machine does not have); none when no pool pins CPUs.
fn pool_cpus_check(profile: &Profile, facts: &MachineFacts) -> Option<ReadinessCheck> {
    if !profile.pools.iter().any(|(_, pool)| pool.cpus.is_some()) {
        return None;
    }
    let online = facts.cpu.online_cpus.known();
    let mut missing = Vec::new();
    for (kind, pool) in profile.pools.iter() {
        if let Some(cpus) = &pool.cpus {
            match online {
                Some(online) if cpus.is_subset(online) => {}
                Some(online) => missing.push(format!(
                    "pools.{kind}.cpus `{cpus}` ({}) names CPUs {} that are not online (online: {online})",
                    pool.location,
                    cpus.difference(online)
                )),
                None => missing.push(format!(
                    "pools.{kind}.cpus `{cpus}` cannot be checked: online CPUs unknown ({})",
                    facts.cpu.online_cpus
                )),
            }
        }
    }
    Some(ReadinessCheck {
        requirement: "pool_cpus".into(),
        satisfied: missing.is_empty(),
        detail: if missing.is_empty() {
            "every pinned pool's CPUs are online".to_string()
        } else {
            missing.join("; ")
        },
    })
}

/// CC on, not in developer-tools mode, and accepting work.
fn cc_production_state(gpu: &GpuFacts) -> Result<String, String> {
    let state = format!(
        "cc_enabled {}, dev_tools_mode {}, ready {}",
        gpu.cc_enabled, gpu.cc_dev_tools_mode, gpu.cc_ready
    );
    let ok = gpu.cc_enabled == Fact::Known(true)
        && gpu.cc_dev_tools_mode == Fact::Known(false)
        && gpu.cc_ready == Fact::Known(true);
    if ok {
        Ok(format!("GPU {} in production CC mode ({state})", gpu.index))
    } else {
        Err(format!(
            "GPU CC required but GPU {} is not in production CC mode ({state})",
            gpu.index
        ))
    }
}

/// Whether the node may report ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// True when every check is satisfied.
    pub ready: bool,
    /// One per requirement of the profile.
    pub checks: Vec<ReadinessCheck>,
}

impl Readiness {
    /// The failed checks' details: why the node is not ready.
    pub fn reasons(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|check| !check.satisfied)
            .map(|check| check.detail.clone())
            .collect()
    }
}

/// One requirement of the profile checked against the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadinessCheck {
    /// `sev_snp`, `gpu`, `gpu_cc` or `pool_cpus`.
    pub requirement: String,
    /// Whether it holds (a preferred GPU's check always does; its detail says what is used).
    pub satisfied: bool,
    /// What was found, in one sentence.
    pub detail: String,
}

// ---------------------------------------------------------------------------------------
// Matching.

fn fact_text<T: fmt::Display>(fact: &Fact<T>) -> String {
    match fact {
        Fact::Known(value) => value.to_string(),
        Fact::Unknown(reason) => format!("unknown ({reason})"),
    }
}

fn check_count(
    out: &mut Vec<Mismatch>,
    criterion: &str,
    range: Option<CountRange>,
    found: Fact<u64>,
) {
    let Some(range) = range else { return };
    if found.known().is_some_and(|value| range.contains(*value)) {
        return;
    }
    out.push(Mismatch {
        criterion: criterion.into(),
        expected: range.to_string(),
        found: fact_text(&found),
    });
}

fn check_pattern(
    out: &mut Vec<Mismatch>,
    criterion: &str,
    pattern: Option<&ModelPattern>,
    found: &Fact<String>,
) {
    let Some(pattern) = pattern else { return };
    if found.known().is_some_and(|value| pattern.matches(value)) {
        return;
    }
    out.push(Mismatch {
        criterion: criterion.into(),
        expected: pattern.to_string(),
        found: match found {
            Fact::Known(value) => format!("`{value}`"),
            Fact::Unknown(reason) => format!("unknown ({reason})"),
        },
    });
}

fn gpu_model_ok(criteria: &MatchCriteria, gpu: &GpuFacts) -> bool {
    criteria
        .gpu_model
        .as_ref()
        .is_none_or(|pattern| gpu.name.known().is_some_and(|name| pattern.matches(name)))
}

fn gpu_memory_ok(criteria: &MatchCriteria, gpu: &GpuFacts) -> bool {
    criteria.gpu_memory_gib.is_none_or(|range| {
        gpu.memory_gib()
            .known()
            .is_some_and(|gib| range.contains(*gib))
    })
}

fn gpu_cc_ok(criteria: &MatchCriteria, gpu: &GpuFacts) -> bool {
    criteria
        .gpu_cc_capable
        .is_none_or(|wanted| gpu.cc_capable.known() == Some(&wanted))
}

/// Checks the GPU criteria: how many GPUs meet every GPU criterion at once, reported per
/// criterion no GPU meets, else as a count. When NVML cannot be read, only the count of
/// NVIDIA devices on the PCI bus is checked and the other criteria go to `unverified`.
fn gpu_mismatches(
    criteria: &MatchCriteria,
    facts: &MachineFacts,
    out: &mut Vec<Mismatch>,
    unverified: &mut Vec<Mismatch>,
) {
    if !criteria.has_gpu_criteria() && criteria.gpu_count.is_none() {
        return;
    }
    let count = criteria.gpu_count.unwrap_or(CountRange {
        min: Some(1),
        max: None,
    });
    if let Some(reason) = facts.gpus.unreadable() {
        unreadable_gpu_mismatches(criteria, facts, count, &reason, out, unverified);
        return;
    }
    let fitting = facts
        .gpus
        .gpus
        .iter()
        .filter(|gpu| {
            gpu_model_ok(criteria, gpu) && gpu_memory_ok(criteria, gpu) && gpu_cc_ok(criteria, gpu)
        })
        .count() as u64;
    if count.contains(fitting) {
        return;
    }
    let before = out.len();
    gpu_criterion_mismatches(criteria, facts, out);
    if out.len() == before {
        let what = if criteria.has_gpu_criteria() {
            "GPUs meeting every GPU criterion at once"
        } else {
            "GPUs"
        };
        out.push(Mismatch {
            criterion: "gpu_count".into(),
            expected: format!("{count} {what}"),
            found: match facts.gpus.absence_reason() {
                Some(reason) => format!("0 ({reason})"),
                None => fitting.to_string(),
            },
        });
    }
}

/// The GPU criteria while NVML cannot be read (`reason`): a mismatch when the count of
/// NVIDIA devices on the PCI bus is outside `count`, else every other GPU criterion noted
/// as unverified.
fn unreadable_gpu_mismatches(
    criteria: &MatchCriteria,
    facts: &MachineFacts,
    count: CountRange,
    reason: &str,
    out: &mut Vec<Mismatch>,
    unverified: &mut Vec<Mismatch>,
) {
    let on_bus = facts.gpus.pci_nvidia.len() as u64;
    if !count.contains(on_bus) {
        out.push(Mismatch {
            criterion: "gpu_count".into(),
            expected: count.to_string(),
            found: format!("{on_bus} ({reason})"),
        });
        return;
    }
    let found = format!("unverifiable: {reason}");
    let mut note = |criterion: &str, expected: String| {
        unverified.push(Mismatch {
            criterion: criterion.into(),
            expected,
            found: found.clone(),
        })
    };
    if let Some(pattern) = &criteria.gpu_model {
        note("gpu_model", pattern.to_string());
    }
    if let Some(range) = criteria.gpu_memory_gib {
        note("gpu_memory_gib", range.to_string());
    }
    if let Some(wanted) = criteria.gpu_cc_capable {
        note("gpu_cc_capable", wanted.to_string());
    }
}

/// One mismatch per GPU criterion that no GPU meets, listing what each GPU has.
fn gpu_criterion_mismatches(
    criteria: &MatchCriteria,
    facts: &MachineFacts,
    out: &mut Vec<Mismatch>,
) {
    let gpus = &facts.gpus.gpus;
    let listing = |value: &dyn Fn(&GpuFacts) -> String| -> String {
        match facts.gpus.absence_reason() {
            Some(reason) => format!("no GPU ({reason})"),
            None => gpus
                .iter()
                .map(|gpu| format!("GPU {}: {}", gpu.index, value(gpu)))
                .collect::<Vec<_>>()
                .join(", "),
        }
    };
    if let Some(pattern) = &criteria.gpu_model
        && !gpus.iter().any(|gpu| gpu_model_ok(criteria, gpu))
    {
        out.push(Mismatch {
            criterion: "gpu_model".into(),
            expected: pattern.to_string(),
            found: listing(&|gpu| match &gpu.name {
                Fact::Known(name) => format!("`{name}`"),
                unknown => fact_text(unknown),
            }),
        });
    }
    if let Some(range) = criteria.gpu_memory_gib
        && !gpus.iter().any(|gpu| gpu_memory_ok(criteria, gpu))
    {
        out.push(Mismatch {
            criterion: "gpu_memory_gib".into(),
            expected: range.to_string(),
            found: listing(&|gpu| fact_text(&gpu.memory_gib())),
        });
    }
    if let Some(wanted) = criteria.gpu_cc_capable
        && !gpus.iter().any(|gpu| gpu_cc_ok(criteria, gpu))
    {
        out.push(Mismatch {
            criterion: "gpu_cc_capable".into(),
            expected: wanted.to_string(),
            found: listing(&|gpu| fact_text(&gpu.cc_capable)),
        });
    }
}

/// How a profile fits a machine.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assessment {
    /// Every criterion the machine does not meet; empty when the profile matches.
    pub mismatches: Vec<Mismatch>,
    /// Criteria that could not be checked (NVML unavailable, GPUs on the bus).
    pub unverified: Vec<Mismatch>,
}

/// Checks every criterion of `profile` against `facts`.
pub fn assess(profile: &Profile, facts: &MachineFacts) -> Assessment {
    let criteria = &profile.criteria;
    let cpu = &facts.cpu;
    let mut out = Vec::new();
    let mut unverified = Vec::new();
    if let Some(vendor) = &criteria.cpu_vendor
        && cpu.vendor.known() != Some(vendor)
    {
        out.push(Mismatch {
            criterion: "cpu_vendor".into(),
            expected: format!("`{vendor}`"),
            found: match &cpu.vendor {
                Fact::Known(found) => format!("`{found}`"),
                unknown => fact_text(unknown),
            },
        });
    }
    check_pattern(
        &mut out,
        "cpu_model",
        criteria.cpu_model.as_ref(),
        &cpu.model_name,
    );
    check_count(
        &mut out,
        "physical_cores",
        criteria.physical_cores,
        cpu.physical_cores.clone().map(u64::from),
    );
    check_count(
        &mut out,
        "logical_cpus",
        criteria.logical_cpus,
        cpu.logical_cpus().map(u64::from),
    );
    check_count(
        &mut out,
        "memory_gib",
        criteria.memory_gib,
        facts.memory_gib(),
    );
    if let Some(wanted) = criteria.sev_snp
        && facts.sev_snp.state != wanted
    {
        out.push(Mismatch {
            criterion: "sev_snp".into(),
            expected: wanted.to_string(),
            found: facts.sev_snp.state.to_string(),
        });
    }
    gpu_mismatches(criteria, facts, &mut out, &mut unverified);
    if let Some(online) = cpu.online_cpus.known() {
        for (kind, pool) in profile.pools.iter() {
            if let Some(cpus) = &pool.cpus
                && !cpus.is_subset(online)
            {
                out.push(Mismatch {
                    criterion: format!("pools.{kind}.cpus"),
                    expected: format!("CPUs {cpus} online ({})", pool.location),
                    found: format!("online CPUs {online}"),
                });
            }
        }
    }
    Assessment {
        mismatches: out,
        unverified,
    }
}

impl ProfileSet {
    /// Chooses the profile for `facts`: the pinned one, else the matching profile with
    /// the most criteria (ties: first name in byte order), else the development default.
    pub fn select(
        &self,
        facts: &MachineFacts,
        pin: Option<Pin<'_>>,
    ) -> Result<Selection, SelectError> {
        let candidates: Vec<Candidate> = self
            .profiles()
            .iter()
            .map(|profile| {
                let assessment = assess(profile, facts);
                Candidate {
                    name: profile.name.clone(),
                    source: profile.source.clone(),
                    specificity: profile.criteria.specificity(),
                    development_default: profile.development_default,
                    mismatches: assessment.mismatches,
                    unverified: assessment.unverified,
                }
            })
            .collect();
        let chosen = |index: usize, selected_by: SelectedBy, mismatches: Vec<Mismatch>| Selection {
            profile: self.profiles()[index].clone(),
            selected_by,
            mismatches,
            unverified: candidates[index].unverified.clone(),
            candidates: candidates.clone(),
        };

        if let Some(pin) = pin {
            let Some(index) = self.profiles().iter().position(|p| p.name == pin.name) else {
                return Err(SelectError::UnknownPin {
                    name: pin.name.to_string(),
                    available: self.profiles().iter().map(|p| p.name.clone()).collect(),
                });
            };
            let mismatches = candidates[index].mismatches.clone();
            return if mismatches.is_empty() {
                Ok(chosen(index, SelectedBy::Pinned, mismatches))
            } else if pin.force {
                Ok(chosen(index, SelectedBy::ForcedPin, mismatches))
            } else {
                Err(SelectError::PinMismatch {
                    name: pin.name.to_string(),
                    mismatches,
                })
            };
        }

        // Profiles are kept sorted by name, so the first of equal specificity wins.
        let best = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.matches() && !c.development_default)
            .min_by(|(_, a), (_, b)| {
                b.specificity
                    .cmp(&a.specificity)
                    .then_with(|| a.name.cmp(&b.name))
            })
            .map(|(index, _)| index);
        if let Some(index) = best {
            return Ok(chosen(index, SelectedBy::MostSpecificMatch, Vec::new()));
        }
        if let Some(index) = candidates.iter().position(|c| c.development_default) {
            return Ok(chosen(index, SelectedBy::DevelopmentDefault, Vec::new()));
        }
        Err(SelectError::NoMatch {
            rejected: candidates
                .into_iter()
                .map(|c| (c.name, c.mismatches))
                .collect(),
        })
    }
}
