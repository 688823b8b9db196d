//! The GPU's device-identity certificate chain (leaf first, NVIDIA Device Identity CA last)
//! and the FWID its leaf carries.
//!
//! Path validation here is deliberately narrow: the chain must be exactly the ordered list the
//! GPU returned, end in the pinned root (byte-identical DER), use ECDSA P-384 with SHA-384
//! throughout, and every issuer must be a CA. That is the profile all NVIDIA GPU attestation
//! chains follow (nvtrust requires 5 certificates; trustee and nvtrust verify with OpenSSL
//! against the same pinned root). A general-purpose path builder (rustls-webpki) does not fit:
//! it requires TLS-style end-entity usages the NVIDIA leaf does not carry.

use std::time::SystemTime;

use der::asn1::{AnyRef, ObjectIdentifier, OctetStringRef};
use der::{Decode, Encode, Reader, SliceReader, Tag, TagNumber, Tagged};
use p384::ecdsa::signature::DigestVerifier;
use p384::ecdsa::{Signature, VerifyingKey};
use p384::pkcs8::DecodePublicKey;
use sha2::{Digest, Sha256, Sha384};
use thiserror::Error;
use x509_cert::Certificate;
use x509_cert::ext::pkix::{BasicConstraints, KeyUsage};

/// NVIDIA Device Identity CA, self-signed ECDSA P-384, valid 2021-11-05 to 9999-12-31.
/// Source: nvtrust `local_gpu_verifier/src/verifier/certs/verifier_device_root.pem`
/// (byte-identical to trustee `deps/verifier/src/nvidia/nvidia_device_root.pem`).
/// SHA-256 of its DER: 102bf659d5419614c9d8e6aecebc80454eb26b1df6a769ac720b9a690b167b48.
pub const NVIDIA_DEVICE_ROOT_PEM: &[u8] = include_bytes!("nvidia_device_root.pem");

/// ecdsa-with-SHA384 (RFC 5758).
const ECDSA_WITH_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
/// id-sha384 (NIST), the FWID hash algorithm.
const ID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");
/// tcg-dice-TcbInfo (TCG DICE Attestation Architecture). On Hopper leaves its value is
/// NVIDIA's earlier form `SEQUENCE { INTEGER, SubjectPublicKeyInfo, FWID }`; nvtrust
/// `CcAdminUtils.extract_fwid` and trustee `get_fwid_from_cert` take its last 48 bytes.
pub const OID_TCG_DICE_FWID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.23.133.5.4.1");
/// The OID Blackwell leaves carry a DICE `TcbInfo` under (`fwids` is `[6] IMPLICIT SEQUENCE
/// OF FWID`); NVIDIA's nv-attestation-sdk names it `OID_TCG_DICE_TCB_INFO_ALIAS`.
pub const OID_TCG_DICE_TCB_INFO_ALIAS: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("2.23.133.5.4.1.1");
const FWID_LEN: usize = 48;

