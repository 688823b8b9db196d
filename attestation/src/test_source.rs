//! A test evidence source for machines without SEV-SNP: a generated AMD-style key chain
//! (ARK and ASK: RSA, RSASSA-PSS/SHA-384; VCEK: ECDSA P-384 with AMD's TCB, hwID and
//! productName extensions, like go-sev-guest's fake signer) that signs a fresh report per nonce.
//!
//! Nothing here is trusted by default: its evidence is marked `source: "test"`, and only a
//! policy naming this chain's ARK (`trust.test_root_ark`) accepts it. Keys derive from a 32-byte
//! seed, so a node agent and a verifier started from the same seed file agree on the root.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use der::asn1::{BitString, Ia5StringRef, OctetString, UtcTime};
use der::{Any, Encode};
use p384::ecdsa::signature::Signer as _;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rsa::pkcs8::EncodePublicKey as _;
use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};
use sha2::{Digest, Sha384};
use thiserror::Error;
use x509_cert::ext::Extension;
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use x509_cert::time::{Time, Validity};
use x509_cert::{Certificate, TbsCertificate};

use crate::snp::amd::{
    self, AmdCert, OID_EC_PUBLIC_KEY, OID_RSASSA_PSS, OID_SECP384R1, TrustAnchor, oid,
};
use crate::snp::raw::{AttestationReport, FirmwareVersion, ReportBuilder};
use crate::snp::tcb::{Product, TcbParts};

