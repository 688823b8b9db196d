//! The governing body's verification policy (TOML). A constraint the policy leaves out is
//! reported as a skipped check, never silently passed, and [`Policy::missing_for_admission`]
//! names what admission refuses to leave out; a TCB minimum covers every product (a report
//! from a product the TCB table does not list fails); debug and migration-agent guests are
//! always rejected. [`Policy::sha256`] digests the policy text and every file it refers to.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::snp::amd::{AmdCert, TrustAnchor, TrustStore, parse_certs};
use crate::snp::tcb::{Product, TcbParts};
use crate::waiver::{self, GAPS};

/// Why a policy cannot be loaded: each error names the file or field at fault.
#[derive(Debug, Error)]
pub enum PolicyError {
    /// A file the policy is or names could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file, as resolved against the policy's directory.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// The policy text is not TOML of the policy schema.
    #[error("policy {path} is not valid TOML for this schema: {message}")]
    Toml {
        /// The policy file.
        path: PathBuf,
        /// The parser's error.
        message: String,
    },
    /// A field's value is malformed or contradicts another field.
    #[error("{field}: {message}")]
    Value {
        /// The field, e.g. `identity.measurements[0]`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A release manifest the policy names is unusable.
    #[error("release manifest {path}: {message}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The test root certificate file is unusable.
    #[error("certificate {path}: {message}")]
    Cert {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// Why a report's TCB cannot be compared with the policy's minimum.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TcbMinimumError {
    /// The policy sets TCB minimums, but none for the report's processor product: such a
    /// report is refused, never passed unchecked.
    #[error(
        "the policy sets no {product} TCB minimum (tcb.{section}); it lists only {}: a {product} report is refused",
        listed.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
    )]
    ProductNotListed {
        /// The report's processor product.
        product: Product,
        /// The `[tcb]` table the minimum would be in.
        section: &'static str,
        /// The products the policy does set minimums for.
        listed: Vec<Product>,
    },
}

/// The configuration signers an image pins on its measured command line, as its release
/// manifest records them, for the image of one launch measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePins {
    /// The image's expected launch measurement (48 bytes).
    pub measurement: Vec<u8>,
    /// The Ed25519 keys of the signers the image pins.
    pub config_signers: Vec<[u8; 32]>,
    /// The manifest's path, for the check's detail.
    pub manifest: String,
}

/// First bytes hashed into [`Policy::sha256`].
pub const POLICY_DIGEST_TAG: &[u8] = b"sovereign-node-policy-digest-v1";

/// A file the policy refers to, as read when the policy was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferencedFile {
    /// The policy field that names it, e.g. `identity.release_manifests[0]`.
    pub field: String,
    /// The path as the policy writes it.
    pub path: PathBuf,
    /// The file's contents.
    pub bytes: Vec<u8>,
}

/// POLICY.toml as written: every section, before values are checked and files loaded.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// `[report]`: which endorsement keys may sign.
    #[serde(default)]
    pub report: ReportSection,
    /// `[guest_policy]`: the guest policy bits and values required.
    #[serde(default)]
    pub guest_policy: GuestPolicySection,
    /// `[tcb]`: TCB and firmware minimums.
    #[serde(default)]
    pub tcb: TcbSection,
    /// `[identity]`: the allow-lists of launch identity and chip ids.
    #[serde(default)]
    pub identity: IdentitySection,
    /// `[trust]`: a test root and a CRL.
    #[serde(default)]
    pub trust: TrustSection,
    /// `count` (GPUs required), the rest is the nvidia module's `GpuPolicy`.
    #[serde(default)]
    pub gpu: toml::Table,
    /// `[config]`: the configuration signers.
    #[serde(default)]
    pub config: ConfigSection,
    /// `[waive]`: checks this policy deliberately leaves without their value, each with the
    /// reason (crate::waiver).
    #[serde(default)]
    pub waive: std::collections::BTreeMap<String, String>,
}

