//! Collection on the node: for every GPU, the CC attestation report over the caller's nonce,
//! the attestation certificate chain and the system CC state, through NVML.
//!
//! nvml-wrapper 0.13 wraps the report and certificate calls, but slices the driver's buffers by
//! the driver-reported length without a bounds check, and does not expose
//! `nvmlSystemGetConfComputeState` (CC environment); those three calls go through the raw
//! symbols (`Nvml::lib`) with checked lengths instead.

use std::mem;

use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::structs::device::ConfidentialComputeGpuCapabilities;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    NVML_CC_SYSTEM_DEVTOOLS_MODE_ON, NVML_CC_SYSTEM_ENVIRONMENT_PROD,
    NVML_CC_SYSTEM_ENVIRONMENT_SIM, NVML_CC_SYSTEM_ENVIRONMENT_UNAVAILABLE,
    NVML_CC_SYSTEM_FEATURE_ENABLED, nvmlConfComputeGpuAttestationReport_t,
    nvmlConfComputeGpuCertificate_t, nvmlConfComputeSystemState_t,
};
use thiserror::Error;

use super::{CcState, GpuDevice, GpuEvidence};

/// Why GPU evidence could not be collected.
#[derive(Debug, Error)]
pub enum CollectError {
    /// libnvidia-ml could not be loaded or initialised.
    #[error("NVML is not available (no NVIDIA driver or libnvidia-ml.so): {0}")]
    NvmlUnavailable(#[source] NvmlError),
    /// NVML lists no device.
    #[error("NVML reports no GPU")]
    NoGpu,
    /// The system's GPUs cannot run confidential computing.
    #[error(
        "the GPUs of this system are not confidential-computing capable (NVML CC capabilities)"
    )]
    NotCcCapable,
    /// Confidential computing is off.
    #[error(
        "confidential computing is off on this system (NVML ccFeature disabled); no CC attestation report can be taken"
    )]
    CcDisabled,
    /// An NVML call failed.
    #[error("NVML {call} failed{}: {source}", gpu.map(|i| format!(" for GPU {i}")).unwrap_or_default())]
    Nvml {
        /// The NVML function.
        call: &'static str,
        /// The GPU's NVML index, for a per-device call.
        gpu: Option<u32>,
        /// NVML's error.
        #[source]
        source: NvmlError,
    },
    /// NVML reported more bytes than its buffer holds.
    #[error(
        "NVML {call} for GPU {gpu} returned length {length}, larger than its {capacity}-byte buffer"
    )]
    BadLength {
        /// The NVML function.
        call: &'static str,
        /// The GPU's NVML index.
        gpu: u32,
        /// The length NVML reported.
        length: u32,
        /// The buffer's size in bytes.
        capacity: usize,
    },
}

fn nvml_err(call: &'static str, gpu: Option<u32>) -> impl FnOnce(NvmlError) -> CollectError {
    move |source| CollectError::Nvml { call, gpu, source }
}

fn checked_prefix(
    buffer: &[u8],
    length: u32,
    call: &'static str,
    gpu: u32,
) -> Result<Vec<u8>, CollectError> {
    usize::try_from(length)
        .ok()
        .and_then(|len| buffer.get(..len))
        .map(<[u8]>::to_vec)
        .ok_or(CollectError::BadLength {
            call,
            gpu,
            length,
            capacity: buffer.len(),
        })
}

