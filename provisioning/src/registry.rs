//! The governing body's node registry: a JSON-lines file, one record per enrolment decision
//! (`admit` or `refuse`, with the reasons), append-only and hash-chained. Each record's
//! `prev_sha256` is the SHA-256 of the previous line's bytes (without its newline; 64
//! zeros for the first), its `entry_sha256` the SHA-256 of its own line written with that
//! field empty, and `seq` counts from 0, so an edited, removed or reordered line breaks the
//! chain at that line. The registered nodes are the `admit` records.
//!
//! A node's life is recorded as transitions, each with its reason: `rekey` (the same chip
//! under a new node key, from a verified enrolment: a TCB update or a new image seals a new
//! identity; the old key is retired), `config_update` (a new configuration bundle
//! supersedes the node's current one, which is refused from then on) and `retire`. A
//! transition takes its evidence from a later enrolment that verified and that only the
//! registry rules refused. A retired node's chip and key, and a key a re-key replaced, are
//! refused from then on. The registry's current view ([`current_nodes`]) is what
//! `provision registry nodes` gives `attest fleet`.
//!
//! The chain alone cannot show a full rewrite or a truncation at a record boundary, so the
//! governing body signs the head with its Ed25519 key ([`SignedHead`], kept in
//! `REGISTRY.head`): the number of records and the SHA-256 of the last line.
//! [`Registry::check_head`] refuses a file shorter than the signed head, one whose line at
//! the signed position is not the signed one (an edit, a rewrite, an emptied file) and
//! records after the signed head that nobody signed (a forged append, or enrolments not yet
//! reviewed with `provision registry sign`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;

use nix::fcntl::Flock;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::exit::ExitStatus;

/// The `prev_sha256` of the first record, and the head of an empty registry: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Why the registry could not be opened, verified or written.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// Reading, locking or writing the registry (or its head) failed.
    #[error("{path}: {source}")]
    Io {
        /// The registry or head file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not an intact chain: nothing is appended to it.
    #[error("{path}:{line}: registry integrity: {reason}")]
    Broken {
        /// The registry file.
        path: PathBuf,
        /// The line (1-based) where the chain breaks; 0 for the file or its head as a whole.
        line: usize,
        /// What breaks it.
        reason: String,
    },
}

impl RegistryError {
    /// Exit status of `provision` for this error.
    pub fn status(&self) -> ExitStatus {
        match self {
            RegistryError::Io { .. } => ExitStatus::Io,
            RegistryError::Broken { .. } => ExitStatus::RegistryBroken,
        }
    }
}

/// What a record decides about a node: an enrolment's `admit` or `refuse`, or a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The node's evidence verified and the registry rules allow it: registered.
    Admit,
    /// Not admitted; the record's `reasons` say why.
    Refuse,
    /// The node's chip under a new node key (and measurement); the old key is retired.
    Rekey,
    /// The node's new configuration bundle; the previous digest is superseded.
    ConfigUpdate,
    /// The node leaves the subnet.
    Retire,
}