/// The checks of [`GAPS`] whose value `file` leaves out, in the order of [`GAPS`]. The GPU
/// checks apply only to a policy that expects GPUs (`gpu.count` above 0),
/// `config.image_signer` only to measurements given without their release manifest.
fn unset_checks(file: &PolicyFile) -> Vec<&'static str> {
    let g = &file.guest_policy;
    let gpus = file
        .gpu
        .get("count")
        .and_then(|v| v.as_integer())
        .is_some_and(|n| n > 0);
    // An empty list compares nothing: as absent as no list.
    let gpu_unset = |key: &str| {
        gpus && file
            .gpu
            .get(key)
            .and_then(|v| v.as_array())
            .is_none_or(|a| a.is_empty())
    };
    let absent = [
        file.trust.crl.is_none(),
        file.tcb.min_firmware.is_none(),
        g.min_abi.is_none(),
        g.min_guest_svn.is_none(),
        g.allow_smt.is_none(),
        g.allow_cxl.is_none(),
        g.require_single_socket.is_none(),
        g.require_aes_256_xts.is_none(),
        g.require_rapl_disabled.is_none(),
        g.require_ciphertext_hiding.is_none(),
        !file.identity.measurements.is_empty(),
        gpu_unset("measurements"),
        gpu_unset("driver_versions"),
        gpu_unset("vbios_versions"),
    ];
    GAPS.iter()
        .zip(absent)
        .filter(|(_, a)| *a)
        .map(|(gap, _)| gap.check)
        .collect()
}

/// The node configuration bundles (sn-config) this policy accepts.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSection {
    /// Ed25519 public keys (64 hex digits) whose signed bundles a node may run.
    #[serde(default)]
    pub signers: Vec<String>,
}

/// `[report]`: which endorsement keys may sign.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSection {
    /// "vcek", "vlek"; empty means both.
    #[serde(default)]
    pub signing_keys: Vec<String>,
}

/// `[guest_policy]`: the guest policy bits and values required; debug and migration agent are
/// refused whatever it says.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestPolicySection {
    /// Whether the guest may allow SMT (unset: allowed, and a gap to waive).
    pub allow_smt: Option<bool>,
    /// The guest must run on a single socket (SINGLE_SOCKET); unset: not required, a gap to waive.
    pub require_single_socket: Option<bool>,
    /// Whether the guest may allow CXL memory (unset: allowed, and a gap to waive).
    pub allow_cxl: Option<bool>,
    /// The guest must demand AES-256-XTS memory encryption; unset: not required, a gap to waive.
    pub require_aes_256_xts: Option<bool>,
    /// The guest must demand RAPL disabled; unset: not required, a gap to waive.
    pub require_rapl_disabled: Option<bool>,
    /// The guest must demand ciphertext hiding; unset: not required, a gap to waive.
    pub require_ciphertext_hiding: Option<bool>,
    /// Minimum ABI the guest policy must demand of the firmware, "major.minor".
    pub min_abi: Option<String>,
    /// VMPLs the report may come from, e.g. [0].
    pub vmpl: Option<Vec<u32>>,
    /// Minimum guest SVN.
    pub min_guest_svn: Option<u32>,
}

/// A TCB minimum of one product, compared field by field (security patch levels).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcbMinimum {
    /// Minimum bootloader SPL.
    pub bootloader: u8,
    /// Minimum PSP OS (TEE) SPL.
    pub tee: u8,
    /// Minimum SNP firmware SPL.
    pub snp: u8,
    /// Minimum microcode SPL.
    pub microcode: u8,
    /// Minimum FMC SPL; Turin only.
    pub fmc: Option<u8>,
}

/// `[tcb]`: the TCB minimum per product, and the minimum SEV firmware.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcbSection {
    /// Minimum TCB of Milan reports.
    pub milan: Option<TcbMinimum>,
    /// Minimum TCB of Genoa reports.
    pub genoa: Option<TcbMinimum>,
    /// Minimum TCB of Turin reports.
    pub turin: Option<TcbMinimum>,
    /// Minimum SEV firmware (current and committed), "major.minor" or "major.minor.build".
    pub min_firmware: Option<String>,
}

/// `[identity]`: the launch identity and chip ids a report may carry (hex values).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySection {
    /// Allowed launch measurements (hex, 48 bytes).
    #[serde(default)]
    pub measurements: Vec<String>,
    /// Image release manifests whose expected measurement is allowed too.
    #[serde(default)]
    pub release_manifests: Vec<PathBuf>,
    /// Required HOST_DATA (hex, 32 bytes).
    pub host_data: Option<String>,
    /// Allowed ID key digests (hex, 48 bytes).
    #[serde(default)]
    pub id_key_digests: Vec<String>,
    /// Allowed author key digests (hex, 48 bytes).
    #[serde(default)]
    pub author_key_digests: Vec<String>,
    /// The launch must carry no author key (AUTHOR_KEY_EN clear, digest all zeros): the
    /// image's ID block is signed by the ID key alone. Exclusive with `author_key_digests`.
    #[serde(default)]
    pub require_no_author_key: bool,
    /// Required family id (hex, 16 bytes).
    pub family_id: Option<String>,
    /// Required image id (hex, 16 bytes).
    pub image_id: Option<String>,
    /// Registered chip ids (hex, 64 bytes; Turin: 8).
    #[serde(default)]
    pub chip_ids: Vec<String>,
    /// A NODES.toml whose `chip_id` entries are registered too.
    pub registered_nodes: Option<PathBuf>,
}

