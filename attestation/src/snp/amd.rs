//! AMD's certificate chain for SEV-SNP: ARK (root, RSA-4096, self-signed) -> ASK (or ASVK for
//! VLEKs) -> VCEK/VLEK (ECDSA P-384), every certificate signed with RSASSA-PSS/SHA-384.
//!
//! Signatures are checked over the raw `tbsCertificate` bytes cut out of the DER as received,
//! and the AMD-specific VCEK extensions (TCB levels, hwID, product name) are decoded here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use der::asn1::{Ia5StringRef, ObjectIdentifier};
use der::{Decode, Encode, Reader, SliceReader};
use rsa::pkcs1::DecodeRsaPublicKey as _;
use sha2::{Digest, Sha256, Sha384};
use thiserror::Error;
use x509_cert::Certificate;

use super::tcb::{Product, TcbParts};
use crate::report::Check;

/// RSASSA-PSS, AMD's certificate signature algorithm (RFC 4055).
pub const OID_RSASSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");
/// rsaEncryption (PKCS #1).
pub const OID_RSA_ENCRYPTION: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// SHA-384 (NIST).
pub const OID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
/// MGF1 mask generation (PKCS #1).
pub const OID_MGF1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.8");
/// id-ecPublicKey (RFC 5480).
pub const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// The NIST P-384 curve (secp384r1).
pub const OID_SECP384R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");

/// AMD VCEK/VLEK extensions (AMD KDS specification 57230).
pub mod oid {
    use der::asn1::ObjectIdentifier;
    /// structVersion: the version of the extension layout.
    pub const STRUCT_VERSION: ObjectIdentifier =
        ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.1");
    /// productName, e.g. "Milan-B0".
    pub const PRODUCT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.2");
    /// blSPL: bootloader security patch level.
    pub const BL_SPL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.3.1");
    /// teeSPL: PSP OS security patch level.
    pub const TEE_SPL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.3.2");
    /// snpSPL: SNP firmware security patch level.
    pub const SNP_SPL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.3.3");
    /// ucodeSPL: microcode patch level.
    pub const UCODE_SPL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.3.8");
    /// fmcSPL: FMC security patch level (Turin).
    pub const FMC_SPL: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.3.9");
    /// hwID: the chip id the VCEK certifies.
    pub const HW_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.4");
    /// cspID: the cloud provider a VLEK was issued to.
    pub const CSP_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.3704.1.5");
}

/// Why bytes are not a usable AMD certificate.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CertError {
    /// Not DER of an X.509 certificate.
    #[error("certificate is not valid DER X.509: {0}")]
    Der(String),
    /// A PEM block that does not decode.
    #[error("PEM block is malformed: {0}")]
    Pem(String),
    /// Input without any certificate.
    #[error("no certificate found in input")]
    Empty,
    /// An AMD extension that is present but malformed.
    #[error("VCEK/VLEK extension {oid} is malformed: {reason}")]
    Extension {
        /// The extension's OID.
        oid: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// A public key of the wrong algorithm or encoding.
    #[error("certificate public key is not {expected}: {reason}")]
    Key {
        /// The key type expected, e.g. "RSA".
        expected: &'static str,
        /// Why the key does not parse as one.
        reason: String,
    },
}

/// One certificate with the DER it was parsed from.
#[derive(Clone, Debug)]
pub struct AmdCert {
    der: Vec<u8>,
    cert: Certificate,
}

impl AmdCert {
    /// Parses one DER certificate, refusing trailing bytes.
    pub fn from_der(der: &[u8]) -> Result<AmdCert, CertError> {
        let cert = Certificate::from_der(der).map_err(|e| CertError::Der(e.to_string()))?;
        // The signed part must be cut from the input itself; also reject trailing bytes there.
        tbs_raw(der).map_err(|e| CertError::Der(e.to_string()))?;
        Ok(AmdCert {
            der: der.to_vec(),
            cert,
        })
    }

    /// The DER the certificate was parsed from.
    pub fn der(&self) -> &[u8] {
        &self.der
    }
    /// The parsed certificate.
    pub fn cert(&self) -> &Certificate {
        &self.cert
    }
    /// The subject name, RFC 4514 text.
    pub fn subject(&self) -> String {
        self.cert.tbs_certificate.subject.to_string()
    }
    /// The issuer name, RFC 4514 text.
    pub fn issuer(&self) -> String {
        self.cert.tbs_certificate.issuer.to_string()
    }
    /// SHA-256 of the DER, lowercase hex.
    pub fn fingerprint(&self) -> String {
        hex::encode(Sha256::digest(&self.der))
    }
    /// The raw `tbsCertificate` TLV exactly as received.
    pub fn tbs_bytes(&self) -> &[u8] {
        tbs_raw(&self.der).unwrap_or(&[])
    }
    /// notBefore and notAfter, seconds since the Unix epoch.
    pub fn validity_unix(&self) -> (u64, u64) {
        let v = &self.cert.tbs_certificate.validity;
        (
            v.not_before.to_unix_duration().as_secs(),
            v.not_after.to_unix_duration().as_secs(),
        )
    }
    /// The serial number, lowercase hex.
    pub fn serial_hex(&self) -> String {
        hex::encode(self.cert.tbs_certificate.serial_number.as_bytes())
    }

