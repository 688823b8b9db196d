//! A node bundle: its members, `SHA256SUMS`, the signature, the digest evidence binds,
//! and the bundle directory `provision plan --out DIR` writes per node.

use std::collections::BTreeMap;
use std::path::Path;

use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

use crate::error::ConfigError;
use crate::members::{
    NODE_CONFIG, REPLICA_CONFIG, SIGNATURE, SUMS, allowed_list, allowed_members, member_limit,
};
use crate::node::NodeConfig;
use crate::sign::SignatureFile;

/// Whose signature [`Bundle::verify_with`] accepts.
#[derive(Clone, Copy)]
pub(crate) enum Signers<'a> {
    /// One of these keys; none pinned accepts nothing.
    Pinned(&'a [[u8; 32]]),
    /// Whichever key signed (host-side tools, which compare the signer themselves).
    Any,
}

/// A verified bundle: every member's checksum matched SHA256SUMS and the signature over
/// SHA256SUMS verified. Only [`Bundle::sign`] and [`Bundle::verify`] make one.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    node: NodeConfig,
    /// Content members (node.toml, ic.json5) by name, as signed.
    members: BTreeMap<String, Vec<u8>>,
    sums: Vec<u8>,
    signature: SignatureFile,
    signer: [u8; 32],
}

/// SHA256SUMS text: `<sha256 hex>  <name>\n` per content member, in name order.
pub fn sums_of(members: &BTreeMap<String, Vec<u8>>) -> String {
    members
        .iter()
        .map(|(name, bytes)| format!("{}  {name}\n", hex::encode(Sha256::digest(bytes))))
        .collect()
}

/// Parses SHA256SUMS strictly (the format [`sums_of`] writes): name -> digest.
fn parse_sums(sums: &[u8]) -> Result<BTreeMap<String, [u8; 32]>, ConfigError> {
    let bad = |reason: String| ConfigError::Sums(reason);
    let text = std::str::from_utf8(sums).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let body = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("empty, or the last line is not terminated".into()))?;
    let mut out = BTreeMap::new();
    let mut last: Option<&str> = None;
    for (i, line) in body.split('\n').enumerate() {
        let n = i + 1;
        let (digest, name) = line
            .split_once("  ")
            .ok_or_else(|| bad(format!("line {n} is not `<sha256>  <name>`")))?;
        let digest: [u8; 32] = hex::decode(digest)
            .ok()
            .filter(|_| digest.bytes().all(|b| !b.is_ascii_uppercase()))
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                bad(format!(
                    "line {n}: {digest:?} is not 64 lowercase hex digits"
                ))
            })?;
        if name == SUMS || name == SIGNATURE || !allowed_members().any(|m| m == name) {
            return Err(bad(format!("line {n}: {name:?} is not a content member")));
        }
        if last.is_some_and(|l| l >= name) {
            return Err(bad(format!(
                "line {n}: {name:?} is out of order or repeated"
            )));
        }
        last = Some(name);
        out.insert(name.to_string(), digest);
    }
    Ok(out)
}

impl Bundle {
    /// Builds and signs a bundle from its node settings and, optionally, the replica's
    /// configuration (ic.json5).
    pub fn sign(
        node: &NodeConfig,
        replica_config: Option<&[u8]>,
        key: &SigningKey,
    ) -> Result<Bundle, ConfigError> {
        node.validate()?;
        let mut members = BTreeMap::new();
        members.insert(NODE_CONFIG.to_string(), node.to_toml().into_bytes());
        if let Some(r) = replica_config {
            members.insert(REPLICA_CONFIG.to_string(), r.to_vec());
        }
        for (name, bytes) in &members {
            check_size(name, bytes.len() as u64)?;
        }
        check_replica_config(&members)?;
        let sums = sums_of(&members).into_bytes();
        let signature = SignatureFile::sign(key, &sums);
        Ok(Bundle {
            node: node.clone(),
            members,
            signer: key.verifying_key().to_bytes(),
            sums,
            signature,
        })
    }

    /// Verifies a bundle given as all its files (name -> bytes): exactly the schema's
    /// members, the signature over SHA256SUMS by one of `pinned` (nothing pinned is
    /// [`ConfigError::NoPinnedSigner`]), then every checksum, and only then parses
    /// node.toml.
    pub fn verify(
        files: BTreeMap<String, Vec<u8>>,
        pinned: &[[u8; 32]],
    ) -> Result<Bundle, ConfigError> {
        Bundle::verify_with(files, Signers::Pinned(pinned))
    }

    /// [`Bundle::verify`] with the signature checked against whichever key SHA256SUMS.sig
    /// names, returned as [`Bundle::signer`] for the caller to compare. Host-side tools only
    /// (reading their own plan's output); the node never uses it.
    pub fn verify_any_signer(files: BTreeMap<String, Vec<u8>>) -> Result<Bundle, ConfigError> {
        Bundle::verify_with(files, Signers::Any)
    }