/// One line of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The record's position, from 0.
    pub seq: u64,
    /// SHA-256 of the previous line ([`GENESIS`] for the first), hex.
    pub prev_sha256: String,
    /// When the decision was taken, UTC `YYYY-MM-DDTHH:MM:SSZ`.
    pub time: String,
    /// The same time, Unix seconds.
    pub unix_time: u64,
    /// What was decided.
    pub decision: Decision,
    /// The node's name.
    pub name: String,
    /// The node agent's base URL the evidence was fetched from.
    pub node_url: String,
    /// Hex, from the verified report (absent when no report could be read).
    pub chip_id: Option<String>,
    /// The node's public key from its evidence, hex.
    pub node_public_key: Option<String>,
    /// The launch measurement from the report, hex.
    pub measurement: Option<String>,
    /// `sev-snp` or `test`.
    pub evidence_source: Option<String>,
    /// The nonce the evidence had to bind, hex.
    pub nonce: String,
    /// The policy file the evidence was verified under.
    pub policy: String,
    /// SHA-256 of the policy and every file it refers to, hex.
    pub policy_sha256: String,
    /// The verification time the certificates were checked against (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_unix_time: Option<u64>,
    /// The configuration bundle the node runs (from its evidence), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    /// The signer of that bundle (from the evidence), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_signer: Option<String>,
    /// The plan's bundle digest for this node, which the evidence had to match, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_config_digest: Option<String>,
    /// Decided under the lab override of an incomplete policy (`--lab-policy`): what the
    /// policy lacked. Absent for production decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_policy: Option<Vec<String>>,
    /// The checks the policy waives (`[waive]`), "check: reason": what this decision was
    /// taken without. Absent when the policy waives nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waived: Option<Vec<String>>,
    /// Why it was refused: failed checks and registry rules; empty when admitted.
    pub reasons: Vec<String>,
    /// For a transition: why the governing body took it (`--reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a transition: the `seq` of the node's record it replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<u64>,
    /// For `rekey` and `config_update`: the `seq` of the enrolment whose verified evidence
    /// it admits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_record: Option<u64>,
    /// SHA-256 of this line as written with this field empty: the last line has no
    /// successor whose `prev_sha256` would show an edit, so each line carries its own.
    #[serde(default)]
    pub entry_sha256: String,
}

impl Record {
    /// The line for this record: compact JSON with `entry_sha256` filled in.
    fn to_line(&self) -> Result<String, serde_json::Error> {
        let mut r = self.clone();
        r.entry_sha256 = String::new();
        let blank = serde_json::to_string(&r)?;
        r.entry_sha256 = hex::encode(Sha256::digest(blank.as_bytes()));
        serde_json::to_string(&r)
    }
}

/// An open registry, locked for this process until dropped.
pub struct Registry {
    path: PathBuf,
    file: Flock<File>,
    records: Vec<Record>,
    /// SHA-256 of each line, by seq.
    hashes: Vec<String>,
    head: String,
}

