//! The evidence bundle (`GET /v1/attestation?nonce=<64 hex>`), how REPORT_DATA binds it, and
//! its verification. docs/attestation.md describes every field.

use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};
use thiserror::Error;

use crate::nodes::ExpectedNode;
use crate::nvidia::{self, GpuEvidence};
use crate::policy::Policy;
use crate::report::{Check, Verdict};
use crate::snp::amd::{ChainVerifier, SuppliedChain, parse_certs};
use crate::snp::raw::AttestationReport;
use crate::snp_checks::{self, SnpContext, SnpOutcome};

/// `format` of every bundle this crate writes.
pub const BUNDLE_FORMAT: &str = "sovereign-node-attestation-bundle-v2";
/// First bytes hashed into REPORT_DATA.
pub const REPORT_DATA_TAG: &[u8] = b"sovereign-node-attestation-v2";
/// First bytes hashed into the GPU evidence digest.
pub const GPU_DIGEST_TAG: &[u8] = b"sovereign-node-gpu-evidence-v1";
/// First bytes hashed into each GPU's SPDM nonce.
pub const GPU_NONCE_TAG: &[u8] = b"sovereign-node-gpu-nonce-v1";
/// First bytes of the message the node key signs.
pub const NODE_SIGNATURE_TAG: &[u8] = b"sovereign-node-attestation-signature-v1";

/// Where the SNP report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceSource {
    /// `/dev/sev-guest` on real hardware.
    SevSnp,
    /// The test evidence source: signed by a generated key chain, never by AMD.
    Test,
}

/// Where the VCEK/ASK/ARK came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CertificateSource {
    /// The certificate table of the extended report (host-provided).
    ExtendedReport,
    /// The node's local certificate cache directory.
    Cache,
    /// The test evidence source's own chain.
    Test,
}

/// The AMD certificates, PEM text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnpCertificates {
    /// VCEK or VLEK certificate.
    pub vcek: String,
    /// ASK (or ASVK) certificate, when the source supplied one.
    pub ask: Option<String>,
    /// ARK certificate, when the source supplied one.
    pub ark: Option<String>,
    /// Where the certificates came from.
    pub source: CertificateSource,
}

/// The SNP part of a bundle: the raw report and its AMD certificates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnpEvidence {
    /// The raw 1184-byte ATTESTATION_REPORT, lowercase hex.
    pub report: String,
    /// The endorsement chain of the report.
    pub certificates: SnpCertificates,
}

/// Everything one node presents for one nonce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// Always [`BUNDLE_FORMAT`].
    pub format: String,
    /// Where the SNP report came from.
    pub source: EvidenceSource,
    /// The verifier's nonce, 32 bytes, lowercase hex.
    pub nonce: String,
    /// The node's Ed25519 public key, 32 bytes, lowercase hex.
    pub node_public_key: String,
    /// The SNP report and its certificates.
    pub snp: SnpEvidence,
    /// One entry per GPU whose evidence was collected, in NVML index order (the nvidia
    /// module's evidence).
    pub gpus: Vec<GpuEvidence>,
    /// GPUs NVML listed whose evidence could not be collected, with the reason. Bound into
    /// REPORT_DATA with the evidence; each one fails `gpu.<index>.collection`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_failures: Vec<GpuFailure>,
    /// The node configuration the node runs, bound into REPORT_DATA.
    pub config: ConfigBinding,
    /// Ed25519 signature by the node key over NODE_SIGNATURE_TAG || raw SNP report, hex.
    pub node_signature: String,
}

/// The node configuration (the sn-config bundle, provisioning/sn-config) a node runs: its
/// digest (SHA-256 of the bundle's SHA256SUMS) and its signer's Ed25519 public key. All
/// zeros: the node applied no bundle (image default, refused partition, development run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigBinding {
    /// SHA-256 of the bundle's SHA256SUMS.
    pub bundle_digest: [u8; 32],
    /// Ed25519 public key of the bundle's signer.
    pub signer: [u8; 32],
}

impl ConfigBinding {
    /// No configuration bundle.
    pub const NONE: ConfigBinding = ConfigBinding {
        bundle_digest: [0; 32],
        signer: [0; 32],
    };