    /// The RSA public key of an ARK/ASK. AMD labels these keys rsassaPss (not rsaEncryption), so
    /// the PKCS#1 key is read from the subjectPublicKey bits for either algorithm OID.
    pub fn rsa_public_key(&self) -> Result<rsa::RsaPublicKey, CertError> {
        let spki = &self.cert.tbs_certificate.subject_public_key_info;
        let alg = spki.algorithm.oid;
        if alg != OID_RSASSA_PSS && alg != OID_RSA_ENCRYPTION {
            return Err(CertError::Key {
                expected: "RSA",
                reason: format!("algorithm {alg}"),
            });
        }
        let bits = spki.subject_public_key.as_bytes().ok_or(CertError::Key {
            expected: "RSA",
            reason: "subjectPublicKey has unused bits".into(),
        })?;
        rsa::RsaPublicKey::from_pkcs1_der(bits).map_err(|e| CertError::Key {
            expected: "RSA",
            reason: e.to_string(),
        })
    }

    /// The ECDSA P-384 key of a VCEK/VLEK.
    pub fn p384_public_key(&self) -> Result<p384::ecdsa::VerifyingKey, CertError> {
        let spki = &self.cert.tbs_certificate.subject_public_key_info;
        let key_err = |reason: String| CertError::Key {
            expected: "ECDSA P-384",
            reason,
        };
        if spki.algorithm.oid != OID_EC_PUBLIC_KEY {
            return Err(key_err(format!("algorithm {}", spki.algorithm.oid)));
        }
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        if curve != Some(OID_SECP384R1) {
            return Err(key_err(format!("curve {curve:?}")));
        }
        let bits = spki
            .subject_public_key
            .as_bytes()
            .ok_or_else(|| key_err("subjectPublicKey has unused bits".into()))?;
        p384::ecdsa::VerifyingKey::from_sec1_bytes(bits).map_err(|e| key_err(e.to_string()))
    }

    /// The VCEK/VLEK key, validated as a P-384 point ([`Self::p384_public_key`]) and parsed
    /// once for [`report_signature_check`].
    pub fn report_key(&self) -> Result<ReportKey, CertError> {
        let point = self.p384_public_key()?.to_encoded_point(false);
        ReportKey::from_sec1(point.as_bytes()).map_err(|reason| CertError::Key {
            expected: "ECDSA P-384",
            reason,
        })
    }
}

/// An endorsement key (VCEK/VLEK) ready to check report signatures.
///
/// The check runs on AWS-LC (through `aws-lc-rs`, rustls' default provider): its P-384 is
/// several times faster than RustCrypto's `p384`, which is what lets one core verify more
/// than 1,000 reports a second. The key is parsed once and cached with the chain.
#[derive(Clone)]
pub struct ReportKey(aws_lc_rs::signature::ParsedPublicKey);

impl ReportKey {
    /// From an uncompressed SEC1 point (0x04 || X || Y).
    pub fn from_sec1(point: &[u8]) -> Result<ReportKey, String> {
        aws_lc_rs::signature::ParsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P384_SHA384_FIXED,
            point,
        )
        .map(ReportKey)
        .map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for ReportKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReportKey").field(&self.0).finish()
    }
}

/// Cut the first element (tbsCertificate) out of a Certificate SEQUENCE, byte for byte.
fn tbs_raw(der: &[u8]) -> der::Result<&[u8]> {
    let mut outer = SliceReader::new(der)?;
    let header = der::Header::decode(&mut outer)?;
    header.tag.assert_eq(der::Tag::Sequence)?;
    let body = outer.read_slice(header.length)?;
    outer.finish(())?;
    let mut inner = SliceReader::new(body)?;
    inner.tlv_bytes()
}

/// Parse one DER certificate or a PEM bundle of one or more (leaf first or in any order).
pub fn parse_certs(bytes: &[u8]) -> Result<Vec<AmdCert>, CertError> {
    let trimmed = bytes.trim_ascii_start();
    if !trimmed.starts_with(b"-----BEGIN") {
        return Ok(vec![AmdCert::from_der(bytes)?]);
    }
    let text = std::str::from_utf8(trimmed).map_err(|e| CertError::Pem(e.to_string()))?;
    let mut out = Vec::new();
    let mut rest = text;
    const END: &str = "-----END CERTIFICATE-----";
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let after = rest.get(start..).unwrap_or("");
        let end = after
            .find(END)
            .ok_or_else(|| CertError::Pem("BEGIN without END".into()))?;
        let block = after.get(..end + END.len()).unwrap_or("");
        let (label, der) =
            der::pem::decode_vec(block.as_bytes()).map_err(|e| CertError::Pem(e.to_string()))?;
        if label != "CERTIFICATE" {
            return Err(CertError::Pem(format!("unexpected label {label}")));
        }
        out.push(AmdCert::from_der(&der)?);
        rest = after.get(end + END.len()..).unwrap_or("");
    }
    if out.is_empty() {
        return Err(CertError::Empty);
    }
    Ok(out)
}