impl Registry {
    /// Opens (creating if missing) and locks the registry, and verifies the whole chain.
    pub fn open(path: &Path) -> Result<Registry, RegistryError> {
        let io = |source| RegistryError::Io {
            path: path.to_owned(),
            source,
        };
        let created = !path.exists();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        if created {
            sync_parent(path)?;
        }
        // One enrolment at a time: two appenders could both chain onto the same head.
        let mut file = Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(std::io::Error::from(errno)))?;
        let mut text = String::new();
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.read_to_string(&mut text)
            .map_err(|e| RegistryError::Broken {
                path: path.to_owned(),
                line: 0,
                reason: format!("not UTF-8 text: {e}"),
            })?;
        let (records, hashes) =
            chain_hashes(&text).map_err(|(line, reason)| RegistryError::Broken {
                path: path.to_owned(),
                line,
                reason,
            })?;
        let head = hashes
            .last()
            .cloned()
            .unwrap_or_else(|| GENESIS.to_string());
        Ok(Registry {
            path: path.to_owned(),
            file,
            records,
            hashes,
            head,
        })
    }

    /// Every record, by seq.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// SHA-256 of the last line (GENESIS when empty).
    pub fn head(&self) -> &str {
        &self.head
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current record of every registered node (admitted, re-keyed or updated, not
    /// retired), in the order the nodes were admitted.
    pub fn admitted(&self) -> impl Iterator<Item = &Record> {
        current_nodes(&self.records)
            .into_iter()
            .map(|n| &self.records[n.current as usize])
    }

    /// Fills `seq` and `prev_sha256`, appends the line and syncs it to disk. An `admit` that
    /// breaks a registry rule is recorded as the `refuse` it is, with the reasons (the rules
    /// hold whoever built the record), and a refusal by the rules gets the retirements too.
    pub fn append(&mut self, mut record: Record) -> Result<Record, RegistryError> {
        self.enforce_rules(&mut record);
        record.seq = self.records.len() as u64;
        record.prev_sha256 = self.head.clone();
        let line = record.to_line().map_err(|e| RegistryError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let io = |source| RegistryError::Io {
            path: self.path.clone(),
            source,
        };
        // One write of the whole line (O_APPEND puts it at the end), then fsync.
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .map_err(io)?;
        self.file.sync_all().map_err(io)?;
        self.head = hex::encode(Sha256::digest(line.as_bytes()));
        self.hashes.push(self.head.clone());
        let record: Record = serde_json::from_str(&line).map_err(|e| RegistryError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.records.push(record.clone());
        Ok(record)
    }
}

impl Registry {
    /// For an enrolment whose evidence verified (admitted, or refused by registry rules
    /// only): every rule it breaks, the retirements included, so that its record says why.
    fn enforce_rules(&self, record: &mut Record) {
        let admit = record.decision == Decision::Admit;
        if !admit && !refused_only_by_registry_rules(record) {
            return;
        }
        let reasons = match (&record.chip_id, &record.node_public_key) {
            (Some(chip), Some(key)) => {
                let retired = retired(&self.records).violations(chip, key);
                if admit {
                    let mut reasons = rule_violations(self.admitted(), chip, key);
                    reasons.extend(retired);
                    reasons
                } else {
                    retired
                }
            }
            _ if admit => vec!["an admission without a chip id or node key".into()],
            _ => Vec::new(),
        };
        if !reasons.is_empty() {
            record.decision = Decision::Refuse;
            record.reasons.extend(reasons);
        }
    }
}

/// Checks every line; returns the records and the head, or (1-based line, reason).
pub fn verify_chain(text: &str) -> Result<(Vec<Record>, String), (usize, String)> {
    let (records, hashes) = chain_hashes(text)?;
    let head = hashes
        .last()
        .cloned()
        .unwrap_or_else(|| GENESIS.to_string());
    Ok((records, head))
}

/// As [`verify_chain`], with the SHA-256 of every line.
fn chain_hashes(text: &str) -> Result<(Vec<Record>, Vec<String>), (usize, String)> {
    let mut records = Vec::new();
    let mut hashes = Vec::new();
    let mut head = GENESIS.to_string();
    if text.is_empty() {
        return Ok((records, hashes));
    }
    let Some(body) = text.strip_suffix('\n') else {
        let line = text.lines().count();
        return Err((
            line,
            "the last line is not terminated: a write was cut short".into(),
        ));
    };
    for (i, line) in body.split('\n').enumerate() {
        let n = i + 1;
        let record: Record =
            serde_json::from_str(line).map_err(|e| (n, format!("not a registry record: {e}")))?;
        // Written by to_line: the same record must give back exactly this line.
        match record.to_line() {
            Ok(canonical) if canonical == line => {}
            _ => {
                return Err((
                    n,
                    "entry_sha256 does not match the line's content (or the line is not as written): the line was changed".into(),
                ));
            }
        }
        if record.seq != i as u64 {
            return Err((n, format!("seq {} where {i} was expected", record.seq)));
        }
        if record.prev_sha256 != head {
            return Err((
                n,
                format!(
                    "prev_sha256 {} != SHA-256 of the previous line {head}: a line was changed, removed or inserted",
                    record.prev_sha256
                ),
            ));
        }
        head = hex::encode(Sha256::digest(line.as_bytes()));
        hashes.push(head.clone());
        records.push(record);
    }
    Ok((records, hashes))
}

fn sync_parent(path: &Path) -> Result<(), RegistryError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = File::open(parent).map_err(|source| RegistryError::Io {
        path: parent.to_owned(),
        source,
    })?;
    nix::unistd::fsync(dir.as_fd()).map_err(|e| RegistryError::Io {
        path: parent.to_owned(),
        source: std::io::Error::from(e),
    })
}

/// The registry rules, against the admitted records: a node key already registered with
/// another chip id (the chip changed), a chip id already registered under another node
/// key, or the same pair again (duplicate).
pub fn rule_violations<'a>(
    admitted: impl Iterator<Item = &'a Record>,
    chip_id: &str,
    node_key: &str,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for r in admitted {
        let same_key = r.node_public_key.as_deref() == Some(node_key);
        let same_chip = r.chip_id.as_deref() == Some(chip_id);
        match (same_key, same_chip) {
            (true, true) => reasons.push(format!(
                "duplicate: node key {node_key} with this chip id is already registered (record {}, {})",
                r.seq, r.name
            )),
            (true, false) => reasons.push(format!(
                "chip id changed: node key {node_key} is registered with chip id {} (record {}, {})",
                r.chip_id.as_deref().unwrap_or("?"),
                r.seq,
                r.name
            )),
            (false, true) => reasons.push(format!(
                "chip id {chip_id} is already registered under node key {} (record {}, {})",
                r.node_public_key.as_deref().unwrap_or("?"),
                r.seq,
                r.name
            )),
            (false, false) => {}
        }
    }
    reasons
}

/// Chip ids and node keys the registry retired, each with the record that retired it.
#[derive(Debug, Default)]
struct Retired<'a> {
    chips: Vec<(&'a str, &'a Record)>,
    keys: Vec<(&'a str, &'a Record)>,
}