    /// A binding of this bundle digest and signer.
    pub fn from_parts(bundle_digest: [u8; 32], signer: [u8; 32]) -> ConfigBinding {
        ConfigBinding {
            bundle_digest,
            signer,
        }
    }

    /// Whether this is [`ConfigBinding::NONE`] (no bundle applied).
    pub fn is_none(&self) -> bool {
        *self == ConfigBinding::NONE
    }
}

/// JSON: `{"bundle_digest": "<64 hex>", "signer": "<64 hex>"}`.
impl Serialize for ConfigBinding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("ConfigBinding", 2)?;
        st.serialize_field("bundle_digest", &hex::encode(self.bundle_digest))?;
        st.serialize_field("signer", &hex::encode(self.signer))?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for ConfigBinding {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Hex {
            bundle_digest: String,
            signer: String,
        }
        let h = Hex::deserialize(d)?;
        let field = |name: &str, text: &str| {
            hex::decode(text)
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("config.{name} is not 64 hex digits"))
                })
        };
        Ok(ConfigBinding {
            bundle_digest: field("bundle_digest", &h.bundle_digest)?,
            signer: field("signer", &h.signer)?,
        })
    }
}

/// A GPU whose evidence the node could not collect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuFailure {
    /// The GPU's NVML index.
    pub nvml_index: u32,
    /// The collection error, as text.
    pub error: String,
}

/// First bytes of the GPU failure list in the GPU evidence digest (only when there is one).
pub const GPU_FAILURES_TAG: &[u8] = b"sovereign-node-gpu-failures-v1";

/// Why a bundle's JSON cannot be read.
#[derive(Debug, Error)]
pub enum BundleError {
    /// Not JSON of the bundle schema.
    #[error("bundle is not valid JSON for format {BUNDLE_FORMAT}: {0}")]
    Json(String),
    /// A `format` other than [`BUNDLE_FORMAT`].
    #[error("bundle format {0:?} is not {BUNDLE_FORMAT}")]
    Format(String),
}

impl Bundle {
    /// Parses a bundle's JSON and checks its `format`.
    pub fn from_json(bytes: &[u8]) -> Result<Bundle, BundleError> {
        let b: Bundle =
            serde_json::from_slice(bytes).map_err(|e| BundleError::Json(e.to_string()))?;
        if b.format != BUNDLE_FORMAT {
            return Err(BundleError::Format(b.format));
        }
        Ok(b)
    }
}

/// Parse a 64-hex-digit nonce.
pub fn parse_nonce(text: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(text.trim()).ok()?;
    bytes.try_into().ok()
}