/// `[trust]`: trust beyond AMD's pinned roots, and revocation.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustSection {
    /// A generated test ARK (PEM or DER). Evidence anchored there is accepted only if set.
    pub test_root_ark: Option<PathBuf>,
    /// TCB layout of the test root's reports ("Milan", "Genoa", "Turin"); default Milan.
    pub test_root_product: Option<Product>,
    /// An AMD CRL (DER) signed by the ARK; checked when set.
    pub crl: Option<PathBuf>,
}

/// A policy with every file it names loaded and every hex value decoded.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Endorsement keys that may sign ("vcek", "vlek"); empty: both.
    pub signing_keys: Vec<String>,
    /// Whether the guest may allow SMT.
    pub allow_smt: bool,
    /// The guest must run on a single socket.
    pub require_single_socket: bool,
    /// Whether the guest may allow CXL memory.
    pub allow_cxl: bool,
    /// The guest must demand AES-256-XTS memory encryption.
    pub require_aes_256_xts: bool,
    /// The guest must demand RAPL disabled.
    pub require_rapl_disabled: bool,
    /// The guest must demand ciphertext hiding.
    pub require_ciphertext_hiding: bool,
    /// Minimum ABI (major, minor) the guest policy must demand.
    pub min_abi: Option<(u8, u8)>,
    /// VMPLs a report may come from; `None`: any.
    pub vmpl: Option<Vec<u32>>,
    /// Minimum guest SVN.
    pub min_guest_svn: Option<u32>,
    /// TCB minimum per product; empty: no minimum.
    pub tcb_minimum: Vec<(Product, TcbParts)>,
    /// Minimum SEV firmware (major, minor, build).
    pub min_firmware: Option<(u8, u8, Option<u8>)>,
    /// (measurement, where it came from)
    pub measurements: Vec<(Vec<u8>, String)>,
    /// For each measurement taken from a release manifest, the configuration signers that
    /// image pins.
    pub image_pins: Vec<ImagePins>,
    /// Required HOST_DATA (32 bytes).
    pub host_data: Option<Vec<u8>>,
    /// Allowed ID key digests (48 bytes each); empty: any.
    pub id_key_digests: Vec<Vec<u8>>,
    /// Allowed author key digests (48 bytes each); empty: any.
    pub author_key_digests: Vec<Vec<u8>>,
    /// The launch must carry no author key.
    pub require_no_author_key: bool,
    /// Required family id (16 bytes).
    pub family_id: Option<Vec<u8>>,
    /// Required image id (16 bytes).
    pub image_id: Option<Vec<u8>>,
    /// Registered chip ids (64 bytes; Turin 8); empty: any.
    pub chip_ids: Vec<Vec<u8>>,
    /// The test root the policy trusts besides AMD's.
    pub test_root: Option<TrustAnchor>,
    /// An AMD CRL (DER) to check the chain against.
    pub crl: Option<Vec<u8>>,
    /// Number of GPUs the node must present evidence for; unset: whatever the bundle has.
    pub gpu_count: Option<usize>,
    /// The `[gpu]` rules of each GPU's evidence.
    pub gpu: crate::nvidia::GpuPolicy,
    /// Signers of the configuration bundles a node may run (`[config] signers`).
    pub config_signers: Vec<[u8; 32]>,
    /// Whether this is the built-in default (no policy file).
    pub is_default: bool,
    /// Every file the policy refers to, in the order of [`Policy::sha256`].
    pub referenced_files: Vec<ReferencedFile>,
    /// Checks whose value the policy leaves out (crate::waiver::GAPS).
    pub unset: Vec<&'static str>,
    /// `[waive]`: check name to the reason it is waived.
    pub waivers: std::collections::BTreeMap<String, String>,
    /// The digest of the policy text and every file it refers to (see [`policy_digest`]);
    /// all zeros for a policy built without text (`resolve`, the default policy).
    pub sha256: [u8; 32],
}