/// What `retire` records took out of the subnet (the node's chip and key) and the keys a
/// `rekey` replaced: none of them comes back, whether by enrolment or by a transition.
fn retired(records: &[Record]) -> Retired<'_> {
    let mut out = Retired::default();
    for r in records {
        match r.decision {
            Decision::Retire => {
                out.chips.extend(r.chip_id.as_deref().map(|c| (c, r)));
                out.keys
                    .extend(r.node_public_key.as_deref().map(|k| (k, r)));
            }
            Decision::Rekey => {
                let old = r.supersedes.and_then(|s| records.get(s as usize));
                if let Some(old) = old
                    && old.node_public_key != r.node_public_key
                {
                    out.keys
                        .extend(old.node_public_key.as_deref().map(|k| (k, r)));
                }
            }
            _ => {}
        }
    }
    out
}

impl Retired<'_> {
    fn key(&self, key: &str) -> Option<&Record> {
        self.keys.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
    }

    fn violations(&self, chip_id: &str, node_key: &str) -> Vec<String> {
        let chips = self.chips.iter().filter(|(c, _)| *c == chip_id);
        let chips = chips.map(|(_, r)| {
            format!(
                "retired: chip id {chip_id} was retired (record {}, {})",
                r.seq, r.name
            )
        });
        let keys = self.keys.iter().filter(|(k, _)| *k == node_key);
        let keys = keys.map(|(_, r)| {
            format!(
                "retired: node key {node_key} was retired (record {}, {})",
                r.seq, r.name
            )
        });
        chips.chain(keys).collect()
    }
}

/// A registered node in the registry's current view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// The `seq` of the record that states the node's current identity and configuration.
    pub current: u64,
    /// The node's chip id, hex: what identifies it across re-keys.
    pub chip_id: String,
    /// Configuration digests this node ran before and that are refused from now on.
    pub superseded_configs: Vec<String>,
    /// Node keys this chip had before a re-key.
    pub retired_keys: Vec<String>,
}

/// The registry's current view: one entry per registered chip, following `admit`, `rekey`,
/// `config_update` and `retire` records in order. `attest fleet` checks nodes against it
/// (through `provision registry nodes`).
pub fn current_nodes(records: &[Record]) -> Vec<NodeView> {
    let mut nodes: Vec<NodeView> = Vec::new();
    for r in records {
        let Some(chip) = r.chip_id.as_deref() else {
            continue;
        };
        let at = nodes.iter().position(|n| n.chip_id == chip);
        match (r.decision, at) {
            (Decision::Admit, None) => nodes.push(NodeView {
                current: r.seq,
                chip_id: chip.to_string(),
                superseded_configs: Vec::new(),
                retired_keys: Vec::new(),
            }),
            (Decision::Rekey | Decision::ConfigUpdate, Some(i)) => {
                let old = &records[nodes[i].current as usize];
                if old.config_digest != r.config_digest
                    && let Some(d) = &old.config_digest
                {
                    nodes[i].superseded_configs.push(d.clone());
                }
                if old.node_public_key != r.node_public_key
                    && let Some(k) = &old.node_public_key
                {
                    nodes[i].retired_keys.push(k.clone());
                }
                nodes[i].current = r.seq;
            }
            (Decision::Retire, Some(i)) => {
                nodes.remove(i);
            }
            _ => {}
        }
    }
    nodes
}