/// `nvmlSystemGetConfComputeState`.
fn system_cc_state(nvml: &Nvml) -> Result<CcState, CollectError> {
    const CALL: &str = "nvmlSystemGetConfComputeState";
    let sym = nvml_sym(nvml.lib().nvmlSystemGetConfComputeState.as_ref())
        .map_err(nvml_err(CALL, None))?;
    // SAFETY: plain C struct of three unsigned ints; all-zero is a valid value, and NVML writes
    // it through the pointer we own for the duration of the call.
    let state = unsafe {
        let mut state: nvmlConfComputeSystemState_t = mem::zeroed();
        nvml_try(sym(&mut state)).map_err(nvml_err(CALL, None))?;
        state
    };
    let environment = match state.environment {
        NVML_CC_SYSTEM_ENVIRONMENT_PROD => "prod".to_owned(),
        NVML_CC_SYSTEM_ENVIRONMENT_SIM => "sim".to_owned(),
        NVML_CC_SYSTEM_ENVIRONMENT_UNAVAILABLE => "unavailable".to_owned(),
        other => format!("unknown({other})"),
    };
    Ok(CcState {
        cc_enabled: state.ccFeature == NVML_CC_SYSTEM_FEATURE_ENABLED,
        dev_tools_mode: state.devToolsMode == NVML_CC_SYSTEM_DEVTOOLS_MODE_ON,
        environment,
    })
}

/// Collects evidence from every GPU, each report taken over `nonce`.
///
/// Errors are typed: no NVML, no GPU, GPUs not CC-capable, CC off, or an NVML call failing
/// (with the call and the GPU). Nothing partial is returned: one GPU failing fails the whole
/// collection (the first failure is returned); [`collect_each`] reports each GPU instead.
pub fn collect(nonce: &[u8; 32]) -> Result<Vec<GpuEvidence>, CollectError> {
    collect_each(|_| *nonce)?
        .into_iter()
        .map(|device| device.evidence)
        .collect()
}

/// The outcome of one GPU's collection.
#[derive(Debug)]
pub struct DeviceCollection {
    /// NVML index of the GPU.
    pub nvml_index: u32,
    /// Its evidence, or why it could not be collected.
    pub evidence: Result<GpuEvidence, CollectError>,
}

/// Collects evidence from every GPU NVML lists, GPU `i`'s report over `nonce_for(i)` (e.g.
/// derived from one verifier nonce and the index, so that reports cannot be swapped between
/// GPUs).
///
/// What concerns the whole system (NVML, the GPU count, CC capability and CC state) fails
/// the call. A failure of one GPU (an NVML call for that device) is that GPU's entry, in
/// index order with the others: one GPU failing never hides the evidence of the rest, and
/// the caller decides what a missing GPU means (the bundle reports it per GPU).
pub fn collect_each(
    nonce_for: impl Fn(u32) -> [u8; 32],
) -> Result<Vec<DeviceCollection>, CollectError> {
    let nvml = Nvml::init().map_err(CollectError::NvmlUnavailable)?;
    let count = nvml
        .device_count()
        .map_err(nvml_err("nvmlDeviceGetCount", None))?;
    if count == 0 {
        return Err(CollectError::NoGpu);
    }
    let first = nvml
        .device_by_index(0)
        .map_err(nvml_err("nvmlDeviceGetHandleByIndex", Some(0)))?;
    // System-wide query (nvmlSystemGetConfComputeCapabilities) although the wrapper hangs it
    // on a device.
    let caps = first
        .get_confidential_compute_capabilities()
        .map_err(|source| match source {
            NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) => {
                CollectError::NotCcCapable
            }
            source => CollectError::Nvml {
                call: "nvmlSystemGetConfComputeCapabilities",
                gpu: None,
                source,
            },
        })?;
    if caps.gpus_caps != ConfidentialComputeGpuCapabilities::Capable {
        return Err(CollectError::NotCcCapable);
    }
    let cc_state = system_cc_state(&nvml)?;
    if !cc_state.cc_enabled {
        return Err(CollectError::CcDisabled);
    }

    Ok((0..count)
        .map(|index| DeviceCollection {
            nvml_index: index,
            evidence: device_evidence(&nvml, index, nonce_for(index), &cc_state),
        })
        .collect())
}

/// One GPU's identity, CC attestation report over `nonce` and certificate chain.
fn device_evidence(
    nvml: &Nvml,
    index: u32,
    nonce: [u8; 32],
    cc_state: &CcState,
) -> Result<GpuEvidence, CollectError> {
    let device = nvml
        .device_by_index(index)
        .map_err(nvml_err("nvmlDeviceGetHandleByIndex", Some(index)))?;
    let info = device_info(nvml, &device, index)?;
    let attestation_report = attestation_report(nvml, &device, index, nonce)?;
    let certificate_chain = certificate_chain(nvml, &device, index)?;
    Ok(GpuEvidence {
        device: info,
        attestation_report,
        certificate_chain,
        cc_state: cc_state.clone(),
    })
}

