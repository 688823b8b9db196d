//! NVIDIA GPU confidential-computing evidence (Hopper, Blackwell): collection on the node
//! through NVML ([`collect`]) and offline verification for the governing body ([`verify`]).
//!
//! # What is verified, and on what it rests
//!
//! * The **attestation report** ([`spdm`]) is an SPDM 1.1 GET_MEASUREMENTS request carrying the
//!   verifier's 32-byte nonce, followed by the GPU's MEASUREMENTS response (64 measurement
//!   blocks, NVIDIA opaque data, ECDSA P-384 signature). The signature covers SHA-384 of the
//!   request and the response up to the signature, so the nonce, the measurements and the
//!   opaque fields (driver, VBIOS, FWID, chip) are all signed by the GPU.
//! * The **signing key** is the leaf of the device-identity chain the GPU returns; the chain
//!   must end in the pinned NVIDIA Device Identity CA ([`certs::NVIDIA_DEVICE_ROOT_PEM`]). The
//!   leaf's FWID (a TCG DICE extension) must equal the report's FWID, binding the signing key
//!   to the firmware that produced the report.
//! * **Revocation** (NVIDIA's OCSP responder) needs the network; this verifier runs offline and
//!   reports that check as skipped, with the reason.
//! * **CC mode and dev-tools mode** are not fields of the signed report (no opaque type carries
//!   them on Hopper or Blackwell). They are read from NVML at collection time, inside the
//!   confidential VM, by this crate's measured code, and travel in [`CcState`]. Their trust is
//!   therefore that of the CVM: the SEV-SNP report binds the whole evidence bundle (the `attest`
//!   side puts its hash in REPORT_DATA), and the CVM's launch measurement covers the code that
//!   filled them in. NVIDIA documents no signed field for either mode, so this verifier does
//!   not infer them from the report. (Observed on an H200, driver 580.159.04, CC off: NVML
//!   returns NVML_ERROR_UNKNOWN for both the report and the certificate call, so CC off yields
//!   no evidence at all; dev-tools mode is not known to change the report.) Pinning RIM
//!   measurements in the policy additionally constrains the firmware state the GPU reports.
//! * **Reference values** (driver/VBIOS versions, measurements per index, as from NVIDIA's
//!   RIMs) come from the policy; with none configured those checks are skipped.
//!
//! Every check is named `gpu.<index>.<what>`; see [`verify`] for the list.

pub mod certs;
#[cfg(feature = "collect")]
pub mod collect;
pub mod spdm;

use std::time::SystemTime;

use p384::ecdsa::Signature;
use p384::ecdsa::signature::DigestVerifier;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha384};

#[cfg(feature = "collect")]
pub use collect::{CollectError, DeviceCollection, collect, collect_each};
use spdm::{AttestationReport, opaque_type};

use crate::report::Check;

/// One GPU's evidence as it travels in the bundle (JSON). Binary fields are encoded as text:
/// the report as lowercase hex (the form NVIDIA's own tools and samples use), the chain as
/// base64 of the exact bytes NVML returned (a PEM bundle, leaf first, root last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuEvidence {
    /// Which device this is, from NVML; informational (the report itself names no device).
    pub device: GpuDevice,
    /// `nvmlDeviceGetConfComputeGpuAttestationReport`: SPDM request ‖ signed response.
    #[serde(with = "hex_bytes")]
    pub attestation_report: Vec<u8>,
    /// `nvmlDeviceGetConfComputeGpuCertificate` attestation chain (PEM text).
    #[serde(with = "base64_bytes")]
    pub certificate_chain: Vec<u8>,
    /// System CC settings read from NVML at collection time (see the module docs for trust).
    pub cc_state: CcState,
}

/// NVML's description of the device at collection time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuDevice {
    /// NVML device index.
    pub nvml_index: u32,
    /// Product name, e.g. "NVIDIA H200".
    pub name: String,
    /// Device UUID ("GPU-...").
    pub uuid: String,
    /// PCI bus id, e.g. "00000000:01:00.0".
    pub pci_bus_id: String,
    /// Architecture as NVML names it (e.g. "Hopper"), or why it is unknown.
    pub architecture: String,
    /// The system's NVIDIA driver version.
    pub driver_version: String,
}