/// A transition the registry refuses to record: nothing is appended.
#[derive(Debug, Error)]
pub enum TransitionError {
    /// The registry does not verify, or appending failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The record the transition names does not allow it.
    #[error("{path}: record {seq}: {reason}")]
    Refused {
        /// The registry file.
        path: PathBuf,
        /// The record the refusal is about.
        seq: u64,
        /// Why.
        reason: String,
    },
    /// No registered node (or more than one) has the name given.
    #[error("{path}: {reason}")]
    NoSuchNode {
        /// The registry file.
        path: PathBuf,
        /// None or several, with the name.
        reason: String,
    },
}

impl TransitionError {
    /// Exit status of `provision registry` for this error: the registry's own, or a
    /// refused transition ([`ExitStatus::CheckFailed`]).
    pub fn status(&self) -> ExitStatus {
        match self {
            TransitionError::Registry(e) => e.status(),
            TransitionError::Refused { .. } | TransitionError::NoSuchNode { .. } => {
                ExitStatus::CheckFailed
            }
        }
    }
}

/// Whether an enrolment's reasons are registry rules only (its evidence verified).
fn refused_only_by_registry_rules(r: &Record) -> bool {
    !r.reasons.is_empty()
        && r.reasons.iter().all(|reason| {
            reason.starts_with("duplicate: ")
                || reason.starts_with("chip id changed: ")
                || reason.starts_with("retired: ")
                || (reason.starts_with("chip id ")
                    && reason.contains(" is already registered under node key "))
        })
}

impl Registry {
    fn refused(&self, seq: u64, reason: String) -> TransitionError {
        TransitionError::Refused {
            path: self.path.clone(),
            seq,
            reason,
        }
    }

    /// The enrolment record `seq`, its evidence verified under the policy (it was refused
    /// only by the registry rules), and the node its chip id is registered as.
    fn evidence(&self, seq: u64) -> Result<(&Record, NodeView), TransitionError> {
        let ev = self.records.get(seq as usize).ok_or_else(|| {
            self.refused(
                seq,
                format!("no such record (the registry has {})", self.records.len()),
            )
        })?;
        if ev.decision != Decision::Refuse || !refused_only_by_registry_rules(ev) {
            return Err(self.refused(
                seq,
                "not an enrolment whose evidence verified and that only the registry rules refused (enrol the node with `provision enroll` first)".into(),
            ));
        }
        let (Some(chip), Some(_), Some(_)) = (&ev.chip_id, &ev.node_public_key, &ev.measurement)
        else {
            return Err(self.refused(
                seq,
                "the evidence lacks a chip id, node key or measurement".into(),
            ));
        };
        let node = current_nodes(&self.records)
            .into_iter()
            .find(|n| &n.chip_id == chip)
            .ok_or_else(|| {
                self.refused(
                    seq,
                    format!("chip id {chip} is not a registered node (enrol it instead)"),
                )
            })?;
        if self
            .records
            .iter()
            .any(|r| r.seq > seq && r.evidence_record == Some(seq))
        {
            return Err(self.refused(
                seq,
                "this evidence was already used for a transition".into(),
            ));
        }
        // Evidence taken before the node's current record was established is stale: it
        // could bring back an identity or configuration the registry has moved past.
        if seq < node.current {
            return Err(self.refused(
                seq,
                format!(
                    "the evidence predates the node's current record {} (enrol the node again)",
                    node.current
                ),
            ));
        }
        Ok((ev, node))
    }