/// Whether the endorsement key is per chip (VCEK) or per cloud provider (VLEK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EndorsementKind {
    /// Versioned Chip Endorsement Key: certifies one chip at one TCB.
    Vcek,
    /// Versioned Loaded Endorsement Key: certifies a cloud provider's key.
    Vlek,
}

impl EndorsementKind {
    /// The kind of endorsement key `cert` certifies (a VLEK's subject says SEV-VLEK).
    fn of(cert: &AmdCert) -> EndorsementKind {
        if cert.subject().contains("SEV-VLEK") {
            EndorsementKind::Vlek
        } else {
            EndorsementKind::Vcek
        }
    }

    /// "VCEK" or "VLEK", as check details write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            EndorsementKind::Vcek => "VCEK",
            EndorsementKind::Vlek => "VLEK",
        }
    }
}

/// The AMD extensions of a VCEK/VLEK. Absent extensions are `None`, never defaulted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndorsementExtensions {
    /// structVersion.
    pub struct_version: Option<u32>,
    /// productName, e.g. "Milan-B0".
    pub product_name: Option<String>,
    /// blSPL: bootloader security patch level.
    pub bl_spl: Option<u8>,
    /// teeSPL: PSP OS security patch level.
    pub tee_spl: Option<u8>,
    /// snpSPL: SNP firmware security patch level.
    pub snp_spl: Option<u8>,
    /// ucodeSPL: microcode patch level.
    pub ucode_spl: Option<u8>,
    /// fmcSPL: FMC security patch level (Turin only).
    pub fmc_spl: Option<u8>,
    /// hwID: the chip id a VCEK certifies (64 bytes; Turin 8).
    pub hw_id: Option<Vec<u8>>,
    /// cspID: the cloud provider a VLEK was issued to.
    pub csp_id: Option<String>,
}

fn ext_err(oid: ObjectIdentifier, reason: impl Into<String>) -> CertError {
    CertError::Extension {
        oid: oid.to_string(),
        reason: reason.into(),
    }
}

fn decode_spl(oid: ObjectIdentifier, value: &[u8]) -> Result<u8, CertError> {
    let v = u32::from_der(value).map_err(|e| ext_err(oid, e.to_string()))?;
    u8::try_from(v).map_err(|_| ext_err(oid, format!("SPL {v} exceeds 255")))
}

fn decode_ia5(oid: ObjectIdentifier, value: &[u8]) -> Result<String, CertError> {
    Ia5StringRef::from_der(value)
        .map(|s| s.as_str().to_owned())
        .map_err(|e| ext_err(oid, e.to_string()))
}

impl EndorsementExtensions {
    /// Reads the AMD extensions of `cert`; an extension that is present but malformed is an error.
    pub fn from_cert(cert: &AmdCert) -> Result<EndorsementExtensions, CertError> {
        let mut out = EndorsementExtensions::default();
        let Some(exts) = cert.cert.tbs_certificate.extensions.as_ref() else {
            return Ok(out);
        };
        for ext in exts {
            let value = ext.extn_value.as_bytes();
            let id = ext.extn_id;
            let already = match id {
                oid::STRUCT_VERSION => out
                    .struct_version
                    .replace(u32::from_der(value).map_err(|e| ext_err(id, e.to_string()))?)
                    .is_some(),
                oid::PRODUCT_NAME => out.product_name.replace(decode_ia5(id, value)?).is_some(),
                oid::BL_SPL => out.bl_spl.replace(decode_spl(id, value)?).is_some(),
                oid::TEE_SPL => out.tee_spl.replace(decode_spl(id, value)?).is_some(),
                oid::SNP_SPL => out.snp_spl.replace(decode_spl(id, value)?).is_some(),
                oid::UCODE_SPL => out.ucode_spl.replace(decode_spl(id, value)?).is_some(),
                oid::FMC_SPL => out.fmc_spl.replace(decode_spl(id, value)?).is_some(),
                // hwID is the raw chip id, not a nested DER value (64 bytes; Turin: 8).
                oid::HW_ID => out.hw_id.replace(value.to_vec()).is_some(),
                oid::CSP_ID => out.csp_id.replace(decode_ia5(id, value)?).is_some(),
                _ => false,
            };
            if already {
                return Err(ext_err(id, "extension appears twice"));
            }
        }
        Ok(out)
    }