/// Why a GPU's certificate chain is refused. `position` counts from the leaf (0).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ChainError {
    /// No certificate at all.
    #[error("certificate chain is empty or not PEM")]
    Empty,
    /// A PEM block that is not a DER certificate.
    #[error("certificate {position} does not decode: {reason}")]
    Decode {
        /// Position in the chain.
        position: usize,
        /// The decoder's error.
        reason: String,
    },
    /// Bytes other than NUL padding after the last certificate.
    #[error("text after the last certificate: {count} bytes")]
    TrailingText {
        /// How many bytes follow it.
        count: usize,
    },
    /// Fewer than two certificates: no leaf below the root.
    #[error(
        "certificate chain must have at least the signing (leaf) certificate and the root, has {count}"
    )]
    TooShort {
        /// How many certificates the chain has.
        count: usize,
    },
    /// The last certificate is not the pinned NVIDIA root.
    #[error(
        "chain ends in {found} (SHA-256 {fingerprint}), not the pinned NVIDIA Device Identity CA"
    )]
    RootNotPinned {
        /// Subject of the last certificate.
        found: String,
        /// SHA-256 of its DER, hex.
        fingerprint: String,
    },
    /// A certificate's issuer is not the next certificate's subject.
    #[error(
        "certificate {position} ({subject}) names issuer {issuer}, but the next certificate is {next}"
    )]
    IssuerMismatch {
        /// Position of the certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// The issuer it names.
        issuer: String,
        /// Subject of the next certificate.
        next: String,
    },
    /// A signature algorithm other than ecdsa-with-SHA384.
    #[error(
        "certificate {position} ({subject}) is not signed with ecdsa-with-SHA384 (found {found})"
    )]
    Algorithm {
        /// Position of the certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// The algorithm OID it names.
        found: String,
    },
    /// A public key that is not P-384.
    #[error("certificate {position} ({subject}) has no P-384 public key: {reason}")]
    PublicKey {
        /// Position of the certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// Why the key does not parse.
        reason: String,
    },
    /// A signature that does not verify under the next certificate's key.
    #[error("signature of certificate {position} ({subject}) does not verify under {issuer}")]
    Signature {
        /// Position of the signed certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// Subject of the issuer whose key was used.
        issuer: String,
    },
    /// An issuing certificate that is not a CA (basicConstraints, keyUsage).
    #[error("certificate {position} ({subject}) issues certificates but is not a CA: {reason}")]
    NotCa {
        /// Position of the issuing certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// Which extension says so.
        reason: String,
    },
    /// More CA certificates below a CA than its path length constraint allows.
    #[error(
        "certificate {position} ({subject}): path length constraint {limit} exceeded by {below} CA certificates below it"
    )]
    PathLength {
        /// Position of the constrained CA.
        position: usize,
        /// Its subject.
        subject: String,
        /// Its pathLenConstraint.
        limit: u8,
        /// CA certificates between it and the leaf.
        below: usize,
    },
    /// A leaf that is a CA or may not sign (keyUsage digitalSignature).
    #[error("leaf certificate ({subject}) cannot sign reports: {reason}")]
    LeafUsage {
        /// The leaf's subject.
        subject: String,
        /// What its extensions say.
        reason: String,
    },
    /// A critical extension this verifier does not process.
    #[error("certificate {position} ({subject}) has unsupported critical extension {oid}")]
    CriticalExtension {
        /// Position of the certificate.
        position: usize,
        /// Its subject.
        subject: String,
        /// The extension's OID.
        oid: String,
    },
}

/// A certificate of the chain not valid at the verification time.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidityError {
    /// The time is before notBefore.
    #[error("certificate {position} ({subject}) is not yet valid: not before {not_before}")]
    NotYetValid {
        /// Position in the chain (leaf 0).
        position: usize,
        /// The certificate's subject.
        subject: String,
        /// Its notBefore.
        not_before: String,
    },
    /// The time is after notAfter.
    #[error("certificate {position} ({subject}) has expired: not after {not_after}")]
    Expired {
        /// Position in the chain (leaf 0).
        position: usize,
        /// The certificate's subject.
        subject: String,
        /// Its notAfter.
        not_after: String,
    },
}

/// Why the signing certificate's FWID cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FwidError {
    /// Neither DICE extension is present.
    #[error(
        "FWID extension (2.23.133.5.4.1 or 2.23.133.5.4.1.1) not found in the signing certificate"
    )]
    Missing,
    /// A DICE extension that does not decode, or holds no 48-byte FWID.
    #[error("FWID extension {oid} malformed: {reason}")]
    Malformed {
        /// The extension's OID.
        oid: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two extensions naming different FWIDs.
    #[error("signing certificate carries two different FWIDs")]
    Conflicting,
}

/// Splits a PEM bundle into certificates, in order. Accepts what NVML returns: PEM blocks
/// separated by newlines, possibly followed by NUL padding.
pub fn parse_pem_chain(bytes: &[u8]) -> Result<Vec<Certificate>, ChainError> {
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let mut certs = Vec::new();
    let mut rest = bytes;
    while let Some(end) = rest.windows(END.len()).position(|w| w == END) {
        let block_end = end + END.len();
        let block = rest.get(..block_end).unwrap_or_default();
        rest = rest.get(block_end..).unwrap_or_default();
        let cert =
            decode_pem_certificate(block.trim_ascii()).map_err(|reason| ChainError::Decode {
                position: certs.len(),
                reason,
            })?;
        certs.push(cert);
    }
    let leftover = rest
        .iter()
        .filter(|&&b| b != 0 && !b.is_ascii_whitespace())
        .count();
    if leftover != 0 {
        return Err(ChainError::TrailingText { count: leftover });
    }
    if certs.is_empty() {
        return Err(ChainError::Empty);
    }
    Ok(certs)
}