    /// A transition record for `node` built from the evidence record `ev`.
    fn transition(&self, decision: Decision, ev: &Record, node: &NodeView, reason: &str) -> Record {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let current = &self.records[node.current as usize];
        Record {
            seq: 0,
            prev_sha256: String::new(),
            time: attestation::fmt_unix(now),
            unix_time: now,
            decision,
            name: current.name.clone(),
            reasons: Vec::new(),
            reason: Some(reason.to_string()),
            supersedes: Some(current.seq),
            evidence_record: Some(ev.seq),
            entry_sha256: String::new(),
            ..ev.clone()
        }
    }

    /// Re-keys a registered node: the enrolment `evidence_seq` (same chip id, a new node key,
    /// evidence verified under the policy, so an allowed measurement) becomes the node's
    /// identity and the old key is retired. Appends the `rekey` record.
    pub fn rekey(&mut self, evidence_seq: u64, reason: &str) -> Result<Record, TransitionError> {
        check_reason(self, evidence_seq, reason)?;
        let (ev, node) = self.evidence(evidence_seq)?;
        let current = &self.records[node.current as usize];
        if ev.node_public_key == current.node_public_key {
            return Err(self.refused(
                evidence_seq,
                "the node key is the node's current key: not a re-key (a new configuration is `config-update`)".into(),
            ));
        }
        let key = ev.node_public_key.as_deref().unwrap_or_default();
        // The rule enrolment applies: a node key belongs to one chip.
        if let Some(r) = self
            .admitted()
            .find(|r| r.node_public_key.as_deref() == Some(key) && r.chip_id != ev.chip_id)
        {
            return Err(self.refused(
                evidence_seq,
                format!(
                    "node key {key} is registered with chip id {} (record {}, {})",
                    r.chip_id.as_deref().unwrap_or("?"),
                    r.seq,
                    r.name
                ),
            ));
        }
        if let Some(r) = retired(&self.records).key(key) {
            return Err(self.refused(
                evidence_seq,
                format!("node key {key} was retired (record {}, {})", r.seq, r.name),
            ));
        }
        if let Some(d) = &ev.config_digest
            && node.superseded_configs.contains(d)
        {
            return Err(self.refused(
                evidence_seq,
                format!("configuration {d} was superseded on this node: a rollback"),
            ));
        }
        // A re-key that also changes the configuration supersedes the old one, so the new
        // one must be a plan's, as for `config-update`.
        if ev.config_digest != current.config_digest && ev.planned_config_digest != ev.config_digest
        {
            return Err(self.refused(
                evidence_seq,
                "the evidence's configuration is not the node's current one and was not checked against a plan bundle (enrol with --bundle)".into(),
            ));
        }
        let record = self.transition(Decision::Rekey, ev, &node, reason);
        Ok(self.append(record)?)
    }

    /// Records a registered node's new configuration bundle from the enrolment
    /// `evidence_seq` (same chip id and node key, evidence binding the plan's new bundle);
    /// the previous digest is superseded and refused from then on. Appends the
    /// `config_update` record.
    pub fn config_update(
        &mut self,
        evidence_seq: u64,
        reason: &str,
    ) -> Result<Record, TransitionError> {
        check_reason(self, evidence_seq, reason)?;
        let (ev, node) = self.evidence(evidence_seq)?;
        let current = &self.records[node.current as usize];
        if ev.node_public_key != current.node_public_key {
            return Err(self.refused(
                evidence_seq,
                "the node key is not the node's current key (a new identity is `rekey`)".into(),
            ));
        }
        let Some(digest) = ev.config_digest.as_deref() else {
            return Err(self.refused(evidence_seq, "the evidence binds no configuration".into()));
        };
        if ev.planned_config_digest.as_deref() != Some(digest) {
            return Err(self.refused(
                evidence_seq,
                "the evidence's configuration was not checked against a plan bundle (enrol with --bundle)".into(),
            ));
        }
        if current.config_digest.as_deref() == Some(digest) {
            return Err(self.refused(
                evidence_seq,
                format!("configuration {digest} is already the node's current one"),
            ));
        }
        if node.superseded_configs.iter().any(|d| d == digest) {
            return Err(self.refused(
                evidence_seq,
                format!(
                    "configuration {digest} was superseded on this node: a rollback is refused"
                ),
            ));
        }
        let record = self.transition(Decision::ConfigUpdate, ev, &node, reason);
        Ok(self.append(record)?)
    }