impl Policy {
    /// The policy `verify-report` applies without `--policy`: format, chain, signature,
    /// report-vs-certificate, debug and migration agent bind; every allow-list is skipped.
    pub fn default_policy() -> Policy {
        let mut p = Policy::resolve(PolicyFile::default(), Path::new("."))
            .unwrap_or_else(|_| Policy::default());
        p.is_default = true;
        p
    }

    /// Loads the policy at `path`; relative paths in it resolve against its directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = read(path)?;
        let text = String::from_utf8(text).map_err(|e| PolicyError::Toml {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Policy::from_toml(&text, path.parent().unwrap_or(Path::new(".")), path)
    }

    /// Parse policy text; relative paths resolve against `base`.
    pub fn from_toml(text: &str, base: &Path, name: &Path) -> Result<Policy, PolicyError> {
        let file: PolicyFile = toml::from_str(text).map_err(|e| PolicyError::Toml {
            path: name.to_owned(),
            message: e.to_string(),
        })?;
        let mut policy = Policy::resolve(file, base)?;
        policy.sha256 = policy_digest(text.as_bytes(), &policy.referenced_files);
        Ok(policy)
    }

    /// Checks every value of a parsed policy file and loads the files it names; relative
    /// paths resolve against `base`. Errors name the field, in the order the fields are
    /// checked.
    pub fn resolve(file: PolicyFile, base: &Path) -> Result<Policy, PolicyError> {
        check_signing_keys(&file.report.signing_keys)?;
        let g = &file.guest_policy;
        let min_abi = g
            .min_abi
            .as_deref()
            .map(|s| parse_version(s, "guest_policy.min_abi"))
            .transpose()?
            .map(|(a, b, _)| (a, b));
        let min_firmware = file
            .tcb
            .min_firmware
            .as_deref()
            .map(|s| parse_version(s, "tcb.min_firmware"))
            .transpose()?;
        let tcb_minimum = tcb_minimums(&file.tcb)?;
        let id = &file.identity;
        if id.require_no_author_key && !id.author_key_digests.is_empty() {
            return Err(value_err(
                "identity.require_no_author_key",
                "cannot be set together with identity.author_key_digests (which require one)",
            ));
        }
        let mut referenced_files = Vec::new();
        let AllowedMeasurements {
            measurements,
            image_pins,
        } = allowed_measurements(id, base, &mut referenced_files)?;
        let chip_ids = registered_chip_ids(id, base, &mut referenced_files)?;
        let test_root = test_root(&file.trust, base, &mut referenced_files)?;
        let crl = crl(&file.trust, base, &mut referenced_files)?;
        let (gpu_count, gpu) = gpu_policy(&file.gpu)?;
        let config_signers = config_signers(&file.config)?;
        let unset = unset_checks(&file);
        let waivers = waiver::waivers(&file.waive, &unset).map_err(|e| PolicyError::Value {
            field: e.field,
            message: e.message,
        })?;
        Ok(Policy {
            signing_keys: file.report.signing_keys.clone(),
            allow_smt: g.allow_smt.unwrap_or(true),
            require_single_socket: g.require_single_socket.unwrap_or(false),
            allow_cxl: g.allow_cxl.unwrap_or(true),
            require_aes_256_xts: g.require_aes_256_xts.unwrap_or(false),
            require_rapl_disabled: g.require_rapl_disabled.unwrap_or(false),
            require_ciphertext_hiding: g.require_ciphertext_hiding.unwrap_or(false),
            min_abi,
            vmpl: g.vmpl.clone(),
            min_guest_svn: g.min_guest_svn,
            tcb_minimum,
            min_firmware,
            measurements,
            image_pins,
            host_data: optional_hex(id.host_data.as_deref(), 32, "identity.host_data")?,
            id_key_digests: hex_list(&id.id_key_digests, 48, "identity.id_key_digests")?,
            author_key_digests: hex_list(
                &id.author_key_digests,
                48,
                "identity.author_key_digests",
            )?,
            require_no_author_key: id.require_no_author_key,
            family_id: optional_hex(id.family_id.as_deref(), 16, "identity.family_id")?,
            image_id: optional_hex(id.image_id.as_deref(), 16, "identity.image_id")?,
            chip_ids,
            test_root,
            crl,
            gpu_count,
            gpu,
            config_signers,
            is_default: false,
            referenced_files,
            unset,
            waivers,
            sha256: [0; 32],
        })
    }

    /// What keeps this policy from admitting nodes (enrolment and `attest fleet` refuse such
    /// a policy unless the lab override is given): a missing measurement allow-list, TCB
    /// minimum, allowed VMPLs, expected GPU count or pinned configuration signer, a test
    /// root (`trust.test_root_ark` makes it a lab policy), and every other check whose value
    /// is left out without a waiver (crate::waiver). Empty when the policy can admit.
    pub fn missing_for_admission(&self) -> Vec<String> {
        let mut missing: Vec<String> = self
            .missing_required()
            .into_iter()
            .map(String::from)
            .collect();
        missing.extend(waiver::unwaived(&self.unset, &self.waivers));
        missing
    }

    /// The checks this policy waives, "check: reason", for the decision record.
    pub fn waived(&self) -> Vec<String> {
        self.waivers
            .iter()
            .map(|(check, reason)| format!("{check}: {reason}"))
            .collect()
    }

    /// The values no waiver can replace.
    fn missing_required(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.measurements.is_empty() {
            missing.push(
                "a measurement allow-list (identity.measurements or identity.release_manifests)",
            );
        }
        if self.tcb_minimum.is_empty() {
            missing.push("a TCB minimum (tcb.milan, tcb.genoa or tcb.turin)");
        }
        if self.vmpl.is_none() {
            missing.push("the allowed VMPLs (guest_policy.vmpl)");
        }
        if self.gpu_count.is_none() {
            missing.push("the expected GPU count (gpu.count)");
        }
        if self.config_signers.is_empty() {
            missing.push("a configuration signer (config.signers)");
        }
        if self.test_root.is_some() {
            missing.push(
                "trust in AMD's roots alone (it names a test root, trust.test_root_ark: a lab policy)",
            );
        }
        missing
    }

    /// The TCB minimum for `product`: `Ok(None)` when the policy sets no TCB minimum at all
    /// (admission refuses such a policy), an error when it sets minimums but not for
    /// `product`.
    pub fn tcb_minimum_for(&self, product: Product) -> Result<Option<&TcbParts>, TcbMinimumError> {
        if self.tcb_minimum.is_empty() {
            return Ok(None);
        }
        match self.tcb_minimum.iter().find(|(p, _)| *p == product) {
            Some((_, m)) => Ok(Some(m)),
            None => Err(TcbMinimumError::ProductNotListed {
                product,
                section: match product {
                    Product::Milan => "milan",
                    Product::Genoa => "genoa",
                    Product::Turin => "turin",
                },
                listed: self.tcb_minimum.iter().map(|(p, _)| *p).collect(),
            }),
        }
    }

    /// AMD's pinned roots plus the test root if this policy names one.
    pub fn trust_store(&self) -> TrustStore {
        let mut store = TrustStore::amd();
        if let Some(anchor) = &self.test_root {
            store.add(anchor.clone());
        }
        store
    }
}

/// The recorded policy digest: SHA-256 over [`POLICY_DIGEST_TAG`], the policy text, the number
/// of referenced files (u32 LE), then for each file, in the order the policy names them
/// (`identity.release_manifests` in list order, `identity.registered_nodes`,
/// `trust.test_root_ark`, `trust.crl`), its field, its path as written and its bytes. The text
/// and each field, path and file are preceded by their length (u64 LE), so the encoding is
/// unambiguous (docs/attestation.md).
pub fn policy_digest(text: &[u8], files: &[ReferencedFile]) -> [u8; 32] {
    fn put(h: &mut Sha256, b: &[u8]) {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    let mut h = Sha256::new();
    h.update(POLICY_DIGEST_TAG);
    put(&mut h, text);
    h.update((files.len() as u32).to_le_bytes());
    for f in files {
        put(&mut h, f.field.as_bytes());
        put(&mut h, f.path.to_string_lossy().as_bytes());
        put(&mut h, &f.bytes);
    }
    h.finalize().into()
}

/// `p` as written in the policy, resolved against the policy's directory `base`.
fn at(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_owned()
    } else {
        base.join(p)
    }
}

/// `report.signing_keys` names only "vcek" and "vlek".
fn check_signing_keys(keys: &[String]) -> Result<(), PolicyError> {
    for k in keys {
        if k != "vcek" && k != "vlek" {
            return Err(value_err(
                "report.signing_keys",
                format!("unknown key type {k:?}"),
            ));
        }
    }
    Ok(())
}

/// The `[tcb]` minimums per product; only Turin has an FMC level.
fn tcb_minimums(tcb: &TcbSection) -> Result<Vec<(Product, TcbParts)>, PolicyError> {
    let mut tcb_minimum = Vec::new();
    for (product, min) in [
        (Product::Milan, tcb.milan),
        (Product::Genoa, tcb.genoa),
        (Product::Turin, tcb.turin),
    ] {
        if let Some(m) = min {
            let fmc = match product {
                Product::Turin => m.fmc,
                _ if m.fmc.is_some() => {
                    return Err(value_err(
                        "tcb",
                        format!("{product} has no FMC security patch level"),
                    ));
                }
                _ => None,
            };
            tcb_minimum.push((
                product,
                TcbParts {
                    fmc,
                    bootloader: m.bootloader,
                    tee: m.tee,
                    snp: m.snp,
                    microcode: m.microcode,
                },
            ));
        }
    }
    Ok(tcb_minimum)
}

/// The launch measurements a policy allows, each with where it came from, and the signers
/// pinned by the images of those taken from release manifests.
struct AllowedMeasurements {
    measurements: Vec<(Vec<u8>, String)>,
    image_pins: Vec<ImagePins>,
}

/// The allowed launch measurements: the policy's own list, then each release manifest's
/// launch digests (recorded with the signers that image pins). Each manifest read is added
/// to `referenced_files`.
fn allowed_measurements(
    id: &IdentitySection,
    base: &Path,
    referenced_files: &mut Vec<ReferencedFile>,
) -> Result<AllowedMeasurements, PolicyError> {
    let mut measurements = Vec::new();
    for (i, m) in id.measurements.iter().enumerate() {
        measurements.push((
            hex_field(m, 48, &format!("identity.measurements[{i}]"))?,
            "policy".to_string(),
        ));
    }
    let mut image_pins = Vec::new();
    for (i, manifest) in id.release_manifests.iter().enumerate() {
        let path = at(base, manifest);
        let bytes = read(&path)?;
        let manifest_pins = parse_release_manifest(&path, &bytes)?;
        for m in &manifest_pins.launch_digests {
            measurements.push((m.clone(), format!("manifest {}", path.display())));
            image_pins.push(ImagePins {
                measurement: m.clone(),
                config_signers: manifest_pins.config_signers.clone(),
                manifest: path.display().to_string(),
            });
        }
        referenced_files.push(ReferencedFile {
            field: format!("identity.release_manifests[{i}]"),
            path: manifest.clone(),
            bytes,
        });
    }
    Ok(AllowedMeasurements {
        measurements,
        image_pins,
    })
}

/// The registered chip ids: `identity.chip_ids`, then the `chip_id` of every node in
/// `identity.registered_nodes` (that file is added to `referenced_files`).
fn registered_chip_ids(
    id: &IdentitySection,
    base: &Path,
    referenced_files: &mut Vec<ReferencedFile>,
) -> Result<Vec<Vec<u8>>, PolicyError> {
    let mut chip_ids = Vec::new();
    for (i, c) in id.chip_ids.iter().enumerate() {
        chip_ids.push(chip_id_field(c, &format!("identity.chip_ids[{i}]"))?);
    }
    let Some(nodes) = &id.registered_nodes else {
        return Ok(chip_ids);
    };
    let path = at(base, nodes);
    let bytes = read(&path)?;
    let text = String::from_utf8(bytes.clone()).map_err(|e| PolicyError::Value {
        field: "identity.registered_nodes".into(),
        message: format!("{}: {e}", path.display()),
    })?;
    let list = crate::nodes::NodeList::parse(&text, &path.display().to_string()).map_err(|e| {
        PolicyError::Value {
            field: "identity.registered_nodes".into(),
            message: e.to_string(),
        }
    })?;
    referenced_files.push(ReferencedFile {
        field: "identity.registered_nodes".into(),
        path: nodes.clone(),
        bytes,
    });
    for node in list.node {
        if let Some(c) = node.chip_id {
            chip_ids.push(chip_id_field(
                &c,
                &format!("{}: node {}", path.display(), node.name),
            )?);
        }
    }
    Ok(chip_ids)
}

/// The test root `trust.test_root_ark` names: the file's self-signed certificate (the file
/// is added to `referenced_files`).
fn test_root(
    trust: &TrustSection,
    base: &Path,
    referenced_files: &mut Vec<ReferencedFile>,
) -> Result<Option<TrustAnchor>, PolicyError> {
    let Some(p) = &trust.test_root_ark else {
        return Ok(None);
    };
    let path = at(base, p);
    let bytes = read(&path)?;
    referenced_files.push(ReferencedFile {
        field: "trust.test_root_ark".into(),
        path: p.clone(),
        bytes: bytes.clone(),
    });
    let certs = parse_certs(&bytes).map_err(|e| PolicyError::Cert {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let ark: AmdCert = certs
        .into_iter()
        .find(|c| c.subject() == c.issuer())
        .ok_or_else(|| PolicyError::Cert {
            path: path.clone(),
            message: "no self-signed root certificate".into(),
        })?;
    Ok(Some(TrustAnchor {
        product: trust.test_root_product.unwrap_or(Product::Milan),
        ark,
        intermediates: vec![],
        is_test: true,
    }))
}

/// The CRL file `trust.crl` names, as read (added to `referenced_files`).
fn crl(
    trust: &TrustSection,
    base: &Path,
    referenced_files: &mut Vec<ReferencedFile>,
) -> Result<Option<Vec<u8>>, PolicyError> {
    let Some(p) = &trust.crl else {
        return Ok(None);
    };
    let bytes = read(&at(base, p))?;
    referenced_files.push(ReferencedFile {
        field: "trust.crl".into(),
        path: p.clone(),
        bytes: bytes.clone(),
    });
    Ok(Some(bytes))
}

/// The `[gpu]` table: its `count`, and the rest as the GPU evidence policy.
fn gpu_policy(
    table: &toml::Table,
) -> Result<(Option<usize>, crate::nvidia::GpuPolicy), PolicyError> {
    let mut gpu_table = table.clone();
    let gpu_count = match gpu_table.remove("count") {
        None => None,
        Some(v) => Some(
            v.as_integer()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| value_err("gpu.count", format!("{v} is not a count")))?,
        ),
    };
    let gpu: crate::nvidia::GpuPolicy = toml::Value::Table(gpu_table)
        .try_into()
        .map_err(|e: toml::de::Error| value_err("gpu", e.to_string()))?;
    Ok((gpu_count, gpu))
}

/// `config.signers`: each 64 hex digits and an Ed25519 public key.
fn config_signers(config: &ConfigSection) -> Result<Vec<[u8; 32]>, PolicyError> {
    let mut config_signers = Vec::new();
    for (i, k) in config.signers.iter().enumerate() {
        let field = format!("config.signers[{i}]");
        hex_field(k, 32, &field)?;
        let key =
            ed25519_public_key(k).ok_or_else(|| value_err(&field, "not an Ed25519 public key"))?;
        config_signers.push(key);
    }
    Ok(config_signers)
}

/// [`hex_field`] of an optional value.
fn optional_hex(
    text: Option<&str>,
    len: usize,
    field: &str,
) -> Result<Option<Vec<u8>>, PolicyError> {
    text.map(|h| hex_field(h, len, field)).transpose()
}

/// [`hex_field`] of each value of a list, all under the same field name.
fn hex_list(texts: &[String], len: usize, field: &str) -> Result<Vec<Vec<u8>>, PolicyError> {
    texts.iter().map(|h| hex_field(h, len, field)).collect()
}

fn read(path: &Path) -> Result<Vec<u8>, PolicyError> {
    std::fs::read(path).map_err(|source| PolicyError::Io {
        path: path.to_owned(),
        source,
    })
}

fn value_err(field: &str, message: impl Into<String>) -> PolicyError {
    PolicyError::Value {
        field: field.to_owned(),
        message: message.into(),
    }
}

fn hex_field(text: &str, len: usize, field: &str) -> Result<Vec<u8>, PolicyError> {
    let bytes = hex::decode(text.trim()).map_err(|e| value_err(field, format!("not hex: {e}")))?;
    if bytes.len() != len {
        return Err(value_err(
            field,
            format!("{} bytes, expected {len}", bytes.len()),
        ));
    }
    Ok(bytes)
}

/// Chip ids are 64 bytes; Turin VCEKs certify an 8-byte id.
fn chip_id_field(text: &str, field: &str) -> Result<Vec<u8>, PolicyError> {
    let bytes = hex::decode(text.trim()).map_err(|e| value_err(field, format!("not hex: {e}")))?;
    if bytes.len() != 64 && bytes.len() != 8 {
        return Err(value_err(
            field,
            format!("{} bytes, expected 64 (or 8 for Turin)", bytes.len()),
        ));
    }
    Ok(bytes)
}

/// "1.55" or "1.55.29" -> (major, minor, build).
fn parse_version(text: &str, field: &str) -> Result<(u8, u8, Option<u8>), PolicyError> {
    let parts: Vec<&str> = text.trim().split('.').collect();
    let num = |s: &str| {
        s.parse::<u8>()
            .map_err(|e| value_err(field, format!("{text:?}: {e}")))
    };
    match parts.as_slice() {
        [a, b] => Ok((num(a)?, num(b)?, None)),
        [a, b, c] => Ok((num(a)?, num(b)?, Some(num(c)?))),
        _ => Err(value_err(
            field,
            format!("{text:?} is not major.minor[.build]"),
        )),
    }
}

/// What a verifier takes from an image's `release-manifest.json` (schema
/// `sovereign-node/release-manifest/v1`, written by `image/build`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseManifest {
    /// `sev_snp.launch_digest`: 48 bytes each (a list of them is accepted too).
    pub launch_digests: Vec<Vec<u8>>,
    /// `config.signers`: the configuration signers the image pins on its measured command
    /// line, so a node reporting one of these launch digests applies only their bundles.
    pub config_signers: Vec<[u8; 32]>,
}

/// Reads an image's release manifest: its launch digests and pinned configuration signers.
/// A manifest built without the OVMF firmware has `launch_digest: null` and a `reason`; a
/// manifest without `config.signers` comes from an image that pins no signer. Both are
/// errors naming why.
pub fn load_release_manifest(path: &Path) -> Result<ReleaseManifest, PolicyError> {
    parse_release_manifest(path, &read(path)?)
}

/// [`load_release_manifest`] of bytes already read from `path`.
pub fn parse_release_manifest(path: &Path, bytes: &[u8]) -> Result<ReleaseManifest, PolicyError> {
    let err = |message: String| PolicyError::Manifest {
        path: path.to_owned(),
        message,
    };
    let json: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| err(format!("not JSON: {e}")))?;
    Ok(ReleaseManifest {
        launch_digests: manifest_launch_digests(&json).map_err(err)?,
        config_signers: manifest_config_signers(&json).map_err(err)?,
    })
}

