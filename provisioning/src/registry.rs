//! The governing body's node registry: a JSON-lines file, one record per enrolment decision
//! (`admit` or `refuse`, with the reasons), append-only and hash-chained. Each record's
//! `prev_sha256` is the SHA-256 of the previous line's bytes (without its newline; 64
//! zeros for the first), its `entry_sha256` the SHA-256 of its own line written with that
//! field empty, and `seq` counts from 0, so an edited, removed or reordered line breaks the
//! chain at that line. The registered nodes are the `admit` records.
//!
//! A chain shows tampering relative to a head the governing body has kept: anyone who can
//! rewrite the whole file can recompute it. `provision registry check` prints the head to
//! record elsewhere (minutes, a second copy).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;

use nix::fcntl::Flock;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not an intact chain: nothing is appended to it.
    #[error("{path}:{line}: registry integrity: {reason}")]
    Broken {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Admit,
    Refuse,
}

/// One line of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub seq: u64,
    pub prev_sha256: String,
    /// When the decision was taken, UTC `YYYY-MM-DDTHH:MM:SSZ`.
    pub time: String,
    pub unix_time: u64,
    pub decision: Decision,
    pub name: String,
    pub node_url: String,
    /// Hex, from the verified report (absent when no report could be read).
    pub chip_id: Option<String>,
    pub node_public_key: Option<String>,
    pub measurement: Option<String>,
    /// `sev-snp` or `test`.
    pub evidence_source: Option<String>,
    pub nonce: String,
    pub policy: String,
    pub policy_sha256: String,
    /// The verification time the certificates were checked against (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_unix_time: Option<u64>,
    /// The configuration bundle the node runs (from its evidence), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_signer: Option<String>,
    /// The plan's bundle digest for this node, which the evidence had to match, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_config_digest: Option<String>,
    /// Decided under the lab override of an incomplete policy (`--lab-policy`): what the
    /// policy lacked. Absent for production decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_policy: Option<Vec<String>>,
    /// Why it was refused: failed checks and registry rules; empty when admitted.
    pub reasons: Vec<String>,
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
        let (records, head) =
            verify_chain(&text).map_err(|(line, reason)| RegistryError::Broken {
                path: path.to_owned(),
                line,
                reason,
            })?;
        Ok(Registry {
            path: path.to_owned(),
            file,
            records,
            head,
        })
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// SHA-256 of the last line (GENESIS when empty).
    pub fn head(&self) -> &str {
        &self.head
    }

    pub fn admitted(&self) -> impl Iterator<Item = &Record> {
        self.records
            .iter()
            .filter(|r| r.decision == Decision::Admit)
    }

    /// Fills `seq` and `prev_sha256`, appends the line and syncs it to disk.
    pub fn append(&mut self, mut record: Record) -> Result<Record, RegistryError> {
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
        let record: Record = serde_json::from_str(&line).map_err(|e| RegistryError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.records.push(record.clone());
        Ok(record)
    }
}

/// Checks every line; returns the records and the head, or (1-based line, reason).
pub fn verify_chain(text: &str) -> Result<(Vec<Record>, String), (usize, String)> {
    let mut records = Vec::new();
    let mut head = GENESIS.to_string();
    if text.is_empty() {
        return Ok((records, head));
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
        records.push(record);
    }
    Ok((records, head))
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