    /// Retires the registered node `name`. Appends the `retire` record.
    pub fn retire(&mut self, name: &str, reason: &str) -> Result<Record, TransitionError> {
        let nodes = current_nodes(&self.records);
        let matching: Vec<&NodeView> = nodes
            .iter()
            .filter(|n| self.records[n.current as usize].name == name)
            .collect();
        let node = match matching.as_slice() {
            [one] => (*one).clone(),
            [] => {
                return Err(TransitionError::NoSuchNode {
                    path: self.path.clone(),
                    reason: format!("no registered node is named {name:?}"),
                });
            }
            _ => {
                return Err(TransitionError::NoSuchNode {
                    path: self.path.clone(),
                    reason: format!("several registered nodes are named {name:?}"),
                });
            }
        };
        check_reason(self, node.current, reason)?;
        let current = self.records[node.current as usize].clone();
        let mut record = self.transition(Decision::Retire, &current, &node, reason);
        record.evidence_record = None;
        Ok(self.append(record)?)
    }
}

fn check_reason(reg: &Registry, seq: u64, reason: &str) -> Result<(), TransitionError> {
    if reason.trim().is_empty() {
        return Err(reg.refused(seq, "a transition needs a reason (--reason)".into()));
    }
    Ok(())
}

/// Domain separation of the head signature.
const HEAD_CONTEXT: &[u8] = b"sovereign-node registry head v1\0";

/// The governing body's signature over the registry's head: `REGISTRY.head`, JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedHead {
    /// The number of records the signature covers.
    pub records: u64,
    /// SHA-256 of the last covered line (GENESIS for none).
    pub head_sha256: String,
    /// The governing body's Ed25519 public key, hex.
    pub signer: String,
    /// Ed25519 over HEAD_CONTEXT, `records` (u64 big-endian) and `head_sha256` (ASCII), hex.
    pub signature: String,
}

fn head_message(records: u64, head: &str) -> Vec<u8> {
    let mut m = HEAD_CONTEXT.to_vec();
    m.extend_from_slice(&records.to_be_bytes());
    m.extend_from_slice(head.as_bytes());
    m
}

/// Where the signed head of `registry` is kept by default: `REGISTRY.head`.
pub fn head_path(registry: &Path) -> PathBuf {
    let mut p = registry.as_os_str().to_owned();
    p.push(".head");
    PathBuf::from(p)
}

/// Checks that `signed` names `signer` and that its signature verifies under it. The error
/// completes "signed head FILE" (it starts with " is signed by" or ": ").
pub fn verify_head_signature(signed: &SignedHead, signer: &[u8; 32]) -> Result<(), String> {
    let key = VerifyingKey::from_bytes(signer)
        .map_err(|e| format!(": signer {}: {e}", hex::encode(signer)))?;
    if signed.signer != hex::encode(signer) {
        return Err(format!(
            " is signed by {}, not the governing body's key {}",
            signed.signer,
            hex::encode(signer)
        ));
    }
    let signature = hex::decode(&signed.signature)
        .ok()
        .and_then(|b| Signature::from_slice(&b).ok())
        .ok_or_else(|| ": bad signature encoding".to_string())?;
    key.verify(
        &head_message(signed.records, &signed.head_sha256),
        &signature,
    )
    .map_err(|_| {
        format!(
            ": the signature does not verify under {}",
            hex::encode(signer)
        )
    })
}

/// What the signed head check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadCheck {
    /// Records the signed head covers.
    pub signed: u64,
    /// Records after it, not signed (enrolments not yet reviewed, or forged).
    pub unsigned: u64,
    /// The signed head itself, verified.
    pub head: SignedHead,
}