fn manifest_launch_digests(json: &serde_json::Value) -> Result<Vec<Vec<u8>>, String> {
    let sev_snp = json
        .get("sev_snp")
        .ok_or("no sev_snp section (not an image release manifest?)")?;
    let field = match sev_snp.get("launch_digest") {
        None => return Err("no sev_snp.launch_digest field".into()),
        Some(serde_json::Value::Null) => {
            let reason = sev_snp
                .get("reason")
                .and_then(|r| r.as_str())
                .unwrap_or("no reason given");
            return Err(format!("sev_snp.launch_digest is null: {reason}"));
        }
        Some(v) => v,
    };
    let values: Vec<&serde_json::Value> = match field {
        serde_json::Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for v in values {
        let s = v
            .as_str()
            .ok_or("sev_snp.launch_digest is not a hex string")?;
        let m = hex::decode(s.trim()).map_err(|e| format!("not hex: {e}"))?;
        if m.len() != 48 {
            return Err(format!("measurement is {} bytes, expected 48", m.len()));
        }
        out.push(m);
    }
    if out.is_empty() {
        return Err("sev_snp.launch_digest is empty".into());
    }
    Ok(out)
}

/// An Ed25519 public key written as 64 hex digits.
fn ed25519_public_key(hex_key: &str) -> Option<[u8; 32]> {
    let key: [u8; 32] = hex::decode(hex_key.trim()).ok()?.try_into().ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(&key).ok()?;
    Some(key)
}

/// `config.signers` of a release manifest: the Ed25519 keys the image pins, at least one
/// (`provision flash` reads them too).
pub fn manifest_config_signers(json: &serde_json::Value) -> Result<Vec<[u8; 32]>, String> {
    let none = "no config.signers: the image pins no configuration signer, so its nodes \
                apply no bundle (image/build --config-signer)";
    let list = json
        .get("config")
        .and_then(|c| c.get("signers"))
        .and_then(|s| s.as_array())
        .ok_or(none)?;
    if list.is_empty() {
        return Err(none.into());
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .and_then(ed25519_public_key)
                .ok_or_else(|| format!("config.signers[{i}] is not an Ed25519 public key"))
        })
        .collect()
}