/// One PEM block to a certificate: base64 first, then DER from a slice.
///
/// Not `Certificate::from_pem`: der 0.7.10's streaming PEM reader never returns on some
/// inputs (found by `pem_frame_random_der` below: a block whose body is `3Q==`, the single
/// byte 0xDD). Decoding the base64 to a buffer and parsing that slice terminates.
fn decode_pem_certificate(block: &[u8]) -> Result<Certificate, String> {
    let (label, der) = der::pem::decode_vec(block).map_err(|e| format!("PEM: {e}"))?;
    if label != "CERTIFICATE" {
        return Err(format!("PEM label {label:?}, expected \"CERTIFICATE\""));
    }
    Certificate::from_der(&der).map_err(|e| format!("DER: {e}"))
}

/// The pinned root (768 bytes of PEM, decoded per call; cheap).
pub fn pinned_root() -> Result<Certificate, ChainError> {
    decode_pem_certificate(NVIDIA_DEVICE_ROOT_PEM).map_err(|reason| ChainError::Decode {
        position: usize::MAX,
        reason: format!("embedded NVIDIA root: {reason}"),
    })
}

/// Common name (or the whole subject) for messages.
pub fn subject_name(cert: &Certificate) -> String {
    cert.tbs_certificate.subject.to_string()
}

/// SHA-256 of a certificate's DER, hex.
pub fn fingerprint(cert: &Certificate) -> String {
    match cert.to_der() {
        Ok(der) => hex::encode(Sha256::digest(der)),
        Err(e) => format!("<unencodable: {e}>"),
    }
}

fn verifying_key(cert: &Certificate, position: usize) -> Result<VerifyingKey, ChainError> {
    let err = |reason: String| ChainError::PublicKey {
        position,
        subject: subject_name(cert),
        reason,
    };
    let spki = cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| err(e.to_string()))?;
    VerifyingKey::from_public_key_der(&spki).map_err(|e| err(e.to_string()))
}

/// The signing (leaf) certificate's P-384 key, which must verify the report.
pub fn leaf_key(certs: &[Certificate]) -> Result<VerifyingKey, ChainError> {
    let leaf = certs.first().ok_or(ChainError::Empty)?;
    verifying_key(leaf, 0)
}

fn extension<'a>(cert: &'a Certificate, oid: &ObjectIdentifier) -> Option<&'a [u8]> {
    cert.tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|ext| &ext.extn_id == oid)
        .map(|ext| ext.extn_value.as_bytes())
}

fn basic_constraints(cert: &Certificate) -> Result<Option<BasicConstraints>, String> {
    extension(cert, &BASIC_CONSTRAINTS)
        .map(|bytes| BasicConstraints::from_der(bytes).map_err(|e| e.to_string()))
        .transpose()
}

fn key_usage(cert: &Certificate) -> Result<Option<KeyUsage>, String> {
    extension(cert, &KEY_USAGE)
        .map(|bytes| KeyUsage::from_der(bytes).map_err(|e| e.to_string()))
        .transpose()
}

/// Verifies the chain's structure and signatures up to the pinned root. Returns a one-line
/// summary (subjects in order) for the check's detail.
pub fn verify_chain(certs: &[Certificate], root: &Certificate) -> Result<String, ChainError> {
    if certs.len() < 2 {
        return Err(ChainError::TooShort { count: certs.len() });
    }
    let last = certs.last().ok_or(ChainError::Empty)?;
    let pinned = root.to_der().ok();
    if pinned.is_none() || last.to_der().ok() != pinned {
        return Err(ChainError::RootNotPinned {
            found: subject_name(last),
            fingerprint: fingerprint(last),
        });
    }
    check_critical_extensions(certs)?;
    for (position, pair) in certs.windows(2).enumerate() {
        let [child, issuer] = pair else { continue };
        check_link(position, child, issuer)?;
    }
    let leaf = certs.first().ok_or(ChainError::Empty)?;
    check_leaf(leaf)?;

    let subjects: Vec<String> = certs.iter().map(subject_name).collect();
    Ok(format!(
        "{} certificates, each signed (ecdsa-with-SHA384) by the next, ending in the pinned root: {}",
        certs.len(),
        subjects.join(" <- ")
    ))
}

