//! Enrolment: ask a node agent for evidence bound to a fresh random nonce
//! (`GET {url}/v1/attestation?nonce=<64 hex>`; a busy agent is asked again within the
//! timeout, each time with a new nonce), verify it with the attestation library under
//! the governing body's policy, apply the registry rules, and append the decision (admit or
//! refuse, with every reason) to the registry. Every decision is recorded, refusals included.

use std::path::{Path, PathBuf};
use std::time::Duration;

use attestation::ChainVerifier;
use attestation::bundle::{Bundle, verify_bundle};
use attestation::fmt_unix;
use attestation::nodes::ExpectedNode;
use attestation::policy::Policy;
use attestation::report::Verdict;
use attestation::retry::{Evidence, FetchFailed, RetryPolicy, evidence_client, fetch_evidence};
use attestation::snp::raw::AttestationReport;
use thiserror::Error;

use crate::exit::ExitStatus;
use crate::registry::{Decision, Record, Registry, RegistryError, rule_violations};

/// Why an enrolment could not be decided (a refusal is a decision, not an error).
#[derive(Debug, Error)]
pub enum EnrollError {
    /// The verification policy does not load.
    #[error("policy {path}: {message}")]
    Policy {
        /// The policy file.
        path: PathBuf,
        /// Why it does not load.
        message: String,
    },
    /// The policy lacks what admission needs or names a test root (or the plan bundle is
    /// missing), and no lab override was given.
    #[error(
        "policy {path} cannot admit nodes: it lacks {}; pass --lab-policy to enrol under it in a lab (recorded in the registry)",
        missing.join(", ")
    )]
    IncompletePolicy {
        /// The policy file.
        path: PathBuf,
        /// What admission needs that it (or the request) lacks.
        missing: Vec<String>,
    },
    /// The plan bundle does not load or verify.
    #[error("plan bundle {path}: {source}")]
    PlanBundle {
        /// The bundle directory.
        path: PathBuf,
        /// Why it was refused.
        source: sn_config::ConfigError,
    },
    /// The registry does not open or verify, or the record could not be appended.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The async runtime for the HTTP client could not be started.
    #[error("cannot start the HTTP client: {0}")]
    Runtime(std::io::Error),
}

impl EnrollError {
    /// Exit status of `provision enroll` for this error.
    pub fn status(&self) -> ExitStatus {
        match self {
            EnrollError::Policy { .. }
            | EnrollError::IncompletePolicy { .. }
            | EnrollError::PlanBundle { .. } => ExitStatus::InvalidInput,
            EnrollError::Registry(e) => e.status(),
            EnrollError::Runtime(_) => ExitStatus::Io,
        }
    }

    /// [`EnrollError::status`] as the process exit status.
    pub fn exit_code(&self) -> u8 {
        self.status().code()
    }
}

/// What `provision enroll` asks for.
pub struct EnrollRequest<'a> {
    /// The node agent's base URL.
    pub node_url: &'a str,
    /// Name recorded for the node (default: the URL).
    pub name: Option<&'a str>,
    /// The verification policy file.
    pub policy: &'a Path,
    /// The registry file (created if missing).
    pub registry: &'a Path,
    /// Verification time for certificate validity (Unix seconds).
    pub verify_time: u64,
    /// Deadline of the evidence request, all tries together.
    pub timeout: Duration,
    /// The node's bundle directory from `provision plan --out` (DIR/NODE): the evidence
    /// must bind exactly this bundle's digest and signer. `None` is refused unless
    /// `lab_policy` is set.
    pub plan_bundle: Option<&'a Path>,
    /// Lab override: enrol under a policy that lacks what admission needs or names a test
    /// root, or without a plan bundle (recorded).
    pub lab_policy: bool,
}