/// `nvmlSystemGetConfComputeState` (ccFeature, devToolsMode, environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CcState {
    /// ccFeature == NVML_CC_SYSTEM_FEATURE_ENABLED.
    pub cc_enabled: bool,
    /// devToolsMode == NVML_CC_SYSTEM_DEVTOOLS_MODE_ON (CC with debugging/profiling allowed).
    pub dev_tools_mode: bool,
    /// "prod", "sim", "unavailable" or "unknown(N)".
    pub environment: String,
}

/// The `[gpu]` section of POLICY.toml. Every list left empty makes its check a skip.
///
/// ```toml
/// [gpu]
/// driver_versions = ["595.58.03"]
/// vbios_versions = ["98.02.81.00.01"]
/// [[gpu.measurements]]
/// index = 1
/// values = ["<96 hex digits>"]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuPolicy {
    /// Allowed driver versions (report opaque field 3), e.g. "595.58.03".
    #[serde(default)]
    pub driver_versions: Vec<String>,
    /// Allowed VBIOS versions (opaque field 6) as nvidia-smi prints them, e.g. "98.02.81.00.01".
    #[serde(default)]
    pub vbios_versions: Vec<String>,
    /// Reference measurements (offline RIM comparison): for each listed index, the report's
    /// block must be present and equal one of `values`. Unlisted indices are not compared.
    #[serde(default)]
    pub measurements: Vec<ReferenceMeasurement>,
}

/// The values one measurement block may hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceMeasurement {
    /// Measurement index as in the report (1..=64 on Hopper and Blackwell).
    pub index: u8,
    /// Accepted values (RIMs may list alternatives), hex.
    pub values: Vec<HexBytes>,
}

/// Bytes written as a hex string in TOML/JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

impl Serialize for HexBytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        hex::decode(text.trim())
            .map(HexBytes)
            .map_err(serde::de::Error::custom)
    }
}

mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&hex::encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        hex::decode(text.trim()).map_err(serde::de::Error::custom)
    }
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD
            .decode(text.trim())
            .map_err(serde::de::Error::custom)
    }
}

/// Check names, relative to `gpu.<index>.`.
pub mod check_name {
    /// The report parses as an SPDM GET_MEASUREMENTS exchange.
    pub const REPORT_PARSE: &str = "report.parse";
    /// The request carries the expected nonce.
    pub const NONCE: &str = "report.nonce";
    /// The report's signature verifies under the leaf key.
    pub const SIGNATURE: &str = "report.signature";
    /// The chain ends in the pinned NVIDIA root, each link signed.
    pub const CERT_CHAIN: &str = "cert_chain";
    /// Every certificate is valid at the verification time.
    pub const CERT_VALIDITY: &str = "cert_chain.validity";
    /// OCSP revocation status (always skipped, offline).
    pub const CERT_REVOCATION: &str = "cert_chain.revocation";
    /// The leaf's FWID equals the report's.
    pub const FWID: &str = "fwid";
    /// CC mode is on.
    pub const CC_MODE: &str = "cc_mode";
    /// CC dev-tools mode is off.
    pub const DEV_TOOLS_MODE: &str = "dev_tools_mode";
    /// The driver version is among the policy's.
    pub const DRIVER_VERSION: &str = "driver_version";
    /// The VBIOS version is among the policy's.
    pub const VBIOS_VERSION: &str = "vbios_version";
    /// The measurements equal the policy's reference values.
    pub const MEASUREMENTS: &str = "measurements";
}