/// X.509 requires refusing unknown critical extensions. NVIDIA's chain marks only keyUsage
/// and basicConstraints critical.
fn check_critical_extensions(certs: &[Certificate]) -> Result<(), ChainError> {
    for (position, cert) in certs.iter().enumerate() {
        let Some(extensions) = &cert.tbs_certificate.extensions else {
            continue;
        };
        if let Some(ext) = extensions.iter().find(|ext| {
            ext.critical && ext.extn_id != KEY_USAGE && ext.extn_id != BASIC_CONSTRAINTS
        }) {
            return Err(ChainError::CriticalExtension {
                position,
                subject: subject_name(cert),
                oid: ext.extn_id.to_string(),
            });
        }
    }
    Ok(())
}

/// One link of the chain: `child` (at `position`) names `issuer` as its issuer, `issuer` is
/// a CA allowed to sign at this depth, and its key signed `child` (ECDSA P-384 SHA-384).
fn check_link(
    position: usize,
    child: &Certificate,
    issuer: &Certificate,
) -> Result<(), ChainError> {
    if child.tbs_certificate.issuer != issuer.tbs_certificate.subject {
        return Err(ChainError::IssuerMismatch {
            position,
            subject: subject_name(child),
            issuer: child.tbs_certificate.issuer.to_string(),
            next: subject_name(issuer),
        });
    }
    check_issuer_is_ca(position, issuer)?;
    let issuer_position = position + 1;
    let algorithm = &child.signature_algorithm;
    if algorithm.oid != ECDSA_WITH_SHA384
        || child.tbs_certificate.signature.oid != ECDSA_WITH_SHA384
    {
        return Err(ChainError::Algorithm {
            position,
            subject: subject_name(child),
            found: algorithm.oid.to_string(),
        });
    }
    let key = verifying_key(issuer, issuer_position)?;
    let bad_signature = || ChainError::Signature {
        position,
        subject: subject_name(child),
        issuer: subject_name(issuer),
    };
    let tbs = child
        .tbs_certificate
        .to_der()
        .map_err(|_| bad_signature())?;
    let signature_bytes = child.signature.as_bytes().ok_or_else(bad_signature)?;
    let signature = Signature::from_der(signature_bytes).map_err(|_| bad_signature())?;
    key.verify_digest(Sha384::new_with_prefix(&tbs), &signature)
        .map_err(|_| bad_signature())
}

/// The issuer of the certificate at `position` is a CA (basicConstraints cA, keyUsage
/// keyCertSign when present) whose path length constraint admits the `position` CA
/// certificates between it and the leaf.
fn check_issuer_is_ca(position: usize, issuer: &Certificate) -> Result<(), ChainError> {
    let issuer_position = position + 1;
    let not_ca = |reason: &str| ChainError::NotCa {
        position: issuer_position,
        subject: subject_name(issuer),
        reason: reason.to_owned(),
    };
    match basic_constraints(issuer) {
        Ok(Some(bc)) if bc.ca => {
            if let Some(limit) = bc.path_len_constraint
                && position > usize::from(limit)
            {
                return Err(ChainError::PathLength {
                    position: issuer_position,
                    subject: subject_name(issuer),
                    limit,
                    below: position,
                });
            }
        }
        Ok(_) => return Err(not_ca("basicConstraints absent or cA false")),
        Err(e) => return Err(not_ca(&format!("basicConstraints malformed: {e}"))),
    }
    match key_usage(issuer) {
        Ok(Some(ku)) if !ku.key_cert_sign() => Err(not_ca("keyUsage lacks keyCertSign")),
        Ok(_) => Ok(()),
        Err(e) => Err(not_ca(&format!("keyUsage malformed: {e}"))),
    }
}