/// The recorded decision, and the verifier's checks where evidence was verified.
#[derive(Debug)]
pub struct Enrolment {
    /// The record appended to the registry.
    pub record: Record,
    /// The verifier's checks; None when no evidence could be fetched or parsed.
    pub verdict: Option<Verdict>,
    /// The registry's head after the append.
    pub registry_head: String,
}

/// Enrols one node: loads the policy (and the plan bundle), fetches evidence for a fresh
/// nonce, verifies it, applies the registry rules and appends the decision, admit or
/// refuse. An error means no decision was recorded.
pub fn enroll(req: &EnrollRequest<'_>) -> Result<Enrolment, EnrollError> {
    let (policy, lab) = load_policy(req)?;
    let plan_bundle = load_plan_bundle(req)?;
    let mut registry = Registry::open(req.registry)?;
    let mut record = new_record(req, &policy, plan_bundle.as_ref(), lab);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(EnrollError::Runtime)?;
    let fetched = runtime.block_on(fetch(req.node_url, req.timeout));
    let (nonce, fetched) = match fetched {
        Ok(evidence) => (evidence.nonce, Ok(evidence.body)),
        Err(failed) => (failed.nonce, Err(failed.to_string())),
    };
    record.nonce = hex::encode(nonce);
    let verdict = match fetched
        .and_then(|body| Bundle::from_json(&body).map_err(|e| format!("bad evidence: {e}")))
    {
        Err(reason) => {
            record.reasons.push(reason);
            None
        }
        Ok(bundle) => Some(decide(
            &mut record,
            &bundle,
            &nonce,
            &policy,
            plan_bundle.as_ref(),
            req.verify_time,
            &registry,
        )),
    };
    let record = registry.append(record)?;
    Ok(Enrolment {
        record,
        verdict,
        registry_head: registry.head().to_string(),
    })
}

/// The verification policy, and what it (or the request) lacks for a production admission
/// when `--lab-policy` allows enrolling anyway: `Some(lacking)` is recorded as a lab
/// decision. Lacking something without the lab override is refused.
fn load_policy(req: &EnrollRequest<'_>) -> Result<(Policy, Option<Vec<String>>), EnrollError> {
    let policy = Policy::load(req.policy).map_err(|e| EnrollError::Policy {
        path: req.policy.to_owned(),
        message: e.to_string(),
    })?;
    let mut lacking = policy.missing_for_admission();
    if lacking.is_empty() && req.plan_bundle.is_some() {
        return Ok((policy, None));
    }
    if req.plan_bundle.is_none() {
        lacking.push("the node's plan bundle (--bundle)".into());
    }
    if !req.lab_policy {
        return Err(EnrollError::IncompletePolicy {
            path: req.policy.to_owned(),
            missing: lacking,
        });
    }
    Ok((policy, Some(lacking)))
}

/// The plan bundle the node must run, verified, when the request names one.
fn load_plan_bundle(req: &EnrollRequest<'_>) -> Result<Option<sn_config::Bundle>, EnrollError> {
    req.plan_bundle
        .map(|dir| {
            sn_config::Bundle::load_dir(dir, &[]).map_err(|source| EnrollError::PlanBundle {
                path: dir.to_owned(),
                source,
            })
        })
        .transpose()
}

/// The record of this enrolment before any evidence: a refusal without reasons, what
/// the request and policy say, and `lab` (what a lab decision lacks).
fn new_record(
    req: &EnrollRequest<'_>,
    policy: &Policy,
    plan_bundle: Option<&sn_config::Bundle>,
    lab: Option<Vec<String>>,
) -> Record {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Record {
        seq: 0,
        prev_sha256: String::new(),
        time: fmt_unix(now),
        unix_time: now,
        decision: Decision::Refuse,
        name: req
            .name
            .map(str::to_string)
            .or_else(|| plan_bundle.map(|b| b.node().name.clone()))
            .unwrap_or_else(|| req.node_url.to_string()),
        node_url: req.node_url.to_string(),
        chip_id: None,
        node_public_key: None,
        measurement: None,
        evidence_source: None,
        // The nonce of the try that was answered (or the last one tried), set once fetched.
        nonce: String::new(),
        policy: req.policy.display().to_string(),
        // The policy text and every file it refers to (attestation::policy::policy_digest).
        policy_sha256: hex::encode(policy.sha256),
        verify_unix_time: Some(req.verify_time),
        config_digest: None,
        config_signer: None,
        planned_config_digest: plan_bundle.map(|b| hex::encode(b.digest())),
        lab_policy: lab,
        waived: Some(policy.waived()).filter(|w| !w.is_empty()),
        reasons: Vec::new(),
        reason: None,
        supersedes: None,
        evidence_record: None,
        entry_sha256: String::new(),
    }
}

