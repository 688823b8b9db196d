//! The one error type of the CUDA backend.

/// A GPU failure. `kind()` is a short, bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// No CUDA driver or device could be opened; why.
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    /// The NVRTC library is missing or unusable; why.
    #[error("NVRTC (CUDA run-time compiler) unusable: {0}")]
    NoNvrtc(String),
    /// A CUDA driver call failed: the call and the driver's error.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// NVRTC rejected a kernel program; its log.
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    /// Cached-only kernel mode found no usable cubin for a program; why each source failed.
    #[error("no precompiled kernel: {0}")]
    KernelNotPrecompiled(String),
    /// A result read back from the device is malformed (unwritten, non-canonical, wrong
    /// count): it is never returned as a result.
    #[error("GPU output failed validation: {0}")]
    BadOutput(String),
    /// The batch exceeds the kernels' bounds (32-bit indices, buffer limits).
    #[error("input outside what the GPU path handles: {0}")]
    InputTooLarge(String),
    /// The operation has no GPU path.
    #[error("operation not implemented on the GPU")]
    Unsupported,
}

impl GpuError {
    /// The variant's metric label, e.g. `driver` or `bad_output`.
    pub fn kind(&self) -> &'static str {
        match self {
            GpuError::NoDevice(_) => "no_device",
            GpuError::NoNvrtc(_) => "no_nvrtc",
            GpuError::Driver(_) => "driver",
            GpuError::Compile(_) => "compile",
            GpuError::KernelNotPrecompiled(_) => "kernel_not_precompiled",
            GpuError::BadOutput(_) => "bad_output",
            GpuError::InputTooLarge(_) => "input_too_large",
            GpuError::Unsupported => "unsupported",
        }
    }
}