/// The report is signed by the leaf, so it must be a signing end entity, not a CA: a chain
/// with the leaf cut off (trustee's hopper case 4) is otherwise still a valid chain.
fn check_leaf(leaf: &Certificate) -> Result<(), ChainError> {
    let leaf_err = |reason: String| ChainError::LeafUsage {
        subject: subject_name(leaf),
        reason,
    };
    match basic_constraints(leaf) {
        Ok(Some(bc)) if bc.ca => return Err(leaf_err("it is a CA certificate".into())),
        Ok(_) => {}
        Err(e) => return Err(leaf_err(format!("basicConstraints malformed: {e}"))),
    }
    match key_usage(leaf) {
        Ok(Some(ku)) if ku.digital_signature() => {}
        Ok(_) => return Err(leaf_err("keyUsage lacks digitalSignature".into())),
        Err(e) => return Err(leaf_err(format!("keyUsage malformed: {e}"))),
    }
    verifying_key(leaf, 0)?;
    Ok(())
}

/// Every certificate's validity window must contain `now`.
pub fn check_validity(certs: &[Certificate], now: SystemTime) -> Result<String, ValidityError> {
    let mut latest_start: Option<SystemTime> = None;
    let mut earliest_end: Option<SystemTime> = None;
    for (position, cert) in certs.iter().enumerate() {
        let validity = &cert.tbs_certificate.validity;
        let not_before = validity.not_before.to_system_time();
        let not_after = validity.not_after.to_system_time();
        if now < not_before {
            return Err(ValidityError::NotYetValid {
                position,
                subject: subject_name(cert),
                not_before: validity.not_before.to_string(),
            });
        }
        if now > not_after {
            return Err(ValidityError::Expired {
                position,
                subject: subject_name(cert),
                not_after: validity.not_after.to_string(),
            });
        }
        latest_start = latest_start.max(Some(not_before));
        earliest_end = Some(earliest_end.map_or(not_after, |end| end.min(not_after)));
    }
    let secs = |t: Option<SystemTime>| {
        t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs())
    };
    Ok(format!(
        "all {} certificates valid at unix time {}: window {}..{}",
        certs.len(),
        secs(Some(now)),
        secs(latest_start),
        secs(earliest_end)
    ))
}

/// Children of a DER SEQUENCE (the whole input must be that one SEQUENCE).
fn sequence_children(bytes: &[u8]) -> Result<Vec<AnyRef<'_>>, String> {
    let outer = AnyRef::from_der(bytes).map_err(|e| e.to_string())?;
    if outer.tag() != Tag::Sequence {
        return Err(format!("expected SEQUENCE, found {}", outer.tag()));
    }
    let mut reader = SliceReader::new(outer.value()).map_err(|e| e.to_string())?;
    let mut children = Vec::new();
    while !reader.is_finished() {
        children.push(AnyRef::decode(&mut reader).map_err(|e| e.to_string())?);
    }
    Ok(children)
}

/// `FWID ::= SEQUENCE { hashAlg OBJECT IDENTIFIER, digest OCTET STRING }`, SHA-384 only.
fn parse_fwid(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let children = sequence_children(bytes)?;
    let [alg, digest] = children.as_slice() else {
        return Err(format!("FWID has {} fields, expected 2", children.len()));
    };
    let alg = ObjectIdentifier::try_from(*alg).map_err(|e| format!("FWID hashAlg: {e}"))?;
    if alg != ID_SHA384 {
        return Err(format!("FWID hash algorithm {alg}, expected SHA-384"));
    }
    let digest = OctetStringRef::try_from(*digest).map_err(|e| format!("FWID digest: {e}"))?;
    if digest.as_bytes().len() != FWID_LEN {
        return Err(format!(
            "FWID digest has {} bytes, expected {FWID_LEN}",
            digest.as_bytes().len()
        ));
    }
    Ok(digest.as_bytes().to_vec())
}