/// Records what the evidence `bundle` (answering `nonce`) says about the node, verifies it
/// under `policy` (bound to the plan bundle's digest and signer, if any), applies the registry rules to an admitted
/// node, and sets the decision with every reason. Returns the verifier's verdict.
fn decide(
    record: &mut Record,
    bundle: &Bundle,
    nonce: &[u8; 32],
    policy: &Policy,
    plan_bundle: Option<&sn_config::Bundle>,
    verify_time: u64,
    registry: &Registry,
) -> Verdict {
    record_evidence(record, bundle);
    let chains = ChainVerifier::new(policy.trust_store());
    let v = verify_bundle(
        bundle,
        nonce,
        policy,
        &chains,
        verify_time,
        &ExpectedNode {
            config_digest: plan_bundle.map(|b| b.digest()),
            ..ExpectedNode::default()
        },
    );
    // The plan's signer too: a bundle with the plan's content signed by another
    // key the policy pins is still not the plan's bundle.
    if let Some(plan) = plan_bundle
        && bundle.config.signer != plan.signer()
    {
        record.reasons.push(format!(
            "configuration signer {} is not the plan's signer {}",
            hex::encode(bundle.config.signer),
            hex::encode(plan.signer())
        ));
    }
    if v.admitted && record.reasons.is_empty() {
        match (&record.chip_id, &record.node_public_key) {
            (Some(chip), Some(key)) => {
                let violations = rule_violations(registry.admitted(), chip, key);
                record.reasons.extend(violations);
            }
            _ => record
                .reasons
                .push("admitted evidence without a readable chip id or node key".into()),
        }
        if record.reasons.is_empty() {
            record.decision = Decision::Admit;
        }
    } else {
        record.reasons.extend(
            v.failed()
                .map(|c| format!("check {} failed: {}", c.name, c.detail)),
        );
    }
    v
}

/// What the evidence says about the node, whether or not it verifies: its source, node
/// key, configuration digest and signer, and the chip id and measurement of a readable report.
fn record_evidence(record: &mut Record, bundle: &Bundle) {
    record.evidence_source = Some(
        match bundle.source {
            attestation::bundle::EvidenceSource::SevSnp => "sev-snp",
            attestation::bundle::EvidenceSource::Test => "test",
        }
        .to_string(),
    );
    record.node_public_key = hex::decode(bundle.node_public_key.trim())
        .ok()
        .map(hex::encode);
    record.config_digest = Some(hex::encode(bundle.config.bundle_digest));
    record.config_signer = Some(hex::encode(bundle.config.signer));
    if let Some(report) = hex::decode(bundle.snp.report.trim())
        .ok()
        .and_then(|b| AttestationReport::parse(&b).ok())
    {
        record.chip_id = Some(hex::encode(report.chip_id()));
        record.measurement = Some(hex::encode(report.measurement()));
    }
}

/// The node's evidence, asked again while it is busy (429/503) within `deadline`, each try
/// with a fresh nonce (`attestation::retry`).
async fn fetch(url: &str, deadline: Duration) -> Result<Evidence, FetchFailed> {
    let client = evidence_client(deadline);
    fetch_evidence(&client, url, &RetryPolicy::within(deadline)).await
}