impl Registry {
    /// Signs the current head with the governing body's key and writes it to `head`
    /// (temporary file, fsync, rename).
    pub fn sign_head(&self, key: &SigningKey, head: &Path) -> Result<SignedHead, RegistryError> {
        let records = self.records.len() as u64;
        let signed = SignedHead {
            records,
            head_sha256: self.head.clone(),
            signer: hex::encode(key.verifying_key().to_bytes()),
            signature: hex::encode(key.sign(&head_message(records, &self.head)).to_bytes()),
        };
        let text = serde_json::to_string_pretty(&signed).map_err(|e| RegistryError::Io {
            path: head.to_owned(),
            source: std::io::Error::other(e),
        })? + "\n";
        sn_config::fs::write_file_atomic(head, text.as_bytes()).map_err(|e| RegistryError::Io {
            path: head.to_owned(),
            source: std::io::Error::other(e),
        })?;
        Ok(signed)
    }

    /// Checks the registry against the signed head in `head`, signed by `signer` (the
    /// governing body's public key): the file must hold at least the signed records and
    /// the line at the signed position must be the signed one. Records after it are
    /// refused unless `allow_unsigned` (as when reviewing and signing them).
    pub fn check_head(
        &self,
        head: &Path,
        signer: &[u8; 32],
        allow_unsigned: bool,
    ) -> Result<HeadCheck, RegistryError> {
        let signed = self.load_signed_head(head, signer)?;
        let have = self.records.len() as u64;
        if have < signed.records {
            return Err(self.broken(
                self.records.len(),
                format!(
                    "the file has {have} record(s), the signed head covers {}: records were removed (truncated or emptied)",
                    signed.records
                ),
            ));
        }
        let at = match signed.records {
            0 => GENESIS.to_string(),
            n => self.hashes[n as usize - 1].clone(),
        };
        if at != signed.head_sha256 {
            return Err(self.broken(
                signed.records as usize,
                format!(
                    "line {} has SHA-256 {at}, the signed head {}: the registry was rewritten",
                    signed.records, signed.head_sha256
                ),
            ));
        }
        let unsigned = have - signed.records;
        if unsigned > 0 && !allow_unsigned {
            return Err(self.broken(
                signed.records as usize + 1,
                format!(
                    "{unsigned} record(s) from seq {} on are not covered by the signed head: appended without the governing body's key (review them and run `provision registry sign`)",
                    signed.records
                ),
            ));
        }
        Ok(HeadCheck {
            signed: signed.records,
            unsigned,
            head: signed,
        })
    }

    /// The signed head in `head`, read, parsed and its signature verified under `signer`
    /// (which must be the key the head names). Every error is the registry's, at line 0.
    fn load_signed_head(
        &self,
        head: &Path,
        signer: &[u8; 32],
    ) -> Result<SignedHead, RegistryError> {
        let text = std::fs::read_to_string(head).map_err(|e| {
            self.broken(
                0,
                format!(
                    "no signed head at {}: {e} (the governing body signs it with `provision registry sign`)",
                    head.display()
                ),
            )
        })?;
        let signed: SignedHead = serde_json::from_str(&text).map_err(|e| {
            self.broken(
                0,
                format!("signed head {}: not a signed head: {e}", head.display()),
            )
        })?;
        verify_head_signature(&signed, signer)
            .map_err(|why| self.broken(0, format!("signed head {}{why}", head.display())))?;
        Ok(signed)
    }

    /// SHA-256 of the line at which the first `records` records end (GENESIS for none):
    /// the chained digest of that prefix. None when the file holds fewer records.
    pub fn prefix_sha256(&self, records: u64) -> Option<&str> {
        match records {
            0 => Some(GENESIS),
            n => self.hashes.get(n as usize - 1).map(String::as_str),
        }
    }

    /// [`RegistryError::Broken`] for this registry's file at `line`.
    fn broken(&self, line: usize, reason: String) -> RegistryError {
        RegistryError::Broken {
            path: self.path.clone(),
            line,
            reason,
        }
    }
}