/// Why the test evidence source could not be set up.
#[derive(Debug, Error)]
pub enum TestSourceError {
    /// RSA key generation or signing failed.
    #[error("generating the test RSA key: {0}")]
    Rsa(String),
    /// A certificate or CRL could not be encoded.
    #[error("encoding a test certificate: {0}")]
    Der(String),
    /// The seed file is unreadable, malformed or cannot be written.
    #[error("test seed file {path}: {message}")]
    Seed {
        /// The seed file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

fn der_err(e: impl std::fmt::Display) -> TestSourceError {
    TestSourceError::Der(e.to_string())
}

/// What goes into a generated VCEK. Tests clear or change fields to build invalid certificates.
#[derive(Debug, Clone)]
pub struct VcekSpec {
    /// The productName extension; `None` leaves it out.
    pub product_name: Option<String>,
    /// The TCB the SPL extensions certify.
    pub tcb: TcbParts,
    /// Which SPL extensions to include (all by default).
    pub include_bl: bool,
    /// Include teeSPL.
    pub include_tee: bool,
    /// Include snpSPL.
    pub include_snp: bool,
    /// Include ucodeSPL.
    pub include_ucode: bool,
    /// Include fmcSPL (Turin).
    pub include_fmc: bool,
    /// The hwID extension (a VCEK's chip id); `None` leaves it out.
    pub hw_id: Option<Vec<u8>>,
    /// The cspID extension (a VLEK's provider); `None` leaves it out.
    pub csp_id: Option<String>,
    /// The subject CN, e.g. "SEV-VCEK" (a "SEV-VLEK" CN makes it a VLEK).
    pub subject_cn: String,
    /// Put the ASK's RSA key in the VCEK instead of the P-384 key (tests: wrong key type).
    pub rsa_key_instead: bool,
    /// Extensions appended verbatim (tests: malformed or duplicate values).
    pub extra_extensions: Vec<(der::asn1::ObjectIdentifier, Vec<u8>)>,
    /// Unix seconds.
    pub not_before: u64,
    /// Unix seconds.
    pub not_after: u64,
}

/// 2024-01-01 and 2049-01-01: inside UTCTime's range, covering any test run.
pub const TEST_NOT_BEFORE: u64 = 1_704_067_200;
/// 2049-01-01 (see [`TEST_NOT_BEFORE`]).
pub const TEST_NOT_AFTER: u64 = 2_493_072_000;

/// An RSA authority pair: ARK (self-signed) and ASK (signed by the ARK).
pub struct TestAuthority {
    /// The product whose layout its reports use.
    pub product: Product,
    ark_key: rsa::RsaPrivateKey,
    ask_key: rsa::RsaPrivateKey,
    /// The self-signed test ARK.
    pub ark: AmdCert,
    /// The test ASK, signed by the ARK.
    pub ask: AmdCert,
    rng: std::sync::Mutex<ChaCha20Rng>,
}

fn amd_name(cn: &str) -> Result<Name, TestSourceError> {
    Name::from_str(&format!(
        "CN={cn},O=Sovereign Node Test (not AMD),L=Nowhere,C=ZZ"
    ))
    .map_err(der_err)
}

fn utc(secs: u64) -> Result<Time, TestSourceError> {
    Ok(Time::UtcTime(
        UtcTime::from_unix_duration(Duration::from_secs(secs)).map_err(der_err)?,
    ))
}

fn pss_algorithm() -> Result<AlgorithmIdentifierOwned, TestSourceError> {
    let params = rsa::pkcs1::RsaPssParams::new::<Sha384>(48);
    Ok(AlgorithmIdentifierOwned {
        oid: OID_RSASSA_PSS,
        parameters: Some(Any::encode_from(&params).map_err(der_err)?),
    })
}

fn p384_spki(
    key: &p384::ecdsa::VerifyingKey,
) -> Result<SubjectPublicKeyInfoOwned, TestSourceError> {
    let point = key.to_encoded_point(false);
    Ok(SubjectPublicKeyInfoOwned {
        algorithm: AlgorithmIdentifierOwned {
            oid: OID_EC_PUBLIC_KEY,
            parameters: Some(Any::encode_from(&OID_SECP384R1).map_err(der_err)?),
        },
        subject_public_key: BitString::from_bytes(point.as_bytes()).map_err(der_err)?,
    })
}

fn rsa_spki(key: &rsa::RsaPublicKey) -> Result<SubjectPublicKeyInfoOwned, TestSourceError> {
    let der = key.to_public_key_der().map_err(der_err)?;
    der::Decode::from_der(der.as_bytes()).map_err(der_err)
}

fn ext(id: der::asn1::ObjectIdentifier, value: Vec<u8>) -> Result<Extension, TestSourceError> {
    Ok(Extension {
        extn_id: id,
        critical: false,
        extn_value: OctetString::new(value).map_err(der_err)?,
    })
}

/// Sign a TBS with RSASSA-PSS/SHA-384 (salt 48) as AMD does.
pub fn sign_rsa_pss(
    tbs: TbsCertificate,
    key: &rsa::RsaPrivateKey,
    rng: &mut ChaCha20Rng,
) -> Result<AmdCert, TestSourceError> {
    let tbs_der = tbs.to_der().map_err(der_err)?;
    let signer = rsa::pss::SigningKey::<Sha384>::new_with_salt_len(key.clone(), 48);
    let sig = signer.sign_with_rng(rng, &tbs_der).to_vec();
    let cert = Certificate {
        signature_algorithm: tbs.signature.clone(),
        tbs_certificate: tbs,
        signature: BitString::from_bytes(&sig).map_err(der_err)?,
    };
    AmdCert::from_der(&cert.to_der().map_err(der_err)?).map_err(der_err)
}

impl TestAuthority {
    /// ARK and ASK from `rng`; `bits` 2048 keeps generation fast (AMD uses 4096).
    pub fn generate(
        product: Product,
        bits: usize,
        mut rng: ChaCha20Rng,
    ) -> Result<TestAuthority, TestSourceError> {
        let ark_key = rsa::RsaPrivateKey::new(&mut rng, bits)
            .map_err(|e| TestSourceError::Rsa(e.to_string()))?;
        let ask_key = rsa::RsaPrivateKey::new(&mut rng, bits)
            .map_err(|e| TestSourceError::Rsa(e.to_string()))?;
        let ark_name = amd_name(&format!("ARK-Test-{product}"))?;
        let ask_name = amd_name(&format!("SEV-Test-{product}"))?;
        let validity = Validity {
            not_before: utc(TEST_NOT_BEFORE)?,
            not_after: utc(TEST_NOT_AFTER)?,
        };
        let ark_tbs = TbsCertificate {
            version: x509_cert::Version::V3,
            serial_number: SerialNumber::new(&[1]).map_err(der_err)?,
            signature: pss_algorithm()?,
            issuer: ark_name.clone(),
            validity,
            subject: ark_name.clone(),
            subject_public_key_info: rsa_spki(&ark_key.to_public_key())?,
            issuer_unique_id: None,
            subject_unique_id: None,
            extensions: None,
        };
        let ark = sign_rsa_pss(ark_tbs, &ark_key, &mut rng)?;
        let ask_tbs = TbsCertificate {
            version: x509_cert::Version::V3,
            serial_number: SerialNumber::new(&[2]).map_err(der_err)?,
            signature: pss_algorithm()?,
            issuer: ark_name,
            validity,
            subject: ask_name,
            subject_public_key_info: rsa_spki(&ask_key.to_public_key())?,
            issuer_unique_id: None,
            subject_unique_id: None,
            extensions: None,
        };
        let ask = sign_rsa_pss(ask_tbs, &ark_key, &mut rng)?;
        Ok(TestAuthority {
            product,
            ark_key,
            ask_key,
            ark,
            ask,
            rng: std::sync::Mutex::new(rng),
        })
    }

    /// The anchor a policy adds when it trusts this test root.
    pub fn anchor(&self) -> TrustAnchor {
        TrustAnchor {
            product: self.product,
            ark: self.ark.clone(),
            intermediates: vec![],
            is_test: true,
        }
    }

    /// The default VCEK content for `tcb` and `chip_id` under this authority's product.
    pub fn vcek_spec(&self, tcb: TcbParts, chip_id: &[u8; 64]) -> VcekSpec {
        let hw_id = match self.product {
            Product::Turin => chip_id.get(..8).unwrap_or(&[]).to_vec(),
            _ => chip_id.to_vec(),
        };
        VcekSpec {
            product_name: Some(match self.product {
                Product::Milan => "Milan-B0".into(),
                Product::Genoa => "Genoa-B1".into(),
                Product::Turin => "Turin".into(),
            }),
            tcb,
            include_bl: true,
            include_tee: true,
            include_snp: true,
            include_ucode: true,
            include_fmc: self.product == Product::Turin,
            hw_id: Some(hw_id),
            csp_id: None,
            subject_cn: "SEV-VCEK".into(),
            extra_extensions: vec![],
            rsa_key_instead: false,
            not_before: TEST_NOT_BEFORE,
            not_after: TEST_NOT_AFTER,
        }
    }

    /// Issue a VCEK for `key` signed by the ASK (or by `signer` when given, for negative tests).
    pub fn issue_vcek(
        &self,
        key: &p384::ecdsa::VerifyingKey,
        spec: &VcekSpec,
        signer: Option<&rsa::RsaPrivateKey>,
    ) -> Result<AmdCert, TestSourceError> {
        let spl = |v: u8| (v as u32).to_der().map_err(der_err);
        let mut exts = vec![ext(oid::STRUCT_VERSION, 1u32.to_der().map_err(der_err)?)?];
        if let Some(name) = &spec.product_name {
            let ia5 = Ia5StringRef::new(name).map_err(der_err)?;
            exts.push(ext(oid::PRODUCT_NAME, ia5.to_der().map_err(der_err)?)?);
        }
        if spec.include_bl {
            exts.push(ext(oid::BL_SPL, spl(spec.tcb.bootloader)?)?);
        }
        if spec.include_tee {
            exts.push(ext(oid::TEE_SPL, spl(spec.tcb.tee)?)?);
        }
        if spec.include_snp {
            exts.push(ext(oid::SNP_SPL, spl(spec.tcb.snp)?)?);
        }
        if spec.include_ucode {
            exts.push(ext(oid::UCODE_SPL, spl(spec.tcb.microcode)?)?);
        }
        if spec.include_fmc {
            exts.push(ext(oid::FMC_SPL, spl(spec.tcb.fmc.unwrap_or(0))?)?);
        }
        if let Some(hw) = &spec.hw_id {
            exts.push(ext(oid::HW_ID, hw.clone())?);
        }
        if let Some(csp) = &spec.csp_id {
            let ia5 = Ia5StringRef::new(csp).map_err(der_err)?;
            exts.push(ext(oid::CSP_ID, ia5.to_der().map_err(der_err)?)?);
        }
        for (id, value) in &spec.extra_extensions {
            exts.push(ext(*id, value.clone())?);
        }
        let tbs = TbsCertificate {
            version: x509_cert::Version::V3,
            // AMD's VCEKs carry serial 0; so do these.
            serial_number: SerialNumber::new(&[0]).map_err(der_err)?,
            signature: pss_algorithm()?,
            issuer: self.ask.cert().tbs_certificate.subject.clone(),
            validity: Validity {
                not_before: utc(spec.not_before)?,
                not_after: utc(spec.not_after)?,
            },
            subject: amd_name(&spec.subject_cn)?,
            subject_public_key_info: if spec.rsa_key_instead {
                rsa_spki(&self.ask_key.to_public_key())?
            } else {
                p384_spki(key)?
            },
            issuer_unique_id: None,
            subject_unique_id: None,
            extensions: Some(exts),
        };
        let mut rng = self.rng.lock().map_err(|_| der_err("test rng poisoned"))?;
        sign_rsa_pss(tbs, signer.unwrap_or(&self.ask_key), &mut rng)
    }

    /// The ARK's private key (tests sign deliberately wrong certificates with it).
    pub fn ark_key(&self) -> &rsa::RsaPrivateKey {
        &self.ark_key
    }
    /// The ASK's private key (tests sign deliberately wrong VCEKs with it).
    pub fn ask_key(&self) -> &rsa::RsaPrivateKey {
        &self.ask_key
    }

    /// The same certificate content signed by `key` instead (tests: wrong signer).
    pub fn resign(
        &self,
        cert: &AmdCert,
        key: &rsa::RsaPrivateKey,
    ) -> Result<AmdCert, TestSourceError> {
        self.sign(cert.cert().tbs_certificate.clone(), key)
    }

    /// Sign an arbitrary TBS with the given key using this authority's rng.
    pub fn sign(
        &self,
        tbs: TbsCertificate,
        key: &rsa::RsaPrivateKey,
    ) -> Result<AmdCert, TestSourceError> {
        let mut rng = self.rng.lock().map_err(|_| der_err("test rng poisoned"))?;
        sign_rsa_pss(tbs, key, &mut rng)
    }

    /// A CRL signed by the ARK listing `revoked` serials, valid until `next_update`.
    pub fn crl(&self, revoked: &[&[u8]], next_update: u64) -> Result<Vec<u8>, TestSourceError> {
        use x509_cert::crl::{CertificateList, RevokedCert, TbsCertList};
        let list: Vec<RevokedCert> = revoked
            .iter()
            .map(|s| {
                Ok(RevokedCert {
                    serial_number: SerialNumber::new(s).map_err(der_err)?,
                    revocation_date: utc(TEST_NOT_BEFORE)?,
                    crl_entry_extensions: None,
                })
            })
            .collect::<Result<_, TestSourceError>>()?;
        let tbs = TbsCertList {
            version: x509_cert::Version::V2,
            signature: pss_algorithm()?,
            issuer: self.ark.cert().tbs_certificate.subject.clone(),
            this_update: utc(TEST_NOT_BEFORE)?,
            next_update: Some(utc(next_update)?),
            revoked_certificates: if list.is_empty() { None } else { Some(list) },
            crl_extensions: None,
        };
        let tbs_der = tbs.to_der().map_err(der_err)?;
        let mut rng = self.rng.lock().map_err(|_| der_err("test rng poisoned"))?;
        let signer = rsa::pss::SigningKey::<Sha384>::new_with_salt_len(self.ark_key.clone(), 48);
        let sig = signer.sign_with_rng(&mut *rng, &tbs_der).to_vec();
        let crl = CertificateList {
            signature_algorithm: tbs.signature.clone(),
            tbs_cert_list: tbs,
            signature: BitString::from_bytes(&sig).map_err(der_err)?,
        };
        crl.to_der().map_err(der_err)
    }
}

/// The test evidence source: an authority, a VCEK and the platform it pretends to be.
pub struct TestSigner {
    /// The ARK and ASK.
    pub authority: TestAuthority,
    vcek_key: p384::ecdsa::SigningKey,
    /// The VCEK, signed by the ASK.
    pub vcek: AmdCert,
    /// The chip id the VCEK certifies and the reports carry.
    pub chip_id: [u8; 64],
    /// The TCB the VCEK certifies and the reports carry.
    pub tcb: TcbParts,
    /// Report fields the signer starts from for every report (measurement, policy, ...).
    pub template: ReportBuilder,
}

/// The measurement test reports carry: SHA-384 of a fixed label (no real image has it).
pub fn test_measurement() -> [u8; 48] {
    Sha384::digest(b"sovereign-node test evidence source: not a real launch measurement").into()
}

impl TestSigner {
    /// A Milan-layout signer derived from `seed` (RSA 2048 for speed).
    pub fn from_seed(seed: [u8; 32]) -> Result<TestSigner, TestSourceError> {
        TestSigner::from_seed_for(seed, Product::Milan)
    }

    /// A signer of `product`'s layout derived from `seed`.
    pub fn from_seed_for(seed: [u8; 32], product: Product) -> Result<TestSigner, TestSourceError> {
        let mut rng = ChaCha20Rng::from_seed(seed);
        let mut chip_id = [0u8; 64];
        rng.fill_bytes(&mut chip_id);
        if product == Product::Turin {
            // Turin certifies 8 bytes of chip id; the rest of the field is zero.
            chip_id[8..].fill(0);
        }
        let mut vcek_seed = [0u8; 48];
        let vcek_key = loop {
            rng.fill_bytes(&mut vcek_seed);
            if let Ok(k) = p384::ecdsa::SigningKey::from_slice(&vcek_seed) {
                break k;
            }
        };
        let authority = TestAuthority::generate(
            product,
            2048,
            ChaCha20Rng::from_rng(&mut rng).map_err(der_err)?,
        )?;
        let tcb = TcbParts {
            fmc: (product == Product::Turin).then_some(1),
            bootloader: 4,
            tee: 0,
            snp: 24,
            microcode: 219,
        };
        let vcek = authority.issue_vcek(
            vcek_key.verifying_key(),
            &authority.vcek_spec(tcb, &chip_id),
            None,
        )?;
        let raw_tcb = tcb.encode(product);
        let firmware = FirmwareVersion {
            major: 1,
            minor: 55,
            build: 29,
        };
        let (fam, model) = match product {
            Product::Milan => (0x19, 0x01),
            Product::Genoa => (0x19, 0x11),
            Product::Turin => (0x1A, 0x02),
        };
        let mut template = ReportBuilder::default();
        template
            .version(3)
            .guest_svn(1)
            // SMT allowed, bit 17 (must be one), ABI 1.55.
            .policy(0x3_0000 | (1 << 8) | 55)
            .vmpl(0)
            .signature_algo(1)
            .current_tcb(raw_tcb)
            .platform_info(0x1)
            .flags(0)
            .measurement(test_measurement())
            .reported_tcb(raw_tcb)
            .cpuid(fam, model, 0x01)
            .chip_id(chip_id)
            .committed_tcb(raw_tcb)
            .current_firmware(firmware)
            .committed_firmware(firmware)
            .launch_tcb(raw_tcb);
        Ok(TestSigner {
            authority,
            vcek_key,
            vcek,
            chip_id,
            tcb,
            template,
        })
    }

    /// Load the 32-byte seed from `path`, creating it (mode 0600) on first use.
    pub fn load_or_create_seed(path: &Path) -> Result<[u8; 32], TestSourceError> {
        let seed_err = |message: String| TestSourceError::Seed {
            path: path.display().to_string(),
            message,
        };
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|e| seed_err(e.to_string()))?;
                let raw = hex::decode(text.trim()).map_err(|e| seed_err(e.to_string()))?;
                raw.try_into()
                    .map_err(|_| seed_err("seed is not 32 bytes of hex".into()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut seed = [0u8; 32];
                rand::rngs::OsRng.fill_bytes(&mut seed);
                crate::identity::write_private_file(path, hex::encode(seed).as_bytes())
                    .map_err(|e| seed_err(e.to_string()))?;
                Ok(seed)
            }
            Err(e) => Err(seed_err(e.to_string())),
        }
    }

    /// The product whose layout the reports use.
    pub fn product(&self) -> Product {
        self.authority.product
    }

    /// Sign `builder`'s first 0x2A0 bytes with the VCEK key and store R and S.
    pub fn sign(&self, builder: &mut ReportBuilder) -> AttestationReport {
        self.sign_with(builder, &self.vcek_key)
    }

    /// Sign `builder` with `key` instead of the VCEK's (tests: wrong signer).
    pub fn sign_with(
        &self,
        builder: &mut ReportBuilder,
        key: &p384::ecdsa::SigningKey,
    ) -> AttestationReport {
        let sig: p384::ecdsa::Signature = key.sign(builder.signed_bytes());
        let (r, s) = sig.split_bytes();
        let mut r_be = [0u8; 48];
        let mut s_be = [0u8; 48];
        r_be.copy_from_slice(&r);
        s_be.copy_from_slice(&s);
        builder.signature(&r_be, &s_be);
        builder.build()
    }

    /// A fresh report over `report_data` from the template, with a random report id.
    pub fn report(&self, report_data: [u8; 64]) -> AttestationReport {
        let mut b = self.template.clone();
        let mut id = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut id);
        b.report_data(report_data).report_id(id);
        self.sign(&mut b)
    }

    /// The VCEK's private key.
    pub fn vcek_signing_key(&self) -> &p384::ecdsa::SigningKey {
        &self.vcek_key
    }

    /// ARK PEM, for a policy's `trust.test_root_ark`.
    pub fn ark_pem(&self) -> String {
        crate::bundle::to_pem(self.authority.ark.der())
    }
}

/// Re-export for tests building certificates by hand.
pub use amd::parse_certs;