/// Verifies one GPU's evidence. Returns, in this order, checks named `gpu.<index>.`:
///
/// | check | fails when |
/// |---|---|
/// | `report.parse` | the report is not a well-formed SPDM 1.1 GET_MEASUREMENTS exchange |
/// | `report.nonce` | the request nonce differs from `expected_nonce` |
/// | `report.signature` | the ECDSA P-384/SHA-384 signature does not verify under the leaf key |
/// | `cert_chain` | the chain is malformed, mis-ordered, badly signed or not rooted in the pinned NVIDIA root |
/// | `cert_chain.validity` | a certificate is not valid at `now` |
/// | `cert_chain.revocation` | always skipped: OCSP needs the network |
/// | `fwid` | the leaf's DICE FWID differs from the report's FWID (or either is missing) |
/// | `cc_mode` | NVML reported CC off |
/// | `dev_tools_mode` | NVML reported CC dev-tools mode on |
/// | `driver_version`, `vbios_version`, `measurements` | the report's value is not among the policy's (skipped when the policy lists none) |
///
/// A check whose inputs are unavailable (e.g. the report did not parse) fails with that
/// reason; it never passes. Values taken from a report whose signature did not verify say so
/// in their detail.
pub fn verify(
    evidence: &GpuEvidence,
    expected_nonce: &[u8; 32],
    policy: &GpuPolicy,
    now: SystemTime,
    index: usize,
) -> Vec<Check> {
    let name = |what: &str| format!("gpu.{index}.{what}");
    let mut checks = Vec::with_capacity(12);

    let report = AttestationReport::parse(&evidence.attestation_report);
    checks.push(match &report {
        Ok(report) => Check::pass(name(check_name::REPORT_PARSE), describe_report(report)),
        Err(e) => Check::fail(name(check_name::REPORT_PARSE), e.to_string()),
    });
    let report = report.ok();
    checks.push(nonce_check(
        name(check_name::NONCE),
        report.as_ref(),
        expected_nonce,
    ));
    let chain = certs::parse_pem_chain(&evidence.certificate_chain);
    let signature_check = signature_check(
        name(check_name::SIGNATURE),
        &evidence.attestation_report,
        report.as_ref(),
        &chain,
    );
    let signature_ok = signature_check.outcome == crate::report::Outcome::Pass;
    checks.push(signature_check);
    checks.push(chain_check(name(check_name::CERT_CHAIN), &chain));
    checks.push(chain_validity_check(
        name(check_name::CERT_VALIDITY),
        &chain,
        now,
    ));
    checks.push(Check::skip(
        name(check_name::CERT_REVOCATION),
        "OCSP status of the GPU certificates needs NVIDIA's OCSP responder; this verifier runs \
         offline (the chain's validity and pinned root are still checked)",
    ));
    checks.push(fwid_check(name(check_name::FWID), report.as_ref(), &chain));
    checks.push(cc_mode_check(name(check_name::CC_MODE), &evidence.cc_state));
    checks.push(dev_tools_mode_check(
        name(check_name::DEV_TOOLS_MODE),
        &evidence.cc_state,
    ));
    reference_checks(index, report.as_ref(), policy, signature_ok, &mut checks);
    checks
}

const NO_REPORT: &str = "not evaluated: the report did not parse";

/// `report.nonce`: the SPDM request carries the nonce the verifier expects for this GPU.
fn nonce_check(
    name: String,
    report: Option<&AttestationReport>,
    expected_nonce: &[u8; 32],
) -> Check {
    match report {
        Some(report) if &report.request.nonce == expected_nonce => Check::pass(
            name,
            format!("request nonce {}", hex::encode(report.request.nonce)),
        ),
        Some(report) => Check::fail(
            name,
            format!(
                "request nonce {}, expected {}",
                hex::encode(report.request.nonce),
                hex::encode(expected_nonce)
            ),
        ),
        None => Check::fail(name, NO_REPORT),
    }
}

/// `report.signature`: the report's signature under the chain's leaf key (`raw` is the
/// report as the node sent it).
fn signature_check(
    name: String,
    raw: &[u8],
    report: Option<&AttestationReport>,
    chain: &Result<Vec<x509_cert::Certificate>, certs::ChainError>,
) -> Check {
    match (report, chain) {
        (None, _) => Check::fail(name, NO_REPORT),
        (Some(_), Err(e)) => Check::fail(name, format!("no signing key: certificate chain: {e}")),
        (Some(report), Ok(chain)) => match verify_report_signature(raw, report, chain) {
            Ok(detail) => Check::pass(name, detail),
            Err(detail) => Check::fail(name, detail),
        },
    }
}