    /// The TCB the certificate endorses, laid out for `product`; names the first missing SPL.
    pub fn tcb(&self, product: Product) -> Result<TcbParts, &'static str> {
        let fmc = match product {
            Product::Turin => Some(self.fmc_spl.ok_or("fmcSPL (1.3.6.1.4.1.3704.1.3.9)")?),
            _ => None,
        };
        Ok(TcbParts {
            fmc,
            bootloader: self.bl_spl.ok_or("blSPL (1.3.6.1.4.1.3704.1.3.1)")?,
            tee: self.tee_spl.ok_or("teeSPL (1.3.6.1.4.1.3704.1.3.2)")?,
            snp: self.snp_spl.ok_or("snpSPL (1.3.6.1.4.1.3704.1.3.3)")?,
            microcode: self.ucode_spl.ok_or("ucodeSPL (1.3.6.1.4.1.3704.1.3.8)")?,
        })
    }
}

/// A pinned root of trust for one product: the ARK and the intermediates it signed
/// (ASK for VCEKs, ASVK for VLEKs).
#[derive(Clone, Debug)]
pub struct TrustAnchor {
    /// The processor product whose reports this root endorses.
    pub product: Product,
    /// The ARK: the self-signed AMD root key certificate.
    pub ark: AmdCert,
    /// The ASKs and ASVKs the ARK signed.
    pub intermediates: Vec<AmdCert>,
    /// A generated test root (test evidence source); only trusted when a policy names it.
    pub is_test: bool,
}

const EMBEDDED: [(Product, &str); 4] = [
    (
        Product::Milan,
        include_str!("../../trust/amd/ask_ark_milan.pem"),
    ),
    (
        Product::Milan,
        include_str!("../../trust/amd/ask_ark_milan_vlek.pem"),
    ),
    (
        Product::Genoa,
        include_str!("../../trust/amd/ask_ark_genoa.pem"),
    ),
    (
        Product::Turin,
        include_str!("../../trust/amd/ask_ark_turin.pem"),
    ),
];

/// The set of roots a verification accepts.
#[derive(Clone, Debug)]
pub struct TrustStore {
    anchors: Vec<TrustAnchor>,
}

impl TrustStore {
    /// AMD's genuine ARKs for Milan, Genoa and Turin with their ASKs (and Milan's ASVK),
    /// embedded at build time from AMD KDS `cert_chain` files.
    pub fn amd() -> TrustStore {
        let mut anchors: Vec<TrustAnchor> = Vec::new();
        for (product, pem) in EMBEDDED {
            // The embedded files are fixed at build time and covered by a test; a parse
            // failure here could only come from a corrupted build and leaves the anchor out.
            let Ok(certs) = parse_certs(pem.as_bytes()) else {
                continue;
            };
            let (arks, asks): (Vec<_>, Vec<_>) =
                certs.into_iter().partition(|c| c.subject() == c.issuer());
            let Some(ark) = arks.into_iter().next() else {
                continue;
            };
            if let Some(existing) = anchors
                .iter_mut()
                .find(|a| a.product == product && a.ark.der == ark.der)
            {
                existing.intermediates.extend(asks);
            } else {
                anchors.push(TrustAnchor {
                    product,
                    ark,
                    intermediates: asks,
                    is_test: false,
                });
            }
        }
        TrustStore { anchors }
    }

    /// A store trusting nothing.
    pub fn empty() -> TrustStore {
        TrustStore { anchors: vec![] }
    }

    /// Trusts `anchor` too.
    pub fn add(&mut self, anchor: TrustAnchor) {
        self.anchors.push(anchor);
    }

    /// The trusted roots.
    pub fn anchors(&self) -> &[TrustAnchor] {
        &self.anchors
    }
}

/// The certificates a verification was given: the endorsement key certificate and, optionally,
/// the ASK and ARK that came with it (extended report, certs dir, KDS cert_chain).
#[derive(Clone, Debug)]
pub struct SuppliedChain {
    /// The VCEK or VLEK certificate.
    pub vcek: AmdCert,
    /// The ASK (or ASVK) supplied with it, if any.
    pub ask: Option<AmdCert>,
    /// The ARK supplied with it, if any.
    pub ark: Option<AmdCert>,
    /// Supplied certificates that are neither this chain's ARK nor the issuer of its VCEK
    /// (another product's ASK, a second root, a leaf): the verifier reports them as a
    /// failed `snp.chain.supplied_certificates` rather than ignoring them.
    pub unused: Vec<AmdCert>,
}

impl SuppliedChain {
    /// Sort a bag of certificates into VCEK/ASK/ARK by their names; what fits neither place
    /// (and is not a byte-identical duplicate) is kept in `unused`.
    pub fn from_certs(vcek: AmdCert, others: Vec<AmdCert>) -> SuppliedChain {
        let mut ask: Option<AmdCert> = None;
        let mut ark: Option<AmdCert> = None;
        let mut unused: Vec<AmdCert> = Vec::new();
        for c in others {
            let slot = if c.subject() == c.issuer() {
                &mut ark
            } else if c.subject() == vcek.issuer() {
                &mut ask
            } else {
                if c.der != vcek.der && !unused.iter().any(|u| u.der == c.der) {
                    unused.push(c);
                }
                continue;
            };
            match slot {
                None => *slot = Some(c),
                Some(have) if have.der == c.der => {}
                Some(_) => {
                    if !unused.iter().any(|u| u.der == c.der) {
                        unused.push(c);
                    }
                }
            }
        }
        SuppliedChain {
            vcek,
            ask,
            ark,
            unused,
        }
    }
}