fn put_bytes(h: &mut Sha512, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// SHA-512 over GPU_DIGEST_TAG, the GPU count (u32 LE), then for each GPU its fields in a
/// fixed order, each as u64 LE length then bytes (see docs/attestation.md).
pub fn gpu_evidence_digest(gpus: &[GpuEvidence]) -> [u8; 64] {
    gpu_digest(gpus, &[])
}

/// [`gpu_evidence_digest`] over the evidence, followed, only when some GPU failed, by
/// GPU_FAILURES_TAG, the failure count (u32 LE) and each failure's index and error text
/// (length-prefixed as above). Without failures it is exactly [`gpu_evidence_digest`].
pub fn gpu_digest(gpus: &[GpuEvidence], failures: &[GpuFailure]) -> [u8; 64] {
    let mut h = Sha512::new();
    h.update(GPU_DIGEST_TAG);
    h.update((gpus.len() as u32).to_le_bytes());
    for gpu in gpus {
        // Exhaustive destructuring: a new evidence field fails to compile here until it is
        // either bound into the digest or deliberately left out.
        let GpuEvidence {
            device,
            attestation_report,
            certificate_chain,
            cc_state,
        } = gpu;
        let nvidia::GpuDevice {
            nvml_index,
            name,
            uuid,
            pci_bus_id,
            architecture,
            driver_version,
        } = device;
        let nvidia::CcState {
            cc_enabled,
            dev_tools_mode,
            environment,
        } = cc_state;
        put_bytes(&mut h, &nvml_index.to_le_bytes());
        put_bytes(&mut h, name.as_bytes());
        put_bytes(&mut h, uuid.as_bytes());
        put_bytes(&mut h, pci_bus_id.as_bytes());
        put_bytes(&mut h, architecture.as_bytes());
        put_bytes(&mut h, driver_version.as_bytes());
        put_bytes(&mut h, attestation_report);
        put_bytes(&mut h, certificate_chain);
        put_bytes(&mut h, &[u8::from(*cc_enabled), u8::from(*dev_tools_mode)]);
        put_bytes(&mut h, environment.as_bytes());
    }
    if !failures.is_empty() {
        h.update(GPU_FAILURES_TAG);
        h.update((failures.len() as u32).to_le_bytes());
        for GpuFailure { nvml_index, error } in failures {
            put_bytes(&mut h, &nvml_index.to_le_bytes());
            put_bytes(&mut h, error.as_bytes());
        }
    }
    h.finalize().into()
}

/// REPORT_DATA = SHA-512(REPORT_DATA_TAG || nonce || node public key || GPU evidence digest
/// || configuration bundle digest || configuration signer). All parts after the tag have
/// fixed lengths (32, 32, 64, 32, 32), so the concatenation is unambiguous.
pub fn report_data(
    nonce: &[u8; 32],
    node_public_key: &[u8; 32],
    gpu_digest: &[u8; 64],
    config: &ConfigBinding,
) -> [u8; 64] {
    let mut h = Sha512::new();
    h.update(REPORT_DATA_TAG);
    h.update(nonce);
    h.update(node_public_key);
    h.update(gpu_digest);
    h.update(config.bundle_digest);
    h.update(config.signer);
    h.finalize().into()
}

/// The SPDM nonce GPU `index` must sign: SHA-256(GPU_NONCE_TAG || nonce || index as u32 LE).
/// Per-index, so one GPU's report cannot be presented twice as two GPUs.
pub fn gpu_nonce(nonce: &[u8; 32], index: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(GPU_NONCE_TAG);
    h.update(nonce);
    h.update(index.to_le_bytes());
    h.finalize().into()
}

/// The message the node key signs.
pub fn node_signature_message(report: &[u8]) -> Vec<u8> {
    let mut m = NODE_SIGNATURE_TAG.to_vec();
    m.extend_from_slice(report);
    m
}

/// Verify a bundle against the nonce this verifier sent.
pub fn verify_bundle(
    bundle: &Bundle,
    expected_nonce: &[u8; 32],
    policy: &Policy,
    chains: &ChainVerifier,
    now: u64,
    expected: &ExpectedNode,
) -> Verdict {
    // The nonce first: a stale bundle is rejected whatever else it holds.
    let mut checks = vec![nonce_check(&bundle.nonce, expected_nonce)];
    let report_bytes = match hex::decode(bundle.snp.report.trim()) {
        Ok(b) => b,
        Err(e) => {
            checks.push(Check::fail(
                "snp.format.size",
                format!("report is not hex: {e}"),
            ));
            return Verdict::from_checks(checks);
        }
    };
    let chain = supplied_chain(&bundle.snp.certificates);
    let outcome = snp_checks::verify_report(
        &report_bytes,
        chain,
        &SnpContext {
            policy,
            chains,
            now,
        },
        &mut checks,
    );
    checks.push(evidence_source_check(bundle.source, &outcome));

    // Node key: well-formed, expected if registered, proven by a signature over the report.
    let node_key = hex::decode(bundle.node_public_key.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok());
    let verifying_key = node_key.and_then(|k| VerifyingKey::from_bytes(&k).ok());
    checks.push(node_key_check(
        &bundle.node_public_key,
        verifying_key.as_ref(),
        expected,
    ));
    checks.push(node_signature_check(
        &bundle.node_signature,
        verifying_key.as_ref(),
        &report_bytes,
    ));
    checks.push(report_data_check(
        bundle,
        expected_nonce,
        outcome.report.as_ref(),
        node_key,
    ));
    if let Some(report) = &outcome.report {
        checks.push(node_chip_id_check(report, expected));
    }

    config_checks(&bundle.config, policy, expected, &mut checks);
    image_signer_check(
        &bundle.config,
        outcome.report.as_ref().map(|r| r.measurement()),
        policy,
        &mut checks,
    );
    gpu_checks(bundle, expected_nonce, policy, now, &mut checks);
    Verdict::from_checks(checks)
}

/// `binding.nonce`: the bundle answers the nonce this verifier sent.
fn nonce_check(bundle_nonce: &str, expected_nonce: &[u8; 32]) -> Check {
    match parse_nonce(bundle_nonce) {
        Some(n) if &n == expected_nonce => Check::pass(
            "binding.nonce",
            format!("bundle nonce {bundle_nonce} = sent"),
        ),
        Some(_) => Check::fail(
            "binding.nonce",
            format!(
                "bundle nonce {bundle_nonce} != sent {}",
                hex::encode(expected_nonce)
            ),
        ),
        None => Check::fail(
            "binding.nonce",
            format!("bundle nonce {bundle_nonce:?} is not 64 hex digits"),
        ),
    }
}

/// `evidence.source`: test evidence is only ever admitted through a test root the policy
/// names, and a test root only ever admits evidence that says it is test evidence.
fn evidence_source_check(source: EvidenceSource, outcome: &SnpOutcome) -> Check {
    let is_test = source == EvidenceSource::Test;
    match (is_test, outcome.is_test_root, outcome.product.is_some()) {
        (_, _, false) => Check::fail(
            "evidence.source",
            format!("{source:?} evidence; chain not anchored"),
        ),
        (true, true, _) => Check::pass(
            "evidence.source",
            "TEST evidence, anchored at the test root this policy trusts",
        ),
        (false, false, _) => {
            Check::pass("evidence.source", "SEV-SNP evidence anchored at AMD's root")
        }
        (true, false, _) => Check::fail(
            "evidence.source",
            "marked test evidence but chained to an AMD root",
        ),
        (false, true, _) => Check::fail(
            "evidence.source",
            "chained to the test root but not marked as test evidence",
        ),
    }
}

/// `binding.node_key`: the bundle's node key is an Ed25519 key, the registered one if the
/// node has one registered.
fn node_key_check(
    node_public_key: &str,
    verifying_key: Option<&VerifyingKey>,
    expected: &ExpectedNode,
) -> Check {
    match (verifying_key, expected.node_public_key) {
        (None, _) => Check::fail(
            "binding.node_key",
            format!("{node_public_key:?} is not an Ed25519 public key"),
        ),
        (Some(_), None) => Check::skip(
            "binding.node_key",
            format!("node key {node_public_key}; none registered"),
        ),
        (Some(k), Some(want)) if k.as_bytes() == &want => Check::pass(
            "binding.node_key",
            format!("node key {node_public_key} is the registered one"),
        ),
        (Some(_), Some(want)) => Check::fail(
            "binding.node_key",
            format!(
                "node key {node_public_key} != registered {}",
                hex::encode(want)
            ),
        ),
    }
}

/// `binding.node_signature`: the node key signed the raw SNP report.
fn node_signature_check(
    node_signature: &str,
    verifying_key: Option<&VerifyingKey>,
    report_bytes: &[u8],
) -> Check {
    let signature = hex::decode(node_signature.trim())
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b));
    match (verifying_key, signature) {
        (Some(k), Some(sig)) => match k.verify(&node_signature_message(report_bytes), &sig) {
            Ok(()) => Check::pass(
                "binding.node_signature",
                "Ed25519 signature over the report verifies with the node key",
            ),
            Err(_) => Check::fail(
                "binding.node_signature",
                "Ed25519 signature over the report does not verify",
            ),
        },
        (None, _) => Check::fail("binding.node_signature", "not evaluated: no valid node key"),
        (_, None) => Check::fail(
            "binding.node_signature",
            "node_signature is not 64 bytes of hex",
        ),
    }
}