/// `cert_chain`: the chain's structure and signatures up to the pinned NVIDIA root.
fn chain_check(
    name: String,
    chain: &Result<Vec<x509_cert::Certificate>, certs::ChainError>,
) -> Check {
    match (chain, certs::pinned_root()) {
        (Ok(chain), Ok(root)) => match certs::verify_chain(chain, &root) {
            Ok(detail) => Check::pass(name, detail),
            Err(e) => Check::fail(name, e.to_string()),
        },
        (Err(e), _) => Check::fail(name, e.to_string()),
        (_, Err(e)) => Check::fail(name, e.to_string()),
    }
}

/// `cert_chain.validity`: every certificate of the chain is valid at `now`.
fn chain_validity_check(
    name: String,
    chain: &Result<Vec<x509_cert::Certificate>, certs::ChainError>,
    now: SystemTime,
) -> Check {
    match chain {
        Ok(chain) => match certs::check_validity(chain, now) {
            Ok(detail) => Check::pass(name, detail),
            Err(e) => Check::fail(name, e.to_string()),
        },
        Err(e) => Check::fail(name, format!("not evaluated: certificate chain: {e}")),
    }
}

/// `cc_mode`: NVML reported the CC feature enabled.
fn cc_mode_check(name: String, cc: &CcState) -> Check {
    if cc.cc_enabled {
        Check::pass(
            name,
            format!("NVML: CC feature enabled, environment {}", cc.environment),
        )
    } else {
        Check::fail(
            name,
            format!("NVML: CC feature disabled (environment {})", cc.environment),
        )
    }
}

/// `dev_tools_mode`: NVML reported CC dev-tools mode off.
fn dev_tools_mode_check(name: String, cc: &CcState) -> Check {
    if cc.dev_tools_mode {
        Check::fail(
            name,
            "NVML: CC dev-tools mode is on (GPU debugging and profiling allowed)",
        )
    } else {
        Check::pass(name, "NVML: CC dev-tools mode off")
    }
}

/// The report's driver and VBIOS versions and measurements against the policy's reference
/// values, named `gpu.<index>.`.
fn reference_checks(
    index: usize,
    report: Option<&AttestationReport>,
    policy: &GpuPolicy,
    signature_ok: bool,
    checks: &mut Vec<Check>,
) {
    let name = |what: &str| format!("gpu.{index}.{what}");
    let unsigned_note = if signature_ok {
        ""
    } else {
        " (value from a report whose signature did not verify)"
    };
    checks.push(version_check(
        name(check_name::DRIVER_VERSION),
        "driver",
        report.map(|r| r.driver_version()),
        &policy.driver_versions,
        unsigned_note,
    ));
    checks.push(version_check(
        name(check_name::VBIOS_VERSION),
        "VBIOS",
        report.map(|r| r.vbios_version()),
        &policy.vbios_versions,
        unsigned_note,
    ));
    checks.push(measurements_check(
        name(check_name::MEASUREMENTS),
        report,
        &policy.measurements,
        unsigned_note,
    ));
}

fn describe_report(report: &AttestationReport) -> String {
    let text = |t| report.text_opaque(t).unwrap_or_else(|| "-".into());
    let nonzero = report
        .response
        .blocks
        .iter()
        .filter(|b| b.value.iter().any(|&v| v != 0))
        .count();
    format!(
        "SPDM 1.1 GET_MEASUREMENTS: {} measurement blocks ({} non-zero), {} opaque fields, \
         driver {}, VBIOS {}, chip_sku {}, project {}, project_sku {}, signed span {} bytes",
        report.response.blocks.len(),
        nonzero,
        report.response.opaque.len(),
        report
            .driver_version()
            .map_or_else(|| "-".into(), |v| v.unwrap_or_else(|hex| hex)),
        report
            .vbios_version()
            .map_or_else(|| "-".into(), |v| v.unwrap_or_else(|e| e)),
        text(opaque_type::CHIP_SKU),
        text(opaque_type::PROJECT),
        text(opaque_type::PROJECT_SKU),
        report.signed_len,
    )
}