/// FWID from one extension value, in either of the two layouts NVIDIA uses.
fn fwid_from_extension(value: &[u8]) -> Result<Vec<u8>, String> {
    let children = sequence_children(value)?;
    // DICE TcbInfo: `fwids [6] IMPLICIT SEQUENCE OF FWID`; the first is the SHA-384 one.
    let fwids_tag = Tag::ContextSpecific {
        constructed: true,
        number: TagNumber::N6,
    };
    if let Some(fwids) = children.iter().find(|c| c.tag() == fwids_tag) {
        let mut reader = SliceReader::new(fwids.value()).map_err(|e| e.to_string())?;
        let first = AnyRef::decode(&mut reader).map_err(|e| format!("fwids[0]: {e}"))?;
        let first_der = first.to_der().map_err(|e| e.to_string())?;
        return parse_fwid(&first_der);
    }
    // Hopper: SEQUENCE { INTEGER, SubjectPublicKeyInfo, FWID } — FWID is the last field.
    match children.as_slice() {
        [first, .., last] if first.tag() == Tag::Integer => {
            let last_der = last.to_der().map_err(|e| e.to_string())?;
            parse_fwid(&last_der)
        }
        _ => Err("neither a DICE TcbInfo with fwids nor NVIDIA's Hopper FWID layout".into()),
    }
}

/// The FWID in the signing certificate (leaf), from 2.23.133.5.4.1 (Hopper) or
/// 2.23.133.5.4.1.1 (Blackwell).
pub fn leaf_fwid(leaf: &Certificate) -> Result<Vec<u8>, FwidError> {
    let mut found: Option<Vec<u8>> = None;
    for oid in [OID_TCG_DICE_FWID, OID_TCG_DICE_TCB_INFO_ALIAS] {
        if let Some(value) = extension(leaf, &oid) {
            let fwid = fwid_from_extension(value).map_err(|reason| FwidError::Malformed {
                oid: oid.to_string(),
                reason,
            })?;
            match &found {
                Some(previous) if previous != &fwid => return Err(FwidError::Conflicting),
                _ => found = Some(fwid),
            }
        }
    }
    found.ok_or(FwidError::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fwid_layouts() {
        // Hopper layout: SEQUENCE { INTEGER 1, SEQUENCE {}, FWID }.
        let digest = [0xabu8; 48];
        let fwid = [
            &[0x30, 0x3d, 0x06, 0x09][..],
            &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02],
            &[0x04, 0x30],
            &digest,
        ]
        .concat();
        let hopper = [&[0x30, 0x44, 0x02, 0x01, 0x01, 0x30, 0x00][..], &fwid].concat();
        assert_eq!(fwid_from_extension(&hopper).unwrap(), digest);
        // DICE TcbInfo: SEQUENCE { [6] { FWID } }.
        let tcb = [&[0x30, 0x41, 0xa6, 0x3f][..], &fwid].concat();
        assert_eq!(fwid_from_extension(&tcb).unwrap(), digest);
        // A SHA-256 FWID is refused.
        let mut sha256 = tcb.clone();
        sha256[4 + 2 + 2 + 8] = 0x01;
        assert!(
            fwid_from_extension(&sha256)
                .unwrap_err()
                .contains("SHA-384")
        );
        // Neither layout.
        assert!(fwid_from_extension(&[0x30, 0x00]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn fwid_extension_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = fwid_from_extension(&bytes);
        }

        #[test]
        fn fwid_extension_random_sequence_body(body in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut bytes = vec![0x30, body.len() as u8];
            bytes.extend_from_slice(&body);
            let _ = fwid_from_extension(&bytes);
        }

        /// Random DER inside a PEM frame reaches the X.509 decoder.
        #[test]
        fn pem_frame_random_der(der in proptest::collection::vec(any::<u8>(), 0..600)) {
            use base64::Engine;
            let body = base64::engine::general_purpose::STANDARD.encode(&der);
            let pem = format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n");
            let _ = parse_pem_chain(pem.as_bytes());
        }
    }
}

#[cfg(test)]
mod regression {
    /// der 0.7.10's `Certificate::from_pem` does not return on this block; ours must.
    #[test]
    fn pem_body_of_one_byte_terminates() {
        let pem = b"-----BEGIN CERTIFICATE-----\n3Q==\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            super::parse_pem_chain(pem),
            Err(super::ChainError::Decode { position: 0, .. })
        ));
    }
}