/// Why no pinned root anchors `chain`: what was compared and what did not match.
fn unanchored_reason(trust: &TrustStore, chain: &SuppliedChain, name_ek: &str) -> String {
    let vcek = &chain.vcek;
    let describe = |a: &TrustAnchor| {
        format!(
            "{}{} ARK {} (sha256 {})",
            if a.is_test { "TEST " } else { "" },
            a.product,
            a.ark.subject(),
            &a.ark.fingerprint()
        )
    };
    let pinned: Vec<String> = trust.anchors.iter().map(describe).collect();
    let pinned = if pinned.is_empty() {
        "no root is pinned".to_string()
    } else {
        format!("pinned: {}", pinned.join("; "))
    };
    if let Some(ark) = &chain.ark {
        let same: Vec<&TrustAnchor> = trust
            .anchors
            .iter()
            .filter(|a| a.ark.der == ark.der)
            .collect();
        if same.is_empty() {
            let named_like = trust
                .anchors
                .iter()
                .find(|a| a.ark.subject() == ark.subject());
            return match named_like {
                Some(a) => format!(
                    "supplied ARK {} has the name of the pinned {} but other bytes (sha256 {}, pinned {})",
                    ark.subject(),
                    describe(a),
                    ark.fingerprint(),
                    a.ark.fingerprint()
                ),
                None => format!(
                    "supplied ARK {} (sha256 {}) is not a pinned root ({pinned})",
                    ark.subject(),
                    ark.fingerprint()
                ),
            };
        }
        let roots: Vec<String> = same.iter().map(|a| describe(a)).collect();
        let roots = roots.join(", ");
        return match &chain.ask {
            Some(ask) => format!(
                "supplied ARK is the pinned {roots}, but the supplied ASK {} was issued by {}, not by it",
                ask.subject(),
                ask.issuer()
            ),
            None => {
                let names: Vec<String> = same
                    .iter()
                    .flat_map(|a| a.intermediates.iter().map(|i| i.subject()))
                    .collect();
                format!(
                    "supplied ARK is the pinned {roots}, but none of its intermediates ({}) issued the {name_ek} (issuer {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    },
                    vcek.issuer()
                )
            }
        };
    }
    match &chain.ask {
        Some(ask) => format!(
            "supplied ASK {} was issued by {}, which is no pinned ARK ({pinned})",
            ask.subject(),
            ask.issuer()
        ),
        None => format!(
            "no pinned root has an intermediate named {} (the {name_ek}'s issuer) ({pinned})",
            vcek.issuer()
        ),
    }
}

/// RSASSA-PSS with SHA-384, MGF1-SHA-384 and a 48-byte salt: the only scheme AMD uses.
fn verify_rsa_pss(issuer: &AmdCert, subject: &AmdCert) -> Result<(), String> {
    let alg = &subject.cert.signature_algorithm;
    if alg.oid != OID_RSASSA_PSS {
        return Err(format!("signature algorithm {} is not RSASSA-PSS", alg.oid));
    }
    let params = alg
        .parameters
        .as_ref()
        .ok_or("RSASSA-PSS without parameters")?
        .decode_as::<rsa::pkcs1::RsaPssParams>()
        .map_err(|e| format!("RSASSA-PSS parameters: {e}"))?;
    if params.hash.oid != OID_SHA384 {
        return Err(format!("PSS hash {} is not SHA-384", params.hash.oid));
    }
    let mgf_hash = params.mask_gen.parameters.map(|p| p.oid);
    if params.mask_gen.oid != OID_MGF1 || mgf_hash != Some(OID_SHA384) {
        return Err(format!(
            "PSS mask {} / {mgf_hash:?} is not MGF1-SHA-384",
            params.mask_gen.oid
        ));
    }
    if params.salt_len != 48 {
        return Err(format!("PSS salt length {} is not 48", params.salt_len));
    }
    // The outer and inner algorithm identifiers must agree (RFC 5280 4.1.1.2).
    if subject.cert.tbs_certificate.signature != subject.cert.signature_algorithm {
        return Err("tbsCertificate.signature differs from signatureAlgorithm".into());
    }
    let key = issuer.rsa_public_key().map_err(|e| e.to_string())?;
    let sig_bytes = subject
        .cert
        .signature
        .as_bytes()
        .ok_or("signature BIT STRING has unused bits")?;
    let sig = rsa::pss::Signature::try_from(sig_bytes).map_err(|e| e.to_string())?;
    let verifier = rsa::pss::VerifyingKey::<Sha384>::new_with_salt_len(key, 48);
    use rsa::signature::Verifier as _;
    verifier
        .verify(subject.tbs_bytes(), &sig)
        .map_err(|_| "RSA-PSS signature does not verify".to_string())
}