/// ECDSA P-384 over SHA-384(request ‖ response-without-signature) under the leaf's key.
fn verify_report_signature(
    raw: &[u8],
    report: &AttestationReport,
    chain: &[x509_cert::Certificate],
) -> Result<String, String> {
    let key = certs::leaf_key(chain).map_err(|e| format!("no signing key: {e}"))?;
    let signed = raw
        .get(..report.signed_len)
        .ok_or("signed span outside the report")?;
    let signature = Signature::from_slice(&report.response.signature)
        .map_err(|_| "signature r or s is out of range for P-384".to_string())?;
    key.verify_digest(Sha384::new_with_prefix(signed), &signature)
        .map_err(|_| {
            format!(
                "ECDSA P-384/SHA-384 signature over the first {} bytes does not verify under \
                 the leaf key ({})",
                report.signed_len,
                chain.first().map(certs::subject_name).unwrap_or_default()
            )
        })?;
    Ok(format!(
        "ECDSA P-384/SHA-384 over bytes 0..{} verifies under the leaf key ({}); trust in that \
         key is the cert_chain check",
        report.signed_len,
        chain.first().map(certs::subject_name).unwrap_or_default()
    ))
}

fn fwid_check(
    name: String,
    report: Option<&AttestationReport>,
    chain: &Result<Vec<x509_cert::Certificate>, certs::ChainError>,
) -> Check {
    let Some(report) = report else {
        return Check::fail(name, "not evaluated: the report did not parse");
    };
    let Some(report_fwid) = report.fwid() else {
        return Check::fail(name, "the report has no FWID opaque field (type 20)");
    };
    let leaf = match chain {
        Ok(chain) => match chain.first() {
            Some(leaf) => leaf,
            None => return Check::fail(name, "certificate chain is empty"),
        },
        Err(e) => return Check::fail(name, format!("not evaluated: certificate chain: {e}")),
    };
    match certs::leaf_fwid(leaf) {
        Ok(cert_fwid) if cert_fwid == report_fwid => Check::pass(
            name,
            format!(
                "report FWID = leaf certificate FWID = {}",
                hex::encode(report_fwid)
            ),
        ),
        Ok(cert_fwid) => Check::fail(
            name,
            format!(
                "FWID mismatch: leaf certificate {}, report {}",
                hex::encode(cert_fwid),
                hex::encode(report_fwid)
            ),
        ),
        Err(e) => Check::fail(name, e.to_string()),
    }
}

fn version_check(
    name: String,
    what: &str,
    value: Option<Option<Result<String, String>>>,
    allowed: &[String],
    unsigned_note: &str,
) -> Check {
    if allowed.is_empty() {
        return Check::skip(name, format!("policy lists no {what} versions"));
    }
    match value {
        None => Check::fail(name, "not evaluated: the report did not parse"),
        Some(None) => Check::fail(name, format!("the report has no {what} version field")),
        Some(Some(Err(raw))) => {
            Check::fail(name, format!("{what} version field unreadable: {raw}"))
        }
        Some(Some(Ok(version))) if allowed.contains(&version) => Check::pass(
            name,
            format!("{what} {version} is allowed by policy{unsigned_note}"),
        ),
        Some(Some(Ok(version))) => Check::fail(
            name,
            format!(
                "{what} {version} not in policy [{}]{unsigned_note}",
                allowed.join(", ")
            ),
        ),
    }
}

fn measurements_check(
    name: String,
    report: Option<&AttestationReport>,
    references: &[ReferenceMeasurement],
    unsigned_note: &str,
) -> Check {
    if references.is_empty() {
        return Check::skip(name, "policy lists no reference measurements");
    }
    let Some(report) = report else {
        return Check::fail(name, "not evaluated: the report did not parse");
    };
    let mut mismatches = Vec::new();
    for reference in references {
        match report.measurement(reference.index) {
            None => mismatches.push(format!("index {}: absent from the report", reference.index)),
            Some(block) if reference.values.iter().any(|v| v.0 == block.value) => {}
            Some(block) => mismatches.push(format!(
                "index {}: {} not among {} reference value(s)",
                reference.index,
                hex::encode(&block.value),
                reference.values.len()
            )),
        }
    }
    if mismatches.is_empty() {
        Check::pass(
            name,
            format!(
                "{} referenced measurement(s) match; {} of the report's {} not referenced{unsigned_note}",
                references.len(),
                report
                    .response
                    .blocks
                    .len()
                    .saturating_sub(references.len()),
                report.response.blocks.len()
            ),
        )
    } else {
        Check::fail(name, format!("{}{unsigned_note}", mismatches.join("; ")))
    }
}
