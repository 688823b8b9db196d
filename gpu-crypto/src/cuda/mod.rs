//! CUDA backend (cudarc: driver API and NVRTC loaded at run time, so a machine without
//! CUDA builds and runs the CPU path). Interface used by the engine; filled by the CUDA work.

use crate::engine::{BlsItem, MsmInput};
use crate::error::{DecodeError, VerifyError};
use crate::policy::Operation;
use ic_bls12_381::{G1Affine, G1Projective};

/// A GPU failure. `kind()` is a short, bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    #[error("CUDA driver error: {0}")]
    Driver(String),
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    #[error("operation not implemented on the GPU")]
    Unsupported,
}

impl GpuError {
    pub fn kind(&self) -> &'static str {
        match self {
            GpuError::NoDevice(_) => "no_device",
            GpuError::Driver(_) => "driver",
            GpuError::Compile(_) => "compile",
            GpuError::Unsupported => "unsupported",
        }
    }
}

/// An opened device with its kernels loaded.
pub struct GpuBackend {
    _private: (),
}

impl GpuBackend {
    pub fn open(device: usize) -> Result<GpuBackend, GpuError> {
        Err(GpuError::NoDevice(format!(
            "device {device}: the CUDA backend is not built yet"
        )))
    }

    /// e.g. "NVIDIA H200 (sm_90, driver 13.0)".
    pub fn describe(&self) -> String {
        String::new()
    }

    pub fn supports(&self, op: Operation) -> bool {
        let _ = op;
        false
    }

    pub fn g1_decompress(
        &self,
        points: &[[u8; 48]],
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
        let _ = points;
        Err(GpuError::Unsupported)
    }

    pub fn sha256_prefixed(
        &self,
        prefix: &[u8],
        chunks: &[&[u8]],
    ) -> Result<Vec<[u8; 32]>, GpuError> {
        let _ = (prefix, chunks);
        Err(GpuError::Unsupported)
    }

    pub fn g1_msm_batch(&self, msms: &[MsmInput<'_>]) -> Result<Vec<G1Projective>, GpuError> {
        let _ = msms;
        Err(GpuError::Unsupported)
    }

    pub fn bls_verify_batch(
        &self,
        items: &[BlsItem<'_>],
    ) -> Result<Vec<Result<(), VerifyError>>, GpuError> {
        let _ = items;
        Err(GpuError::Unsupported)
    }
}