/// NVML's description of GPU `index`.
fn device_info(nvml: &Nvml, device: &Device, index: u32) -> Result<GpuDevice, CollectError> {
    Ok(GpuDevice {
        nvml_index: index,
        name: device
            .name()
            .map_err(nvml_err("nvmlDeviceGetName", Some(index)))?,
        uuid: device
            .uuid()
            .map_err(nvml_err("nvmlDeviceGetUUID", Some(index)))?,
        pci_bus_id: device
            .pci_info()
            .map_err(nvml_err("nvmlDeviceGetPciInfo", Some(index)))?
            .bus_id,
        // Informational only (verification never uses it); a driver newer than the
        // wrapper's enum must not block collection, so the error text is recorded instead.
        architecture: device
            .architecture()
            .map_or_else(|e| format!("unknown ({e})"), |arch| arch.to_string()),
        driver_version: nvml
            .sys_driver_version()
            .map_err(nvml_err("nvmlSystemGetDriverVersion", Some(index)))?,
    })
}

/// The GPU's CC attestation report over `nonce`, through the raw NVML symbol.
fn attestation_report(
    nvml: &Nvml,
    device: &Device,
    index: u32,
    nonce: [u8; 32],
) -> Result<Vec<u8>, CollectError> {
    const REPORT_CALL: &str = "nvmlDeviceGetConfComputeGpuAttestationReport";
    let report_sym = nvml_sym(
        nvml.lib()
            .nvmlDeviceGetConfComputeGpuAttestationReport
            .as_ref(),
    )
    .map_err(nvml_err(REPORT_CALL, Some(index)))?;
    // SAFETY: C struct of unsigned ints and byte arrays (all-zero valid), boxed (12 KiB);
    // the handle is valid while `device` (and `nvml`) live, which spans the call.
    let report = unsafe {
        let mut report: Box<nvmlConfComputeGpuAttestationReport_t> = Box::new(mem::zeroed());
        report.nonce = nonce;
        nvml_try(report_sym(device.handle(), &mut *report))
            .map_err(nvml_err(REPORT_CALL, Some(index)))?;
        report
    };
    let attestation_report = checked_prefix(
        &report.attestationReport,
        report.attestationReportSize,
        REPORT_CALL,
        index,
    )?;
    // NVML may count zero padding after the signature; evidence ends at the signature (the
    // verifier refuses anything after it). A report that does not parse is sent as NVML gave
    // it, for the verifier to name what is wrong.
    Ok(
        match super::spdm::AttestationReport::trim_nvml_padding(&attestation_report) {
            Ok(trimmed) => trimmed.to_vec(),
            Err(_) => attestation_report,
        },
    )
}

/// The GPU's attestation certificate chain (PEM text), through the raw NVML symbol.
fn certificate_chain(nvml: &Nvml, device: &Device, index: u32) -> Result<Vec<u8>, CollectError> {
    const CERT_CALL: &str = "nvmlDeviceGetConfComputeGpuCertificate";
    let cert_sym = nvml_sym(nvml.lib().nvmlDeviceGetConfComputeGpuCertificate.as_ref())
        .map_err(nvml_err(CERT_CALL, Some(index)))?;
    // SAFETY: C struct of unsigned ints and byte arrays (all-zero valid), boxed (9 KiB);
    // the handle is valid while `device` (and `nvml`) live, which spans the call.
    let certificate = unsafe {
        let mut certificate: Box<nvmlConfComputeGpuCertificate_t> = Box::new(mem::zeroed());
        nvml_try(cert_sym(device.handle(), &mut *certificate))
            .map_err(nvml_err(CERT_CALL, Some(index)))?;
        certificate
    };
    checked_prefix(
        &certificate.attestationCertChain,
        certificate.attestationCertChainSize,
        CERT_CALL,
        index,
    )
}