/// `binding.report_data`: REPORT_DATA recomputed from the nonce we sent, the node key, the
/// GPU evidence and the configuration binding.
fn report_data_check(
    bundle: &Bundle,
    expected_nonce: &[u8; 32],
    report: Option<&AttestationReport>,
    node_key: Option<[u8; 32]>,
) -> Check {
    let gpu_digest = gpu_digest(&bundle.gpus, &bundle.gpu_failures);
    let (report, key) = match (report, node_key) {
        (Some(report), Some(key)) => (report, key),
        (None, _) => {
            return Check::fail("binding.report_data", "not evaluated: no parsable report");
        }
        (_, None) => return Check::fail("binding.report_data", "not evaluated: no valid node key"),
    };
    let want = report_data(expected_nonce, &key, &gpu_digest, &bundle.config);
    if report.report_data() == want {
        Check::pass(
            "binding.report_data",
            format!(
                "REPORT_DATA = SHA-512(tag || nonce || node key || GPU digest {}... || config {}... || signer {}...)",
                hex::encode(&gpu_digest[..8]),
                hex::encode(&bundle.config.bundle_digest[..8]),
                hex::encode(&bundle.config.signer[..8])
            ),
        )
    } else {
        Check::fail(
            "binding.report_data",
            format!(
                "REPORT_DATA {} != recomputed {}",
                hex::encode(report.report_data()),
                hex::encode(want)
            ),
        )
    }
}