/// The part of chain verification that does not depend on the time: cached per
/// (VCEK, ASK, ARK) triple, so a verifier seeing the same node again skips the RSA work.
#[derive(Clone, Debug)]
pub struct ChainResult {
    /// The chain checks, in order.
    pub checks: Vec<Check>,
    /// The product of the anchoring root; `None`: not anchored.
    pub product: Option<Product>,
    /// Whether the anchoring root is a test root.
    pub is_test_root: bool,
    /// The endorsement key that verifies reports, when the chain is anchored and the key usable.
    pub vcek_key: Option<ReportKey>,
    /// The certificate's AMD extensions, or why they are unavailable.
    pub extensions: Result<EndorsementExtensions, String>,
    /// VCEK or VLEK.
    pub kind: EndorsementKind,
    /// (name, not_before, not_after) of each certificate in the chain, for the time check.
    pub validity: Vec<(&'static str, u64, u64)>,
}

impl ChainResult {
    /// Whether no chain check failed.
    pub fn ok(&self) -> bool {
        self.checks
            .iter()
            .all(|c| c.outcome != crate::report::Outcome::Fail)
    }
}

/// Verifies AMD chains against a trust store, caching time-independent results.
#[derive(Debug)]
pub struct ChainVerifier {
    trust: TrustStore,
    cache: Mutex<HashMap<[u8; 32], Arc<ChainResult>>>,
}

impl ChainVerifier {
    /// A verifier trusting `trust`, with an empty cache.
    pub fn new(trust: TrustStore) -> ChainVerifier {
        ChainVerifier {
            trust,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The roots this verifier trusts.
    pub fn trust(&self) -> &TrustStore {
        &self.trust
    }

    /// The chain checks of `chain`, from the cache when this chain was verified before.
    pub fn verify(&self, chain: &SuppliedChain) -> Arc<ChainResult> {
        let mut h = Sha256::new();
        let listed = [Some(&chain.vcek), chain.ask.as_ref(), chain.ark.as_ref()];
        for c in listed.into_iter().chain(chain.unused.iter().map(Some)) {
            let der = c.map(|c| c.der.as_slice()).unwrap_or(&[]);
            h.update((der.len() as u64).to_le_bytes());
            h.update(der);
        }
        let key: [u8; 32] = h.finalize().into();
        if let Ok(cache) = self.cache.lock()
            && let Some(hit) = cache.get(&key)
        {
            return hit.clone();
        }
        let result = Arc::new(self.verify_uncached(chain));
        if let Ok(mut cache) = self.cache.lock() {
            // Bound memory for a verifier facing many distinct chains.
            if cache.len() > 100_000 {
                cache.clear();
            }
            cache.insert(key, result.clone());
        }
        result
    }

    fn verify_uncached(&self, chain: &SuppliedChain) -> ChainResult {
        let mut checks = Vec::new();
        let vcek = &chain.vcek;
        let kind = EndorsementKind::of(vcek);
        let name_ek = kind.name();
        if !chain.unused.is_empty() {
            checks.push(unused_certificates_check(chain, name_ek));
        }
        let Some(anchor) = self.anchor_for(chain) else {
            let detail = unanchored_reason(&self.trust, chain, name_ek);
            checks.push(Check::fail("snp.chain.ark_pinned", detail));
            return ChainResult {
                checks,
                product: None,
                is_test_root: false,
                vcek_key: None,
                extensions: Err("chain not anchored".into()),
                kind,
                validity: vec![],
            };
        };
        checks.push(ark_pinned_check(anchor, chain.ark.is_some()));
        let ark = &anchor.ark;
        match verify_rsa_pss(ark, ark) {
            Ok(()) => checks.push(Check::pass(
                "snp.chain.ark_self_signed",
                "ARK signature verifies with its own key (RSA-PSS SHA-384)",
            )),
            Err(e) => checks.push(Check::fail("snp.chain.ark_self_signed", e)),
        }
        let ask = chain.ask.as_ref().or_else(|| {
            anchor
                .intermediates
                .iter()
                .find(|i| i.subject() == vcek.issuer())
        });
        let mut validity = vec![("ARK", ark.validity_unix().0, ark.validity_unix().1)];
        match ask {
            None => checks.push(Check::fail(
                "snp.chain.ask_signature",
                format!("no ASK/ASVK named {} available", vcek.issuer()),
            )),
            Some(ask) => {
                let (nb, na) = ask.validity_unix();
                validity.push(("ASK", nb, na));
                checks.push(ask_signature_check(ark, ask));
                checks.push(vcek_signature_check(ask, vcek, name_ek));
            }
        }
        let (nb, na) = vcek.validity_unix();
        validity.push(("VCEK", nb, na));

        let vcek_key = match vcek.report_key() {
            Ok(k) => Some(k),
            Err(e) => {
                checks.push(Check::fail("snp.chain.vcek_key", e.to_string()));
                None
            }
        };
        ChainResult {
            checks,
            product: Some(anchor.product),
            is_test_root: anchor.is_test,
            vcek_key,
            extensions: EndorsementExtensions::from_cert(vcek).map_err(|e| e.to_string()),
            kind,
            validity,
        }
    }

    /// Which pinned root: the supplied ARK must equal a pinned one byte for byte; without a
    /// supplied ARK, the root whose intermediate issued this VCEK.
    fn anchor_for(&self, chain: &SuppliedChain) -> Option<&TrustAnchor> {
        self.trust.anchors.iter().find(|a| {
            let ark_ok = chain.ark.as_ref().is_none_or(|ark| ark.der == a.ark.der);
            let ask_issuer_ok = match &chain.ask {
                Some(ask) => ask.issuer() == a.ark.subject(),
                None => a
                    .intermediates
                    .iter()
                    .any(|i| i.subject() == chain.vcek.issuer()),
            };
            ark_ok && ask_issuer_ok
        })
    }
}

/// `snp.chain.supplied_certificates`: fails, listing the supplied certificates the chain
/// does not use.
fn unused_certificates_check(chain: &SuppliedChain, name_ek: &str) -> Check {
    let list: Vec<String> = chain
        .unused
        .iter()
        .map(|c| {
            format!(
                "{} (issuer {}, sha256 {})",
                c.subject(),
                c.issuer(),
                c.fingerprint()
            )
        })
        .collect();
    Check::fail(
        "snp.chain.supplied_certificates",
        format!(
            "{} supplied certificate(s) are neither the ARK nor the issuer of this {name_ek} ({}): {}",
            list.len(),
            chain.vcek.issuer(),
            list.join("; ")
        ),
    )
}

/// `snp.chain.ark_pinned` (passed): the pinned root the chain is anchored at.
fn ark_pinned_check(anchor: &TrustAnchor, ark_supplied: bool) -> Check {
    let origin = if ark_supplied {
        "supplied ARK matches"
    } else {
        "using"
    };
    Check::pass(
        "snp.chain.ark_pinned",
        format!(
            "{origin} pinned {}{} ARK {} (sha256 {})",
            if anchor.is_test { "TEST " } else { "" },
            anchor.product,
            anchor.ark.subject(),
            anchor.ark.fingerprint()
        ),
    )
}

/// `snp.chain.ask_signature`: the ARK signed the ASK (or ASVK).
fn ask_signature_check(ark: &AmdCert, ask: &AmdCert) -> Check {
    match verify_rsa_pss(ark, ask) {
        Ok(()) => Check::pass(
            "snp.chain.ask_signature",
            format!(
                "{} signed by {} (RSA-PSS SHA-384)",
                ask.subject(),
                ark.subject()
            ),
        ),
        Err(e) => Check::fail(
            "snp.chain.ask_signature",
            format!("{} by {}: {e}", ask.subject(), ark.subject()),
        ),
    }
}

/// `snp.chain.vcek_signature`: the ASK signed the VCEK (or VLEK, `name_ek`).
fn vcek_signature_check(ask: &AmdCert, vcek: &AmdCert, name_ek: &str) -> Check {
    match verify_rsa_pss(ask, vcek) {
        Ok(()) => Check::pass(
            "snp.chain.vcek_signature",
            format!("{name_ek} signed by {} (RSA-PSS SHA-384)", ask.subject()),
        ),
        Err(e) => Check::fail(
            "snp.chain.vcek_signature",
            format!(
                "{name_ek} issuer {} by {}: {e}",
                vcek.issuer(),
                ask.subject()
            ),
        ),
    }
}

/// Validity of every certificate of the chain at `now` (seconds since the Unix epoch).
pub fn validity_check(result: &ChainResult, now: u64) -> Check {
    if result.validity.is_empty() {
        return Check::skip("snp.chain.validity", "not evaluated: chain not anchored");
    }
    let mut parts = Vec::new();
    let mut bad = Vec::new();
    for (name, nb, na) in &result.validity {
        let s = format!("{name} {}..{}", fmt_unix(*nb), fmt_unix(*na));
        if now < *nb || now > *na {
            bad.push(s.clone());
        }
        parts.push(s);
    }
    if bad.is_empty() {
        Check::pass(
            "snp.chain.validity",
            format!("at {}: {}", fmt_unix(now), parts.join(", ")),
        )
    } else {
        Check::fail(
            "snp.chain.validity",
            format!("at {} outside validity: {}", fmt_unix(now), bad.join(", ")),
        )
    }
}

/// ECDSA P-384 / SHA-384 over the raw signed bytes of the report.
pub fn report_signature_check(report: &super::raw::AttestationReport, key: &ReportKey) -> Check {
    let (r, s) = match report.signature_rs() {
        Ok(rs) => rs,
        Err(e) => return Check::fail("snp.report.signature", e),
    };
    let mut rs = [0u8; 96];
    rs[..48].copy_from_slice(&r);
    rs[48..].copy_from_slice(&s);
    // The range check names the reason; AWS-LC would reject such R or S too, without one.
    if p384::ecdsa::Signature::from_slice(&rs).is_err() {
        return Check::fail(
            "snp.report.signature",
            "R or S is zero or not below the group order",
        );
    }
    // ECDSA_P384_SHA384_FIXED: SHA-384 of the message, then R || S big-endian, 48 bytes each.
    match key.0.verify_sig(report.signed_bytes(), &rs) {
        Ok(()) => Check::pass(
            "snp.report.signature",
            "ECDSA P-384/SHA-384 over bytes 0x000..0x29F verifies with the endorsement key",
        ),
        Err(_) => Check::fail(
            "snp.report.signature",
            "ECDSA P-384/SHA-384 over bytes 0x000..0x29F does not verify with the endorsement key",
        ),
    }
}

/// Check an AMD CRL (DER, signed by the ARK) and that the ASK is not revoked in it.
pub fn crl_check(crl_der: &[u8], anchor_ark: &AmdCert, ask: Option<&AmdCert>, now: u64) -> Check {
    let name = "snp.chain.crl";
    let crl = match x509_cert::crl::CertificateList::from_der(crl_der) {
        Ok(c) => c,
        Err(e) => return Check::fail(name, format!("CRL is not valid DER: {e}")),
    };
    // Reuse the certificate signature path: a CRL has the same TBS/alg/signature shape.
    let tbs = match crl.tbs_cert_list.to_der() {
        Ok(t) => t,
        Err(e) => return Check::fail(name, e.to_string()),
    };
    let raw_tbs = match tbs_raw(crl_der) {
        Ok(t) => t,
        Err(e) => return Check::fail(name, e.to_string()),
    };
    if raw_tbs != tbs.as_slice() {
        return Check::fail(name, "CRL TBS is not in canonical DER");
    }
    if crl.tbs_cert_list.issuer != anchor_ark.cert.tbs_certificate.subject {
        return Check::fail(
            name,
            format!("CRL issuer {} is not the ARK", crl.tbs_cert_list.issuer),
        );
    }
    let alg = &crl.signature_algorithm;
    if alg.oid != OID_RSASSA_PSS {
        return Check::fail(name, format!("CRL signature algorithm {}", alg.oid));
    }
    let key = match anchor_ark.rsa_public_key() {
        Ok(k) => k,
        Err(e) => return Check::fail(name, e.to_string()),
    };
    let Some(sig_bytes) = crl.signature.as_bytes() else {
        return Check::fail(name, "CRL signature has unused bits");
    };
    let verified = rsa::pss::Signature::try_from(sig_bytes)
        .map_err(|e| e.to_string())
        .and_then(|sig| {
            use rsa::signature::Verifier as _;
            rsa::pss::VerifyingKey::<Sha384>::new_with_salt_len(key, 48)
                .verify(raw_tbs, &sig)
                .map_err(|_| "CRL signature does not verify with the ARK".to_string())
        });
    if let Err(e) = verified {
        return Check::fail(name, e);
    }
    if let Some(next) = crl.tbs_cert_list.next_update {
        let next = next.to_unix_duration().as_secs();
        if now > next {
            return Check::fail(name, format!("CRL expired at {}", fmt_unix(next)));
        }
    }
    if let Some(ask) = ask {
        let serial = &ask.cert.tbs_certificate.serial_number;
        let revoked = crl
            .tbs_cert_list
            .revoked_certificates
            .as_ref()
            .is_some_and(|list| list.iter().any(|r| &r.serial_number == serial));
        if revoked {
            return Check::fail(name, format!("ASK serial {} is revoked", ask.serial_hex()));
        }
    }
    let count = crl
        .tbs_cert_list
        .revoked_certificates
        .as_ref()
        .map_or(0, |l| l.len());
    Check::pass(
        name,
        format!("CRL signed by the ARK, {count} revoked, ASK not among them"),
    )
}

/// UTC `YYYY-MM-DDTHH:MM:SSZ` for a Unix time.
pub fn fmt_unix(secs: u64) -> String {
    match der::DateTime::from_unix_duration(std::time::Duration::from_secs(secs)) {
        Ok(dt) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minutes(),
            dt.seconds()
        ),
        Err(_) => format!("@{secs}"),
    }
}

/// Parse `YYYY-MM-DDTHH:MM:SSZ` (or `@<unix seconds>`) into Unix seconds.
pub fn parse_time(text: &str) -> Option<u64> {
    if let Some(secs) = text.strip_prefix('@') {
        return secs.parse().ok();
    }
    let t = text.strip_suffix('Z')?;
    let (date, time) = t.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<u16>().ok());
    let mut h = time.split(':').map(|x| x.parse::<u8>().ok());
    let dt = der::DateTime::new(
        d.next()??,
        u8::try_from(d.next()??).ok()?,
        u8::try_from(d.next()??).ok()?,
        h.next()??,
        h.next()??,
        h.next()??,
    )
    .ok()?;
    Some(dt.unix_duration().as_secs())
}