    pub(crate) fn verify_with(
        mut files: BTreeMap<String, Vec<u8>>,
        signers: Signers<'_>,
    ) -> Result<Bundle, ConfigError> {
        for (name, bytes) in &files {
            if !allowed_members().any(|m| m == name) {
                return Err(ConfigError::UnknownMember {
                    member: name.clone(),
                    allowed: allowed_list(),
                });
            }
            check_size(name, bytes.len() as u64)?;
        }
        let take = |files: &mut BTreeMap<String, Vec<u8>>, name: &str| {
            files
                .remove(name)
                .ok_or_else(|| ConfigError::MissingMember {
                    member: name.to_string(),
                })
        };
        let sums = take(&mut files, SUMS)?;
        let signature = SignatureFile::parse(&take(&mut files, SIGNATURE)?)?;
        let signer = match signers {
            Signers::Pinned(pinned) => signature.verify(&sums, pinned)?,
            Signers::Any => signature.verify_any_signer(&sums)?,
        };
        let listed = parse_sums(&sums)?;
        for (name, bytes) in &files {
            let Some(recorded) = listed.get(name) else {
                return Err(ConfigError::Sums(format!("member {name:?} is not listed")));
            };
            let actual: [u8; 32] = Sha256::digest(bytes).into();
            if &actual != recorded {
                return Err(ConfigError::ChecksumMismatch {
                    member: name.clone(),
                    actual: hex::encode(actual),
                    recorded: hex::encode(recorded),
                });
            }
        }
        if let Some(name) = listed.keys().find(|n| !files.contains_key(*n)) {
            return Err(ConfigError::MissingMember {
                member: name.clone(),
            });
        }
        // Authentic from here on: parse what the signer wrote.
        let node = NodeConfig::parse(files.get(NODE_CONFIG).ok_or_else(|| {
            ConfigError::MissingMember {
                member: NODE_CONFIG.into(),
            }
        })?)?;
        check_replica_config(&files)?;
        Ok(Bundle {
            node,
            members: files,
            sums,
            signature,
            signer,
        })
    }

    /// Reads and verifies a bundle directory (as [`Bundle::write_dir`] writes it). Anything
    /// but the schema's regular files in it is refused. A bundle directory is read by the
    /// host-side tools only (`provision flash`, `provision enroll --bundle`): `pinned` empty
    /// verifies the signature by whichever key signed and leaves comparing
    /// [`Bundle::signer`] to the caller; otherwise the signer must be one of `pinned`.
    pub fn load_dir(dir: &Path, pinned: &[[u8; 32]]) -> Result<Bundle, ConfigError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| ConfigError::Io { path, source }
        };
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let entry = entry.map_err(io(dir))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !allowed_members().any(|m| m == name) {
                return Err(ConfigError::UnknownMember {
                    member: name,
                    allowed: allowed_list(),
                });
            }
            let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
            if !meta.file_type().is_file() {
                return Err(ConfigError::NotRegularFile {
                    member: name,
                    what: crate::fs::describe_file_type(meta.file_type()),
                });
            }
            check_size(&name, meta.len())?;
            files.insert(name, std::fs::read(&path).map_err(io(&path))?);
        }
        if pinned.is_empty() {
            Bundle::verify_any_signer(files)
        } else {
            Bundle::verify(files, pinned)
        }
    }

    /// Writes the bundle's files into `dir` (created if missing; existing bundle files are
    /// replaced, each through a temporary file and a rename).
    pub fn write_dir(&self, dir: &Path) -> Result<(), ConfigError> {
        std::fs::create_dir_all(dir).map_err(|source| ConfigError::Io {
            path: dir.to_owned(),
            source,
        })?;
        for (name, bytes) in self.files() {
            crate::fs::write_file_atomic(&dir.join(name), &bytes)?;
        }
        crate::fs::sync_dir(dir)
    }

    /// Every file of the bundle: SHA256SUMS, SHA256SUMS.sig and the content members.
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut files = self.members.clone();
        files.insert(SUMS.into(), self.sums.clone());
        files.insert(SIGNATURE.into(), self.signature.to_toml().into_bytes());
        files
    }

    /// The parsed and validated node.toml.
    pub fn node(&self) -> &NodeConfig {
        &self.node
    }

    /// The content members (node.toml, ic.json5), as signed.
    pub fn members(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.members
    }

    /// ic.json5, the replica configuration, when the bundle has one.
    pub fn replica_config(&self) -> Option<&[u8]> {
        self.members.get(REPLICA_CONFIG).map(Vec::as_slice)
    }

    /// The bytes of SHA256SUMS, the signed list of member digests.
    pub fn sums(&self) -> &[u8] {
        &self.sums
    }

    /// The signer's Ed25519 public key.
    pub fn signer(&self) -> [u8; 32] {
        self.signer
    }

    /// The bundle digest: SHA-256 of the bytes of SHA256SUMS. It covers every content
    /// member; the signer is bound next to it (see the crate documentation).
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(&self.sums).into()
    }
}

/// Refuses a member larger than its limit ([`member_limit`]).
pub(crate) fn check_size(name: &str, size: u64) -> Result<(), ConfigError> {
    let limit = member_limit(name);
    if size > limit {
        return Err(ConfigError::OversizeMember {
            member: name.to_string(),
            size,
            limit,
        });
    }
    Ok(())
}

/// ic.json5 is handed to the replica as is; the node checks only that it is UTF-8 text.
fn check_replica_config(members: &BTreeMap<String, Vec<u8>>) -> Result<(), ConfigError> {
    if let Some(bytes) = members.get(REPLICA_CONFIG) {
        std::str::from_utf8(bytes).map_err(|e| ConfigError::Invalid {
            member: REPLICA_CONFIG.into(),
            reason: format!("not UTF-8: {e}"),
        })?;
    }
    Ok(())
}
