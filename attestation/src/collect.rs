//! Evidence collection on the node: the SEV-SNP report from `/dev/sev-guest`, the AMD chain
//! and each GPU's CC evidence (the nvidia module), bound to the node's Ed25519 identity key
//! (the identity module) through REPORT_DATA.

use std::path::Path;
use std::sync::Arc;

use ed25519_dalek::{Signer as _, SigningKey};
use thiserror::Error;

use crate::bundle::{
    BUNDLE_FORMAT, Bundle, CertificateSource, ConfigBinding, EvidenceSource, GpuFailure,
    SnpCertificates, SnpEvidence, gpu_digest, node_signature_message, report_data, to_pem,
};
use crate::nvidia::GpuEvidence;
use crate::snp::amd::{AmdCert, parse_certs};
use crate::test_source::TestSigner;

/// Why a node could not produce its evidence.
#[derive(Debug, Error)]
pub enum CollectError {
    /// Not an SEV-SNP guest: no guest device.
    #[error("no SEV-SNP guest device: {path} is absent (not running in an SEV-SNP guest)")]
    NoSevGuestDevice {
        /// The device path.
        path: &'static str,
    },
    /// The guest device exists but cannot be opened.
    #[error("opening {path}: {source}")]
    SevGuestOpen {
        /// The device path.
        path: &'static str,
        /// The open error.
        source: std::io::Error,
    },
    /// The extended report request to the firmware failed.
    #[error("SNP_GET_EXT_REPORT failed: {0}")]
    Firmware(String),
    /// No endorsement certificate from the host or the cache directory.
    #[error(
        "no VCEK/VLEK: the host provided no certificate table and {0} holds none (put vcek.pem or vcek.der there, e.g. from `snpguest fetch vcek`)"
    )]
    NoVcek(String),
    /// A host-provided or cached certificate that cannot be read or parsed.
    #[error("certificate {path}: {message}")]
    Certificate {
        /// Where it came from.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// GPU evidence collection through NVML failed.
    #[cfg(feature = "collect")]
    #[error("GPU evidence: {0}")]
    Gpu(#[from] crate::nvidia::CollectError),
    /// [`GpuSource::External`] failed; the text says how (it names the GPU evidence).
    #[error("{0}")]
    GpuProcess(String),
    /// The node key could not be used.
    #[error(transparent)]
    Identity(#[from] crate::identity::IdentityError),
    /// The test evidence source could not build its report.
    #[error("SNP report from the test source: {0}")]
    TestSource(String),
}

#[cfg(feature = "collect")]
const SEV_GUEST: &str = "/dev/sev-guest";

/// Where the SNP report comes from.
pub enum SnpSource {
    #[cfg(feature = "collect")]
    /// `/dev/sev-guest`; certificates from the extended report, else from `cert_cache`.
    Hardware {
        /// The VMPL to request the report at.
        vmpl: u32,
        /// Directory of cached VCEK/ASK/ARK files, for hosts that supply no certificates.
        cert_cache: Option<std::path::PathBuf>,
    },
    /// Generated reports signed by a test chain; marked `source: "test"`.
    Test(Box<TestSigner>),
}

/// Where GPU evidence comes from.
#[derive(Clone)]
pub enum GpuSource {
    #[cfg(feature = "collect")]
    /// Every GPU through NVML in this process ([`collect_gpus`]); failure is an error,
    /// never an empty list.
    Nvml,
    /// [`collect_gpus`] run elsewhere: the node agent runs it in a short-lived child process,
    /// so that NVML and libcuda never stay resident in the daemon.
    External(Arc<dyn GpuCollector>),
    /// This node has no GPU evidence to give (profile without GPU, or the test source).
    None,
}

/// Collects every GPU's evidence for a verifier nonce as [`collect_gpus`] does, somewhere
/// other than this process.
pub trait GpuCollector: Send + Sync {
    /// `Err` is a failure of the whole collection (its text), as [`collect_gpus`]'s `Err`.
    fn collect(&self, nonce: &[u8; 32]) -> Result<(Vec<GpuEvidence>, Vec<GpuFailure>), String>;
}

#[cfg(feature = "collect")]
/// Every GPU's evidence through NVML, GPU `i`'s report over `gpu_nonce(nonce, i)`; GPUs that
/// failed are listed with the reason (see [`crate::nvidia::collect_each`]).
pub fn collect_gpus(nonce: &[u8; 32]) -> Result<(Vec<GpuEvidence>, Vec<GpuFailure>), CollectError> {
    Ok(split_gpus(crate::nvidia::collect_each(|i| {
        crate::bundle::gpu_nonce(nonce, i)
    })?))
}

/// Everything the agent needs to answer `GET /v1/attestation?nonce=`.
pub struct Attester {
    /// The node's Ed25519 key: signs the report and is bound into REPORT_DATA.
    pub node_key: SigningKey,
    /// Where the SNP report comes from.
    pub snp: SnpSource,
    /// Where GPU evidence comes from.
    pub gpu: GpuSource,
    /// The configuration bundle the node applied ([`ConfigBinding::NONE`] without one).
    pub config: ConfigBinding,
}

impl Attester {
    /// Collect a bundle for `nonce`: GPU evidence first (its digest goes into REPORT_DATA),
    /// then the SNP report over REPORT_DATA, then the node key's signature over the report.
    pub fn attest(&self, nonce: &[u8; 32]) -> Result<Bundle, CollectError> {
        let (gpus, gpu_failures) = match &self.gpu {
            GpuSource::None => (Vec::new(), Vec::new()),
            #[cfg(feature = "collect")]
            GpuSource::Nvml => collect_gpus(nonce)?,
            GpuSource::External(collector) => {
                collector.collect(nonce).map_err(CollectError::GpuProcess)?
            }
        };
        let public = self.node_key.verifying_key().to_bytes();
        let rd = report_data(
            nonce,
            &public,
            &gpu_digest(&gpus, &gpu_failures),
            &self.config,
        );
        let (report, certificates, source) = match &self.snp {
            #[cfg(feature = "collect")]
            SnpSource::Hardware { vmpl, cert_cache } => {
                let (report, certs) = hardware_report(rd, *vmpl, cert_cache.as_deref())?;
                (report, certs, EvidenceSource::SevSnp)
            }
            SnpSource::Test(signer) => {
                let report = signer.report(rd).as_bytes().to_vec();
                let certs = SnpCertificates {
                    vcek: to_pem(signer.vcek.der()),
                    ask: Some(to_pem(signer.authority.ask.der())),
                    ark: Some(to_pem(signer.authority.ark.der())),
                    source: CertificateSource::Test,
                };
                (report, certs, EvidenceSource::Test)
            }
        };
        let signature = self.node_key.sign(&node_signature_message(&report));
        Ok(Bundle {
            format: BUNDLE_FORMAT.to_owned(),
            source,
            nonce: hex::encode(nonce),
            node_public_key: hex::encode(public),
            snp: SnpEvidence {
                report: hex::encode(&report),
                certificates,
            },
            gpus,
            gpu_failures,
            config: self.config,
            node_signature: hex::encode(signature.to_bytes()),
        })
    }
}

#[cfg(feature = "collect")]
/// Splits per-GPU collection outcomes into the bundle's evidence and failure lists, both in
/// NVML index order. A GPU that failed is listed with its reason (the verifier fails it as
/// `gpu.<index>.collection`); it never hides the others' evidence.
pub fn split_gpus(
    devices: Vec<crate::nvidia::DeviceCollection>,
) -> (Vec<GpuEvidence>, Vec<GpuFailure>) {
    let mut gpus = Vec::with_capacity(devices.len());
    let mut failures = Vec::new();
    for device in devices {
        match device.evidence {
            Ok(evidence) => gpus.push(evidence),
            Err(e) => failures.push(GpuFailure {
                nvml_index: device.nvml_index,
                error: e.to_string(),
            }),
        }
    }
    (gpus, failures)
}

#[cfg(feature = "collect")]
fn hardware_report(
    rd: [u8; 64],
    vmpl: u32,
    cert_cache: Option<&Path>,
) -> Result<(Vec<u8>, SnpCertificates), CollectError> {
    if !Path::new(SEV_GUEST).exists() {
        return Err(CollectError::NoSevGuestDevice { path: SEV_GUEST });
    }
    let mut fw =
        sev::firmware::guest::Firmware::open().map_err(|source| CollectError::SevGuestOpen {
            path: SEV_GUEST,
            source,
        })?;
    let (report, table) = fw
        .get_ext_report(None, Some(rd), Some(vmpl))
        .map_err(|e| CollectError::Firmware(e.to_string()))?;
    if let Some(table) = table {
        use sev::firmware::host::CertType;
        let mut vcek = None;
        let mut ask = None;
        let mut ark = None;
        for entry in &table {
            let pem = match AmdCert::from_der(entry.data()) {
                Ok(c) => to_pem(c.der()),
                Err(e) => {
                    return Err(CollectError::Certificate {
                        path: format!("extended report entry {}", entry.cert_type),
                        message: e.to_string(),
                    });
                }
            };
            match entry.cert_type {
                CertType::VCEK | CertType::VLEK => vcek = Some(pem),
                CertType::ASK => ask = Some(pem),
                CertType::ARK => ark = Some(pem),
                _ => {}
            }
        }
        if let Some(vcek) = vcek {
            return Ok((
                report,
                SnpCertificates {
                    vcek,
                    ask,
                    ark,
                    source: CertificateSource::ExtendedReport,
                },
            ));
        }
    }
    let dir = cert_cache
        .ok_or_else(|| CollectError::NoVcek("no certificate cache is configured".into()))?;
    Ok((report, certs_from_dir(dir)?))
}

/// Read a VCEK and optional ASK/ARK from a directory as snpguest writes it:
/// `vcek.pem|vcek.der|vlek.pem|vlek.der`, `ask.pem|asvk.pem`, `ark.pem`, or `cert_chain.pem`.
pub fn certs_from_dir(dir: &Path) -> Result<SnpCertificates, CollectError> {
    let load = |name: &str| -> Result<Option<Vec<AmdCert>>, CollectError> {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => parse_certs(&bytes)
                .map(Some)
                .map_err(|e| CollectError::Certificate {
                    path: path.display().to_string(),
                    message: e.to_string(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CollectError::Certificate {
                path: path.display().to_string(),
                message: e.to_string(),
            }),
        }
    };
    let mut vcek = None;
    for name in ["vcek.pem", "vcek.der", "vlek.pem", "vlek.der"] {
        if let Some(mut c) = load(name)? {
            vcek = Some(c.remove(0));
            break;
        }
    }
    let vcek = vcek.ok_or_else(|| CollectError::NoVcek(dir.display().to_string()))?;
    let mut others = Vec::new();
    for name in [
        "ask.pem",
        "asvk.pem",
        "ark.pem",
        "cert_chain.pem",
        "ask.der",
        "ark.der",
    ] {
        if let Some(c) = load(name)? {
            others.extend(c);
        }
    }
    let chain = crate::snp::amd::SuppliedChain::from_certs(vcek, others);
    Ok(SnpCertificates {
        vcek: to_pem(chain.vcek.der()),
        ask: chain.ask.as_ref().map(|c| to_pem(c.der())),
        ark: chain.ark.as_ref().map(|c| to_pem(c.der())),
        source: CertificateSource::Cache,
    })
}