/// `identity.node_chip_id`: the report's chip id is the one registered for this node (an
/// 8-byte Turin id is compared as a prefix).
fn node_chip_id_check(report: &AttestationReport, expected: &ExpectedNode) -> Check {
    let Some(want) = &expected.chip_id else {
        return Check::skip(
            "identity.node_chip_id",
            "no chip id registered for this node",
        );
    };
    let chip = report.chip_id();
    if chip.get(..want.len()) == Some(want.as_slice()) {
        Check::pass(
            "identity.node_chip_id",
            "chip_id is the one registered for this node",
        )
    } else {
        Check::fail(
            "identity.node_chip_id",
            format!(
                "chip_id {} != registered {}",
                hex::encode(chip),
                hex::encode(want)
            ),
        )
    }
}

/// The bundle's signer is one the node's image pins (its release manifest's
/// `config.signers`, on the measured command line): a node applies no other, so a bundle
/// that claims another signer under that measurement contradicts the image. Only
/// measurements the policy took from a release manifest have known pins.
fn image_signer_check(
    config: &ConfigBinding,
    measurement: Option<[u8; 48]>,
    policy: &Policy,
    checks: &mut Vec<Check>,
) {
    let name = "config.image_signer";
    let Some(measurement) = measurement else {
        checks.push(Check::fail(name, "not evaluated: no parsable report"));
        return;
    };
    let pins = policy
        .image_pins
        .iter()
        .find(|p| p.measurement.as_slice() == measurement.as_slice());
    let signer = hex::encode(config.signer);
    checks.push(match pins {
        None => Check::skip(
            name,
            "the measurement is not from a release manifest: the image's pinned signers are \
             not known to the policy (config.signer applies)",
        ),
        Some(_) if config.is_none() => Check::fail(
            name,
            "the node runs no signed configuration bundle (image default or refused partition)",
        ),
        Some(p) if p.config_signers.contains(&config.signer) => Check::pass(
            name,
            format!(
                "bundle signed by {signer}, the signer the image pins ({})",
                p.manifest
            ),
        ),
        Some(p) => Check::fail(
            name,
            format!(
                "bundle signed by {signer}, which the image does not pin ({} pins {})",
                p.manifest,
                p.config_signers
                    .iter()
                    .map(hex::encode)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    });
}

/// The configuration the node runs (bound into REPORT_DATA, checked above): signed by a key
/// the policy pins, and the planned bundle when the verifier knows it.
fn config_checks(
    config: &ConfigBinding,
    policy: &Policy,
    expected: &ExpectedNode,
    checks: &mut Vec<Check>,
) {
    let signer = hex::encode(config.signer);
    checks.push(if policy.config_signers.is_empty() {
        Check::skip(
            "config.signer",
            format!("signer {signer}; the policy pins no configuration signer"),
        )
    } else if config.is_none() {
        Check::fail(
            "config.signer",
            "the node runs no signed configuration bundle (image default or refused partition)",
        )
    } else if policy.config_signers.contains(&config.signer) {
        Check::pass(
            "config.signer",
            format!("bundle signed by {signer}, a signer the policy pins"),
        )
    } else {
        Check::fail(
            "config.signer",
            format!("bundle signed by {signer}, not a signer the policy pins"),
        )
    });
    let digest = hex::encode(config.bundle_digest);
    checks.push(match expected.config_digest {
        None => Check::skip(
            "config.bundle_digest",
            format!("bundle {digest}; no planned bundle to compare with"),
        ),
        Some(want) if want == config.bundle_digest => Check::pass(
            "config.bundle_digest",
            format!("bundle {digest} is the planned one"),
        ),
        Some(want) => Check::fail(
            "config.bundle_digest",
            format!(
                "the node runs bundle {digest}, the plan's is {}",
                hex::encode(want)
            ),
        ),
    });
}

fn gpu_checks(
    bundle: &Bundle,
    nonce: &[u8; 32],
    policy: &Policy,
    now: u64,
    checks: &mut Vec<Check>,
) {
    let n = bundle.gpus.len();
    let failed = match bundle.gpu_failures.len() {
        0 => String::new(),
        f => format!(" (and {f} whose evidence could not be collected)"),
    };
    checks.push(match policy.gpu_count {
        None => Check::skip(
            "gpu.count",
            format!("{n} GPU(s) with evidence{failed}; no count required by policy"),
        ),
        Some(want) if want == n => Check::pass(
            "gpu.count",
            format!("{n} GPU(s) with evidence as required{failed}"),
        ),
        Some(want) => Check::fail(
            "gpu.count",
            format!("{n} GPU(s) with evidence{failed}, policy requires {want}"),
        ),
    });
    // Each GPU is named, and its SPDM nonce derived, by its NVML index; an index given twice
    // would let one GPU's report stand for two.
    let mut indices: Vec<u32> = bundle
        .gpus
        .iter()
        .map(|g| g.device.nvml_index)
        .chain(bundle.gpu_failures.iter().map(|f| f.nvml_index))
        .collect();
    indices.sort_unstable();
    if !indices.is_empty() {
        let listed = indices
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        checks.push(if indices.windows(2).all(|w| w[0] != w[1]) {
            Check::pass("gpu.indices", format!("NVML indices {listed}, each once"))
        } else {
            Check::fail(
                "gpu.indices",
                format!("NVML indices {listed}: an index appears twice"),
            )
        });
    }
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(now);
    for gpu in &bundle.gpus {
        let index = gpu.device.nvml_index;
        checks.extend(nvidia::verify(
            gpu,
            &gpu_nonce(nonce, index),
            &policy.gpu,
            time,
            index as usize,
        ));
    }
    for failure in &bundle.gpu_failures {
        checks.push(Check::fail(
            format!("gpu.{}.collection", failure.nvml_index),
            format!(
                "the node could not collect this GPU's evidence: {}",
                failure.error
            ),
        ));
    }
}

/// Parse the bundle's PEM certificates into a chain; an unusable VCEK is a check failure.
pub fn supplied_chain(certs: &SnpCertificates) -> Result<SuppliedChain, String> {
    let vcek = parse_certs(certs.vcek.as_bytes())
        .map_err(|e| format!("VCEK: {e}"))?
        .into_iter()
        .next()
        .ok_or("VCEK: no certificate")?;
    let mut others = Vec::new();
    for (name, pem) in [("ASK", &certs.ask), ("ARK", &certs.ark)] {
        if let Some(pem) = pem {
            others.extend(parse_certs(pem.as_bytes()).map_err(|e| format!("{name}: {e}"))?);
        }
    }
    Ok(SuppliedChain::from_certs(vcek, others))
}

/// PEM text of one DER certificate.
pub fn to_pem(der: &[u8]) -> String {
    der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, der).unwrap_or_default()
}
